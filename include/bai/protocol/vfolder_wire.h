// SPDX-License-Identifier: Apache-2.0
#pragma once
// Virtual folders on the wire (PROTOCOL.md §7): permissions, usage modes, ownership, operation
// statuses and the name rule, with one definition for the manager (which enforces them) and the
// SDK (which checks names before asking and maps answers back).

#include "bai/export.h"
#include "bai/status.h"

#include <optional>
#include <string_view>

namespace bai::protocol {

/// What a user may do in a folder: `ro` read, `rw` also write, `wd` also delete (the owner's).
enum class VFolderPermission { kReadOnly, kReadWrite, kReadWriteDelete };
BAI_EXPORT std::string_view ToString(VFolderPermission p);
/// "ro", "rw", "wd".
BAI_EXPORT std::optional<VFolderPermission> ParseVFolderPermission(std::string_view text);
inline bool CanRead(VFolderPermission) { return true; }
inline bool CanWrite(VFolderPermission p) { return p != VFolderPermission::kReadOnly; }
inline bool CanDelete(VFolderPermission p) { return p == VFolderPermission::kReadWriteDelete; }
/// The permission a mount gets: the one asked for, never more than the folder grants (nullopt
/// when it asks for more).
BAI_EXPORT std::optional<VFolderPermission> MountPermission(
    std::optional<VFolderPermission> requested, VFolderPermission granted);

enum class VFolderUsageMode { kGeneral, kModel, kData };
BAI_EXPORT std::string_view ToString(VFolderUsageMode m);
BAI_EXPORT std::optional<VFolderUsageMode> ParseVFolderUsageMode(std::string_view text);

/// `user`: one user's; `group`: a project's (shared with its members).
enum class VFolderOwnership { kUser, kGroup };
BAI_EXPORT std::string_view ToString(VFolderOwnership o);
BAI_EXPORT std::optional<VFolderOwnership> ParseVFolderOwnership(std::string_view text);

/// The operation status of a folder.
enum class VFolderStatus {
  kReady,
  kPerforming,
  kCloning,
  kMounted,
  kError,
  kDeletePending,  ///< in the trash
  kDeleteOngoing,
  kDeleteComplete,
  kDeleteError,
};
BAI_EXPORT std::string_view ToString(VFolderStatus s);
BAI_EXPORT std::optional<VFolderStatus> ParseVFolderStatus(std::string_view text);

/// The longest folder name the API takes.
inline constexpr std::size_t kVFolderNameMax = 64;

/// Ok for a name a folder may have; kInvalidArgument saying why otherwise: 1–64 ASCII letters,
/// digits, '_', '-', '.'; may start with one '.' (a dot-folder, mounted in every session of its
/// user; never a project's); no leading '_', '-' or "..", no trailing '.', '_' or '-', no two
/// separators in a row; not a reserved name (.ssh, .jupyter, .terminfo, .tmux.conf, shell rc
/// and profile files such as .bashrc and .bash_profile).
BAI_EXPORT Status CheckVFolderName(std::string_view name, bool project_folder = false);

}  // namespace bai::protocol
