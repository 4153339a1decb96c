// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/manager/vfolders/store.h"

#include <optional>
#include <string>
#include <vector>

/// Which folders a new session mounts, where and how, as a pure function (no I/O): the session
/// handler gathers the folders its owner reaches (FolderStore::Visible), asks here, then asks
/// each folder's proxy for its host path. Tested as a table in tests/unit/vfolder_mounts_test.cc.
namespace bai::manager::vfolders {

/// One entry of `config.mounts` with its `mount_map` path and `mount_options` permission.
struct MountRequest {
  std::string folder;                     ///< a name or an id
  std::optional<std::string> path;        ///< where in the container (relative: under /home/work)
  std::optional<std::string> permission;  ///< ro, rw or wd; absent: what the folder grants
};

struct PlannedMount {
  FolderRecord folder;
  std::string kernel_path;  ///< absolute, under /home/work
  protocol::VFolderPermission permission = protocol::VFolderPermission::kReadOnly;
};

/// The mounts of a session: each request resolved among `visible` (the owner's own folder wins
/// over a shared one of the same name), then every ready dot-folder of the owner not asked for
/// (mounted in every session, `wd`). Refused: kNotFound for a folder the owner does not reach;
/// kFailedPrecondition for one in the trash or not ready (cloning…); kPermissionDenied for a
/// permission above what the folder grants; kInvalidArgument for a path outside /home/work, a
/// reserved name (.ssh…), `..`, the same folder or path twice, or one path beneath another.
StatusOr<std::vector<PlannedMount>> PlanMounts(std::vector<MountRequest> const& requests,
                                               std::vector<VisibleFolder> const& visible);

}  // namespace bai::manager::vfolders
