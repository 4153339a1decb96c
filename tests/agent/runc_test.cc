// SPDX-License-Identifier: Apache-2.0
// Real containers: an in-process manager, a `bai-agent --backend runc` process and the `bai` CLI.
// Label `root`: these need root, runc and cgroups (CI runs them as root). Every agent here has
// its own id and state directory, so its containers and cgroups are its own and are removed at
// the end of each test.
#include "bai/client.h"
#include "bai/protocol/usage_wire.h"
#include "bai/session_client.h"

#include "tests/agent/runc_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>

namespace bai {
namespace {

using namespace runc_testing;  // NOLINT(build/namespaces)
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(RuncTest, BatchJobPrintsItsOutputAndExitsWithItsCode) {
  auto ok = Bai({"run", "python", "--", "python3", "-c", "print(6*7)"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "42\n");
  auto three = Bai({"run", "shell", "--", "sh", "-c", "echo failing; exit 3"});
  EXPECT_EQ(three.exit_code, 3) << three.err;
  EXPECT_EQ(three.out, "failing\n");
  // Arguments arrive exactly as typed.
  auto argv = Bai({"run", "python", "--", "python3", "-c", "import sys; print(sys.argv[1:])", "a b",
                   "$HOME", "it's"});
  EXPECT_EQ(argv.out, "['a b', '$HOME', \"it's\"]\n");
  // Hardening (new user, 3): nproc saw the host's CPUs inside a cpu=1 kernel.
  auto nproc = Bai({"run", "-r", "cpu=1", "shell", "--", "nproc"});
  EXPECT_EQ(nproc.exit_code, 0) << nproc.err;
  EXPECT_EQ(nproc.out, "1\n");
  auto count = Bai({"run", "-r", "cpu=1.5", "python", "--", "python3", "-c",
                    "import os; print(len(os.sched_getaffinity(0)))"});
  EXPECT_EQ(count.out, std::to_string(std::min<long>(2, sysconf(_SC_NPROCESSORS_ONLN))) + "\n")
      << count.err;
}

TEST_F(RuncTest, AnAppStartsOnceStopsAndStartsAgain) {
  ASSERT_FALSE(Interactive("apps", R"({"cpu":1,"mem":"256m"})").empty());
  auto start = [&] {
    auto r = Bai({"api", "POST", "/session/apps/start-service", "-d", R"({"app":"http"})"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return internal::ParseJson(r.out).value_or(json()).value("status", "");
  };
  auto probe = [&] {
    return Bai({"run", "python", "--name", "apps", "-c",
                "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 8000), "
                "timeout=3).close(); print('open')\nexcept Exception as e:\n    "
                "print(type(e).__name__)"})
        .out;
  };
  EXPECT_EQ(start(), "started");
  EXPECT_EQ(start(), "running");  // once
  EXPECT_EQ(probe(), "open\n");
  auto stop = Bai({"app", "stop", "apps", "http"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.err, "http of apps stopped\n");
  EXPECT_EQ(probe(), "ConnectionRefusedError\n");
  // Stopping what is not running is fine; a terminal or an unknown app is refused.
  EXPECT_EQ(Bai({"app", "stop", "apps", "http"}).exit_code, 0);
  auto terminal = Bai({"app", "stop", "apps", "terminal"});
  EXPECT_NE(terminal.exit_code, 0);
  EXPECT_THAT(terminal.err, HasSubstr("terminal"));
  auto unknown = Bai({"app", "stop", "apps", "nope"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("No such app service"));
  EXPECT_EQ(start(), "started");  // afresh
  EXPECT_EQ(probe(), "open\n");
  Bai({"rm", "apps"});
}

// bai shell and bai exec -it in a real container, driven through tmux as a person would: the
// work user's login shell on a terminal of its own, the window size following tmux's, Ctrl-C
// reaching the remote program, the exit code passed through.
TEST_F(RuncTest, ATerminalInTheContainerFollowsTheWindowAndCtrlC) {
  if (access("/usr/bin/tmux", X_OK) != 0) GTEST_SKIP() << "needs tmux (scripts/install-deps.sh)";
  ASSERT_FALSE(Interactive("term", R"({"cpu":1,"mem":"256m"})").empty());
  std::string sock = "bai-rt-" + std::to_string(getpid());
  std::string env;
  for (auto const& [k, v] : env_) env += k + "=" + ShellJoin({v}) + " ";
  std::string done = dir_.path() + "/term.exit";
  auto tmux = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/tmux", "-L", sock});
    return testing_util::RunProcess(args);
  };
  // Polls the screen until it shows `text` (10 s).
  std::string target = "t";
  auto screen_shows = [&](std::string const& text) {
    for (int i = 0; i < 200; ++i) {
      auto pane = tmux({"capture-pane", "-p", "-t", target});
      if (pane.out.find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "the screen never showed " << text << ":\n"
                  << tmux({"capture-pane", "-p", "-t", target}).out;
    return false;
  };
  ASSERT_EQ(tmux({"new-session", "-d", "-s", "t", "-x", "100", "-y", "30",
                  "env " + env + ShellJoin({testing_util::BinPath("bai")}) +
                      " shell term; echo $? > " + done + "; sleep 5"})
                .exit_code,
            0);
  // Typed once the shell shows its prompt (a login shell may drop what came before).
  ASSERT_TRUE(screen_shows("$"));
  tmux({"send-keys", "-t", "t", "echo u-$(id -u)-$(tty | cut -c1-8)-; stty size", "Enter"});
  EXPECT_TRUE(screen_shows("u-1000-/dev/pts-"));
  EXPECT_TRUE(screen_shows("30 100"));
  tmux({"resize-window", "-t", "t", "-x", "120", "-y", "40"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  tmux({"send-keys", "-t", "t", "clear; stty size", "Enter"});
  EXPECT_TRUE(screen_shows("40 120"));
  tmux({"send-keys", "-t", "t", "sleep 30", "Enter"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  tmux({"send-keys", "-t", "t", "C-c"});
  tmux({"send-keys", "-t", "t", "echo after-$?", "Enter"});
  EXPECT_TRUE(screen_shows("after-130"));
  tmux({"send-keys", "-t", "t", "exit 4", "Enter"});
  for (int i = 0; i < 200 && ReadFile(done).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ReadFile(done), "4\n");
  // bai exec -it: the command instead of a shell, its exit code.
  std::string done2 = dir_.path() + "/exec.exit";
  target = "e";
  ASSERT_EQ(tmux({"new-session", "-d", "-s", "e", "-x", "80", "-y", "24",
                  "env " + env + ShellJoin({testing_util::BinPath("bai")}) +
                      " exec -it term -- python3 -c " +
                      ShellJoin({"print('py-' + input('name? ')); exit(6)"}) + "; echo $? > " +
                      done2 + "; sleep 5"})
                .exit_code,
            0);
  EXPECT_TRUE(screen_shows("name?"));  // the pane drops trailing blanks
  tmux({"send-keys", "-t", "e", "work", "Enter"});
  EXPECT_TRUE(screen_shows("py-work"));
  for (int i = 0; i < 200 && ReadFile(done2).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ReadFile(done2), "6\n");
  // Issue 43, 9: keys typed at once, before the remote terminal is up, are kept and run (raw
  // mode was entered with TCSAFLUSH, which threw them away).
  target = "k";
  ASSERT_EQ(
      tmux({"new-session", "-d", "-s", "k", "-x", "100", "-y", "30",
            "env " + env + ShellJoin({testing_util::BinPath("bai")}) + " shell term; sleep 5"})
          .exit_code,
      0);
  tmux({"send-keys", "-t", "k", "echo typed-ahead-$((6*7))", "Enter"});
  EXPECT_TRUE(screen_shows("typed-ahead-42"));
  tmux({"kill-server"});
  Bai({"rm", "term"});
}

// A loopback port nothing listens on now.
int FreePort() {
  for (int candidate = 20000 + getpid() % 20000;; ++candidate) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(candidate));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool free = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(s);
    if (free) return candidate;
  }
}

// The built-in image's HTTP app through bai app, from a real container: a 100 MB file byte
// for byte, and 50 requests at once.
TEST_F(RuncTest, AnHttpAppIsFetchedWholeThroughBaiApp) {
  ASSERT_FALSE(Interactive("webapp", R"({"cpu":1,"mem":"512m"})").empty());
  auto made = Bai(
      {"run", "python", "--name", "webapp", "-c",
       "import hashlib, random\n"
       "data = random.Random(7).randbytes(100 << 20)\n"
       "open('/home/work/big.bin', 'wb').write(data)\n"
       "for i in range(5): open(f'/home/work/small{i}.txt', 'w').write(f'small-{i}\\n' * 1000)\n"
       "print(hashlib.sha256(data).hexdigest())"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_EQ(made.out.size(), 65u) << made.out;
  int port = FreePort();
  testing_util::BackgroundProcess app(
      {testing_util::BinPath("bai"), "app", "webapp", "http", "-b", std::to_string(port)}, env_);
  ASSERT_THAT(app.WaitForLine("http://", 60000), HasSubstr(std::to_string(port)))
      << app.Transcript();
  auto fetched = testing_util::RunProcess(
      {"/usr/bin/python3", "-c",
       "import concurrent.futures, hashlib, sys, urllib.request\n"
       "base = sys.argv[1]\n"
       "h = hashlib.sha256()\n"
       "with urllib.request.urlopen(base + 'big.bin', timeout=120) as r:\n"
       "    while True:\n"
       "        b = r.read(1 << 20)\n"
       "        if not b: break\n"
       "        h.update(b)\n"
       "print(h.hexdigest())\n"
       "def get(i):\n"
       "    body = urllib.request.urlopen(base + f'small{i % 5}.txt', timeout=60).read()\n"
       "    return body == (f'small-{i % 5}\\n' * 1000).encode()\n"
       "with concurrent.futures.ThreadPoolExecutor(50) as pool:\n"
       "    print(sum(pool.map(get, range(50))))\n",
       "http://127.0.0.1:" + std::to_string(port) + "/"});
  EXPECT_EQ(fetched.exit_code, 0) << fetched.err;
  EXPECT_EQ(fetched.out, made.out + "50\n") << fetched.err;
  Bai({"rm", "webapp"});
}

// A client that leaves /stream/session/{id}/execute mid-run interrupts its run: the kernel's
// interpreter is free for the next query at once, not after the 60 s the snippet would take.
TEST_F(RuncTest, AClientLeavingTheExecuteStreamInterruptsItsRun) {
  ASSERT_FALSE(Interactive("leaver", R"({"cpu":1,"mem":"256m"})").empty());
  Options o;
  o.endpoints = {url_};
  o.access_key = env_["BACKEND_ACCESS_KEY"];
  o.secret_key = env_["BACKEND_SECRET_KEY"];
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().message();
  SessionClient sessions(*client);
  SessionClient::StreamExecuteOptions run;
  run.cancel = std::make_shared<StreamCancel>();
  std::string seen;
  run.on_output = [&](std::string const&, std::string const& text) {
    seen += text;
    if (seen.find("started") != std::string::npos) run.cancel->Cancel();
  };
  auto t0 = std::chrono::steady_clock::now();
  (void)sessions.ExecuteStream(
      "leaver", "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('finished')",
      run);
  EXPECT_THAT(seen, HasSubstr("started"));
  auto next = Bai({"run", "python", "--name", "leaver", "-c", "print('free')"});
  EXPECT_EQ(next.out, "free\n") << next.err << "agent alive " << (kill(agent_->pid(), 0) == 0)
                                << " connected " << manager_->agents().Connected().count(agent_id_);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30))
      << "the left run was not interrupted";
  EXPECT_THAT(seen, Not(HasSubstr("finished")));
  Bai({"rm", "leaver"});
}

// Jupyter, where the host has Debian's jupyter-notebook (the built-in python image then
// declares it): started through bai app, its API answers.
TEST_F(RuncTest, JupyterIsAnAppWhereTheHostHasIt) {
  if (access("/usr/bin/jupyter-notebook", X_OK) != 0) {
    GTEST_SKIP() << "the host has no /usr/bin/jupyter-notebook (Debian's jupyter-notebook): the "
                    "built-in image declares no jupyter app";
  }
  ASSERT_FALSE(Interactive("notebook", R"({"cpu":1,"mem":"1g"})").empty());
  auto apps = Bai({"-o", "json", "app", "ls", "notebook"});
  EXPECT_THAT(apps.out, HasSubstr("\"jupyter\"")) << apps.err;
  int port = FreePort();
  testing_util::BackgroundProcess app(
      {testing_util::BinPath("bai"), "app", "notebook", "jupyter", "-b", std::to_string(port)},
      env_);
  ASSERT_THAT(app.WaitForLine("http://", 60000), HasSubstr(std::to_string(port)))
      << app.Transcript();
  auto api = testing_util::RunProcess(
      {"/usr/bin/python3", "-c",
       "import json, sys, urllib.request\n"
       "print(json.load(urllib.request.urlopen(sys.argv[1], timeout=30))['version'][:2])",
       "http://127.0.0.1:" + std::to_string(port) + "/api"});
  EXPECT_EQ(api.exit_code, 0) << api.err;
  EXPECT_THAT(api.out, ::testing::MatchesRegex("[0-9]\\.\n")) << api.err;
  Bai({"rm", "notebook"});
}

TEST_F(RuncTest, QueryModeKeepsStateInANamedSession) {
  auto a = Bai({"run", "python", "--name", "repl", "-c", "x = 6 * 7"});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  auto b = Bai({"run", "python", "--name", "repl", "-c", "print(x)"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "42\n");
  auto err = Bai({"run", "python", "--name", "repl", "-c", "raise ValueError('bad')"});
  EXPECT_EQ(err.exit_code, 1);
  EXPECT_THAT(err.err, HasSubstr("ValueError: bad"));
  auto input = Bai({"run", "python", "--name", "repl", "-c", "print(input() * 2)"}, "ab\n");
  EXPECT_EQ(input.out, "abab\n");
  // Issue 43, 5h: a query printing 20 MB comes whole, in answers of at most 1 MiB (one answer
  // of it all crossed the agent's control link and cut it), and the kernel answers at once
  // after.
  auto chatty = Bai({"run", "python", "--name", "repl", "-c",
                     "import sys\nfor i in range(200000): sys.stdout.write('x' * 99 + '\\n')"});
  EXPECT_EQ(chatty.exit_code, 0) << chatty.err.substr(0, 500);
  EXPECT_EQ(chatty.out.size(), 20000000u);
  EXPECT_EQ(chatty.out.find_first_not_of("x\n"), std::string::npos);
  auto next = Bai({"run", "python", "--name", "repl", "-c", "print(x + 1)"});
  EXPECT_EQ(next.out, "43\n") << next.err;
  // And through bai exec's own stream, with stdin: 20 MB out, 5 MB in.
  auto exec =
      Bai({"exec", "repl", "--", "sh", "-c", "head -c 20000000 /dev/zero | base64 -w 100 | wc -c"});
  EXPECT_EQ(exec.out, "26933335\n") << exec.err;
  std::string five_mb(5 << 20, 'y');
  auto in = Bai({"exec", "repl", "--", "wc", "-c"}, five_mb);
  EXPECT_EQ(in.out, std::to_string(5 << 20) + "\n") << in.err;
  EXPECT_EQ(Bai({"rm", "repl"}).exit_code, 0);
}

// Issue 43, 5h, on the execute WebSocket itself: a client that starts a chatty query and never
// reads, then leaves, costs the next query nothing (it hung 20 s); 2,000 frames sent during a
// run do not change its outcome (the first is the input a prompt asks for; the rest mean
// nothing).
TEST_F(RuncTest, AClientThatNeverReadsOrFloodsFramesLeavesTheRunsAlone) {
  ASSERT_EQ(Bai({"run", "python", "--name", "flood", "-c", "x = 42"}).exit_code, 0);
  Options o;
  o.endpoints = {url_};
  o.access_key = env_["BACKEND_ACCESS_KEY"];
  o.secret_key = env_["BACKEND_SECRET_KEY"];
  o.retry.max_attempts = 1;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto open = [&] {
    auto ws = client->OpenWebSocket(ApiRequest("GET", "/stream/session/flood/execute"));
    EXPECT_TRUE(ws.ok()) << ws.status().message();
    return ws.ok() ? std::move(*ws) : nullptr;
  };
  auto query = [](std::string const& code) {
    return WebSocketMessage{
        json{{"code", code}, {"mode", "query"}, {"options", json::object()}}.dump(), false};
  };
  {
    // libbai stops reading the network when its queue is full and Receive is never called: to
    // the server this client has stopped reading.
    auto ws = open();
    ASSERT_NE(ws, nullptr);
    ASSERT_TRUE(ws->Send(query("import sys\nfor i in range(3000000): sys.stdout.write('x' * "
                               "99 + '\\n')"))
                    .ok());
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }  // gone, mid-run
  auto start = std::chrono::steady_clock::now();
  auto next = Bai({"run", "python", "--name", "flood", "-c", "print(x)"});
  EXPECT_EQ(next.out, "42\n") << next.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
      << "the next query waited for the gone client's run";

  // Reads the run to its end: the console's stdout, the exit code, the close code.
  auto finish = [](WebSocketConnection& ws) {
    std::string out;
    int exit_code = -1;
    for (int i = 0; i < 1000; ++i) {
      auto e = ws.Receive(std::chrono::seconds(30));
      if (e.kind != WebSocketEvent::Kind::kMessage) break;
      auto frame = json::parse(e.message.data, nullptr, false);
      for (auto const& item : frame.value("console", json::array())) {
        if (item.is_array() && item.size() == 2 && item[0] == "stdout") out += item[1];
      }
      if (frame.value("status", "") == "finished") exit_code = frame.value("exitCode", -1);
    }
    return std::tuple{out, exit_code, ws.close_code()};
  };
  auto flood = [](WebSocketConnection& ws) {
    for (int i = 0; i < 2000; ++i) {
      if (!ws.Send({"extra " + std::to_string(i), false}).ok()) return i;
    }
    return 2000;
  };
  {
    auto ws = open();
    ASSERT_NE(ws, nullptr);
    ASSERT_TRUE(ws->Send(query("import time\ntime.sleep(1)\nprint(x * 2)")).ok());
    EXPECT_EQ(flood(*ws), 2000);
    EXPECT_EQ(finish(*ws), std::tuple(std::string("84\n"), 0, 1000));
  }
  {
    // Typed ahead of the prompt (as 24.09, whose socket queues them, takes them), the first
    // frame is the input; the other 1,999 change nothing.
    auto ws = open();
    ASSERT_NE(ws, nullptr);
    ASSERT_TRUE(ws->Send(query("print(input() + '!')")).ok());
    EXPECT_EQ(flood(*ws), 2000);
    EXPECT_EQ(finish(*ws), std::tuple(std::string("extra 0!\n"), 0, 1000));
  }
  EXPECT_EQ(Bai({"run", "python", "--name", "flood", "-c", "print(x + 1)"}).out, "43\n");
  EXPECT_EQ(Bai({"rm", "flood"}).exit_code, 0);
}

TEST_F(RuncTest, CommitArchivesTheKernelsWritableFiles) {
  auto a = Bai({"run", "python", "--name", "snap", "-c",
                "open('/home/work/notes.txt', 'w').write('kept'); "
                "open('/tmp/scratch.bin', 'wb').write(b'x' * 5000)"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto r = Bai(
      {"-o", "json", "api", "POST", "/session/snap/commit", "-d", R"({"filename": "snap.tar"})"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto started = internal::ParseJson(r.out).value_or(json());
  std::string path = started.value("path", "");
  ASSERT_FALSE(path.empty()) << r.out;
  bool ready = false;
  for (int i = 0; i < 200 && !ready; ++i) {
    auto st = Bai({"-o", "json", "api", "GET", "/session/snap/commit"});
    ready = internal::ParseJson(st.out).value_or(json()).value("status", "") == "ready";
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ready);
  ASSERT_TRUE(fs::exists(path)) << path;
  EXPECT_FALSE(fs::exists(path + ".partial"));
  auto list = testing_util::RunProcess({"/usr/bin/tar", "-tvf", path});
  EXPECT_THAT(list.out, HasSubstr("home/work/notes.txt"));
  EXPECT_THAT(list.out, HasSubstr("tmp/scratch.bin"));
  EXPECT_THAT(list.out, HasSubstr("1000/1000")) << "owned by the kernel's user, numerically";
  auto content = testing_util::RunProcess({"/usr/bin/tar", "-xOf", path, "home/work/notes.txt"});
  EXPECT_EQ(content.out, "kept");
  EXPECT_EQ(Bai({"rm", "snap"}).exit_code, 0);
}

TEST_F(RuncTest, InterruptStopsARunningSnippetAndLogsFollowTheSession) {
  auto a = Bai({"run", "python", "--name", "intr", "-c", "print('first output')"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  testing_util::ProcessResult waited;
  std::atomic<bool> done{false};
  std::thread runner([&] {
    waited = Bai({"run", "python", "--name", "intr", "-c", "import time\ntime.sleep(60)"});
    done = true;
  });
  // Interrupt until the snippet ends (an interrupt before it started reaches an idle kernel and
  // does nothing), so a slow machine does not turn this into a 60 s sleep.
  for (int i = 0; i < 40 && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (done) break;
    auto r = Bai({"api", "POST", "/session/intr/interrupt"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  runner.join();
  EXPECT_EQ(waited.exit_code, 1) << waited.err;
  EXPECT_THAT(waited.err, HasSubstr("KeyboardInterrupt"));
  // The interpreter survives the interrupt.
  EXPECT_EQ(Bai({"run", "python", "--name", "intr", "-c", "print(2 + 2)"}).out, "4\n");
  auto logs = Bai({"logs", "intr"});
  EXPECT_THAT(logs.out, HasSubstr("first output"));
  Bai({"rm", "intr"});
}

TEST_F(RuncTest, RestartGivesAFreshKernelInTheSameSession) {
  ASSERT_EQ(Bai({"run", "python", "--name", "restart-me", "-c", "x = 1"}).exit_code, 0);
  std::string id = Info("restart-me").value("sessionId", "");
  auto r = Bai({"api", "PATCH", "/session/restart-me"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto info = Info("restart-me");
  EXPECT_EQ(info.value("status", ""), "RUNNING");
  EXPECT_EQ(info.value("sessionId", ""), id);
  EXPECT_TRUE(info["statusHistory"].contains("RESTARTING")) << info.dump();
  // A fresh interpreter: x is gone, the kernel works.
  auto gone = Bai({"run", "python", "--name", "restart-me", "-c", "x"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("NameError"));
  EXPECT_EQ(Bai({"run", "python", "--name", "restart-me", "-c", "print('back')"}).out, "back\n");
  Bai({"rm", "restart-me"});
}

// Virtual folders in a runc session: read and written by the kernel as the work user, a
// read-only mount refused writes inside the container, a folder in the trash not mounted.
TEST_F(RuncTest, MountedFoldersAreReadAndWrittenFromTheKernel) {
  for (auto const* name : {"rwdata", "rodata", "gone"}) {
    ASSERT_EQ(Bai({"vfolder", "create", name}).exit_code, 0) << name;
  }
  auto in = dir_.path() + "/in.txt";
  testing_util::WriteFileBytes(in, "uploaded\n");
  ASSERT_EQ(Bai({"vfolder", "upload", "rwdata", in}).exit_code, 0);
  ASSERT_EQ(Bai({"vfolder", "upload", "rodata", in}).exit_code, 0);
  std::string script =
      "cat /home/work/rwdata/in.txt; "
      "echo from-kernel > /home/work/rwdata/out.txt && echo wrote; "
      "echo changed >> /home/work/rwdata/in.txt && echo appended; "
      "mkdir /home/work/rwdata/sub && echo made; "
      "cat /home/work/in/in.txt; "
      "touch /home/work/in/x 2>/dev/null && echo ro-written || echo ro-refused; "
      "id -u";
  auto r = Bai({"run", "-m", "rwdata", "-m", "rodata:in:ro", "shell", "--", "sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "uploaded\nwrote\nappended\nmade\nuploaded\nro-refused\n1000\n");
  // What the kernel wrote is in the folder, owned by the work user.
  auto back = dir_.path() + "/back";
  ASSERT_EQ(Bai({"vfolder", "download", "rwdata", "out.txt", "in.txt", "--dst", back}).exit_code,
            0);
  EXPECT_EQ(testing_util::ReadFileBytes(back + "/out.txt"), "from-kernel\n");
  EXPECT_EQ(testing_util::ReadFileBytes(back + "/in.txt"), "uploaded\nchanged\n");
  auto files = internal::ParseJson(Bai({"-o", "json", "vfolder", "files", "rodata"}).out);
  ASSERT_TRUE(files.has_value());
  EXPECT_EQ((*files)["files"].size(), 1u) << "nothing written into the read-only folder";
  auto listed = internal::ParseJson(Bai({"-o", "json", "vfolder", "info", "rwdata"}).out);
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ((*listed)["num_files"], 2);
  // A folder in the trash is not mounted; the session is refused before it is queued.
  ASSERT_EQ(Bai({"vfolder", "rm", "gone"}).exit_code, 0);
  auto refused = Bai({"run", "-m", "gone", "shell", "--", "true"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, ::testing::HasSubstr("trash"));
}

TEST_F(RuncTest, AKernelThatCannotStartIsRefusedBeforeRunc) {
  // 4 KiB is below what any process needs: refused when asked for, in our words (it used to
  // reach runc and fail later with runc's text), and nothing is left behind.
  auto r = Bai({"-o", "json", "run", "-r", "mem=4k", "shell", "--", "true"});
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("at least 64m"));
  auto list = testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "list", "-q"});
  EXPECT_EQ(list.out, "");
}

TEST_F(RuncTest, MemoryLimitKillsAndReportsOom) {
  auto r = Bai({"-o", "json", "run", "-r", "mem=64m", "python", "--", "python3", "-c",
                "b = bytearray(200 * 1024 * 1024); print('survived')"});
  auto j = internal::ParseJson(r.out).value_or(json());
  EXPECT_EQ(r.exit_code, 137) << r.out << r.err;
  EXPECT_EQ(j.value("status_info", ""), "oom-killed") << r.out;
  EXPECT_THAT(j.value("logs", ""), Not(HasSubstr("survived")));
}

// Scratch on the agent's disk (the default where loop devices exist, as here): /home/work's size
// is a quota, and what is written there is not the session's memory, so a 128m job writes
// 200 MB and lives; past the quota a write fails with ENOSPC. Session info says so.
TEST_F(RuncTest, ScratchOnDiskIsAQuotaNotTheSessionsMemory) {
  agent_.reset();
  StartAgent({"--scratch", "disk", "--home-size", "256m", "--tmp-size", "32m"});
  auto r = Bai({"run", "-r", "mem=128m", "--name", "scratch-disk", "--detach", "python", "--", "sh",
                "-c",
                "head -c 200000000 /dev/zero > big && ls -l big | cut -d' ' -f5 && "
                "(head -c 100000000 /dev/zero > more) 2>&1 | grep -o 'No space left on device'; "
                "df -P /home/work /tmp | tail -2 | wc -l; sleep 30"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string logs;
  for (int i = 0; i < 200; ++i) {
    logs = Bai({"logs", "scratch-disk"}).out;
    if (logs.find("\n2\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(logs, "200000000\nNo space left on device\n2\n");
  auto info = Bai({"-o", "json", "session", "info", "scratch-disk"});
  auto j = internal::ParseJson(info.out).value_or(json());
  EXPECT_EQ(j.value("network", ""), "none") << info.out;
  ASSERT_TRUE(j.contains("scratch")) << info.out;
  EXPECT_EQ(j["scratch"].value("backing", ""), "disk");
  EXPECT_EQ(j["scratch"].value("home_bytes", 0), 256 << 20);
  EXPECT_EQ(j["scratch"].value("tmp_bytes", 0), 32 << 20);
  auto table = Bai({"session", "info", "scratch-disk"});
  EXPECT_THAT(table.out, HasSubstr("256.0 MiB /home/work, 32.0 MiB /tmp, on the agent's disk"));
  EXPECT_EQ(Bai({"rm", "scratch-disk"}).exit_code, 0);
}

// Scratch in memory: a job that fills a tmpfs /home/work past its memory limit is OOM-killed,
// and it never exits 0 (the shell went on after its writer was killed, and said 0).
TEST_F(RuncTest, AJobTheMemoryLimitKilledNeverExitsZero) {
  agent_.reset();
  StartAgent({"--scratch", "tmpfs", "--home-size", "1g"});
  auto r = Bai({"-o", "json", "run", "-r", "mem=128m", "python", "--", "sh", "-c",
                "head -c 300000000 /dev/zero > /home/work/big; echo went-on"});
  auto j = internal::ParseJson(r.out).value_or(json());
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(j.value("status_info", ""), "oom-killed") << r.out;
}

// Usage (issue 24): the agent reads each kernel's cgroup while it runs (live_stat, with the
// heartbeat) and just before the cgroup goes (last_stat); the manager reports both.
TEST_F(RuncTest, UsageIsReadFromTheKernelsCgroup) {
  auto today = [] {
    auto t = std::time(nullptr);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y%m%d", std::gmtime(&t));
    return std::string(buf);
  }();
  auto period = [&] {
    auto r =
        Bai({"api", "GET", "/resource/usage/period?start_date=" + today + "&end_date=" + today});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto projects = protocol::DecodeProjectUsages(r.out);
    EXPECT_TRUE(projects.ok()) << r.out;
    std::map<std::string, protocol::SessionUsage> by_name;
    if (projects.ok()) {
      for (auto const& p : *projects) {
        for (auto const& s : p.sessions) by_name[s.session_name] = s;
      }
    }
    return by_name;
  };
  // A job that keeps a core busy for about 1.5 s and touches 96 MiB.
  auto job =
      Bai({"run", "--name", "busy-job", "-r", "cpu=1,mem=512m", "python", "--", "python3", "-c",
           "import time\nb = bytearray(96 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
           "t = time.process_time()\nwhile time.process_time() - t < 1.5: pass\nprint('ok')"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  auto ended = period();
  ASSERT_TRUE(ended.count("busy-job"));
  auto const& u = ended["busy-job"].total_usage;
  EXPECT_GE(u.cpu_used, 1400) << ended["busy-job"].last_stat;
  EXPECT_LT(u.cpu_used, 60000);
  EXPECT_GE(u.mem_used, 96 << 20) << ended["busy-job"].last_stat;
  EXPECT_EQ(u.mem_allocated, std::int64_t{512} << 20);
  EXPECT_EQ(u.cpu_allocated, 1);
  EXPECT_TRUE(ended["busy-job"].used_time.has_value());

  // A running session's figures arrive with the heartbeats and grow.
  ASSERT_FALSE(Interactive("busy-live", R"({"cpu":1,"mem":"256m"})").empty());
  auto run = Bai({"exec", "busy-live", "--", "python3", "-c",
                  "import time\nt = time.process_time()\n"
                  "while time.process_time() - t < 1.0: pass"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  double live = 0;
  for (int i = 0; i < 100 && live < 900; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto now = period();
    if (now.count("busy-live")) live = now["busy-live"].total_usage.cpu_used;
  }
  EXPECT_GE(live, 900);
  EXPECT_EQ(Bai({"rm", "busy-live"}).exit_code, 0);
}

// Dotfiles (issue 24): written through the runner as the work user before the kernel runs, with
// their permission bits; a project's first, then the user's over the same path.
TEST_F(RuncTest, DotfilesAreInTheKernelsHomeBeforeItRuns) {
  auto put = [&](std::string const& scope, json body) {
    auto r = Bai({"api", "POST", "/" + scope + "-config/dotfiles", "-d", body.dump()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  put("group", {{"group", "default"},
                {"domain", "default"},
                {"path", ".rc"},
                {"permission", "644"},
                {"data", "project\n"}});
  put("group", {{"group", "default"},
                {"domain", "default"},
                {"path", "tools/conf"},
                {"permission", "640"},
                {"data", "shared\n"}});
  put("user", {{"path", ".rc"}, {"permission", "600"}, {"data", "mine\n"}});
  auto r = Bai({"run", "python", "--", "sh", "-c",
                "cat ~/.rc ~/tools/conf; stat -c '%a %u' ~/.rc ~/tools/conf"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "mine\nshared\n600 1000\n640 1000\n");
}

// Bootstrap scripts (issue 24): the keypair's stored one, or the session's own, run as the work
// user in /home/work before the kernel runs, their output in the session's logs; a failing one
// is said in the logs and does not stop the session.
TEST_F(RuncTest, TheBootstrapScriptRunsBeforeTheKernel) {
  auto stored = Bai({"api", "POST", "/user-config/bootstrap-script", "-d",
                     json{{"script", "#!/bin/sh\necho booting\nid -u > ~/boot-uid\n"}}.dump()});
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  auto r = Bai({"run", "--name", "booted", "python", "--", "sh", "-c", "cat ~/boot-uid; pwd"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1000\n/home/work\n");  // the job's stdout alone
  EXPECT_THAT(r.err, HasSubstr("booting\n"));
  EXPECT_THAT(Bai({"logs", "booted"}).err, HasSubstr("booting\n"));
  // The session's own script wins; a failure is logged and the job still runs.
  std::string own = dir_.path() + "/own.sh";
  testing_util::WriteFileBytes(own, "echo own-script >&2\nexit 3\n");
  auto failed = Bai({"run", "--name", "boot-fails", "--bootstrap-script", own, "python", "--", "sh",
                     "-c", "test ! -e ~/boot-uid && echo ran"});
  EXPECT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_EQ(failed.out, "ran\n");
  auto logs = Bai({"logs", "boot-fails"}).err;
  EXPECT_THAT(logs, HasSubstr("own-script\n"));
  EXPECT_THAT(logs, HasSubstr("bai: bootstrap script exited with status 3"));
  EXPECT_THAT(logs, Not(HasSubstr("booting")));
  auto missing =
      Bai({"run", "--bootstrap-script", dir_.path() + "/none.sh", "python", "--", "true"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot read it"));
}

// rescan_images (issue 24): an image imported into the store of a running agent is offered
// once the agents are asked to read their stores again.
TEST_F(RuncTest, ARescanFindsAnImageImportedWhileTheAgentRuns) {
  auto listed = [&] {
    auto r = Bai({"-o", "json", "admin", "image", "ls"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_THAT(listed(), Not(HasSubstr("\"imported-tool\"")));
  std::string root = dir_.path() + "/rootfs";
  testing_util::WriteFileBytes(root + "/etc/hello", "hello\n");
  std::string tarball = dir_.path() + "/tool.tar.gz";
  auto tar = testing_util::RunProcess({"/usr/bin/tar", "czf", tarball, "-C", root, "."});
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  // --state-dir after the subcommand, as server-reference/README.md writes it.
  auto import =
      testing_util::RunProcess({testing_util::BinPath("bai-agent"), "image", "import", tarball,
                                "--name", "imported-tool", "--state-dir", dir_.path() + "/agent"});
  ASSERT_EQ(import.exit_code, 0) << import.err;
  EXPECT_THAT(listed(), Not(HasSubstr("\"imported-tool\"")));  // the manager does not know yet
  auto rescan = Bai({"admin", "image", "rescan"});
  ASSERT_EQ(rescan.exit_code, 0) << rescan.err;
  // (Progress lines come only while the task runs: a rescan of one agent is usually over first.)
  EXPECT_THAT(rescan.out, HasSubstr("images on 1 agent"));
  // With its size: the one file's 6 bytes.
  auto images = nlohmann::json::parse(listed(), nullptr, false);
  nlohmann::json tool;
  for (auto const& i : images.value("images", nlohmann::json::array())) {
    if (i.value("name", "") == "imported-tool") tool = i;
  }
  ASSERT_TRUE(tool.is_object()) << images.dump();
  EXPECT_EQ(tool.value("size_bytes", -1), 6);
  EXPECT_EQ(tool.value("installed_agents", nlohmann::json()).size(), 1u);
}

TEST_F(RuncTest, SessionsCannotSeeEachOthersProcessesOrFiles) {
  std::string a = Interactive("iso-a", R"({"cpu": "0.5", "mem": "256m"})");
  std::string b = Interactive("iso-b", R"({"cpu": "0.5", "mem": "256m"})");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  auto wa = Bai({"run", "python", "--name", "iso-a", "-c",
                 "open('/home/work/secret-a', 'w').write('x'); open('/tmp/tmp-a', 'w').write('x');"
                 "import subprocess; p = subprocess.Popen(['sleep', '30'])"});
  EXPECT_EQ(wa.exit_code, 0) << wa.err;
  auto look = Bai({"run", "python", "--name", "iso-b", "-c",
                   "import os\n"
                   "print(sorted(os.listdir('/home/work')), sorted(os.listdir('/tmp')))\n"
                   "cmds = [open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') "
                   "if p.isdigit()]\n"
                   "print(any('sleep' in c for c in cmds))"});
  EXPECT_EQ(look.exit_code, 0) << look.err;
  EXPECT_THAT(look.out, Not(HasSubstr("secret-a")));
  EXPECT_THAT(look.out, Not(HasSubstr("tmp-a")));
  EXPECT_THAT(look.out, HasSubstr("False"));
  // And the host is not visible either: no host processes, no agent state, no secrets.
  auto host = Bai({"run", "shell", "--name", "iso-b2", "-c",
                   "ls /proc | grep -c '^[0-9]'; ls /etc/shadow /root 2>&1; id -u; "
                   "cat /proc/self/status | grep CapEff"});
  EXPECT_THAT(host.out, HasSubstr("No such file"));
  EXPECT_THAT(host.out, HasSubstr("1000"));
  EXPECT_THAT(host.out, HasSubstr("CapEff:\t0000000000000000"));
  Bai({"rm", "iso-a", "iso-b", "iso-b2"});
}

// Issue 43, 5g: as Docker's default profile, the work user can neither make a user namespace
// (clone(CLONE_NEWUSER) gave every capability inside it) nor use io_uring, and cannot ptrace
// or read the kernel runner (pid 1); threads (clone without it) and its own children still work.
TEST_F(RuncTest, UserNamespacesIoUringAndTheRunnerAreOutOfReach) {
  auto r = Bai({"run", "python", "--", "python3", "-c",
                "import ctypes, os, threading\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "libc.syscall.restype = ctypes.c_long\n"
                "def call(*args):\n"
                "    r = libc.syscall(*[ctypes.c_long(a) for a in args])\n"
                "    if r == 0: os._exit(0)  # a child that should not exist\n"
                "    return r, ctypes.get_errno()\n"
                "print('newuser', call(56, 0x10000000 | 17, 0, 0, 0, 0))\n"
                "params = ctypes.create_string_buffer(120)\n"
                "print('uring', call(425, 8, ctypes.addressof(params)))\n"
                "print('ptrace', call(101, 16, 1, 0, 0))\n"
                "try:\n"
                "    open('/proc/1/environ').read(); print('environ read')\n"
                "except PermissionError:\n"
                "    print('environ refused')\n"
                "t = threading.Thread(target=lambda: print('thread ran')); t.start(); t.join()\n"
                "pid = os.fork()\n"
                "if pid == 0: os._exit(7)\n"
                "print('child', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("newuser (-1, 1)"));
  EXPECT_THAT(r.out, HasSubstr("uring (-1, 1)"));
  EXPECT_THAT(r.out, HasSubstr("ptrace (-1, 1)"));
  EXPECT_THAT(r.out, HasSubstr("environ refused"));
  EXPECT_THAT(r.out, HasSubstr("thread ran"));
  EXPECT_THAT(r.out, HasSubstr("child 7"));
}

// Issue 43, 5g: the operator may let one image past part of the sandbox
// (--sandbox-exception python=userns,io_uring); that image's kernels then make a user namespace
// and an io_uring, another image's still cannot.
class RuncSandboxExceptionTest : public RuncTest {
 protected:
  std::vector<std::string> AgentArgs() const override {
    return {"--sandbox-exception", "python=userns,io_uring"};
  }
};

TEST_F(RuncSandboxExceptionTest, AnImageTheOperatorExemptsMakesAUserNamespace) {
  std::string const probe =
      "import ctypes, os\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "libc.syscall.restype = ctypes.c_long\n"
      "r = libc.unshare(0x10000000)\n"
      "print('unshare', r, ctypes.get_errno() if r else 0)\n"
      "params = ctypes.create_string_buffer(120)\n"
      "fd = libc.syscall(ctypes.c_long(425), ctypes.c_long(8), "
      "ctypes.c_long(ctypes.addressof(params)))\n"
      "print('uring', 'ok' if fd >= 0 else ctypes.get_errno())\n";
  auto granted = Bai({"run", "python", "--", "python3", "-c", probe});
  EXPECT_EQ(granted.exit_code, 0) << granted.err;
  EXPECT_THAT(granted.out, HasSubstr("unshare 0 0"));
  EXPECT_THAT(granted.out, HasSubstr("uring ok"));
  // The shell image is not exempt: its kernels are refused as before (python3 from the host's
  // /usr, which the built-in shell image also has).
  auto other = Bai({"run", "shell", "--", "python3", "-c", probe});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_THAT(other.out, HasSubstr("unshare -1 1"));
  EXPECT_THAT(other.out, HasSubstr("uring 1"));
}

TEST_F(RuncTest, DestroyRemovesBundleCgroupAndMounts) {
  std::string id = Interactive("gone", R"({"cpu": "0.25", "mem": "128m"})");
  ASSERT_FALSE(id.empty());
  std::string cgroup = "/sys/fs/cgroup/memory/bai/" + agent_id_ + "/" + id;
  bool v1 = agent::HostCgroupVersion() == 1;
  EXPECT_TRUE(fs::exists(KernelDir(id) + "/config.json"));
  if (v1) {
    EXPECT_TRUE(fs::exists(cgroup));
    // The limits reached the kernel's cgroup.
    protocol::ResourceSlots slots;
    ASSERT_TRUE(protocol::ParseSlotAssignment("cpu=0.25,mem=128m", slots).ok());
    agent::CgroupLimits l = agent::LimitsFromResources(slots, 4096);
    for (auto const& [file, value] : agent::CgroupFiles(1, "/bai/" + agent_id_ + "/" + id, l)) {
      std::string text = ReadFile("/sys/fs/cgroup/" + file);
      EXPECT_EQ(text.substr(0, text.find('\n')), value) << file;
    }
  }
  auto list = testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "list", "-q"});
  EXPECT_THAT(list.out, HasSubstr(id));
  EXPECT_EQ(Bai({"rm", "gone"}).exit_code, 0);
  for (int i = 0; i < 200 && fs::exists(KernelDir(id)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(fs::exists(KernelDir(id)));
  EXPECT_FALSE(fs::exists(cgroup));
  EXPECT_THAT(ReadFile("/proc/self/mountinfo"), Not(HasSubstr(id)));
  list = testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "list", "-q"});
  EXPECT_THAT(list.out, Not(HasSubstr(id)));
}

TEST_F(RuncTest, TwentySmallSessionsRunTogether) {
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(Interactive("many-" + std::to_string(i), R"({"cpu": "0.1", "mem": "64m"})"));
  }
  int running = 0;
  for (auto const& id : ids) running += Info(id).value("status", "") == "RUNNING";
  EXPECT_EQ(running, 20);
  auto list = testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "list"});
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 21) << list.out;  // + header
  for (int i = 0; i < 20; ++i) Bai({"rm", "many-" + std::to_string(i)});
}

TEST_F(RuncTest, RestartedAgentReadoptsItsKernels) {
  auto a = Bai({"run", "python", "--name", "keep", "-c", "kept = 'still here'"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(agent_->Stop(SIGKILL), 128 + SIGKILL);
  agent_.reset();
  StartAgent();
  auto b = Bai({"run", "python", "--name", "keep", "-c", "print(kept)"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "still here\n");
  Bai({"rm", "keep"});
}

// Regression: the re-adopted kernel had no run for the batch job, so its `finished` was dropped
// and the session stayed RUNNING forever, holding its slots.
TEST_F(RuncTest, BatchJobEndsWithItsCodeAfterTheAgentRestartedMidway) {
  auto run =
      Bai({"run", "--detach", "--name", "midway", "python", "--", "sh", "-c", "sleep 1.5; exit 7"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string id = run.out.substr(0, run.out.find('\n'));  // ended sessions resolve by id
  auto status_becomes = [this, id](std::string const& want, int tries) {
    json info;
    for (int i = 0; i < tries; ++i) {
      info = Info(id);
      if (info.is_object() && info.value("status", "") == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return info.is_object() ? info : json::object();
  };
  ASSERT_EQ(status_becomes("RUNNING", 100).value("status", ""), "RUNNING");
  EXPECT_EQ(agent_->Stop(SIGKILL), 128 + SIGKILL);
  agent_.reset();
  StartAgent();
  json info = status_becomes("TERMINATED", 200);
  EXPECT_EQ(info.value("status", ""), "TERMINATED") << info.dump();
  EXPECT_EQ(info.value("result", ""), "failure") << info.dump();
  EXPECT_EQ(info.value("exitCode", -1), 7) << info.dump();
}

TEST_F(RuncTest, RestartedAgentCleansUpKernelsThatDiedMeanwhile) {
  std::string id = Interactive("dies", R"({"cpu": "0.25", "mem": "128m"})");
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(agent_->Stop(SIGKILL), 128 + SIGKILL);
  agent_.reset();
  std::string container = agent_id_ + "." + id;
  auto kill =
      testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "kill", container, "KILL"});
  ASSERT_EQ(kill.exit_code, 0) << kill.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  StartAgent();
  json info;
  for (int i = 0; i < 100; ++i) {
    info = Info(id);
    if (info.value("status", "") == "TERMINATED") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(info.value("status", ""), "TERMINATED") << info.dump();
  EXPECT_EQ(info.value("statusInfo", ""), "agent-restarted") << info.dump();
  EXPECT_FALSE(fs::exists(KernelDir(id)));
  auto list = testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "list", "-q"});
  EXPECT_THAT(list.out, Not(HasSubstr(id)));
  EXPECT_FALSE(fs::exists("/sys/fs/cgroup/memory/bai/" + agent_id_ + "/" + id));
}

// Output streams while the job runs: the first line reaches `bai run` long before the job ends,
// stdout on stdout and stderr on stderr.
TEST_F(RuncTest, OutputStreamsAsTheJobWritesIt) {
  auto started = std::chrono::steady_clock::now();
  testing_util::BackgroundProcess run(
      {testing_util::BinPath("bai"), "run", "--name", "streamer", "python", "--", "sh", "-c",
       "echo first; sleep 2; echo second; echo oops >&2; exit 4"},
      env_);
  ASSERT_FALSE(run.WaitForLine("first", 15000).empty());
  auto first = std::chrono::steady_clock::now();
  ASSERT_FALSE(run.WaitForLine("second", 15000).empty());
  auto second = std::chrono::steady_clock::now();
  EXPECT_EQ(run.Stop(0, 15000), 4) << "the job's exit code";
  // The first line came while the job still had two seconds to go.
  EXPECT_GT(std::chrono::duration_cast<std::chrono::milliseconds>(second - first).count(), 1500);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(first - started).count(), 10000);
  auto split = Bai({"run", "python", "--", "sh", "-c", "echo out; echo err >&2"});
  EXPECT_EQ(split.exit_code, 0) << split.err;
  EXPECT_EQ(split.out, "out\n");
  EXPECT_THAT(split.err, HasSubstr("err\n"));
  EXPECT_THAT(split.err, Not(HasSubstr("out\n")));
}

// Ten million bytes of output arrive whole, in order, through `bai run` and `bai logs`.
TEST_F(RuncTest, ALargeLogArrivesWhole) {
  auto r = Bai({"run", "--name", "big-log", "python", "--", "python3", "-c",
                "import sys\nfor i in range(1000000): sys.stdout.write('%09d\\n' % i)"});
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  ASSERT_EQ(r.out.size(), 10000000u);
  EXPECT_EQ(r.out.substr(0, 20), "000000000\n000000001\n");
  EXPECT_EQ(r.out.substr(r.out.size() - 10), "000999999\n");
  auto logs = Bai({"logs", "big-log"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, r.out);
}

// Hardening (hostile 5, the rest): a follower that reads slowly. `bai logs -f` writes into a
// pipe nobody reads for three seconds while the job prints 20 MB, so the manager's stream to it
// backs up past its lag limit and the follower switches to catching up from the agent's stored
// log, page by page; then the pipe is read a little at a time. Every byte arrives, in order.
TEST_F(RuncTest, AFollowerThatReadsSlowlyStillGetsEveryByteInOrder) {
  auto started = Bai({"run", "--detach", "--name", "slow-read", "python", "--", "python3", "-c",
                      "import sys\nfor i in range(2000000): sys.stdout.write('%09d\\n' % i)"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  std::string command = "env";
  for (auto const& [k, v] : env_) command += " " + k + "='" + v + "'";
  command += " " + testing_util::BinPath("bai") + " logs -f slow-read";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // nobody reads: everything backs up
  std::string got;
  char buf[4096];
  std::size_t n;
  int pauses = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) {
    got.append(buf, n);
    if (got.size() / (1 << 20) > static_cast<std::size_t>(pauses) && pauses < 8) {
      ++pauses;  // a slow reader for the first megabytes
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string want;
  want.reserve(20000000);
  char line[16];
  for (int i = 0; i < 2000000; ++i) {
    std::snprintf(line, sizeof line, "%09d\n", i);
    want += line;
  }
  ASSERT_EQ(got.size(), want.size());
  auto diff = std::mismatch(got.begin(), got.end(), want.begin());
  EXPECT_TRUE(diff.first == got.end())
      << "first difference at byte " << (diff.first - got.begin()) << ": "
      << got.substr(static_cast<std::size_t>(diff.first - got.begin()), 40);
}

// Files go in and out through the kernel runner, inside the container, as the work user; links
// the kernel plants do not lead out of /home/work; a running job does not hold file requests up.
TEST_F(RuncTest, SessionFilesGoThroughTheRunnerAsTheWorkUser) {
  auto made = Bai({"run", "python", "--name", "files-rt", "-c",
                   "import os; os.symlink('/etc/passwd', '/home/work/pw'); "
                   "os.symlink('/opt/bai/bin', '/home/work/bin')"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string local = dir_.path() + "/up.txt";
  std::ofstream(local) << "hello from the host";
  auto up = Bai({"session", "cp", local, "files-rt:in/up.txt"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  auto seen = Bai({"run", "python", "--name", "files-rt", "-c",
                   "import os; p = '/home/work/in/up.txt'; "
                   "print(os.stat(p).st_uid, os.stat('/home/work/in').st_uid, open(p).read())"});
  EXPECT_EQ(seen.out, "1000 1000 hello from the host\n") << seen.err;
  // Out again, byte for byte.
  auto back = Bai({"session", "cp", "files-rt:/home/work/in/up.txt", dir_.path() + "/back.txt"});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  std::ifstream in(dir_.path() + "/back.txt");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "hello from the host");
  // Links out of /home/work: neither read nor written through.
  auto pw = Bai({"api", "POST", "/session/files-rt/download_single", "-d", R"({"file": "pw"})"});
  EXPECT_NE(pw.exit_code, 0);
  EXPECT_THAT(pw.out + pw.err, Not(HasSubstr("root:x:0")));
  auto through = Bai({"session", "cp", local, "files-rt:bin/planted"});
  EXPECT_NE(through.exit_code, 0);
  EXPECT_THAT(through.err, HasSubstr("outside"));
  // A batch job that runs for a while does not hold a listing up.
  auto job = Bai({"run", "--detach", "--name", "busy", "python", "--", "sh", "-c",
                  "echo x > /home/work/mark; sleep 30"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  std::string listed;
  for (int i = 0; i < 100 && listed.find("mark") == std::string::npos; ++i) {
    listed = Bai({"session", "files", "busy"}).out;
    if (listed.find("mark") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_THAT(listed, HasSubstr("mark"));
  // A command exec'd into the batch session runs beside its job, not after it.
  auto started = std::chrono::steady_clock::now();
  auto exec = Bai({"exec", "busy", "--", "sh", "-c", "cat /home/work/mark; exit 5"});
  EXPECT_EQ(exec.exit_code, 5) << exec.err;
  EXPECT_EQ(exec.out, "x\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  EXPECT_EQ(Info("busy").value("status", ""), "RUNNING") << "the job still runs";
  EXPECT_EQ(Bai({"rm", "busy", "files-rt"}).exit_code, 0);
}

// GPU fractions in a real container, over the fake driver (no GPU here): the agent finds the
// fake's GPU through NVML, the scheduler places 0.5 of it, and the kernel's container gets the
// driver's libraries, CUDA_VISIBLE_DEVICES, the shim through /etc/ld.so.preload and its ledger;
// a CUDA program inside then sees half the GPU's memory and stops there.
TEST_F(RuncTest, AGpuFractionGetsTheShimAndHalfTheMemory) {
  agent_.reset();
  std::map<std::string, std::string> fake = {{"BAI_FAKE_GPU_COUNT", "1"}, {"ASAN_OPTIONS", ""}};
  StartAgent({"--nvml-library", BAI_FAKE_NVML, "--gpu-shim", BAI_GPUSHIM_LIB}, fake);
  std::string id = Interactive("gpu-half", R"({"cpu": 1, "mem": "1g", "cuda.shares": "0.5"})");
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(
      Info("gpu-half").value("attachedDevices", json()).dump(),
      R"({"cuda":[{"data":{"cuda.shares":"0.5"},"device_id":"GPU-b58cbfff-a7f3-2498-9d0d-4f988f981200"}]})");
  ASSERT_EQ(Bai({"session", "cp", BAI_GPUSHIM_PROBE, "gpu-half:gpushim_probe"}).exit_code, 0);
  auto env = Bai({"exec", "gpu-half", "--", "sh", "-c",
                  "cat /etc/ld.so.preload; echo CVD=$CUDA_VISIBLE_DEVICES; echo PATH=$PATH; "
                  "ls /opt/bai/nvidia/lib; stat -c %U /opt/bai/gpushim/state/ledger"});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_THAT(env.out, HasSubstr("/opt/bai/gpushim/libbai-gpushim.so\n"));
  EXPECT_THAT(env.out, HasSubstr("CVD=0\n"));
  EXPECT_THAT(env.out, HasSubstr(":/usr/bin:/sbin:/bin:/opt/bai/nvidia/bin\n"));
  EXPECT_THAT(env.out, HasSubstr("libcuda.so.1"));
  EXPECT_THAT(env.out, HasSubstr("libnvidia-ml.so.1"));
  // The work user cannot change what every process preloads.
  auto tamper = Bai({"exec", "gpu-half", "--", "sh", "-c", "echo > /etc/ld.so.preload"});
  EXPECT_NE(tamper.exit_code, 0);
  // 0.5 of the GPU (NVML's 85520809984 bytes): 42760404992 bytes; 39 GiB fit, the 40th does not.
  auto alloc = Bai({"exec", "gpu-half", "--", "sh", "-c",
                    "chmod +x gpushim_probe && BAI_FAKE_GPU_COUNT=1 ./gpushim_probe alloc plain "
                    "1073741824 100"});
  EXPECT_EQ(alloc.exit_code, 0) << alloc.err << alloc.out;
  EXPECT_THAT(alloc.out, HasSubstr("allocated 39 of 100 first_error 2"));
  EXPECT_THAT(alloc.out, HasSubstr("total 42760404992"));
  auto dir = KernelDir(id);
  EXPECT_THAT(ReadFile(dir + "/gpushim.conf"), HasSubstr("device.0.quanta=0-499\n"));
  ASSERT_EQ(Bai({"session", "rm", "gpu-half"}).exit_code, 0);
}

// MPS mode with a stand-in for nvidia-cuda-mps-control (tests/agent/fake-mps): the agent starts
// one control daemon per GPU with its own pipe directory, a kernel with a fraction gets that
// directory and its thread percentage and pinned-memory limit, the shim still caps memory, and
// an agent stopping with its kernels tells the daemon to quit.
TEST_F(RuncTest, MpsModeGivesAKernelItsGpusDaemonAndShare) {
  agent_.reset();
  std::string path = std::string(BAI_FAKE_MPS_DIR) + ":" + std::getenv("PATH");
  StartAgent({"--nvml-library", BAI_FAKE_NVML, "--gpu-shim", BAI_GPUSHIM_LIB, "--gpu-sharing",
              "mps", "--stop-kernels-on-exit"},
             {{"BAI_FAKE_GPU_COUNT", "1"}, {"ASAN_OPTIONS", ""}, {"PATH", path}});
  std::string uuid = "GPU-b58cbfff-a7f3-2498-9d0d-4f988f981200";
  std::string mps = state_dir_ + "/" + agent_id_ + "/mps/" + uuid;
  EXPECT_THAT(ReadFile(mps + "/log/control.log"), HasSubstr("start CUDA_VISIBLE_DEVICES=" + uuid));
  std::string id = Interactive("gpu-mps", R"({"cpu": 1, "mem": "1g", "cuda.shares": "0.5"})");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(Bai({"session", "cp", BAI_GPUSHIM_PROBE, "gpu-mps:gpushim_probe"}).exit_code, 0);
  auto env =
      Bai({"exec", "gpu-mps", "--", "sh", "-c",
           "env | grep ^CUDA_ | sort; ls /opt/bai/mps/pipe; grep ^mode= /etc/bai-gpushim.conf"});
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_THAT(env.out, HasSubstr("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50\n"));
  EXPECT_THAT(env.out, HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=40779M\n"));
  EXPECT_THAT(env.out, HasSubstr("CUDA_MPS_PIPE_DIRECTORY=/opt/bai/mps/pipe\n"));
  EXPECT_THAT(env.out, HasSubstr("CUDA_VISIBLE_DEVICES=0\n"));
  EXPECT_THAT(env.out, HasSubstr("\ncontrol\n"));  // the daemon's pipe directory
  EXPECT_THAT(env.out, HasSubstr("mode=mps\n"));
  // The shim still holds the memory cap: half of NVML's 85520809984 bytes.
  auto alloc = Bai({"exec", "gpu-mps", "--", "sh", "-c",
                    "chmod +x gpushim_probe && ./gpushim_probe alloc plain 1073741824 100"});
  EXPECT_THAT(alloc.out, HasSubstr("allocated 39 of 100 first_error 2")) << alloc.err;
  // Stopping with its kernels, the agent stops the daemon.
  EXPECT_EQ(agent_->Stop(SIGTERM, 60000), 0);
  agent_.reset();
  EXPECT_THAT(ReadFile(mps + "/log/control.log"), HasSubstr("quit"));
  EXPECT_FALSE(fs::exists(mps + "/pipe/control.pid"));
}

// Reconciliation in a real container: the fake GPU's state is shared with the agent through a
// mounted folder (a real GPU's is in the kernel), so NVML outside and inside see the same
// processes. The agent writes each ledger slot's host PID; NVML inside names host PIDs, and the
// shim maps them back to the container's own; memory taken behind the shim's back is charged.
TEST_F(RuncTest, AGpuContainersProcessesAreItsOwnAndHiddenMemoryIsCharged) {
  agent_.reset();
  std::string state = dir_.path() + "/gpu.state";
  StartAgent({"--nvml-library", BAI_FAKE_NVML, "--gpu-shim", BAI_GPUSHIM_LIB, "--gpu-context-mem",
              "552402944", "--gpu-reconcile-interval", "200"},
             {{"BAI_FAKE_GPU_COUNT", "1"}, {"BAI_FAKE_GPU_STATE", state}, {"ASAN_OPTIONS", ""}});
  ASSERT_EQ(Bai({"vfolder", "create", "fakegpu"}).exit_code, 0);
  std::string id = Interactive("gpu-procs", R"({"cpu": 1, "mem": "1g", "cuda.shares": "0.5"})",
                               {{"mounts", {"fakegpu"}}});
  ASSERT_FALSE(id.empty());
  // The folder's host directory, from the kernel's OCI configuration.
  auto oci = internal::ParseJson(ReadFile(KernelDir(id) + "/config.json")).value_or(json());
  std::string folder;
  for (auto const& m : oci["mounts"]) {
    if (m.value("destination", "") == "/home/work/fakegpu") folder = m.value("source", "");
  }
  ASSERT_FALSE(folder.empty()) << oci["mounts"].dump();
  ASSERT_EQ(::link(state.c_str(), (folder + "/gpu.state").c_str()), 0) << std::strerror(errno);
  ASSERT_EQ(Bai({"session", "cp", BAI_GPUSHIM_PROBE, "gpu-procs:gpushim_probe"}).exit_code, 0);
  std::string probe =
      "chmod +x gpushim_probe; export BAI_FAKE_GPU_STATE=/home/work/fakegpu/gpu.state; ";
  auto holder = Bai({"exec", "gpu-procs", "--", "sh", "-c",
                     probe + "nohup ./gpushim_probe alloc plain 1073741824 1 60 > /tmp/h.log 2>&1 "
                             "& echo $! > /tmp/h.pid; sleep 1; cat /tmp/h.log"});
  ASSERT_THAT(holder.out, HasSubstr("allocated 1 of 1")) << holder.err;
  auto usage = [&] {
    return internal::ParseJson(ReadFile(KernelDir(id) + "/gpu-usage.json")).value_or(json());
  };
  // The agent has seen the holder through NVML (so the fake now reports its host PID).
  json seen = json::object();
  for (int i = 0; i < 100 && seen.value("nvml", 0ULL) == 0; ++i) {
    usleep(100 * 1000);
    auto u = usage();
    if (u.contains("devices") && !u["devices"].empty()) seen = u["devices"][0];
  }
  ASSERT_EQ(seen.value("nvml", 0ULL), 552402944ULL + (1ULL << 30)) << seen.dump();
  EXPECT_EQ(seen.value("ledger", 0ULL), 552402944ULL + (1ULL << 30)) << seen.dump();
  EXPECT_EQ(seen.value("untracked", 1ULL), 0ULL) << seen.dump();
  // Inside, NVML's process list is the container's, by the container's PIDs.
  auto procs = Bai({"exec", "gpu-procs", "--", "sh", "-c",
                    probe + "echo holder $(cat /tmp/h.pid); ./gpushim_probe processes"});
  ASSERT_EQ(procs.exit_code, 0) << procs.err;
  std::string pid = procs.out.substr(7, procs.out.find('\n') - 7);
  EXPECT_THAT(procs.out, HasSubstr("processes 0 count 1\n")) << procs.out;
  EXPECT_THAT(procs.out,
              HasSubstr("pid " + pid + " used " + std::to_string(552402944ULL + (1ULL << 30))))
      << procs.out;
  // A gigabyte taken behind the shim's back is found and charged: the cap's free bytes drop.
  auto behind = Bai({"exec", "gpu-procs", "--", "sh", "-c",
                     probe + "nohup ./gpushim_probe driver 1073741824 60 > /tmp/d.log 2>&1 & "
                             "sleep 1; cat /tmp/d.log"});
  ASSERT_THAT(behind.out, HasSubstr("driver took 0")) << behind.err;
  for (int i = 0; i < 100 && seen.value("untracked", 0ULL) == 0; ++i) {
    usleep(100 * 1000);
    auto u = usage();
    if (u.contains("devices") && !u["devices"].empty()) seen = u["devices"][0];
  }
  EXPECT_EQ(seen.value("untracked", 0ULL), 1ULL << 30) << seen.dump();
  auto mem = Bai({"exec", "gpu-procs", "--", "sh", "-c", probe + "./gpushim_probe meminfo"});
  // Half of NVML's 85520809984 bytes, less three contexts (holder, the driver's, this one) and
  // two gigabytes.
  std::uint64_t expected = 42760404992ULL - 3 * 552402944ULL - (2ULL << 30);
  EXPECT_THAT(mem.out, HasSubstr("free " + std::to_string(expected) + " total 42760404992"))
      << mem.out << mem.err;
  ASSERT_EQ(Bai({"session", "rm", "gpu-procs"}).exit_code, 0);
}

}  // namespace
}  // namespace bai
