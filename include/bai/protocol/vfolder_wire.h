// SPDX-License-Identifier: Apache-2.0
#pragma once
// Virtual folders on the wire (PROTOCOL.md §7): permissions, usage modes, ownership, operation
// statuses and the name rule, with one definition for the manager (which enforces them) and the
// SDK (which checks names before asking and maps answers back).

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// A folder as `GET /folders` lists it and `GET /folders/{name}` describes it (PROTOCOL.md §7).
struct VFolderInfo {
  std::string id;  ///< 32 hex digits
  std::string name;
  std::string host;  ///< PROXY:VOLUME
  std::string quota_scope_id;
  std::string status;
  std::string usage_mode;
  std::string permission;      ///< what the caller may do: ro, rw, wd
  std::string ownership_type;  ///< user, group
  std::string user, group;     ///< owner ids ("" when none)
  std::string creator;
  std::string created_at;
  bool is_owner = false;
  bool cloneable = false;
  std::int64_t num_files = 0;   ///< info only
  std::int64_t used_bytes = 0;  ///< info only
};
BAI_EXPORT StatusOr<VFolderInfo> DecodeVFolderInfo(std::string_view json_object);
BAI_EXPORT StatusOr<std::vector<VFolderInfo>> DecodeVFolderList(std::string_view json_array);

/// One entry of a folder's listing (`GET /folders/{name}/files` → `items`).
struct VFolderFile {
  std::string name;
  std::string type;  ///< FILE, DIRECTORY, SYMLINK
  std::int64_t size = 0;
  std::string mode;               ///< permission bits as three octal digits ("644")
  std::string created, modified;  ///< ISO 8601
  bool IsDirectory() const { return type == "DIRECTORY"; }
};
/// The `items` array the storage proxy answers and the manager passes on (JSON text).
BAI_EXPORT std::string EncodeVFolderFiles(std::vector<VFolderFile> const& files);
/// What `GET /folders/{name}/files` answers, as 24.09 does: `items`, and `files`, a JSON string
/// of the legacy entries `{filename, size, mode ("-rw-r--r--"), ctime, atime: 0, mtime}` with
/// times as seconds since the epoch (what 22.03 clients read).
BAI_EXPORT std::string EncodeVFolderListing(std::vector<VFolderFile> const& files);
/// `{"items": [...]}` (the legacy `files` string is ignored).
BAI_EXPORT StatusOr<std::vector<VFolderFile>> DecodeVFolderListing(std::string_view body);

/// An invitation to share a user folder (`GET /folders/invitations/list` and `list-sent`).
struct VFolderInvitation {
  std::string id;
  std::string vfolder_id;
  std::string vfolder_name;
  std::string inviter, invitee;  ///< emails
  std::string permission;        ///< `perm` on the wire
  std::string state;             ///< pending, accepted, rejected, canceled
  std::string created_at;
};
/// `{"invitations": [...]}`.
BAI_EXPORT StatusOr<std::vector<VFolderInvitation>> DecodeVFolderInvitations(std::string_view body);

/// What request-upload and request-download answer: where to go and the token to show there.
struct TransferTicket {
  std::string token;
  std::string url;
  /// The URL with the token as its query parameter.
  std::string Target() const { return url + "?token=" + token; }
};
BAI_EXPORT StatusOr<TransferTicket> DecodeTransferTicket(std::string_view json_object);

}  // namespace bai::protocol
