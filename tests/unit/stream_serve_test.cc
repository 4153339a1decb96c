// SPDX-License-Identifier: Apache-2.0
// bai exec's command stream in the kernel runner (server::ServeStream, kind exec; issue 43,
// items 2 and 8): stdin in with its end, stdout and stderr apart as written, the exit code, and
// back-pressure both ways (a reader that stops holds the command back; nothing is held whole).
#include "server-reference/kernel-runner/stream_serve.h"

#include "bai/protocol/pty_wire.h"

#include "libbai/util/fd_io.h"
#include "server-reference/agent/backend.h"
#include "tests/testing_util/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

namespace bai::server {
namespace {

using protocol::PtyFrame;

class ExecStreamTest : public ::testing::Test {
 protected:
  // Opens an exec stream of `command` served on a thread; the test holds the agent's end.
  StatusOr<int> Open(std::vector<std::string> command) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      return Status(StatusCode::kInternal, "socketpair");
    }
    StreamServeOptions o;
    o.workdir = dir_.path();
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + dir_.path()};
    sigemptyset(&o.child_mask);
    server_ = std::thread([fd = pair[1], o] { ServeStream(fd, o); });
    runner_protocol::StreamOpen open;
    open.kind = "exec";
    open.command = std::move(command);
    return agent::HandshakeStream(pair[0], open);
  }
  void TearDown() override {
    if (server_.joinable()) server_.join();
  }
  void Send(int fd, PtyFrame const& f) {
    ASSERT_TRUE(internal::WriteAll(fd, protocol::EncodePtyFrame(f) + "\n"));
  }
  struct Result {
    std::string out, err;
    int exit_code = -1;
  };
  // Reads frames until the exit frame or the end.
  Result ReadAll(int fd) {
    Result r;
    std::string buf;
    char chunk[65536];
    while (true) {
      for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
        auto f = protocol::DecodePtyFrame(std::string_view(buf).substr(0, nl));
        buf.erase(0, nl + 1);
        EXPECT_TRUE(f.ok()) << f.status().message();
        if (!f.ok()) return r;
        if (f->type == PtyFrame::Type::kOut) r.out += f->data;
        if (f->type == PtyFrame::Type::kErr) r.err += f->data;
        if (f->type == PtyFrame::Type::kExit) {
          r.exit_code = f->code;
          return r;
        }
      }
      ssize_t n = read(fd, chunk, sizeof chunk);
      if (n <= 0) return r;
      buf.append(chunk, static_cast<std::size_t>(n));
    }
  }
  testing_util::TempDir dir_;
  std::thread server_;
};

TEST_F(ExecStreamTest, StdinReachesTheCommandAndItsStreamsComeApart) {
  auto fd = Open({"sh", "-c", "cat; echo to-err >&2; exit 4"});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  Send(*fd, {PtyFrame::Type::kStdin, "abc"});
  Send(*fd, {PtyFrame::Type::kStdin, "def\n"});
  Send(*fd, {PtyFrame::Type::kEof, ""});
  auto r = ReadAll(*fd);
  EXPECT_EQ(r.out, "abcdef\n");
  EXPECT_EQ(r.err, "to-err\n");
  EXPECT_EQ(r.exit_code, 4);
  close(*fd);
}

TEST_F(ExecStreamTest, AReaderThatStopsHoldsTheCommandBack) {
  auto fd = Open({"sh", "-c", "head -c 20000000 /dev/zero; touch DONE"});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  Send(*fd, {PtyFrame::Type::kEof, ""});
  // Nobody reads: the command blocks on its writes once the buffers (a few hundred KiB) fill,
  // instead of its 20 MB piling up in the runner.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/DONE"));
  auto r = ReadAll(*fd);
  EXPECT_EQ(r.out.size(), 20000000u);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/DONE"));
  close(*fd);
}

TEST_F(ExecStreamTest, ACommandThatDoesNotReadHoldsTheClientsStdinBack) {
  auto fd = Open({"sh", "-c", "sleep 1; wc -c"});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  // 8 MB offered at once, in the client's 64 KiB frames: the socket stops taking them while
  // the command sleeps (a few buffers' worth are taken, not all).
  std::string chunk(64 << 10, 'x');
  int flags = fcntl(*fd, F_GETFL);
  fcntl(*fd, F_SETFL, flags | O_NONBLOCK);
  std::string frame = protocol::EncodePtyFrame({PtyFrame::Type::kStdin, chunk}) + "\n";
  std::size_t sent = 0;
  for (int i = 0; i < 128; ++i) {
    ssize_t n = send(*fd, frame.data(), frame.size(), MSG_NOSIGNAL);
    if (n < 0) break;
    sent += static_cast<std::size_t>(n);
    if (static_cast<std::size_t>(n) < frame.size()) break;
  }
  EXPECT_LT(sent, 128u * frame.size()) << "nothing held the stdin back";
  EXPECT_GT(sent, 0u);
  fcntl(*fd, F_SETFL, flags);
  close(*fd);
}

TEST_F(ExecStreamTest, AClientGoingAwayEndsTheCommand) {
  auto fd = Open({"sh", "-c", "sleep 30"});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  auto started = std::chrono::steady_clock::now();
  close(*fd);
  server_.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST_F(ExecStreamTest, ACommandIsRequired) {
  auto fd = Open({});
  EXPECT_FALSE(fd.ok());
}

}  // namespace
}  // namespace bai::server
