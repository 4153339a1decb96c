// SPDX-License-Identifier: Apache-2.0
// bai exec's command stream in the kernel runner (server::ServeStream, kind exec; issue 43,
// items 2 and 8): stdin in with its end, stdout and stderr apart as written, the exit code, and
// back-pressure both ways (a reader that stops holds the command back; nothing is held whole).
#include "server-reference/common/exec/stream_serve.h"

#include "bai/protocol/pty_wire.h"

#include "libbai/util/fd_io.h"
#include "server-reference/agent/backend.h"
#include "tests/testing_util/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
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

// A tcp stream: the runner connects to the kernel's port and, asked to, hands the connected
// socket to the agent with its answer (one hop fewer for every byte of an app); asked not to,
// it relays the bytes itself as before.
class TcpStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(listener_, 4), 0);
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  void TearDown() override {
    if (server_.joinable()) server_.join();
    close(listener_);
  }
  StatusOr<int> Open(bool pass) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      return Status(StatusCode::kInternal, "socketpair");
    }
    StreamServeOptions o;
    o.workdir = "/";
    sigemptyset(&o.child_mask);
    server_ = std::thread([fd = pair[1], o] { ServeStream(fd, o); });
    runner_protocol::StreamOpen open;
    open.kind = "tcp";
    open.port = port_;
    open.pass_socket = pass;
    return agent::HandshakeStream(pair[0], open);
  }
  // Bytes both ways between the agent's end and the service's accepted connection.
  void RoundTrip(int agent_end) {
    int service = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(service, 0);
    ASSERT_TRUE(internal::WriteAll(agent_end, "ping"));
    char buf[16] = {};
    ASSERT_EQ(read(service, buf, 4), 4);
    EXPECT_EQ(std::string(buf, 4), "ping");
    ASSERT_TRUE(internal::WriteAll(service, "pong"));
    ASSERT_EQ(read(agent_end, buf, 4), 4);
    EXPECT_EQ(std::string(buf, 4), "pong");
    close(service);
    EXPECT_EQ(read(agent_end, buf, 4), 0) << "the service's end reaches the agent";
  }
  static int Domain(int fd) {
    int domain = -1;
    socklen_t len = sizeof domain;
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
    return domain;
  }
  int listener_ = -1;
  int port_ = 0;
  std::thread server_;
};

TEST_F(TcpStreamTest, TheConnectedSocketIsHandedToTheAgentWhenAskedFor) {
  auto fd = Open(true);
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_EQ(Domain(*fd), AF_INET) << "the kernel's own TCP connection";
  EXPECT_EQ(fcntl(*fd, F_GETFL) & O_NONBLOCK, 0) << "blocking, as the agent's bridge reads it";
  RoundTrip(*fd);
  close(*fd);
}

TEST_F(TcpStreamTest, WithoutAskingTheRunnerRelaysTheBytes) {
  auto fd = Open(false);
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_EQ(Domain(*fd), AF_UNIX);
  RoundTrip(*fd);
  close(*fd);
}

// A kernel's runner is not trusted: what it hands over must be a TCP socket, and nothing it
// sends unasked is kept.
TEST_F(TcpStreamTest, AHandedOverDescriptorThatIsNoTcpSocketIsRefused) {
  for (bool asked : {true, false}) {
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    int pipe_fds[2];
    ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
    std::thread hostile([fd = pair[1], passed = pipe_fds[0]] {
      char c;
      while (read(fd, &c, 1) == 1 && c != '\n') {
      }
      internal::WriteAllWithDescriptor(fd, "{\"ok\":true,\"passed\":true}\n", passed);
      close(fd);
    });
    runner_protocol::StreamOpen open;
    open.kind = "tcp";
    open.port = port_;
    open.pass_socket = asked;
    auto fd = agent::HandshakeStream(pair[0], open);
    hostile.join();
    EXPECT_FALSE(fd.ok()) << "asked " << asked;
    if (fd.ok()) close(*fd);
    // The pipe's read end went to the agent and was closed there: its write end now fails.
    close(pipe_fds[0]);
    signal(SIGPIPE, SIG_IGN);
    EXPECT_EQ(write(pipe_fds[1], "x", 1), -1) << "the agent still holds the passed pipe";
    close(pipe_fds[1]);
  }
}

}  // namespace
}  // namespace bai::server
