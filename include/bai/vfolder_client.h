// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/copy_rule.h"
#include "bai/export.h"
#include "bai/protocol/vfolder_wire.h"
#include "bai/status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bai {

using VFolderInfo = protocol::VFolderInfo;
using VFolderFile = protocol::VFolderFile;
using VFolderInvitation = protocol::VFolderInvitation;

using VFolderCreateRequest = protocol::VFolderCreateRequest;
using VFolderCloneRequest = protocol::VFolderCloneRequest;
using VFolderCloneResult = protocol::VFolderCloneResult;

/// `GET /folders/_/hosts`.
struct VFolderHosts {
  std::string default_host;
  std::vector<std::string> allowed;
};

/// Where a transfer stands, reported as bytes arrive (from the calling thread or a worker's).
struct TransferProgress {
  std::string path;  ///< the file (remote path for uploads, local for downloads)
  std::int64_t done = 0;
  std::int64_t total = 0;
  bool finished = false;  ///< this file is complete
};
using ProgressCallback = std::function<void(TransferProgress const&)>;

struct TransferOptions {
  /// Uploads: the directory in the folder files go to ("" = its root). Downloads: ignored.
  std::string remote_dir;
  /// Directories are copied with everything beneath them (else they are refused).
  bool recursive = false;
  /// Files moved at the same time.
  int parallel = 4;
  /// Bytes per tus PATCH (each is checked with sha256 on the proxy).
  std::int64_t chunk_bytes = 16 << 20;
  /// Upload journal: which local file an unfinished upload came from, so a later process
  /// resumes it only for the same file. Default: $XDG_STATE_HOME/bai/uploads (or
  /// ~/.local/state/bai/uploads).
  std::string journal_dir;
  ProgressCallback progress;
  /// Set from another thread to stop between chunks (the call then returns kCancelled; what
  /// was sent stays resumable).
  std::atomic<bool> const* cancel = nullptr;
};

struct TransferReport {
  std::int64_t files = 0;
  std::int64_t bytes = 0;            ///< moved by this call (resumed parts not counted)
  std::int64_t resumed = 0;          ///< files that continued an earlier, unfinished transfer
  std::vector<std::string> written;  ///< remote paths (uploads) or local paths (downloads)
};

/// Virtual folders (PROTOCOL.md §7): records through the manager, bytes through the storage
/// proxy the manager points at (tus uploads, ranged downloads). Thread-safe.
class BAI_EXPORT VFolderClient {
 public:
  explicit VFolderClient(Client client) : client_(std::move(client)) {}

  StatusOr<VFolderInfo> Create(VFolderCreateRequest const& request) const;
  StatusOr<std::vector<VFolderInfo>> List() const;
  /// By name or id.
  StatusOr<VFolderInfo> Info(std::string const& folder) const;
  /// To the trash; Restore brings it back, Purge removes it for good (from the trash). A server
  /// without a trash (Backend.AI before 24.03) refuses Delete (kFailedPrecondition: it would
  /// remove the files at once) and Restore (kUnimplemented); Purge removes the folder there.
  Status Delete(std::string const& folder) const;
  Status Restore(std::string const& folder) const;
  Status Purge(std::string const& folder) const;
  Status Rename(std::string const& folder, std::string const& new_name) const;
  /// The folder's own quota (`POST /folders/_/quota`): at most `max_bytes` and `max_files`
  /// (0: none); its owner's scope quota holds besides. Its owner or an admin.
  Status SetQuota(std::string const& folder, std::int64_t max_bytes,
                  std::int64_t max_files = 0) const;
  StatusOr<VFolderHosts> Hosts() const;

  StatusOr<std::vector<VFolderFile>> Files(std::string const& folder,
                                           std::string const& path = {}) const;
  Status Mkdir(std::string const& folder, std::string const& path, bool parents = true,
               bool exist_ok = false) const;
  Status Move(std::string const& folder, std::string const& src, std::string const& dst) const;
  Status RenameFile(std::string const& folder, std::string const& path,
                    std::string const& new_name) const;
  Status DeleteFiles(std::string const& folder, std::vector<std::string> const& paths,
                     bool recursive = false) const;

  // --- sharing ---
  /// Invites users (by email) to one's own user folder with `permission` (ro, rw, wd); the new
  /// invitations' ids (none for users already invited or sharing it).
  StatusOr<std::vector<std::string>> Invite(std::string const& folder,
                                            std::vector<std::string> const& emails,
                                            std::string const& permission = "rw") const;
  /// Pending invitations to the caller, or (with `sent`) from the caller.
  StatusOr<std::vector<VFolderInvitation>> Invitations(bool sent = false) const;
  Status AcceptInvitation(std::string const& invitation_id) const;
  /// Rejects an invitation to the caller, or cancels one the caller sent.
  Status DeleteInvitation(std::string const& invitation_id) const;
  /// The inviter changes the permission a pending invitation offers.
  Status UpdateInvitation(std::string const& invitation_id, std::string const& permission) const;
  /// Leaves a folder shared with the caller; its owner removes `user_id` instead.
  Status Leave(std::string const& folder, std::string const& user_id = {}) const;
  /// Admins: gives members of a project folder's project a permission of their own; the emails
  /// shared with.
  StatusOr<std::vector<std::string>> Share(std::string const& folder,
                                           std::vector<std::string> const& emails,
                                           std::string const& permission = "rw") const;
  StatusOr<std::vector<std::string>> Unshare(std::string const& folder,
                                             std::vector<std::string> const& emails) const;
  /// Starts a copy; follow `task_id` with SessionClient::FollowTask.
  StatusOr<VFolderCloneResult> Clone(std::string const& folder,
                                     VFolderCloneRequest const& request) const;

  /// Uploads local files (and directories, with `recursive`) into the folder under
  /// `options.remote_dir`, several at once, each over tus with sha256-checked chunks. An
  /// interrupted upload of the same local file (same path, size and modification time) is
  /// resumed where the proxy has it, by this process or a later one. Every source is checked
  /// before any byte is sent.
  StatusOr<TransferReport> Upload(std::string const& folder,
                                  std::vector<std::string> const& local_paths,
                                  TransferOptions const& options = {}) const;
  /// Downloads files (and directories, with `recursive`) into `local_dir` (made if missing),
  /// each to a temporary name renamed when complete; an interrupted download is resumed with
  /// `Range` and `If-Range` (started again when the file changed meanwhile).
  StatusOr<TransferReport> Download(std::string const& folder,
                                    std::vector<std::string> const& remote_paths,
                                    std::string const& local_dir,
                                    TransferOptions const& options = {}) const;

  /// `bai cp` up: local files (and directories, with `recursive`) to `destination` in the folder
  /// by the rule of copy_rule.h (an existing directory takes them under their own names; one
  /// source to any other path takes that name). `options.remote_dir` is ignored.
  StatusOr<TransferReport> CopyToFolder(std::string const& folder,
                                        std::vector<std::string> const& local_paths,
                                        std::string const& destination,
                                        TransferOptions const& options = {}) const;
  /// `bai cp` down: paths in the folder to the local `destination`, by the same rule.
  StatusOr<TransferReport> CopyFromFolder(std::string const& folder,
                                          std::vector<std::string> const& remote_paths,
                                          std::string const& destination,
                                          TransferOptions const& options = {}) const;

 private:
  /// What `path` is in the folder (its parent's listing; a missing parent: kMissing).
  StatusOr<PathKind> RemoteKind(std::string const& folder, std::string const& path) const;
  /// The paths with their kinds; kNotFound for one that is not there.
  StatusOr<std::vector<CopySource>> RemoteSources(
      std::string const& folder, std::vector<std::string> const& remote_paths) const;
  /// The transfers once every source has its target (one per source, from PlaceCopies).
  StatusOr<TransferReport> UploadPlaced(std::string const& folder,
                                        std::vector<std::string> const& local_paths,
                                        std::vector<std::string> const& targets,
                                        TransferOptions const& options) const;
  StatusOr<TransferReport> DownloadPlaced(std::string const& folder,
                                          std::vector<CopySource> const& sources,
                                          std::vector<std::string> const& targets,
                                          std::string const& make_dir,
                                          TransferOptions const& options) const;

  Client client_;
};

}  // namespace bai
