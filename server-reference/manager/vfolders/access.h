// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/vfolder_wire.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

/// Who may do what in a virtual folder, as a pure function (no I/O): the handlers gather the
/// facts, ask here, and refuse or go on. Tested as a table in tests/unit/vfolder_access_test.cc.
namespace bai::manager::vfolders {

struct FolderFacts {
  protocol::VFolderOwnership ownership = protocol::VFolderOwnership::kUser;
  std::string user_id;   ///< the owner (user folders)
  std::string group_id;  ///< the project (project folders)
  std::string domain;
  protocol::VFolderPermission permission = protocol::VFolderPermission::kReadWrite;  ///< members'
};

struct CallerFacts {
  std::string user_id;
  std::string role;  ///< superadmin, admin, user, monitor
  std::string domain;
  std::set<std::string> groups;  ///< projects the caller belongs to
  /// What an accepted invitation or a project share grants the caller on this folder.
  std::optional<protocol::VFolderPermission> shared;
};

/// How the caller reaches a folder, which decides what they may do beyond its permission.
enum class Relation {
  kNone,     ///< not at all: the folder does not exist for them (404)
  kOwner,    ///< their own user folder: everything (`wd`), rename, share, delete
  kInvited,  ///< an accepted invitation to someone's user folder
  kMember,   ///< a member of the folder's project
  kAdmin,    ///< a domain admin over a project folder of their domain, or a superadmin
};

struct Access {
  Relation relation = Relation::kNone;
  protocol::VFolderPermission permission = protocol::VFolderPermission::kReadOnly;
  bool ok() const { return relation != Relation::kNone; }
  /// Owner-only operations (rename, update-options, invite, delete): the owner of a user folder,
  /// an admin for a project folder.
  bool manages() const { return relation == Relation::kOwner || relation == Relation::kAdmin; }
};

/// The caller's access: owners `wd`; invitees what they were granted; project members the
/// project share's permission when they have one, else the folder's; a domain admin `wd` on the
/// project folders of their domain; a superadmin `wd` on every folder. A user folder is
/// private: a domain admin who is neither its owner nor invited does not reach it.
Access Decide(FolderFacts const& folder, CallerFacts const& caller);

/// Storage host → the folder operations allowed there (24.09's names: create-vfolder,
/// modify-vfolder, delete-vfolder, mount-in-session, upload-file, download-file, invite-others,
/// set-user-specific-permission).
using HostPermissions = std::map<std::string, std::set<std::string>>;

/// The hosts a user may use: the union of the allowed_vfolder_hosts of their domain, their
/// projects and their keypair's policy (24.09's union). Each is JSON text: an object host →
/// permissions, or a list of hosts (every permission there). nullopt when none names a host:
/// an install that never configured hosts allows every host (24.09 would allow none).
std::optional<HostPermissions> AllowedHosts(std::vector<std::string> const& configs);

/// Why `permission` on `host` is refused ("" when allowed), naming where hosts are configured.
std::string WhyHostRefused(std::optional<HostPermissions> const& allowed, std::string const& host,
                           std::string const& permission);

/// Why one more folder is refused to an owner that has `existing` with a limit of `max_count`
/// (0: none), or "".
std::string WhyCountRefused(std::int64_t existing, std::int64_t max_count, bool project);

}  // namespace bai::manager::vfolders
