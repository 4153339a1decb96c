// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/backend.h"

#include "libbai/util/fd_io.h"
#include "libbai/util/json_parse.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::agent {

StatusOr<std::vector<protocol::ServicePort>> KernelApps(
    std::map<std::string, std::string> const& labels, std::vector<int> const& preopen_ports,
    std::string const& defs_dir) {
  auto label = [&labels](char const* key) {
    auto it = labels.find(key);
    return it == labels.end() ? std::string() : it->second;
  };
  auto apps = protocol::ParseServicePortsLabel(label("ai.backend.service-ports"),
                                               label("ai.backend.endpoint-ports"));
  if (!apps.ok()) {
    return Status(StatusCode::kInvalidArgument,
                  "the image's ai.backend.service-ports label: " + apps.status().message());
  }
  for (int port : preopen_ports) {
    for (auto const& a : *apps) {
      for (int used : a.container_ports) {
        if (used == port) {
          return Status(StatusCode::kInvalidArgument,
                        "the preopen port " + std::to_string(port) + " is the image's " + a.name);
        }
      }
    }
    apps->push_back({std::to_string(port), "preopen", {port}, false, std::nullopt, {}, {}});
  }
  for (auto& a : *apps) {
    if (defs_dir.empty()) break;
    std::ifstream in(defs_dir + "/" + a.name + ".json");
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    auto def = internal::ParseJson(text.str());
    if (!def || !def->is_object()) continue;
    if (auto it = def->find("url_template"); it != def->end() && it->is_string()) {
      a.url_template = it->get<std::string>();
    }
    for (auto [key, field] : {std::pair{"allowed_arguments", &a.allowed_arguments},
                              std::pair{"allowed_envs", &a.allowed_envs}}) {
      if (auto it = def->find(key); it != def->end() && it->is_array()) {
        for (auto const& v : *it) {
          if (v.is_string()) field->push_back(v.get<std::string>());
        }
      }
    }
  }
  apps->push_back({"terminal", "pty", {}, false, std::nullopt, {}, {}});
  return apps;
}

StatusOr<int> HandshakeStream(int fd, server::runner_protocol::StreamOpen const& open,
                              std::string* status) {
  namespace rp = server::runner_protocol;
  std::string line = rp::EncodeStreamOpen(open) + "\n";
  if (!internal::WriteAll(fd, line)) {
    close(fd);
    return Status(StatusCode::kInternal, "the kernel's stream socket did not take the request");
  }
  // The answer, byte by byte: what follows it belongs to the stream.
  std::string answer;
  // A service's answer waits for its port (30 s at most in the runner); others come at once.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(open.kind == "service" ? 45 : 15);
  while (answer.size() < 4096) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char c;
    if (read(fd, &c, 1) != 1) break;
    if (c == '\n') {
      auto ready = rp::DecodeStreamReady(answer);
      if (ready.ok() && ready->ok) {
        if (status) *status = ready->status;
        return fd;
      }
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
