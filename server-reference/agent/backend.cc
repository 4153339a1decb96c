// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/backend.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace bai::agent {

StatusOr<int> HandshakeStream(int fd, server::runner_protocol::StreamOpen const& open) {
  namespace rp = server::runner_protocol;
  std::string line = rp::EncodeStreamOpen(open) + "\n";
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    close(fd);
    return Status(StatusCode::kInternal, "the kernel's stream socket did not take the request");
  }
  // The answer, byte by byte: what follows it belongs to the stream.
  std::string answer;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (answer.size() < 4096) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char c;
    if (read(fd, &c, 1) != 1) break;
    if (c == '\n') {
      auto ready = rp::DecodeStreamReady(answer);
      if (ready.ok() && ready->ok) return fd;
      close(fd);
      if (!ready.ok()) return Status(StatusCode::kInternal, "a malformed stream answer");
      return Status(ready->code == 1013 ? StatusCode::kUnavailable : StatusCode::kInternal,
                    ready->msg);
    }
    answer.push_back(c);
  }
  close(fd);
  return Status(StatusCode::kInternal, "the kernel did not answer the stream request");
}

StatusOr<std::string> CommitFile(std::string const& commit_dir, std::string const& session_id,
                                 std::string const& filename, std::string const& directory) {
  bool bare = !filename.empty() && filename.size() <= 128 && filename[0] != '.' &&
              filename.find('/') == std::string::npos;
  if (!bare) return Status(StatusCode::kInvalidArgument, "a commit file name is a bare name");
  if (!directory.empty()) {
    // A virtual folder's directory on this host: it must be one (not a link to elsewhere).
    struct stat dst {};
    if (directory[0] != '/' || ::lstat(directory.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
      return Status(StatusCode::kNotFound,
                    "the folder is not on this agent's host (volumes must be mounted at the same "
                    "path on the storage host and on every agent)");
    }
    std::string path = directory + "/" + filename;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      return Status(StatusCode::kAlreadyExists,
                    "the folder has a file " + filename + " already; choose another file name");
    }
    return path;
  }
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
