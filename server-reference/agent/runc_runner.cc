// SPDX-License-Identifier: Apache-2.0
// The runc backend and a kernel's runner: the socket handshake, dotfiles, bootstrap, and the
// reader loop of the runner's messages (output, run states, files, the end).
#include "bai/protocol/resource.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"
#include "server-reference/agent/kernel_bundle.h"
#include "server-reference/agent/kernel_usage.h"
#include "server-reference/agent/network_host.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/agent/runc_backend.h"
#include "server-reference/agent/runc_kernel.h"
#include "server-reference/common/exec/process.h"
#include "server-reference/common/log/log.h"
#include "server-reference/common/wire/runner_messages.h"

#include <fcntl.h>
#include <net/if.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace bai::agent {
namespace fs = std::filesystem;
namespace rp = server::runner_protocol;
using nlohmann::json;

namespace {

/// One message from the runner, read here before the kernel's reader owns the socket: byte by
/// byte, so that nothing past it leaves the socket. nullopt at the deadline, at the socket's
/// end, or for a line that is not a message.
std::optional<rp::ToAgent> ReadMessageNow(int sock,
                                          std::chrono::steady_clock::time_point deadline) {
  std::string buffer;
  std::optional<rp::ToAgent> out;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto slice = std::min<std::int64_t>(left.count(), 1000000);
    timeval tv{static_cast<time_t>(slice / 1000000), static_cast<suseconds_t>(slice % 1000000)};
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    ssize_t n = read(sock, &c, 1);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    if (n < 0) continue;
    buffer.push_back(c);
    if (buffer.size() > (64U << 20)) break;
    if (c != '\n') continue;
    std::size_t used = 0;
    auto message = rp::TakeToAgent(buffer, used);  // a framed Output may have bytes to come
    if (!message) continue;
    if (message->ok()) out = *std::move(*message);
    break;
  }
  timeval none{0, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  return out;
}

}  // namespace

void RuncBackend::WriteDotfiles(Kernel& k) {
  // Before the kernel is RUNNING no reader owns the socket: each answer is read here, in turn.
  int n = 0;
  for (auto const& d : k.spec.dotfiles) {
    rp::FileRequest write;
    write.request_id = "dotfile-" + std::to_string(n++);
    write.action = rp::kFileWrite;
    write.path = d.path;
    write.data = d.data;
    write.mode = std::stoi(d.permission, nullptr, 8);
    SendToRunner(k, write);
    auto answer =
        ReadMessageNow(k.sock, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    std::string why = "no answer";
    if (answer) {
      if (auto const* r = std::get_if<rp::FileResult>(&*answer)) {
        if (r->status.ok()) continue;
        why = r->status.message();
      }
    }
    // A dotfile that cannot be written (a directory of that name…) does not stop the kernel;
    // its log says so.
    std::string text = "bai: dotfile " + d.path + " not written: " + why + "\n";
    EmitOutput(k.spec.session_id, "stderr", text);
    std::lock_guard<std::mutex> lock(mu_);
    k.log += text;
  }
}

void RuncBackend::RunBootstrap(Kernel& k) {
  if (!k.spec.bootstrap_script || k.spec.bootstrap_script->empty()) return;
  // Everything of the bootstrap goes to the kernel's stderr (`bai logs`; `bai run` keeps the
  // job's own stdout clean for pipes): the script's output and bai's words about it.
  auto note = [&](std::string const& line) {
    std::string text = "bai: bootstrap script " + line + "\n";
    EmitOutput(k.spec.session_id, "stderr", text);
    std::lock_guard<std::mutex> lock(mu_);
    k.log += text;
  };
  // The script as a file in the work user's home (run by its #! line, else by /bin/sh).
  rp::FileRequest write;
  write.request_id = "bootstrap";
  write.action = rp::kFileWrite;
  write.path = ".bai/bootstrap.sh";
  write.data = *k.spec.bootstrap_script;
  write.mode = 0700;
  SendToRunner(k, write);
  auto now = std::chrono::steady_clock::now;
  auto written = ReadMessageNow(k.sock, now() + std::chrono::seconds(10));
  auto const* wrote = written ? std::get_if<rp::FileResult>(&*written) : nullptr;
  if (wrote == nullptr || !wrote->status.ok()) {
    note("not run: it could not be written (" +
         (wrote != nullptr ? wrote->status.message() : std::string("no answer")) + ")");
    return;
  }
  SendToRunner(k, rp::Batch{"bootstrap", "", "", "./.bai/bootstrap.sh"});
  auto deadline = now() + options_.bootstrap_timeout;
  bool interrupted = false;
  for (;;) {
    auto message = ReadMessageNow(k.sock, deadline);
    if (!message) {
      // Before the deadline: the runner's socket ended (the kernel is going) or sent nonsense.
      if (now() < deadline) return note("ended early: the kernel runner stopped answering");
      if (interrupted) return note("did not end after SIGINT; the kernel starts beside it");
      interrupted = true;
      SendToRunner(k, rp::Interrupt{"bootstrap"});
      note("stopped (SIGINT) after " + std::to_string(options_.bootstrap_timeout.count() / 1000) +
           " s");
      deadline = now() + std::chrono::seconds(10);
      continue;
    }
    if (auto const* out = std::get_if<rp::Output>(&*message)) {
      EmitOutput(k.spec.session_id, "stderr", out->data);
      std::lock_guard<std::mutex> lock(mu_);
      k.log += out->data;
    } else if (auto const* done = std::get_if<rp::Finished>(&*message);
               done != nullptr && done->run_id == "bootstrap") {
      if (done->exit_code != 0 && !interrupted) {
        note("exited with status " + std::to_string(done->exit_code));
      }
      return;
    }
  }
}

void RuncBackend::SendToRunner(Kernel& k, rp::ToRunner const& message) {
  std::string line = rp::Encode(message) + "\n";
  std::lock_guard<std::mutex> lock(k.write_mu);
  if (k.sock >= 0) (void)!::send(k.sock, line.data(), line.size(), MSG_NOSIGNAL);
}

bool RuncBackend::ConnectRunner(Kernel& k, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto connected = ConnectKernelSocket(k.dir + "/run", "runner.sock", OwnPeer(k));
    if (!connected.ok() && connected.status().code() == StatusCode::kPermissionDenied) {
      server::log::Warn("refused the kernel's runner socket",
                        {{"session", k.spec.session_id}, {"reason", connected.status().message()}});
      return false;
    }
    if (connected.ok()) {
      int fd = *connected;
      // The runner greets first; anything else is not our runner.
      std::string hello;
      char c;
      timeval tv{5, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      while (read(fd, &c, 1) == 1 && c != '\n' && hello.size() < 4096) hello.push_back(c);
      timeval none{0, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
      auto greeting = rp::DecodeToAgent(hello);
      if (greeting.ok() && std::holds_alternative<rp::Hello>(*greeting)) {
        std::lock_guard<std::mutex> lock(mu_);
        k.sock = fd;
        return true;
      }
      close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

void RuncBackend::ReadLoop(std::shared_ptr<Kernel> k) {
  int fd;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd = k->sock;
  }
  std::string buf;
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (;;) {
      std::size_t used = 0;
      auto taken = rp::TakeToAgent(std::string_view(buf).substr(start), used);
      if (!taken) break;
      start += used;
      auto& msg = *taken;
      if (!msg.ok()) {
        server::log::Warn("refused a kernel runner's message",
                          {{"session", k->spec.session_id}, {"reason", msg.status().message()}});
        continue;
      }
      std::optional<std::int64_t> batch_exit;
      std::optional<KernelReport> logs_update;
      if (auto const* out = std::get_if<rp::Output>(&*msg)) {
        // To the agent's log store and followers first, as it comes.
        EmitOutput(k->spec.session_id, out->stream, out->data);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto const* out = std::get_if<rp::Output>(&*msg)) {
          k->log += out->data;
          // Trimmed in steps, not per chunk: a megabyte moved per chunk was most of the
          // agent's time relaying a large output.
          if (k->log.size() > 2 * kMaxLog) k->log.erase(0, k->log.size() - kMaxLog);
          auto run = k->runs.find(out->run_id);
          // The session's own batch job is read from the log store, never polled: its output
          // is not kept twice.
          if (run != k->runs.end() && out->run_id != kBatchRunId) {
            AddConsole(run->second, out->stream, out->data);
          }
        } else if (auto const* fin = std::get_if<rp::Finished>(&*msg)) {
          auto run = k->runs.find(fin->run_id);
          if (run != k->runs.end()) {
            run->second.status = "finished";
            run->second.exit_code = static_cast<int>(fin->exit_code);
            if (fin->run_id == kBatchRunId) {
              batch_exit = run->second.exit_code;
            } else {
              // The output so far, for GET /session/{id}/logs while the kernel runs.
              logs_update = k->state;
              logs_update->logs = k->log;
            }
          }
        } else if (auto* file = std::get_if<rp::FileResult>(&*msg)) {
          auto pending = k->files.find(file->request_id);
          if (pending != k->files.end()) pending->second = std::move(*file);
        } else if (auto const* waiting = std::get_if<rp::WaitingInput>(&*msg)) {
          auto run = k->runs.find(waiting->run_id);
          if (run != k->runs.end()) {
            run->second.status = "waiting-input";
            run->second.prompt = waiting->prompt;
            run->second.is_password = waiting->is_password;
          }
        }
      }
      cv_.notify_all();
      if (logs_update) Emit(*logs_update);
      if (batch_exit) {
        bool oom_killed = OomKilled(*k);
        std::string reason = oom_killed         ? "oom-killed"
                             : *batch_exit == 0 ? "task-finished"
                                                : "task-failed";
        // A job the memory limit killed a process of did not succeed, whatever its last
        // command said (a shell script goes on after `dd` is killed): 137, as SIGKILL.
        if (oom_killed && *batch_exit == 0) batch_exit = 128 + SIGKILL;
        Teardown(k, reason, batch_exit, true);
        std::lock_guard<std::mutex> lock(mu_);
        std::lock_guard<std::mutex> wlock(k->write_mu);
        if (k->sock >= 0) close(k->sock);
        k->sock = -1;
        return;
      }
    }
    buf.erase(0, start);
  }
  // The runner went away: the container ended by itself (or the agent is stopping). The reader
  // owns the socket: it closes it, under both locks, so no writer uses a stale descriptor.
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> wlock(k->write_mu);
    if (k->sock >= 0) close(k->sock);
    k->sock = -1;
    stopping = stopping_ || k->tearing_down;
  }
  cv_.notify_all();
  if (stopping) return;
  Teardown(k, OomKilled(*k) ? "oom-killed" : "self-terminated", std::nullopt, true);
}

}  // namespace bai::agent
