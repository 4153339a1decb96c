// SPDX-License-Identifier: Apache-2.0
// bai-kernel-runner as a process, outside any container: the NDJSON protocol over its Unix
// socket (docs/agent-protocol.md, "Agent ⇄ kernel runner").
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

namespace bai {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class RunnerClient {
 public:
  explicit RunnerClient(std::string const& path) {
    for (int i = 0; i < 500 && fd_ < 0; ++i) {
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        fd_ = fd;
      } else {
        close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    timeval tv{20, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RunnerClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return fd_ >= 0; }

  // One message; a framed output's bytes (after its header line) become its "data".
  json Read() {
    std::size_t pos;
    while ((pos = buf_.find('\n')) == std::string::npos) {
      if (!Fill()) return json();
    }
    auto j = json::parse(buf_.substr(0, pos), nullptr, false);
    buf_.erase(0, pos + 1);
    if (j.is_object() && j.contains("size")) {
      auto size = j["size"].get<std::size_t>();
      while (buf_.size() < size + 1) {
        if (!Fill()) return json();
      }
      EXPECT_EQ(buf_[size], '\n') << "a framed output ends with a newline";
      j["data"] = buf_.substr(0, size);
      buf_.erase(0, size + 1);
    }
    return j;
  }
  bool Fill() {
    char chunk[4096];
    ssize_t n = read(fd_, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
  void Send(json const& j) {
    std::string line = j.dump() + "\n";
    ASSERT_EQ(write(fd_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }

  struct Outcome {
    std::string out, err, status;
    int exit_code = -1;
  };
  /// Sends `op` and collects messages until finished or waiting-input.
  Outcome Run(json const& op) {
    Send(op);
    Outcome o;
    for (;;) {
      json m = Read();
      if (m.is_null()) {
        o.status = "eof";
        return o;
      }
      std::string type = m.value("type", "");
      if (type == "stdout") o.out += m.value("data", "");
      if (type == "stderr") o.err += m.value("data", "");
      if (type == "finished" || type == "waiting-input") {
        EXPECT_EQ(m.value("run_id", ""), op.value("run_id", "")) << m.dump();
        o.status = type;
        o.exit_code = m.value("exitCode", -1);
        return o;
      }
    }
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

class KernelRunnerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Start(std::string const& runtime) {
    socket_ = dir_.path() + "/runner.sock";
    runner_ = std::make_unique<testing_util::BackgroundProcess>(
        std::vector<std::string>{testing_util::BinPath("bai-kernel-runner"), "--socket", socket_,
                                 "--runtime", runtime, "--workdir", dir_.path()});
    client_ = std::make_unique<RunnerClient>(socket_);
    ASSERT_TRUE(client_->connected());
    json hello = client_->Read();
    ASSERT_EQ(hello.value("type", ""), "hello") << hello.dump();
    EXPECT_EQ(hello.value("runtime", ""), runtime);
  }

  testing_util::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing_util::BackgroundProcess> runner_;
  std::unique_ptr<RunnerClient> client_;
};

TEST_F(KernelRunnerTest, PythonQueryKeepsStateAndEchoesTheLastExpression) {
  Start("python");
  auto a = client_->Run({{"op", "query"}, {"run_id", "r1"}, {"code", "x = 6 * 7\nprint('hi')\nx"}});
  EXPECT_EQ(a.status, "finished");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, "hi\n42\n");
  auto b = client_->Run({{"op", "query"}, {"run_id", "r2"}, {"code", "x + 1"}});
  EXPECT_EQ(b.out, "43\n");
  // None is not echoed, like an interactive prompt.
  auto c = client_->Run({{"op", "query"}, {"run_id", "r3"}, {"code", "None"}});
  EXPECT_EQ(c.out, "");
}

TEST_F(KernelRunnerTest, PythonExceptionGivesTracebackAndExitCodeOne) {
  Start("python");
  auto r = client_->Run({{"op", "query"}, {"run_id", "e"}, {"code", "1/0"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("ZeroDivisionError"));
  EXPECT_THAT(r.err, HasSubstr("Traceback"));
  auto bad = client_->Run({{"op", "query"}, {"run_id", "s"}, {"code", "def f(:"}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("SyntaxError"));
  // sys.exit(N) gives N and keeps the interpreter (and its state).
  client_->Run({{"op", "query"}, {"run_id", "v"}, {"code", "kept = 5"}});
  auto ex = client_->Run({{"op", "query"}, {"run_id", "x"}, {"code", "import sys; sys.exit(4)"}});
  EXPECT_EQ(ex.exit_code, 4);
  auto after = client_->Run({{"op", "query"}, {"run_id", "y"}, {"code", "kept"}});
  EXPECT_EQ(after.out, "5\n");
}

TEST_F(KernelRunnerTest, PythonInputBecomesWaitingInput) {
  Start("python");
  auto w = client_->Run(
      {{"op", "query"}, {"run_id", "in"}, {"code", "n = input('name? ')\nprint('hello', n)"}});
  EXPECT_EQ(w.status, "waiting-input");
  EXPECT_EQ(w.out, "name? ");
  auto done = client_->Run({{"op", "input"}, {"run_id", "in"}, {"text", "ada"}});
  EXPECT_EQ(done.status, "finished");
  EXPECT_EQ(done.out, "hello ada\n");
}

TEST_F(KernelRunnerTest, BatchRunsUnderShWithItsExitCodeAndBothStreams) {
  Start("python");
  auto r =
      client_->Run({{"op", "batch"}, {"run_id", "b"}, {"exec", "echo out; echo err >&2; exit 3"}});
  EXPECT_EQ(r.status, "finished");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  // Steps run in order; a failing build stops before exec.
  auto steps = client_->Run(
      {{"op", "batch"}, {"run_id", "s"}, {"build", "echo build; exit 2"}, {"exec", "echo exec"}});
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_EQ(steps.out, "build\n");
  // A job killed by a signal reports 128+N.
  auto killed = client_->Run({{"op", "batch"}, {"run_id", "k"}, {"exec", "kill -9 $$"}});
  EXPECT_EQ(killed.exit_code, 137);
  // Output that is not valid UTF-8 still arrives (replaced), and the run still finishes.
  auto binary = client_->Run({{"op", "batch"}, {"run_id", "u"}, {"exec", "printf '\\377\\303'"}});
  EXPECT_EQ(binary.status, "finished");
}

// Batch runs go side by side: a command started while a long job runs finishes first, a query
// is not held up by the job either, and an interrupt naming one run leaves the others alone.
TEST_F(KernelRunnerTest, BatchRunsGoSideBySide) {
  Start("python");
  client_->Send({{"op", "batch"}, {"run_id", "job"}, {"exec", "sleep 5; echo job"}});
  client_->Send({{"op", "batch"}, {"run_id", "job"}, {"exec", "true"}});
  EXPECT_EQ(client_->Read().value("type", ""), "error") << "a run id already running";
  auto side = client_->Run({{"op", "batch"}, {"run_id", "side"}, {"exec", "echo beside"}});
  EXPECT_EQ(side.status, "finished");
  EXPECT_EQ(side.out, "beside\n");
  auto query = client_->Run({{"op", "query"}, {"run_id", "q"}, {"code", "print(6 * 7)"}});
  EXPECT_EQ(query.out, "42\n");
  client_->Send({{"op", "batch"}, {"run_id", "other"}, {"exec", "sleep 30"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto stopped = client_->Run({{"op", "interrupt"}, {"run_id", "other"}});
  EXPECT_EQ(stopped.status, "finished");
  EXPECT_EQ(stopped.exit_code, 130) << "SIGINT to that run only";
  client_->Send({{"op", "status"}});
  json status = client_->Read();
  EXPECT_EQ(status.value("type", ""), "status");
  EXPECT_TRUE(status.value("busy", false)) << "the job still runs: " << status.dump();
  EXPECT_EQ(status.value("run_id", ""), "job");
}

TEST_F(KernelRunnerTest, ShellQueryKeepsVariablesAndDirectory) {
  Start("shell");
  auto a = client_->Run({{"op", "query"}, {"run_id", "1"}, {"code", "A=5; cd /"}});
  EXPECT_EQ(a.exit_code, 0);
  auto b = client_->Run({{"op", "query"}, {"run_id", "2"}, {"code", "echo $A $(pwd); false"}});
  EXPECT_EQ(b.out, "5 /\n");
  EXPECT_EQ(b.exit_code, 1);
}

TEST_F(KernelRunnerTest, InterruptStopsTheRunningSnippet) {
  Start("python");
  client_->Send({{"op", "query"}, {"run_id", "long"}, {"code", "import time\ntime.sleep(60)"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto r = client_->Run({{"op", "interrupt"}, {"run_id", "long"}});
  EXPECT_EQ(r.status, "finished");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("KeyboardInterrupt"));
}

TEST_F(KernelRunnerTest, InterruptBetweenSnippetsKeepsTheInterpreter) {
  Start("python");
  client_->Run({{"op", "query"}, {"run_id", "a"}, {"code", "kept = 7"}});
  client_->Send({{"op", "interrupt"}});  // nothing runs: ignored by the runner
  auto b = client_->Run({{"op", "query"}, {"run_id", "b"}, {"code", "kept"}});
  EXPECT_EQ(b.out, "7\n");
}

TEST_F(KernelRunnerTest, OutputWaitsForAReconnectingAgent) {
  Start("python");
  client_->Send({{"op", "batch"}, {"run_id", "late"}, {"exec", "sleep 0.3; echo done-late"}});
  client_.reset();  // the agent goes away (restart) while the job runs
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  client_ = std::make_unique<RunnerClient>(socket_);
  ASSERT_EQ(client_->Read().value("type", ""), "hello");
  std::string out;
  json m;
  while (!(m = client_->Read()).is_null() && m.value("type", "") != "finished") {
    out += m.value("data", "");
  }
  EXPECT_EQ(out, "done-late\n");
  EXPECT_EQ(m.value("exitCode", -1), 0);
}

TEST_F(KernelRunnerTest, MalformedMessagesAreAnsweredNotFatal) {
  Start("python");
  client_->Send(json::array({1, 2}));
  json e1 = client_->Read();
  EXPECT_EQ(e1.value("type", ""), "error");
  client_->Send({{"op", "no-such-op"}});
  EXPECT_EQ(client_->Read().value("type", ""), "error");
  auto still = client_->Run({{"op", "query"}, {"run_id", "ok"}, {"code", "1+1"}});
  EXPECT_EQ(still.out, "2\n");
}

TEST_F(KernelRunnerTest, SigtermEndsTheRunnerAndItsChildren) {
  Start("python");
  client_->Send({{"op", "batch"}, {"run_id", "x"}, {"exec", "sleep 60"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(runner_->Stop(SIGTERM, 5000), 0);
}

}  // namespace
}  // namespace bai
