// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/session_files.h"
#include "bai/status.h"

#include "server-reference/common/runner_messages.h"

#include <cstdint>
#include <string>
#include <string_view>

/// A kernel's work directory as the file requests of a session see it (PROTOCOL.md §5.6):
/// listing, writing, reading and archiving, every path confined to the directory. The kernel
/// runner uses it inside the container on /home/work (so what it writes belongs to the work
/// user); the dummy agent on a directory of its own. Needs only libc and nlohmann-json.
namespace bai::server {

/// `path` relative to the work directory: a leading "/home/work" is dropped, "" and "." name
/// the directory itself ("" returned). kInvalidArgument for NUL, another absolute path, a ".."
/// component, a component longer than 255 bytes or a path longer than 4095.
StatusOr<std::string> WorkRelative(std::string_view path);

/// The work directory, opened once; every lookup resolves beneath it (openat2 RESOLVE_BENEATH:
/// no "..", absolute or symbolic link leads out, even one planted by the kernel).
class WorkTree {
 public:
  /// kNotFound when `root` is not a directory.
  static StatusOr<WorkTree> Open(std::string const& root);
  WorkTree(WorkTree&& other) noexcept;
  WorkTree& operator=(WorkTree&& other) noexcept;
  WorkTree(WorkTree const&) = delete;
  WorkTree& operator=(WorkTree const&) = delete;
  ~WorkTree();

  /// The entries of a directory (not recursive), sorted by name; `abspath` under /home/work.
  StatusOr<protocol::SessionFileList> List(std::string_view path) const;
  /// Writes a file, making its parent directories; the file appears whole or not at all
  /// (a temporary name, then rename). kFailedPrecondition when the path is a directory.
  Status Write(std::string_view path, std::string_view data) const;
  /// A regular file's bytes; kResourceExhausted past `limit`.
  StatusOr<std::string> Read(std::string_view path, std::int64_t limit) const;
  /// A tar archive of a file or a directory (recursive; symbolic links stored, not followed),
  /// its members named from the path's last component; kResourceExhausted once it would pass
  /// `limit` bytes.
  StatusOr<std::string> Archive(std::string_view path, std::int64_t limit) const;

 private:
  explicit WorkTree(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// Answers a file request on the directory `root`: the kernel runner's and the dummy agent's
/// one implementation of the runner protocol's `file` op.
runner_protocol::FileResult AnswerFileRequest(std::string const& root,
                                              runner_protocol::FileRequest const& request);

}  // namespace bai::server
