// SPDX-License-Identifier: Apache-2.0
#pragma once
// The storage proxy's manager-facing API, one definition for the proxy (which serves it) and the
// manager (which calls it, in process or over HTTP). Each operation is `POST /<op>` with a JSON
// object and answers a JSON object, or a problem+json. Over HTTP the manager proves itself with
// the shared secret in kAuthHeader. Folders are named by `volume`, `scope` ("user-<32 hex>" or
// "project-<32 hex>") and `id` (32 hex). docs/storage-api.md lists the arguments.

namespace bai::storage::api {

inline constexpr char kAuthHeader[] = "X-BackendAI-Storage-Auth-Token";

// Volumes
inline constexpr char kVolumes[] = "volumes";  ///< {} → {volumes: [{name, backend, …}]}
inline constexpr char kScopeUsage[] =
    "scope/usage";  ///< {volume, scope} → {file_count, used_bytes}
// Folders
inline constexpr char kFolderCreate[] = "folder/create";  ///< {volume, scope, id}
inline constexpr char kFolderDelete[] = "folder/delete";  ///< {volume, scope, id}
inline constexpr char kFolderClone[] = "folder/clone";    ///< {…, dst_volume, dst_scope, dst_id}
inline constexpr char kFolderMount[] = "folder/mount";    ///< {…} → {path} (on the host)
inline constexpr char kFolderUsage[] = "folder/usage";    ///< {…} → {file_count, used_bytes}
/// {…, user?} → {}: the folder's transfer tokens issued until now stop working, only `user`'s
/// when given (unshared, left) or everyone's (trashed, purged).
inline constexpr char kFolderRevoke[] = "folder/revoke";
// Files in a folder
inline constexpr char kFileList[] = "folder/file/list";      ///< {…, path} → {items}
inline constexpr char kFileMkdir[] = "folder/file/mkdir";    ///< {…, path, parents, exist_ok}
inline constexpr char kFileRename[] = "folder/file/rename";  ///< {…, path, new_name}
inline constexpr char kFileMove[] = "folder/file/move";      ///< {…, src, dst}
inline constexpr char kFileDelete[] = "folder/file/delete";  ///< {…, paths, recursive}
/// {…, path, size, resume_only?} → {token, url, session, offset}: an upload session (an
/// unfinished one for the same path and size is resumed; with `resume_only` only that, else 404).
inline constexpr char kFileUpload[] = "folder/file/upload";
/// {…, path, size} → {}: forgets the unfinished upload of that path and size (404 when none).
inline constexpr char kFileCancelUpload[] = "folder/file/cancel-upload";
/// {…, path, user?} → {token, url}; `user` (also on kFileUpload) names whom a token is for, so
/// that kFolderRevoke can end it.
inline constexpr char kFileDownload[] = "folder/file/download";

}  // namespace bai::storage::api
