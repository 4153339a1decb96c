// SPDX-License-Identifier: Apache-2.0
// Issue 43, 5a: a kernel's run directory is the kernel's to write, so the agent must not follow
// what it finds there. Alice planted `stream.sock` as a link to Bob's kernel's socket and her
// terminal opened in Bob's container. These tests plant the same link and a foreign listener.
#include "server-reference/agent/backend.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace bai::agent {
namespace {

namespace fs = std::filesystem;

// A listening Unix socket at `path` (short: a test temp dir fits in sun_path).
int Listen(std::string const& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  EXPECT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
  EXPECT_EQ(::listen(fd, 4), 0);
  return fd;
}

bool Anyone(pid_t) { return true; }

TEST(KernelSocketTest, ALinkPlantedInTheRunDirectoryIsNeverFollowed) {
  testing_util::TempDir dir;
  fs::create_directories(dir.path() + "/alice/run");
  fs::create_directories(dir.path() + "/bob/run");
  int bob = Listen(dir.path() + "/bob/run/stream.sock");
  // Bob's own socket is reachable…
  auto ok = ConnectKernelSocket(dir.path() + "/bob/run", "stream.sock", Anyone);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ::close(*ok);
  // …Alice's link to it is not, nor any other thing she puts there.
  fs::create_symlink(dir.path() + "/bob/run/stream.sock", dir.path() + "/alice/run/stream.sock");
  auto planted = ConnectKernelSocket(dir.path() + "/alice/run", "stream.sock", Anyone);
  EXPECT_EQ(planted.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(planted.status().message().find("not a socket"), std::string::npos);
  std::ofstream(dir.path() + "/alice/run/runner.sock") << "a file";
  EXPECT_EQ(ConnectKernelSocket(dir.path() + "/alice/run", "runner.sock", Anyone).status().code(),
            StatusCode::kPermissionDenied);
  // Nothing there yet: the runner has not started (the agent retries).
  EXPECT_EQ(ConnectKernelSocket(dir.path() + "/alice/run", "none.sock", Anyone).status().code(),
            StatusCode::kUnavailable);
  // The run directory itself replaced by a link.
  fs::remove_all(dir.path() + "/alice/run");
  fs::create_directory_symlink(dir.path() + "/bob/run", dir.path() + "/alice/run");
  EXPECT_FALSE(ConnectKernelSocket(dir.path() + "/alice/run", "stream.sock", Anyone).ok());
  ::close(bob);
}

TEST(KernelSocketTest, ASocketServedByAnotherKernelsProcessIsRefused) {
  testing_util::TempDir dir;
  fs::create_directories(dir.path() + "/run");
  int fd = Listen(dir.path() + "/run/stream.sock");
  pid_t seen = 0;
  auto refused = ConnectKernelSocket(dir.path() + "/run", "stream.sock", [&](pid_t pid) {
    seen = pid;
    return false;
  });
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(seen, ::getpid());  // the listener's pid, from SO_PEERCRED
  ::close(fd);
}

TEST(KernelSocketTest, ProcessInCgroupReadsProcCgroup) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, own;
  int version = 0;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) {
      own = line.substr(3), version = 2;
    } else if (line.find(":memory:") != std::string::npos) {
      own = line.substr(line.find(":memory:") + 8), version = 1;
      break;
    }
  }
  ASSERT_NE(version, 0) << "no cgroup entry for this process";
  EXPECT_TRUE(ProcessInCgroup(::getpid(), version, own));
  if (own != "/") {
    auto parent = fs::path(own).parent_path().string();
    EXPECT_TRUE(ProcessInCgroup(::getpid(), version, parent));  // beneath it
  }
  EXPECT_FALSE(ProcessInCgroup(::getpid(), version, own + "-other"));
  EXPECT_FALSE(ProcessInCgroup(::getpid(), version, "/bai/agent-1/no-such-session"));
  EXPECT_FALSE(ProcessInCgroup(999999999, version, own));
}

}  // namespace
}  // namespace bai::agent
