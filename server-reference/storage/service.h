// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/storage/storage_api.h"
#include "server-reference/storage/volume.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

/// The storage proxy: volumes on local filesystems behind two APIs (docs/adr/0012-storage.md).
/// The manager-facing one (storage_api.h) creates and removes folders, works on their files and
/// hands out tokens; the client-facing one takes uploads (tus 1.0 core, `/upload`) and serves
/// downloads (ranged, `/download`) for whoever holds a token. The manager runs one in process
/// (`make up`); `bai-storage` runs one on its own.
namespace bai::storage {

struct StorageOptions {
  std::string name = "local";                          ///< hosts are `name:volume`
  std::map<std::string, std::string> volumes;          ///< volume name → root directory
  std::string secret;                                  ///< signs tokens; the manager's credential
  std::string client_url;                              ///< where clients upload and download
  std::int64_t token_seconds = 6 * 3600;               ///< a token's lifetime
  std::int64_t upload_expire_seconds = 7 * 24 * 3600;  ///< unfinished uploads kept this long
  std::int64_t max_chunk = 64 << 20;                   ///< largest tus PATCH body
  /// A folder's usage (a walk of its tree) is kept this long for the next asker; changes made
  /// through this proxy drop it at once, a kernel's writes show after at most this long.
  /// Concurrent askers share one walk. 0: walk every time.
  std::int64_t usage_cache_seconds = 10;
  std::function<std::int64_t()> now;  ///< seconds since the epoch (tests move it)
  /// Owner of every folder and file on the volumes (Volume::SetOwner); -1: this process.
  int owner_uid = -1, owner_gid = -1;
};

/// The space of the filesystem holding `root` (statvfs: capacity, used, free for this process's
/// user); nullopt when it cannot be read. What `volumes` answers and `/metrics` shows.
std::optional<api::VolumeUsage> FilesystemSpace(std::string const& root);

/// "UID:GID" (numbers) into `options`' owner; "" leaves it unset. kInvalidArgument otherwise.
Status SetFileOwner(std::string_view text, StorageOptions& options);

class StorageService {
 public:
  static StatusOr<std::unique_ptr<StorageService>> Open(StorageOptions options);

  /// One manager-facing operation (storage_api.h). Errors carry HTTP statuses: 400 bad
  /// arguments or paths, 404 unknown volume, folder or file, 409 conflicts, 507 no space.
  StatusOr<nlohmann::json> Manage(std::string_view op, nlohmann::json const& args) const;

  /// The client-facing API: OPTIONS, HEAD and PATCH `/upload`, GET and HEAD `/download`.
  server::HttpResponse HandleClient(server::HttpRequest const& request) const;
  /// Where a large client body goes as it arrives (HttpServerOptions::body_sink_for): a PATCH
  /// chunk without a checksum is written to its upload as it comes; nullptr for the rest.
  std::unique_ptr<server::BodySink> StreamClient(server::HttpRequest const& head,
                                                 std::uint64_t length) const;
  /// The manager-facing API over HTTP: `POST /<op>` with the secret in api::kAuthHeader.
  server::HttpResponse HandleManager(server::HttpRequest const& request) const;
  /// Body limit for the client-facing routes (a tus chunk).
  std::size_t ClientBodyLimit() const { return static_cast<std::size_t>(options_.max_chunk); }

  /// Whether `op` names a manager-facing operation (`POST /<op>`).
  static bool IsOperation(std::string_view op);

  /// Removes unfinished uploads older than upload_expire_seconds; how many.
  int ExpireUploads() const;

  void set_client_url(std::string url) { options_.client_url = std::move(url); }
  StorageOptions const& options() const { return options_; }

 private:
  explicit StorageService(StorageOptions options) : options_(std::move(options)) {}
  std::int64_t Now() const;
  StatusOr<Volume const*> FindVolume(std::string const& name) const;
  /// The claims of the request's `token` when it is valid and made for `op`.
  StatusOr<nlohmann::json> Claims(server::HttpRequest const& request, std::string_view op) const;
  server::HttpResponse Upload(server::HttpRequest const& request) const;
  /// What an upload request names: its session (and part, `?part=K`), found by its token.
  struct Target {
    Volume const* volume = nullptr;
    UploadSession session;
    std::optional<int> index;
    std::optional<tus::Part> part;
    std::string token;
    FolderRef usage;  ///< the folder whose usage a finished upload changes
  };
  /// The target, or the answer that refuses the request; the part only `with_part`.
  std::variant<Target, server::HttpResponse> FindTarget(server::HttpRequest const& request,
                                                        bool with_part) const;
  /// A PATCH up to its body (`length`: its Content-Length, -1 none): the chunk opened (its
  /// checks done, its lock held), or the answer that refuses it.
  struct Patch {
    std::optional<Volume::Chunk> chunk;
    server::HttpResponse refusal;
    std::string sha256;  ///< the chunk's digest, when it came with one
    std::string volume;
    FolderRef usage;
  };
  Patch OpenPatch(server::HttpRequest const& request, std::int64_t length) const;
  /// Closes the chunk: 204 with the new offset, or its failure.
  server::HttpResponse EndPatch(Patch& patch) const;
  class UploadSink;
  /// POST with Upload-Concat: a new part, or the parts made whole (tus concatenation).
  server::HttpResponse Concatenate(server::HttpRequest const& request, Volume const& volume,
                                   UploadSession const& session, std::string const& token,
                                   FolderRef const& usage) const;
  server::HttpResponse Download(server::HttpRequest const& request) const;

  /// How often tokens for folder `id` (everyone's, and `user`'s) were revoked: a token carries
  /// the number it was issued under and is refused once it changed.
  std::int64_t Generation(std::string const& id, std::string const& user) const;

  /// One manager-facing operation's handler (Manage's table): what it works on, resolved first.
  struct Call;
  using Handler = StatusOr<nlohmann::json> (StorageService::*)(Call const&) const;
  enum class Needs { kNothing, kVolume, kFolder, kTree };  ///< what an operation works on
  struct Operation {
    Needs needs;
    Handler run;
  };
  static std::map<std::string_view, Operation> const& Operations();
  StatusOr<nlohmann::json> ListVolumes(Call const& c) const;
  StatusOr<nlohmann::json> ScopeUsage(Call const& c) const;
  StatusOr<nlohmann::json> CreateFolder(Call const& c) const;
  StatusOr<nlohmann::json> DeleteFolder(Call const& c) const;
  StatusOr<nlohmann::json> RevokeTokens(Call const& c) const;
  StatusOr<nlohmann::json> MountPath(Call const& c) const;
  StatusOr<nlohmann::json> FolderUsage(Call const& c) const;
  StatusOr<nlohmann::json> CloneFolder(Call const& c) const;
  StatusOr<nlohmann::json> ListFiles(Call const& c) const;
  StatusOr<nlohmann::json> MakeDirectory(Call const& c) const;
  StatusOr<nlohmann::json> RenameFile(Call const& c) const;
  StatusOr<nlohmann::json> MoveFile(Call const& c) const;
  StatusOr<nlohmann::json> DeleteFiles(Call const& c) const;
  StatusOr<nlohmann::json> StartUpload(Call const& c) const;
  StatusOr<UploadSession> StartWithinQuota(Call const& c, api::StartUpload const& op) const;
  StatusOr<nlohmann::json> CancelUpload(Call const& c) const;
  StatusOr<nlohmann::json> StartDownload(Call const& c) const;

  StorageOptions options_;
  std::map<std::string, std::unique_ptr<Volume>> volumes_;
  /// "ID" or "ID/USER" → how often their tokens were revoked. In memory: a restarted proxy
  /// forgets them, and tokens issued before then work again until they expire (token_seconds).
  mutable std::mutex revoked_mu_;
  mutable std::map<std::string, std::int64_t> revoked_;

  /// Folder usage, by "volume/scope/id" (options_.usage_cache_seconds).
  struct CachedUsage {
    bool valid = false;
    bool walking = false;          ///< someone walks the tree now: wait for their figures
    std::uint64_t generation = 0;  ///< bumped by every change made through this proxy
    std::chrono::steady_clock::time_point expires;
    std::int64_t files = 0, bytes = 0;
  };
  /// Forgets the folder's cached usage (a change went through this proxy).
  void UsageChanged(std::string const& volume, FolderRef const& folder) const;
  mutable std::mutex usage_mu_;
  mutable std::condition_variable usage_cv_;
  mutable std::map<std::string, CachedUsage> usage_;
};

/// A problem+json answer of the storage proxy: `type` is the Backend.AI problem prefix plus
/// "storage/<suffix>".
server::HttpResponse StorageProblem(int status, std::string const& suffix,
                                    std::string const& message);

}  // namespace bai::storage
