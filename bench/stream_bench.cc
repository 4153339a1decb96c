// SPDX-License-Identifier: Apache-2.0
// The WebSocket streams (issue "Streams…"), against bai-manager and a simulated bai-agent run as
// processes from BIN_DIR (no root):
//  - terminal keystroke echo: one byte typed, until the terminal echoes it, through
//    client → manager → agent → a shell on a pseudo-terminal; beside the same round trip on a
//    pseudo-terminal of this process (the floor), same run (target: median ≤ 10 ms);
//  - /execute of `print(1)` over the streamed WebSocket, beside the same step as
//    `POST /session/{id}` (REST), alternating;
//  - 1,000 idle open streams: the manager's RSS growth and CPU time while they idle 5 s
//    (target: ≤ 64 MiB, no measurable CPU).
//
//  - 200 open terminals (--terminals N), each with its shell: the manager's and the agent's RSS
//    growth.
//
//   stream_bench BIN_DIR [-n SAMPLES] [--streams N] [--terminals N]
#include "bai/client.h"
#include "bai/session_client.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
}

pid_t Spawn(std::vector<std::string> argv, std::string const& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

std::map<std::string, std::string> ReadEnv(std::string const& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

long RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto close = text.rfind(')');
  std::vector<std::string> f;
  std::string cur;
  for (char c : text.substr(close + 2)) {
    if (c == ' ') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the state.
  return (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / sysconf(_SC_CLK_TCK);
}

// Reads a terminal until `want` shows (or 5 s).
bool ReadUntil(bai::Terminal& t, char want) {
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    auto out = t.Read(std::chrono::milliseconds(100));
    if (!out.ok()) return false;
    if (out->data.find(want) != std::string::npos) return true;
  }
  return false;
}

void Drain(bai::Terminal& t) {
  while (true) {
    auto out = t.Read(std::chrono::milliseconds(150));
    if (!out.ok() || out->data.empty()) return;
  }
}

// The floor: the same keystroke round trip on a pseudo-terminal of this process.
std::vector<double> LocalEcho(int n) {
  int master;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    execl("/bin/sh", "sh", nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  char buf[4096];
  auto drain = [&] {
    pollfd p{master, POLLIN, 0};
    while (poll(&p, 1, 100) > 0 && read(master, buf, sizeof buf) > 0) {
    }
  };
  drain();
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    (void)!write(master, "a", 1);
    bool seen = false;
    while (!seen) {
      pollfd p{master, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) break;
      ssize_t k = read(master, buf, sizeof buf);
      seen = k > 0 && std::string(buf, static_cast<std::size_t>(k)).find('a') != std::string::npos;
    }
    out.push_back(Ms(Clock::now() - t0));
    if (i % 50 == 49) {
      (void)!write(master, "\x15", 1);
      drain();
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(master);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: stream_bench BIN_DIR [-n SAMPLES] [--streams N] [--terminals N]\n");
    return 2;
  }
  std::string bin = argv[1];
  int samples = 200;
  int idle = 1000;
  int terminals_wanted = 200;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "-n")
      samples = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--streams")
      idle = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--terminals")
      terminals_wanted = std::atoi(argv[++i]);
  }
  signal(SIGPIPE, SIG_IGN);
  std::string work = fs::temp_directory_path() / ("bai-stream-bench-" + std::to_string(getpid()));
  fs::create_directories(work);
  int port = 20000 + getpid() % 20000;
  pid_t manager = Spawn({bin + "/bai-manager", "--data-dir", work + "/m", "--listen",
                         "127.0.0.1:" + std::to_string(port)},
                        work + "/m.log");
  std::map<std::string, std::string> creds;
  for (int i = 0; i < 100 && creds.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    creds = ReadEnv(work + "/m/admin-credentials.env");
  }
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  pid_t agent = Spawn({bin + "/bai-agent", "--manager", url, "--id", "stream-bench", "--backend",
                       "dummy", "--cluster-secret-file", work + "/m/cluster-secret", "--state-dir",
                       work + "/a", "--slots", "cpu=4,mem=8g"},
                      work + "/a.log");
  auto cleanup = [&] {
    kill(agent, SIGTERM);
    kill(manager, SIGTERM);
    waitpid(agent, nullptr, 0);
    waitpid(manager, nullptr, 0);
    fs::remove_all(work);
  };
  bai::Options o;
  o.endpoints = {url};
  o.access_key = creds["BACKEND_ACCESS_KEY"];
  o.secret_key = creds["BACKEND_SECRET_KEY"];
  auto client = bai::Client::Create(o);
  if (!client.ok()) return cleanup(), 1;
  bai::SessionClient sessions(*client);
  bai::SessionCreateRequest req;
  req.image = "python";
  req.name = "stream-bench";
  bool created = false;
  for (int i = 0; i < 100 && !created; ++i) {
    created = sessions.Create(req).ok();
    if (!created) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (int i = 0; i < 300 && created; ++i) {  // until the agent has started it
    auto info = sessions.Info("stream-bench");
    if (info.ok() && info->status.text == "RUNNING") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!created) {
    std::fprintf(stderr, "stream_bench: no session\n");
    return cleanup(), 1;
  }

  // Keystroke echo.
  auto t = sessions.OpenTerminal("stream-bench");
  if (!t.ok()) {
    std::fprintf(stderr, "stream_bench: %s\n", t.status().message().c_str());
    return cleanup(), 1;
  }
  Drain(**t);
  std::vector<double> remote;
  for (int i = 0; i < samples; ++i) {
    auto t0 = Clock::now();
    (void)(*t)->Write("a");
    if (!ReadUntil(**t, 'a')) break;
    remote.push_back(Ms(Clock::now() - t0));
    if (i % 50 == 49) {
      (void)(*t)->Write("\x15");
      Drain(**t);
    }
  }
  (*t)->Cancel();
  auto local = LocalEcho(samples);
  std::printf(
      "stream_bench: keystroke echo, %zu samples: bai shell median %.2f ms (p90 %.2f), "
      "local pty %.3f ms; ratio %.1fx (target: median <= 10 ms)\n",
      remote.size(), Median(remote), Pct(remote, 0.9), Median(local),
      Median(remote) / std::max(0.001, Median(local)));

  // /execute vs POST, alternating.
  std::vector<double> ws, rest;
  for (int i = 0; i < samples / 2; ++i) {
    auto t0 = Clock::now();
    (void)sessions.ExecuteStream("stream-bench", "print(1)", {});
    ws.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    bai::ExecuteStep step;
    step.mode = "query";
    step.code = "print(1)";
    (void)sessions.Execute("stream-bench", step);
    rest.push_back(Ms(Clock::now() - t0));
  }
  std::printf(
      "stream_bench: print(1), %zu each: /execute WebSocket median %.2f ms, POST "
      "/session/{id} %.2f ms; ratio %.2fx\n",
      ws.size(), Median(ws), Median(rest), Median(ws) / std::max(0.001, Median(rest)));

  // Idle streams: /execute sockets waiting for their first frame.
  long rss0 = RssKb(manager);
  std::vector<std::unique_ptr<bai::WebSocketConnection>> open;
  for (int i = 0; i < idle; ++i) {
    auto s = client->OpenWebSocket(bai::ApiRequest("GET", "/stream/session/stream-bench/execute"));
    if (!s.ok()) {
      std::fprintf(stderr, "stream_bench: stream %d: %s\n", i, s.status().message().c_str());
      break;
    }
    open.push_back(std::move(*s));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  long rss1 = RssKb(manager);
  double cpu0 = CpuSeconds(manager);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  double cpu1 = CpuSeconds(manager);
  std::printf(
      "stream_bench: %zu idle streams: manager RSS +%.1f MiB (%.1f → %.1f MiB), CPU "
      "%.2f s over 5 s idle (targets: <= 64 MiB, no measurable CPU)\n",
      open.size(), (rss1 - rss0) / 1024.0, rss0 / 1024.0, rss1 / 1024.0, cpu1 - cpu0);
  open.clear();

  // Open terminals: a shell each (the simulated agent's are its host's), every one answering.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  long m0 = RssKb(manager), a0 = RssKb(agent);
  std::vector<std::unique_ptr<bai::Terminal>> terminals;
  for (int i = 0; i < terminals_wanted; ++i) {
    auto term = sessions.OpenTerminal("stream-bench");
    if (!term.ok()) {
      std::fprintf(stderr, "stream_bench: terminal %d: %s\n", i, term.status().message().c_str());
      break;
    }
    terminals.push_back(std::move(*term));
  }
  int answered = 0;
  for (auto& term : terminals) {
    (void)term->Write("echo ok\n");
    answered += ReadUntil(*term, 'k') ? 1 : 0;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  long m1 = RssKb(manager), a1 = RssKb(agent);
  std::printf(
      "stream_bench: %zu open terminals (%d answered): manager RSS +%.1f MiB (%.1f KiB each), "
      "agent RSS +%.1f MiB (bound: manager <= 64 MiB for 1000 streams)\n",
      terminals.size(), answered, (m1 - m0) / 1024.0,
      terminals.empty() ? 0.0
                        : static_cast<double>(m1 - m0) / static_cast<double>(terminals.size()),
      (a1 - a0) / 1024.0);
  for (auto& term : terminals) term->Cancel();
  terminals.clear();
  cleanup();
  return 0;
}
