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

/// `POST /folders`: a new folder.
struct VFolderCreateRequest {
  std::string name;
  std::string host;        ///< "" = the server's default
  std::string usage_mode;  ///< "" = general
  std::string permission;  ///< "" = rw
  std::string group;       ///< a project (name or id): a project folder
  bool cloneable = false;
  /// The folder's own quota in bytes (`quota`: a size such as "10g" or a number of bytes, as
  /// 23.09 takes it); 0 = none (its owner's scope quota still holds).
  std::int64_t quota = 0;
};
BAI_EXPORT std::string EncodeVFolderCreateRequest(VFolderCreateRequest const& request);
/// Lenient as 24.09 is: `folder_host` for `host`, `usageMode`, `groupId`/`group_id` for
/// `group`, "true" for true; a null counts as absent; `unmanaged_path` (other than null) is
/// refused (not supported). Errors name the field (invalid-api-params).
BAI_EXPORT StatusOr<VFolderCreateRequest> DecodeVFolderCreateRequest(std::string_view json_object);

/// `POST /folders/{name}/clone`: a copy as a new user folder of the caller.
struct VFolderCloneRequest {
  std::string target_name;
  std::string target_host;  ///< "" = the source's (must be on the same storage proxy)
  std::string usage_mode;   ///< "" = the source's
  std::string permission;   ///< "" = rw
  bool cloneable = false;
};
BAI_EXPORT std::string EncodeVFolderCloneRequest(VFolderCloneRequest const& request);
BAI_EXPORT StatusOr<VFolderCloneRequest> DecodeVFolderCloneRequest(std::string_view json_object);

// ---- The other requests on folders, their files and their sharing ----------------------------
// One type per body: the SDK encodes it as 23.09 and 24.09 read it (EncodeVFolderRequest), the
// manager decodes it as they do (DecodeVFolderRequest): the spellings they take, booleans and
// integers also as strings, a null as absent; errors name the field (invalid-api-params).

/// `POST /folders/{name}/rename` (`newName` too).
struct VFolderRenameRequest {
  std::string new_name;
};
/// `POST /folders/{name}/mkdir`: one directory or up to 50 (`path`: a string or a list).
struct VFolderMkdirRequest {
  std::vector<std::string> paths;
  bool parents = true;    ///< make missing parents
  bool exist_ok = false;  ///< a directory there already is no failure
};
/// `POST /folders/{name}/move-file`.
struct VFolderMoveFileRequest {
  std::string src, dst;
};
/// `POST /folders/{name}/rename-file`: the file at `target_path` gets `new_name`.
struct VFolderRenameFileRequest {
  std::string target_path, new_name;
};
/// `DELETE /folders/{name}/delete-files` (Backend.AI since 24.03 also as POST).
struct VFolderDeleteFilesRequest {
  std::vector<std::string> files;
  bool recursive = false;
};
/// `POST /folders/{name}/request-upload`: a tus upload of `size` bytes to `path`.
struct VFolderUploadRequest {
  std::string path;
  std::int64_t size = 0;
  /// bai's addition (other servers refuse the key: sent only to bai): start again instead of
  /// resuming an unfinished upload of the same path and size.
  std::optional<bool> restart;
};
/// `POST /folders/{name}/request-download` (`file` for `path`).
struct VFolderDownloadRequest {
  std::string path;
};
/// `POST /folders/_/quota`: a folder's own quota, the folder by host and id (23.09's shape:
/// `input` holds `size_bytes` and `max_files`; 0 or absent = none).
struct VFolderQuotaRequest {
  std::string folder_host, id;
  std::int64_t size_bytes = 0, max_files = 0;
};
/// `POST /folders/{name}/invite`: a user folder to other users (`perm`, also `permission`;
/// `emails`, also `user_ids` and `userIDs`): 1 to 100 emails, repeats dropped.
struct VFolderInviteRequest {
  std::vector<std::string> emails;
  std::string permission = "rw";
};
/// `POST /folders/{name}/share`: a project folder to members of its project.
struct VFolderShareRequest {
  std::vector<std::string> emails;
  std::string permission = "rw";
};
/// `DELETE /folders/{name}/unshare`.
struct VFolderUnshareRequest {
  std::vector<std::string> emails;
};
/// `POST /folders/{name}/leave`: the caller leaves a folder shared with them, or its owner
/// removes the user `shared_user_uuid` ("" = the caller).
struct VFolderLeaveRequest {
  std::string shared_user_id;
};
/// `POST /folders/invitations/accept` and `DELETE /folders/invitations/delete` (`inv_id`).
struct VFolderInvitationRequest {
  std::string invitation_id;
};
/// `POST /folders/invitations/update/{inv_id}` (`perm`).
struct VFolderInvitationUpdateRequest {
  std::string permission = "rw";
};
/// The trash-bin calls (`restore-from-trash-bin`, `delete-from-trash-bin`, `purge`,
/// `DELETE /folders`): a folder by id (`vfolder_id`, also `vfolderId` and `id`).
struct VFolderByIdRequest {
  std::string vfolder_id;
};

/// Any request above as its JSON body.
template <class Request>
BAI_EXPORT std::string EncodeVFolderRequest(Request const& request);
/// The request in `json_object`; 400 invalid-api-params naming each field that is missing or
/// wrong (a permission other than ro, rw, wd; an empty list of emails; a negative quota).
template <class Request>
BAI_EXPORT StatusOr<Request> DecodeVFolderRequest(std::string_view json_object);

/// A folder as the answers of `/folders` give it (PROTOCOL.md §7). One struct for the four
/// answers; each answer carries the fields 24.09 puts in it (VFolderAnswer).
struct VFolderInfo {
  std::string id;  ///< 32 hex digits
  std::string name;
  std::string host;  ///< PROXY:VOLUME
  std::string quota_scope_id;
  std::string status;
  std::string usage_mode;
  std::string permission;      ///< what the caller may do: ro, rw, wd
  std::string ownership_type;  ///< user, group
  std::string user, group;     ///< owner ids ("" when none: null on the wire)
  std::string user_email;      ///< the owning user's (lists only; "" for a project's)
  std::string group_name;      ///< the owning project's (lists only; "" for a user's)
  std::string creator;
  std::string created_at;
  std::string last_used;  ///< info only; "" = never (null)
  bool is_owner = false;
  bool cloneable = false;
  /// The folder's own quota, 0 = none: max_size in bytes (on the wire `max_size` is in MiB,
  /// rounded up, as 23.09 stores it, and bai's `max_size_bytes` is exact), max_files a count.
  std::int64_t max_files = 0, max_size = 0;
  /// info; bai's listings too. Absent where the server does not count them (Backend.AI's
  /// listings): null, never a made-up 0.
  std::optional<std::int64_t> num_files;
  std::int64_t used_bytes = 0;  ///< info and listings (also their `cur_size`)
};
/// Which answer a folder is encoded for; each has 24.09's fields, legacy names included:
///  kCreated: `POST /folders` (201);
///  kListed:  an entry of `GET /folders` (`type` beside `ownership_type`);
///  kInfo:    `GET /folders/{name}` (`numFiles` and `created` beside `num_files`, `created_at`);
///  kCloned:  `POST /folders/{name}/clone` (201, with the task's `bgtask_id`).
enum class VFolderAnswer { kCreated, kListed, kInfo, kCloned };
BAI_EXPORT std::string EncodeVFolderInfo(VFolderInfo const& folder, VFolderAnswer answer,
                                         std::string_view bgtask_id = {});
/// `GET /folders`'s answer: an array of kListed entries.
BAI_EXPORT std::string EncodeVFolderList(std::vector<VFolderInfo> const& folders);
/// Any of the four answers (missing fields keep their defaults; `type` stands in for
/// `ownership_type`).
BAI_EXPORT StatusOr<VFolderInfo> DecodeVFolderInfo(std::string_view json_object);
BAI_EXPORT StatusOr<std::vector<VFolderInfo>> DecodeVFolderList(std::string_view json_array);

/// What the clone answer says beyond the folder: the background task copying it.
struct VFolderCloneResult {
  std::string id;  ///< the new folder (status `cloning` until the task ends)
  std::string name;
  std::string task_id;  ///< `bgtask_id`
};
BAI_EXPORT StatusOr<VFolderCloneResult> DecodeVFolderCloneResult(std::string_view json_object);

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
  std::string modified_at;
};
/// `{"invitations": [...]}`.
BAI_EXPORT std::string EncodeVFolderInvitations(std::vector<VFolderInvitation> const& invitations);
BAI_EXPORT StatusOr<std::vector<VFolderInvitation>> DecodeVFolderInvitations(std::string_view body);

/// What request-upload and request-download answer: where to go and the token to show there.
struct TransferTicket {
  std::string token;
  std::string url;
  /// bai-webserver's path that relays the transfer to `url` for the console (a page may talk
  /// to its own origin only); set by the webserver as the ticket passes, absent elsewhere.
  std::optional<std::string> console_url;
  /// The URL with the token as its query parameter.
  std::string Target() const { return url + "?token=" + token; }
};
BAI_EXPORT std::string EncodeTransferTicket(TransferTicket const& ticket);
BAI_EXPORT StatusOr<TransferTicket> DecodeTransferTicket(std::string_view json_object);

}  // namespace bai::protocol
