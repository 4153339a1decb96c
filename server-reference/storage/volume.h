// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/fs/confined_tree.h"
#include "server-reference/storage/tus.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// One storage volume on a local filesystem: the virtual folders on it and the upload sessions
/// that fill them (docs/adr/0012-storage.md). Folders live at
/// `<root>/<scope>/<id[0:2]>/<id[2:4]>/<id[4:]>`; upload sessions at `<root>/.uploads/<session>/`
/// (`meta.json` and `data`), on the same filesystem, so a finished upload is renamed into its
/// folder and appears whole. A session's offset is its data file's size: it survives a restart
/// of the storage proxy and of the client.
namespace bai::storage {

/// A folder on a volume: its quota scope ("user-<32 hex>" or "project-<32 hex>") and its id
/// (32 hex).
struct FolderRef {
  std::string scope;
  std::string id;
};

struct UploadSession {
  std::string id;  ///< 32 hex
  FolderRef folder;
  std::string relpath;  ///< where the file goes, relative to the folder
  std::int64_t size = 0;
  std::int64_t offset = 0;   ///< bytes received whole so far (0 while sent in parts)
  std::int64_t created = 0;  ///< seconds since the epoch
  int parts = 0;             ///< parts made (sent in parts: tus concatenation), 0 sent whole
  bool complete() const { return parts == 0 && offset == size; }
};

class Volume {
 public:
  /// Opens (making `.uploads` if needed) the volume `name` at `root`, a directory.
  static StatusOr<std::unique_ptr<Volume>> Open(std::string name, std::string root);

  std::string const& name() const { return name_; }
  std::string const& root() const { return root_; }
  /// Folders and everything made in them belong to `uid`:`gid` (the kernels' work user, who
  /// writes in mounted folders); unset, they belong to this process.
  void SetOwner(uid_t uid, gid_t gid) {
    owner_uid_ = static_cast<int>(uid);
    owner_gid_ = static_cast<int>(gid);
  }

  /// Where the folder is on this host (what an agent bind-mounts); kInvalidArgument for a
  /// malformed reference.
  StatusOr<std::string> FolderPath(FolderRef const& folder) const;
  /// kAlreadyExists when it does.
  Status CreateFolder(FolderRef const& folder) const;
  /// Removes the folder and everything in it (links are removed, never followed).
  Status DeleteFolder(FolderRef const& folder) const;
  /// The folder's files, confined beneath it; paths in messages read `display/…`.
  StatusOr<server::ConfinedTree> Tree(FolderRef const& folder, std::string display) const;
  /// What a quota scope holds: its folders' files and bytes, plus the unfinished uploads into
  /// them at their full size (an upload reserves its room when it starts).
  StatusOr<server::TreeUsage> ScopeUsage(std::string_view scope) const;
  /// The unfinished uploads into one folder: their count and full sizes.
  server::TreeUsage PendingUploads(FolderRef const& folder) const;
  /// Bytes free for uploads on the volume's filesystem.
  StatusOr<std::int64_t> FreeBytes() const;

  /// A session for `size` bytes to become `path` in the folder. With `resume`, an unfinished
  /// session for the same folder, path and size is returned instead of a new one. Refused
  /// (before anything is written) for a bad path, a missing folder, or more bytes than the
  /// volume has free.
  StatusOr<UploadSession> StartUpload(FolderRef const& folder, std::string_view path,
                                      std::int64_t size, bool resume) const;
  /// The unfinished session for the same folder, path and size; kNotFound when there is none.
  StatusOr<UploadSession> FindUpload(FolderRef const& folder, std::string_view path,
                                     std::int64_t size) const;
  /// kNotFound for an unknown (or finished, or cancelled) session.
  StatusOr<UploadSession> GetUpload(std::string_view session_id) const;
  /// A chunk being written (a tus PATCH), opened by OpenChunk with the upload's checks done and
  /// its lock held: its bytes are written as they come (Write), and counted when it is closed.
  /// A chunk that did not come whole counts what did (tus: a server keeps what it received); a
  /// chunk whose write failed counts nothing. Destroyed unclosed, it closes.
  class Chunk {
   public:
    Chunk(Chunk&& other) noexcept;
    Chunk& operator=(Chunk&&) = delete;
    ~Chunk();
    /// The next bytes, at the end of those written (kFailedPrecondition past the length it was
    /// opened for; the volume's failure, ENOSPC as kResourceExhausted, after which it counts
    /// nothing).
    Status Write(std::string_view bytes);
    /// Counts what was written (once): the session's offset or the part's received bytes grow;
    /// a whole upload's file complete is moved into its folder (parents made; a file there is
    /// replaced, a directory is not) and the session ends.
    Status Close();
    std::int64_t written() const { return written_; }
    /// After Close: the session (sent whole) or the part (part() set), with their new counts.
    UploadSession const& session() const { return session_; }
    std::optional<tus::Part> const& part() const { return part_; }

   private:
    friend class Volume;
    Chunk() = default;
    Volume const* volume_ = nullptr;
    UploadSession session_;
    std::optional<tus::Part> part_;
    std::string dir_;
    server::UniqueFd data_, progress_;  ///< progress_: a part's count (its file), locked
    std::int64_t start_ = 0;            ///< where in the data file the chunk begins
    std::int64_t length_ = 0, written_ = 0;
    Status failed_;
    bool closed_ = false;
  };
  /// Opens a chunk of `length` bytes at `offset` of the session sent whole (`part` < 0) or of
  /// part `part`. `offset` must be what the session (part) has: kAborted otherwise; kNotFound
  /// for no such part; kFailedPrecondition for a chunk past the size. A session sent in parts is
  /// taken back at offset 0 (its parts are dropped). One writer at a time per session sent
  /// whole, and per part (locks on their files, across processes); parts are written at once.
  StatusOr<Chunk> OpenChunk(std::string_view session_id, int part, std::int64_t offset,
                            std::int64_t length) const;
  /// OpenChunk, Write and Close for a chunk in memory; `sha256` (32 raw bytes, or empty) must
  /// be its digest (kDataLoss otherwise, nothing written).
  StatusOr<UploadSession> Append(std::string_view session_id, std::int64_t offset,
                                 std::string_view data, std::string_view sha256) const;
  /// Uploads in parts (tus concatenation; docs/adr/0012-storage.md): each part is a window of
  /// the session's data file, written in place, its progress the size of an empty (sparse) file
  /// `part-K-START-LENGTH` beside it, so it survives restarts as a whole upload's does.
  StatusOr<std::vector<tus::Part>> Parts(std::string_view session_id) const;
  /// Makes the next part (`length`: the Upload-Length header): the verdict (tus::PlanPart's; its
  /// offset is the part's start), or a failure to write.
  struct PartMade {
    tus::PatchVerdict verdict;
    int index = -1;  ///< when the verdict is ok
  };
  StatusOr<PartMade> AddPart(std::string_view session_id,
                             std::optional<std::string> const& length) const;
  /// Append for part `index`.
  StatusOr<tus::Part> AppendPart(std::string_view session_id, int index, std::int64_t offset,
                                 std::string_view data, std::string_view sha256) const;
  /// Ends a session sent in parts (`named`: the final request's part numbers): the verdict
  /// (tus::CheckFinal's; when ok the file is in its folder and the session gone), or a failure.
  /// kAborted while a part is being written.
  StatusOr<tus::PatchVerdict> FinishParts(std::string_view session_id,
                                          std::vector<int> const& named) const;
  /// Forgets a session and its data.
  Status CancelUpload(std::string_view session_id) const;
  /// Sessions not finished `max_age_seconds` after they started are removed; how many.
  int ExpireUploads(std::int64_t now, std::int64_t max_age_seconds) const;

 private:
  Volume(std::string name, std::string root) : name_(std::move(name)), root_(std::move(root)) {}
  /// A path under the volume as messages show it ("volume1:/user-…/…"), never the host path.
  std::string Shown(std::string const& path) const {
    return path.rfind(root_, 0) == 0 ? name_ + ":" + path.substr(root_.size()) : name_;
  }
  std::vector<UploadSession> Sessions() const;
  /// Append's and AppendPart's chunk (part `index`, or the whole file for -1), closed.
  StatusOr<Chunk> WriteChunk(std::string_view session_id, int index, std::int64_t offset,
                             std::string_view data, std::string_view sha256) const;
  /// The part files of a session's directory, by index (name and part).
  std::vector<std::pair<std::string, tus::Part>> PartFiles(std::string const& dir) const;
  std::vector<tus::Part> PartsIn(std::string const& dir) const;
  /// A whole upload (its session directory `dir`) into its folder; the session is gone.
  Status Adopt(UploadSession const& s, std::string const& dir) const;
  std::string name_, root_;
  int owner_uid_ = -1, owner_gid_ = -1;
};

}  // namespace bai::storage
