// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/backend.h"

#include "libbai/util/fd_io.h"
#include "libbai/util/json_parse.h"
#include "server-reference/common/fs/image_root.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace bai::agent {

StatusOr<std::vector<protocol::ServicePort>> KernelApps(
    std::map<std::string, std::string> const& labels, std::vector<int> const& preopen_ports,
    std::string const& rootfs) {
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
    if (rootfs.empty()) break;
    if (a.name.find('/') != std::string::npos) continue;
    auto text =
        server::ReadFileInRoot(rootfs, "etc/backend.ai/service-defs/" + a.name + ".json", 1 << 20);
    if (!text.ok()) continue;
    auto def = internal::ParseJson(*text);
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

StatusOr<int> ConnectKernelSocket(std::string const& run_dir, char const* name,
                                  std::function<bool(pid_t)> const& peer_ok) {
  int dir = ::open(run_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return Status(StatusCode::kNotFound, "the kernel has no run directory");
  int entry = ::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  ::close(dir);
  if (entry < 0) {
    return Status(StatusCode::kUnavailable, std::string("the kernel's ") + name + " is not there");
  }
  struct stat st {};
  if (::fstat(entry, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    ::close(entry);
    return Status(StatusCode::kPermissionDenied,
                  std::string("the kernel's ") + name + " is not a socket (a link planted there?)");
  }
  // The socket itself, reached through its descriptor: a path, even one the kernel could
  // change meanwhile, is never looked up again; and it must fit in sun_path.
  std::string path = "/proc/self/fd/" + std::to_string(entry);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool connected = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  int err = errno;
  ::close(entry);
  if (!connected) {
    if (fd >= 0) ::close(fd);
    return Status(StatusCode::kUnavailable,
                  std::string("cannot reach the kernel's ") + name + ": " + std::strerror(err));
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0 ||
      !peer_ok(cred.pid)) {
    ::close(fd);
    return Status(StatusCode::kPermissionDenied, std::string("the kernel's ") + name +
                                                     " is served by a process of another kernel");
  }
  return fd;
}

bool ProcessInCgroup(pid_t pid, int version, std::string const& cgroup_path) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first == std::string::npos ? 0 : first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string id = line.substr(0, first);
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    bool ours =
        version == 2 ? id == "0" : ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (!ours) continue;
    std::string beneath = cgroup_path.ends_with('/') ? cgroup_path : cgroup_path + "/";
    return path == cgroup_path || path.rfind(beneath, 0) == 0;
  }
  return false;
}

namespace {

// A connected TCP stream socket: what a kernel may hand over for a tcp stream, nothing else
// (the agent reads and writes what it gets as a port's bytes).
bool IsTcpSocket(int fd) {
  int domain = 0, type = 0, protocol = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return false;
  len = sizeof protocol;
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0) return false;
  return (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM &&
         protocol == IPPROTO_TCP;
}

}  // namespace

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
  // A tcp stream's connected socket may come with the answer (pass_socket); only then, and
  // only a TCP socket, is it taken.
  int passed = -1;
  auto drop_passed = [&passed] {
    if (passed >= 0) close(passed);
    passed = -1;
  };
  // A service's answer waits for its port (30 s at most in the runner); others come at once.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(open.kind == "service" ? 45 : 15);
  while (answer.size() < 4096) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char c;
    if (!internal::ReadByteWithDescriptor(fd, c, open.pass_socket ? &passed : nullptr)) break;
    if (c == '\n') {
      auto ready = rp::DecodeStreamReady(answer);
      if (ready.ok() && ready->ok) {
        if (status) *status = ready->status;
        if (!ready->passed) {
          drop_passed();
          return fd;
        }
        if (passed < 0 || !IsTcpSocket(passed)) {
          drop_passed();
          close(fd);
          return Status(StatusCode::kInternal, "the kernel passed no TCP socket");
        }
        close(fd);
        int flags = fcntl(passed, F_GETFL);
        if (flags >= 0) fcntl(passed, F_SETFL, flags & ~O_NONBLOCK);
        return passed;
      }
      drop_passed();
      close(fd);
      if (!ready.ok()) return Status(StatusCode::kInternal, "a malformed stream answer");
      return Status(ready->code == 1013 ? StatusCode::kUnavailable : StatusCode::kInternal,
                    ready->msg);
    }
    answer.push_back(c);
  }
  drop_passed();
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
