// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/session_files.h"
#include "bai/status.h"

#include "server-reference/common/fs/unique_fd.h"

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

/// A directory tree whose every path resolves beneath its root (openat2 RESOLVE_BENEATH: no
/// "..", absolute path or symbolic link leads out, even a link planted inside by someone else):
/// a kernel's /home/work (work_files.h) and a virtual folder on a storage volume use it. Needs
/// only libc and nlohmann-json (the static kernel runner links it).
namespace bai::server {

/// `path` made relative to a tree: components joined by '/', "" for the root itself. An
/// absolute path is taken only under `absolute_root` (which is dropped; empty: none taken).
/// kInvalidArgument for NUL, a ".." component, a component longer than 255 bytes or a path
/// longer than 4095.
StatusOr<std::string> RelativeBeneath(std::string_view path, std::string_view absolute_root);

/// One entry met by ConfinedTree::Walk.
struct TreeEntry {
  std::string name;  ///< the walked path's last component, then "/child"… below it
  struct stat st {};
  int fd = -1;       ///< a regular file, open for reading (only during the visit)
  std::string link;  ///< a symbolic link's target
};
using TreeVisitor = std::function<Status(TreeEntry const&)>;

/// A regular file opened for reading, with what fstat said.
struct OpenedFile {
  UniqueFd fd;
  struct stat st {};
};

/// What one directory entry is.
struct TreeUsage {
  std::int64_t files = 0;  ///< regular files, links and others, not directories
  std::int64_t bytes = 0;  ///< their sizes together
};

/// Removes everything in the open directory `dir`, never following a link; 0 or an errno.
int EmptyDirectoryAt(int dir);

/// openat2 of `rel` ("" = `root` itself) under `root` with `resolve` (RESOLVE_* flags) and
/// `flags` (O_CLOEXEC added); retried while the kernel says EAGAIN. -1 and errno on failure.
int OpenAt2(int root, std::string const& rel, int flags, std::uint64_t resolve);

class ConfinedTree {
 public:
  /// The tree at `root` (a directory; kNotFound otherwise). Paths given to it may be absolute
  /// under `absolute_root` ("/home/work"; empty: relative only); messages name paths under
  /// `display` (default: `absolute_root`).
  static StatusOr<ConfinedTree> Open(std::string const& root, std::string absolute_root,
                                     std::string display = {});
  ConfinedTree(ConfinedTree&& other) noexcept;
  ConfinedTree& operator=(ConfinedTree&& other) noexcept;
  ConfinedTree(ConfinedTree const&) = delete;
  ConfinedTree& operator=(ConfinedTree const&) = delete;
  ~ConfinedTree();

  /// Everything this tree makes from now on (directories, files, links) is given to `uid`:`gid`
  /// (a storage volume's files all belong to the kernels' work user). Only a process that may
  /// chown (root) sets it.
  void SetOwner(uid_t uid, gid_t gid) {
    owner_uid_ = static_cast<int>(uid);
    owner_gid_ = static_cast<int>(gid);
  }

  /// The entries of a directory (not recursive), sorted by name; `abspath` under `display`.
  StatusOr<protocol::SessionFileList> List(std::string_view path) const;
  /// Writes a file, making its parent directories; the file appears whole or not at all
  /// (a temporary name, then rename). kFailedPrecondition when the path is a directory.
  Status Write(std::string_view path, std::string_view data) const;
  /// The same, the file's permission bits set to `mode` (dotfiles: 0600 keys stay private).
  Status Write(std::string_view path, std::string_view data, mode_t mode) const;
  /// A regular file's bytes; kResourceExhausted past `limit`.
  StatusOr<std::string> Read(std::string_view path, std::int64_t limit) const;
  /// A tar archive of a file or a directory (recursive; symbolic links stored, not followed),
  /// its members named from the path's last component; kResourceExhausted once it would pass
  /// `limit` bytes.
  StatusOr<std::string> Archive(std::string_view path, std::int64_t limit) const;

  /// Visits `path` and, for a directory, everything beneath it, parents before children, names
  /// sorted; links are visited, never followed; devices, FIFOs and sockets are skipped. The root
  /// itself is named `root_name`. An error from `visit` ends the walk.
  Status Walk(std::string_view path, TreeVisitor const& visit,
              std::string const& root_name = "work") const;
  /// A regular file or a directory, opened for reading (kFailedPrecondition for anything else);
  /// `st` says which.
  StatusOr<OpenedFile> OpenFile(std::string_view path) const;
  /// Like Write, with the bytes of the open file `source` (from its start).
  Status WriteFrom(std::string_view path, int source) const;
  /// Makes a symbolic link at `path` pointing to `target` (stored as given; every access through
  /// the tree stays confined whatever it says).
  Status Symlink(std::string_view path, std::string const& target) const;

  /// Makes a directory (and its parents with `parents`); kAlreadyExists unless `exist_ok`.
  Status Mkdir(std::string_view path, bool parents, bool exist_ok) const;
  /// Renames an entry within its directory to `new_name` (a bare name); never replaces one.
  Status Rename(std::string_view path, std::string_view new_name) const;
  /// Moves `src` to `dst`, or into `dst` when that is a directory; never replaces an entry.
  Status Move(std::string_view src, std::string_view dst) const;
  /// Removes a file or link, or a directory (an empty one unless `recursive`); never follows a
  /// link. The root itself cannot be removed.
  Status Remove(std::string_view path, bool recursive) const;
  /// Files and bytes under `path` (links counted, not followed).
  StatusOr<TreeUsage> Usage(std::string_view path = {}) const;
  /// Whether a file could be written at `path` now (Write or Adopt): its existing parents are
  /// directories beneath the root and it is not a directory. Nothing is made.
  Status CheckWritable(std::string_view path) const;
  /// Moves the file `from_name` of the directory `from_dir` (outside the tree, on the same
  /// filesystem) to `path`, making its parents: it appears whole. A file or link there is
  /// replaced (never followed), a directory is not.
  Status Adopt(int from_dir, std::string const& from_name, std::string_view path) const;

 private:
  explicit ConfinedTree(int fd) : fd_(fd) {}
  StatusOr<int> ParentFor(std::string const& rel) const;
  /// Writes `path` whole: `fill` writes a temporary file beside it (returns 0 or an errno), which
  /// is then renamed over the path.
  Status WriteWith(std::string_view path, std::function<int(int file)> const& fill) const;
  /// Gives `name` in `dir` (not followed) to the owner, when one is set; 0 or an errno.
  int Own(int dir, std::string const& name) const;
  int fd_ = -1;
  int owner_uid_ = -1, owner_gid_ = -1;
  std::string absolute_root_;
  std::string display_;
};

}  // namespace bai::server
