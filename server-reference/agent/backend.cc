// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/backend.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace bai::agent {

StatusOr<std::string> CommitFile(std::string const& commit_dir, std::string const& session_id,
                                 std::string const& filename) {
  bool bare = !filename.empty() && filename.size() <= 128 && filename[0] != '.' &&
              filename.find('/') == std::string::npos;
  if (!bare) return Status(StatusCode::kInvalidArgument, "a commit file name is a bare name");
  if (commit_dir.empty()) return Status(StatusCode::kFailedPrecondition, "commits are off");
  std::string dir = commit_dir + "/" + session_id;
  // The parents (the state directory's per-agent folder) may not exist yet on a fresh agent.
  std::error_code ec;
  if (std::filesystem::create_directories(commit_dir, ec)) {
    std::filesystem::permissions(commit_dir, std::filesystem::perms::owner_all, ec);
  }
  if (ec) return Status(StatusCode::kInternal, "cannot create " + commit_dir + ": " + ec.message());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(StatusCode::kInternal, "cannot create " + dir + ": " + std::strerror(errno));
  }
  std::string path = dir + "/" + filename;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    return Status(StatusCode::kAlreadyExists, path + " exists; choose another file name");
  }
  return path;
}

}  // namespace bai::agent
