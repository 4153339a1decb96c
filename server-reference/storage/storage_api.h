// SPDX-License-Identifier: Apache-2.0
#pragma once
// The storage proxy's manager-facing API, one definition for the proxy (which serves it) and the
// manager (which calls it, in process or over HTTP). Each operation is `POST /<op>` with a JSON
// object and answers a JSON object, or a problem+json. Over HTTP the manager proves itself with
// the shared secret in kAuthHeader. docs/storage-api.md lists the operations.
//
// Every operation is a struct: its arguments, its name (`kOp`) and the type of its answer
// (`Answer`); ToJson and FromJson below are the one codec of each, for both sides. Operations on
// a folder carry the folder's address (`FolderAddress`: `volume`, `scope` "user-<32 hex>" or
// "project-<32 hex>", `id` 32 hex) beside their own arguments in the same object.

#include "bai/protocol/vfolder_wire.h"
#include "bai/status.h"

#include "server-reference/storage/quota.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bai::storage::api {

inline constexpr char kAuthHeader[] = "X-BackendAI-Storage-Auth-Token";

// ---- what the answers carry -------------------------------------------------------------------

/// An answer without fields (`{}`).
struct Nothing {};
/// Files and bytes in a folder, or in a quota scope's folders with unfinished uploads at full
/// size.
struct Usage {
  std::int64_t file_count = 0;
  std::int64_t used_bytes = 0;
};
struct VolumeUsage {
  std::int64_t total = 0, used = 0, free = 0;
  double percentage = 0;
};
struct VolumeInfo {
  std::string name;
  std::string backend = "vfs";
  std::string path;  ///< on the proxy's host
  std::vector<std::string> capabilities;
  std::optional<VolumeUsage> usage;  ///< absent when the volume cannot be measured
};
struct Volumes {
  std::vector<VolumeInfo> volumes;
};
struct HostPath {
  std::string path;
};
struct Listing {
  std::vector<protocol::VFolderFile> items;
};
struct UploadTicket {
  std::string token, url;
  std::string session;      ///< the upload session
  std::int64_t offset = 0;  ///< bytes it has already (an unfinished upload resumed)
};
struct DownloadTicket {
  std::string token, url;
  bool is_dir = false;
};

// ---- the operations ---------------------------------------------------------------------------

/// Where a folder operation acts (StorageLinks fills `volume` from the host, and every
/// operation but ListVolumes carries it).
struct FolderAddress {
  std::string volume, scope, id;
};

struct ListVolumes {
  static constexpr char kOp[] = "volumes";
  using Answer = Volumes;
};
/// A quota scope's usage on one volume (the link adds `volume`; no folder).
struct GetScopeUsage {
  static constexpr char kOp[] = "scope/usage";
  using Answer = Usage;
  std::string scope;
};
struct CreateFolder {
  static constexpr char kOp[] = "folder/create";
  using Answer = Nothing;
};
struct DeleteFolder {
  static constexpr char kOp[] = "folder/delete";
  using Answer = Nothing;
};
/// The folder's transfer tokens issued until now stop working: only `user`'s when given
/// (unshared, left) or everyone's (trashed, purged).
struct RevokeTokens {
  static constexpr char kOp[] = "folder/revoke";
  using Answer = Nothing;
  std::string user;
};
/// Where the folder is on the host (for mounts).
struct MountPath {
  static constexpr char kOp[] = "folder/mount";
  using Answer = HostPath;
};
struct GetFolderUsage {
  static constexpr char kOp[] = "folder/usage";
  using Answer = Usage;
  /// For a quota check: walked now (never the cached figure), and the folder's unfinished
  /// uploads counted at their full size, as the scope's usage counts them.
  bool for_quota = false;
};
struct CloneFolder {
  static constexpr char kOp[] = "folder/clone";
  using Answer = Nothing;
  std::string dst_volume, dst_scope, dst_id;
};
struct ListFiles {
  static constexpr char kOp[] = "folder/file/list";
  using Answer = Listing;
  std::string path;  ///< "" = the folder's root
};
struct MakeDirectory {
  static constexpr char kOp[] = "folder/file/mkdir";
  using Answer = Nothing;
  std::string path;
  bool parents = true;
  bool exist_ok = false;
};
struct RenameFile {
  static constexpr char kOp[] = "folder/file/rename";
  using Answer = Nothing;
  std::string path, new_name;
};
struct MoveFile {
  static constexpr char kOp[] = "folder/file/move";
  using Answer = Nothing;
  std::string src, dst;
};
/// Every path is checked before any is removed.
struct DeleteFiles {
  static constexpr char kOp[] = "folder/file/delete";
  using Answer = Nothing;
  std::vector<std::string> paths;
  bool recursive = false;
};
/// An upload session (an unfinished one for the same path and size is resumed; with
/// `resume_only` only that, else 404). `user` names whom the token is for (RevokeTokens).
/// With `quota`, a new upload must fit it (refused 507 / kResourceExhausted saying which quota):
/// the proxy decides with the usage it holds, in this one request; a resumed one holds its room
/// already.
struct StartUpload {
  static constexpr char kOp[] = "folder/file/upload";
  using Answer = UploadTicket;
  std::string path;
  std::int64_t size = 0;
  bool resume_only = false;
  std::string user;
  std::optional<QuotaLimits> quota;
};
/// Forgets the unfinished upload of that path and size (404 when none).
struct CancelUpload {
  static constexpr char kOp[] = "folder/file/cancel-upload";
  using Answer = Nothing;
  std::string path;
  std::int64_t size = 0;
};
struct StartDownload {
  static constexpr char kOp[] = "folder/file/download";
  using Answer = DownloadTicket;
  std::string path;
  std::string user;
};

// ---- the codec --------------------------------------------------------------------------------
// ToJson writes an operation's arguments or an answer; FromJson reads one, refusing a field of
// the wrong type or a missing required one (kInvalidArgument naming it). Unknown fields are
// ignored (the folder's address travels beside an operation's own arguments).

#define BAI_STORAGE_CODEC(T)             \
  nlohmann::json ToJson(T const& value); \
  template <>                            \
  StatusOr<T> FromJson<T>(nlohmann::json const& object);

template <class T>
StatusOr<T> FromJson(nlohmann::json const& object);

BAI_STORAGE_CODEC(Nothing)
BAI_STORAGE_CODEC(Usage)
BAI_STORAGE_CODEC(Volumes)
BAI_STORAGE_CODEC(HostPath)
BAI_STORAGE_CODEC(Listing)
BAI_STORAGE_CODEC(UploadTicket)
BAI_STORAGE_CODEC(DownloadTicket)
BAI_STORAGE_CODEC(FolderAddress)
BAI_STORAGE_CODEC(ListVolumes)
BAI_STORAGE_CODEC(GetScopeUsage)
BAI_STORAGE_CODEC(CreateFolder)
BAI_STORAGE_CODEC(DeleteFolder)
BAI_STORAGE_CODEC(RevokeTokens)
BAI_STORAGE_CODEC(MountPath)
BAI_STORAGE_CODEC(GetFolderUsage)
BAI_STORAGE_CODEC(CloneFolder)
BAI_STORAGE_CODEC(ListFiles)
BAI_STORAGE_CODEC(MakeDirectory)
BAI_STORAGE_CODEC(RenameFile)
BAI_STORAGE_CODEC(MoveFile)
BAI_STORAGE_CODEC(DeleteFiles)
BAI_STORAGE_CODEC(StartUpload)
BAI_STORAGE_CODEC(CancelUpload)
BAI_STORAGE_CODEC(StartDownload)

#undef BAI_STORAGE_CODEC

}  // namespace bai::storage::api
