// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/dummy_backend.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/exec/stream_serve.h"
#include "server-reference/common/fs/work_files.h"

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/socket.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

namespace bai::agent {
namespace {

int ExitCodeOf(std::optional<std::string> const& command, int fallback) {
  if (!command) return fallback;
  static std::regex const kExit(R"(exit\s+(\d{1,3})['"]?\s*$)");
  std::smatch m;
  if (std::regex_search(*command, m, kExit)) return std::stoi(m[1]) & 255;
  return fallback;
}

}  // namespace

DummyBackend::DummyBackend(DummyOptions options) : options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

DummyBackend::~DummyBackend() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DummyBackend::Create(KernelSpec const& spec) {
  KernelReport preparing{
      spec.session_id, protocol::KernelStatus::kPreparing, std::nullopt, "", "", {}};
  // A simulated kernel's apps are its preopen ports (served by this host's 127.0.0.1:PORT) and
  // the terminal.
  if (auto apps = KernelApps({}, spec.preopen_ports, ""); apps.ok()) {
    preparing.service_ports = std::move(*apps);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kernels_.count(spec.session_id)) return;  // a repeated create is a no-op
    kernels_[spec.session_id] =
        Kernel{spec, preparing, std::chrono::steady_clock::now() + options_.prepare_delay};
  }
  Emit(preparing);
  cv_.notify_all();
}

void DummyBackend::Destroy(std::string const& session_id, std::string const& reason) {
  KernelReport done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(session_id);
    if (it == kernels_.end() || it->second.state.status == protocol::KernelStatus::kTerminated)
      return;
    it->second.state.status = protocol::KernelStatus::kTerminated;
    it->second.state.reason = reason.empty() ? "user-requested" : reason;
    it->second.state.exit_code = 137;  // as if SIGKILLed after SIGTERM
    it->second.state.usage = Simulated(it->second, std::chrono::steady_clock::now());
    done = it->second.state;
  }
  Emit(done);
}

server::agent_protocol::KernelUsage DummyBackend::Simulated(
    Kernel const& k, std::chrono::steady_clock::time_point now) {
  constexpr std::int64_t kMemory = 32 << 20;
  server::agent_protocol::KernelUsage u;
  if (k.running_since) {
    u.cpu_used_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - *k.running_since).count();
  }
  u.mem_current = u.mem_peak = kMemory;
  return u;
}

void DummyBackend::WriteDotfiles(std::string const& session_id, Kernel& k) {
  static std::regex const kId("[0-9A-Za-z-]{1,64}");
  if (options_.home_dir.empty() || k.spec.dotfiles.empty() || !std::regex_match(session_id, kId))
    return;
  std::string home = options_.home_dir + "/" + session_id;
  std::error_code ec;
  std::filesystem::create_directories(home, ec);
  for (auto const& d : k.spec.dotfiles) {
    server::runner_protocol::FileRequest write;
    write.action = server::runner_protocol::kFileWrite;
    write.path = d.path;
    write.data = d.data;
    write.mode = std::stoi(d.permission, nullptr, 8);
    auto r = server::AnswerFileRequest(home, write);
    if (!r.status.ok()) {
      k.state.logs = k.state.logs.value_or("") + "bai: dotfile " + d.path +
                     " not written: " + r.status.message() + "\n";
    }
  }
}

std::map<std::string, server::agent_protocol::KernelUsage> DummyBackend::Usage() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  std::map<std::string, server::agent_protocol::KernelUsage> out;
  for (auto const& [id, k] : kernels_) {
    if (k.state.status == protocol::KernelStatus::kRunning) out[id] = Simulated(k, now);
  }
  return out;
}

std::map<std::string, std::vector<server::DeviceAllocation>> DummyBackend::Devices() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<server::DeviceAllocation>> out;
  for (auto const& [id, k] : kernels_) {
    if (!k.state.Ended() && !k.spec.devices.empty()) out[id] = k.spec.devices;
  }
  return out;
}

std::vector<KernelReport> DummyBackend::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KernelReport> out;
  for (auto const& [id, k] : kernels_) out.push_back(k.state);
  return out;
}

void DummyBackend::Acknowledge(std::string const& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(session_id);
  if (it != kernels_.end() && it->second.state.Ended()) {
    kernels_.erase(it);
    if (!options_.home_dir.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(options_.home_dir + "/" + session_id, ignored);
    }
  }
}

std::string DummyBackend::Execute(server::agent_protocol::Execute const& req) {
  std::string const& run_id = req.run_id;
  bool alive;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(req.session_id);
    alive = it != kernels_.end() && it->second.state.status == protocol::KernelStatus::kRunning;
  }
  protocol::ExecuteResult result;
  result.run_id = run_id;
  result.status = "finished";
  if (!alive) {
    result.exit_code = 130;
    return protocol::EncodeExecuteResult(result);
  }
  // A query calling input() waits for its input, which the next step's code then echoes.
  if (req.mode == "query" && req.code.find("input(") != std::string::npos) {
    result.status = "waiting-input";
    result.prompt = "input? ";
    return protocol::EncodeExecuteResult(result);
  }
  if (req.mode == "input") {
    result.exit_code = 0;
    result.console.emplace_back("stdout", req.code + "\n");
    return protocol::EncodeExecuteResult(result);
  }
  // Batch mode runs options.exec; the simulation echoes what it would run.
  auto exec = req.options.find("exec");
  std::string const& code =
      req.mode == "batch" && exec != req.options.end() ? exec->second : req.code;
  std::optional<std::string> command = code;
  result.exit_code = ExitCodeOf(command, 0);
  if (!code.empty()) result.console.emplace_back("stdout", code + "\n");
  return protocol::EncodeExecuteResult(result);
}

Status DummyBackend::CheckRunning(std::string const& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(session_id);
  if (it == kernels_.end() || it->second.state.status != protocol::KernelStatus::kRunning) {
    return Status(StatusCode::kNotFound, "no running kernel " + session_id);
  }
  return Status();
}

Status DummyBackend::Restart(std::string const& session_id) { return CheckRunning(session_id); }

StatusOr<std::string> DummyBackend::CommitTarget(std::string const& session_id,
                                                 std::string const& filename,
                                                 std::string const& directory) {
  if (auto s = CheckRunning(session_id); !s.ok()) return s;
  return CommitFile(options_.commit_dir, session_id, filename, directory);
}

StatusOr<int> DummyBackend::OpenStream(std::string const& session_id,
                                       server::runner_protocol::StreamOpen const& open,
                                       std::string* status) {
  if (auto s = CheckRunning(session_id); !s.ok()) return s;
  server::StreamServeOptions o;
  o.workdir = "/tmp";
  static std::regex const kId("[0-9A-Za-z-]{1,64}");
  if (!options_.home_dir.empty() && std::regex_match(session_id, kId)) {
    std::error_code ec;
    std::filesystem::create_directories(options_.home_dir + "/" + session_id, ec);
    if (!ec) o.workdir = options_.home_dir + "/" + session_id;
  }
  o.env = {"HOME=" + o.workdir, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  sigemptyset(&o.child_mask);
  o.service_defs.clear();  // a simulated kernel's services are this host's: nothing to start
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return Status(StatusCode::kInternal, "socketpair failed");
  }
  std::thread([fd = pair[1], o] { server::ServeStream(fd, o); }).detach();
  return HandshakeStream(pair[0], open, status);
}

server::runner_protocol::FileResult DummyBackend::Files(
    std::string const& session_id, server::runner_protocol::FileRequest const& request) {
  namespace rp = server::runner_protocol;
  rp::FileResult result;
  result.request_id = request.request_id;
  if (auto s = CheckRunning(session_id); !s.ok()) {
    result.status = s;
    return result;
  }
  if (options_.home_dir.empty()) {
    result.status = Status(StatusCode::kUnimplemented, "this agent keeps no kernel files");
    return result;
  }
  // Session ids are UUIDs from the manager; anything else never names a directory here.
  static std::regex const kId("[0-9A-Za-z-]{1,64}");
  std::string home = options_.home_dir + "/" + session_id;
  std::error_code ec;
  if (!std::regex_match(session_id, kId) || (std::filesystem::create_directories(home, ec), ec)) {
    result.status = Status(StatusCode::kInternal, "cannot make the kernel's directory " + home);
    return result;
  }
  return server::AnswerFileRequest(home, request);
}

Status DummyBackend::Commit(std::string const& session_id, std::string const& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kernels_.count(session_id) == 0) {
      return Status(StatusCode::kNotFound, "no kernel " + session_id);
    }
  }
  std::this_thread::sleep_for(options_.prepare_delay);  // as if archiving took a moment
  // An empty tar archive: two zero blocks (a simulated kernel changed nothing).
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string zeros(1024, '\0');
  out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  out.close();
  if (!out) return Status(StatusCode::kInternal, "cannot write " + path);
  return Status();
}

void DummyBackend::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    auto now = std::chrono::steady_clock::now();
    auto wake = now + std::chrono::seconds(1);
    std::vector<KernelReport> reports;
    std::vector<std::array<std::string, 3>> output;  // session, stream, text
    for (auto& [id, k] : kernels_) {
      if (k.state.Ended()) continue;
      if (now < k.next) {
        wake = std::min(wake, k.next);
        continue;
      }
      if (k.state.status == protocol::KernelStatus::kPreparing && k.spec.session_type == "batch" &&
          (!k.spec.startup_command || k.spec.startup_command->empty())) {
        // As the runc backend says it: the dummy's images name no Entrypoint or Cmd.
        k.state.status = protocol::KernelStatus::kError;
        k.state.reason =
            "kernel-creation-failed: a batch session needs a command: none was "
            "given and the image " +
            k.spec.image + " names no Entrypoint or Cmd";
        reports.push_back(k.state);
        continue;
      }
      if (k.state.status == protocol::KernelStatus::kPreparing) {
        WriteDotfiles(id, k);
        if (k.spec.bootstrap_script && !k.spec.bootstrap_script->empty()) {
          // Nothing runs here: the output shows the script a container would have run first.
          output.push_back({id, "stdout",
                            "dummy kernel bootstrap script:\n" + *k.spec.bootstrap_script +
                                (k.spec.bootstrap_script->back() == '\n' ? "" : "\n")});
        }
        k.state.status = protocol::KernelStatus::kRunning;
        k.running_since = now;
        k.next = now + options_.run_time;
        reports.push_back(k.state);
        if (k.spec.session_type == "batch") {
          wake = std::min(wake, k.next);
          // What it "prints" while it runs: the command it would have run.
          output.push_back(
              {id, "stdout", "dummy kernel ran: " + k.spec.startup_command.value_or("") + "\n"});
        }
      } else if (k.state.status == protocol::KernelStatus::kRunning &&
                 k.spec.session_type == "batch") {
        k.state.status = protocol::KernelStatus::kTerminated;
        k.state.exit_code = ExitCodeOf(k.spec.startup_command, options_.default_exit_code);
        k.state.reason = "task-finished";
        k.state.usage = Simulated(k, now);
        k.state.logs = "dummy kernel ran: " + k.spec.startup_command.value_or("") + "\n";
        if (*k.state.exit_code != 0) {
          std::string text = "dummy kernel: exit " + std::to_string(*k.state.exit_code) + "\n";
          output.push_back({id, "stderr", text});
          *k.state.logs += text;
        }
        reports.push_back(k.state);
      }
    }
    lock.unlock();
    for (auto const& [session, stream, text] : output) EmitOutput(session, stream, text);
    for (auto const& r : reports) Emit(r);
    lock.lock();
    if (!reports.empty()) continue;
    cv_.wait_until(lock, wake);
  }
}

}  // namespace bai::agent
