// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/backend.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace bai::agent {

StatusOr<std::string> CommitFile(std::string const& commit_dir, std::string const& session_id,
                                 std::string const& filename) {
  bool bare = !filename.empty() && filename.size() <= 128 && filename[0] != '.' &&
              filename.find('/') == std::string::npos;
  if (!bare) return Status(StatusCode::kInvalidArgument, "a commit file name is a bare name");
  if (commit_dir.empty()) return Status(StatusCode::kFailedPrecondition, "commits are off");
  std::string dir = commit_dir + "/" + session_id;
  for (std::string const& d : {commit_dir, dir}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(StatusCode::kInternal, "cannot create " + d + ": " + std::strerror(errno));
    }
  }
  std::string path = dir + "/" + filename;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    return Status(StatusCode::kAlreadyExists, path + " exists; choose another file name");
  }
  return path;
}

}  // namespace bai::agent
