// SPDX-License-Identifier: Apache-2.0
// The runc backend's work inside a running kernel: execute runs, file requests, streams
// (terminals, ports) and commits.
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

StatusOr<std::string> RuncBackend::CommitTarget(std::string const& session_id,
                                                std::string const& filename,
                                                std::string const& directory) {
  if (auto running = Running(session_id); !running.ok()) return running.status();
  return CommitFile(options_.state_dir + "/commits", session_id, filename, directory);
}

Status RuncBackend::Commit(std::string const& session_id, std::string const& path) {
  std::shared_ptr<Kernel> k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(session_id);
    if (it == kernels_.end()) return Status(StatusCode::kNotFound, "no kernel " + session_id);
    k = it->second;
  }
  auto state = server::RunProcess(Runc({"state", k->container_id}), server::StdoutOnly());
  auto pid = state.exit_code == 0 ? StatePid(state.output) : std::nullopt;
  if (!pid || *pid <= 0) {
    return Status(StatusCode::kFailedPrecondition, "the kernel's container is not running");
  }
  // The container's own view of its files: /proc/PID/root crosses into its mount namespace, so
  // its tmpfs /home/work and /tmp are what tar reads. Symbolic links are stored, not followed.
  std::string root = "/proc/" + std::to_string(*pid) + "/root";
  std::string partial = path + ".partial";
  std::vector<std::string> argv = {"tar",         "--create", "--file",          partial,
                                   "--directory", root,       "--numeric-owner", "--sparse"};
  for (auto const& v : VfolderMounts(k->spec.mounts)) {
    argv.push_back("--exclude=" + v.kernel_path.substr(1));  // member names have no leading '/'
  }
  argv.insert(argv.end(), {"home/work", "tmp"});
  server::ProcessOptions o;
  o.timeout = std::chrono::minutes(30);
  auto tar = server::RunProcess(argv, o);
  // Exit 1 is GNU tar's "some files changed while being read": the archive is still whole.
  if (tar.exit_code != 0 && tar.exit_code != 1) {
    ::unlink(partial.c_str());
    return Status(StatusCode::kInternal, "tar failed (" + std::to_string(tar.exit_code) +
                                             "): " + tar.output.substr(0, 500));
  }
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    ::unlink(partial.c_str());
    return Status(StatusCode::kInternal, "cannot rename " + partial + ": " + std::strerror(errno));
  }
  return Status();
}

StatusOr<int> RuncBackend::OpenStream(std::string const& session_id, rp::StreamOpen const& open,
                                      std::string* status) {
  auto running = Running(session_id);
  if (!running.ok()) return running.status();
  auto fd = ConnectKernelSocket((*running)->dir + "/run", "stream.sock", OwnPeer(**running));
  if (!fd.ok()) {
    server::log::Warn("refused the kernel's stream socket",
                      {{"session", session_id}, {"reason", fd.status().message()}});
    return fd.status().code() == StatusCode::kPermissionDenied
               ? fd.status()
               : Status(StatusCode::kInternal, "cannot reach the kernel's stream socket");
  }
  return HandshakeStream(*fd, open, status);
}

rp::FileResult RuncBackend::Files(std::string const& session_id, rp::FileRequest const& request) {
  rp::FileResult result;
  result.request_id = request.request_id;
  auto running = Running(session_id);
  if (!running.ok()) {
    result.status = running.status();
    return result;
  }
  std::shared_ptr<Kernel> k = *running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    k->files[request.request_id];
  }
  SendToRunner(*k, request);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = k->files.find(request.request_id);
  bool answered = cv_.wait_for(lock, options_.files_timeout, [&] {
    return it->second.has_value() || k->tearing_down || k->sock < 0;
  });
  if (answered && it->second) {
    result = std::move(*it->second);
  } else {
    bool gone = k->tearing_down || k->sock < 0;
    result.status = Status(gone ? StatusCode::kNotFound : StatusCode::kDeadlineExceeded,
                           gone ? "the kernel ended" : "the kernel runner did not answer");
  }
  k->files.erase(it);
  return result;
}

std::string RuncBackend::Execute(server::agent_protocol::Execute const& req) {
  std::string const& run_id = req.run_id;
  std::string const& mode = req.mode;
  protocol::ExecuteResult result;
  result.run_id = run_id;
  result.status = "finished";
  std::shared_ptr<Kernel> k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(req.session_id);
    if (it != kernels_.end() && it->second->state.status == protocol::KernelStatus::kRunning &&
        !it->second->tearing_down) {
      k = it->second;
    }
  }
  if (!k) {
    result.exit_code = 130;
    return protocol::EncodeExecuteResult(result);
  }
  std::optional<rp::ToRunner> op;
  if (mode == "query") {
    op = rp::Query{run_id, req.code};
  } else if (mode == "batch") {
    auto step = [&req](char const* name) {
      auto it = req.options.find(name);
      return it == req.options.end() ? std::string() : it->second;
    };
    rp::Batch batch{run_id, step("clean"), step("build"), step("exec")};
    if (!req.options.count("exec")) batch.exec = req.code;
    op = std::move(batch);
  } else if (mode == "input") {
    op = rp::Input{run_id, req.code};
  } else if (mode == "interrupt") {
    op = rp::Interrupt{run_id};
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (mode == "query" || mode == "batch") k->runs[run_id] = {};
  if (mode == "input") {
    auto it = k->runs.find(run_id);
    if (it != k->runs.end()) it->second.status = "running";
  }
  if (op) SendToRunner(*k, *op);
  if (k->runs.find(run_id) == k->runs.end()) {
    result.exit_code = mode == "interrupt" ? 0 : 130;
    return protocol::EncodeExecuteResult(result);
  }
  // Another request may wait on the same run meanwhile (an interrupt beside a poll) and take
  // its end: the run is looked up again after every wait, never held across one.
  auto ended = [&] {
    auto r = k->runs.find(run_id);
    return r == k->runs.end() || r->second.status != "running" || k->tearing_down ||
           r->second.console_bytes >= kStepConsole;
  };
  if (req.flush_ms > 0) {
    // Streamed: output goes out once a flush interval has passed, not only at the wait's end.
    auto flush = std::chrono::milliseconds(req.flush_ms);
    auto has_output = [&] {
      auto r = k->runs.find(run_id);
      return r != k->runs.end() && !r->second.console.empty();
    };
    if (!cv_.wait_for(lock, std::min(flush, options_.flush_timeout), ended) && !has_output()) {
      cv_.wait_for(lock, options_.flush_timeout - std::min(flush, options_.flush_timeout),
                   [&] { return ended() || has_output(); });
    }
  } else {
    cv_.wait_for(lock, options_.flush_timeout, ended);
  }
  auto it = k->runs.find(run_id);
  if (it == k->runs.end()) {  // its end went to the other request
    result.exit_code = mode == "interrupt" ? 0 : 130;
    return protocol::EncodeExecuteResult(result);
  }
  result.console = TakeConsole(it->second, kMaxStepConsole);
  if (!it->second.console.empty()) {
    result.status = "continued";  // more waits: the end is told once it is all taken
  } else if (it->second.status == "finished") {
    result.exit_code = it->second.exit_code;
    k->runs.erase(it);
  } else if (it->second.status == "waiting-input") {
    result.status = "waiting-input";
    result.prompt = it->second.prompt;
    result.is_password = it->second.is_password;
  } else if (k->tearing_down) {
    result.exit_code = 130;
    k->runs.erase(it);
  } else {
    result.status = "continued";
  }
  return protocol::EncodeExecuteResult(result);
}

}  // namespace bai::agent
