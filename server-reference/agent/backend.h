// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bai::agent {

/// What the manager asks for (the create_kernel message).
struct KernelSpec {
  std::string session_id;
  std::string session_name;
  std::string session_type;  ///< interactive, batch, inference
  std::string image;
  std::string resources_json;
  std::string environ_json;
  std::string mounts_json = "[]";  ///< vfolder mounts: [{name, host_path, kernel_path, permission}]
  std::optional<std::string> startup_command;
  std::optional<std::int64_t> batch_timeout;
};

/// A kernel's state as reported to the manager.
struct KernelReport {
  std::string session_id;
  std::string status;  ///< PREPARING, RUNNING, TERMINATED, ERROR
  std::optional<std::int64_t> exit_code;
  std::string reason;
  std::string logs;
};

/// Runs kernels. Implementations: DummyBackend (simulated), RuncBackend (containers).
/// Backends call Emit() from any thread; it reaches the reporter set by the agent.
class KernelBackend {
 public:
  using Report = std::function<void(KernelReport const&)>;
  virtual ~KernelBackend() = default;
  /// Where kernel state changes go (the agent's control channel); empty = nowhere.
  void SetReporter(Report report) {
    std::lock_guard<std::mutex> lock(report_mu_);
    report_ = std::move(report);
  }
  virtual void Create(KernelSpec const& spec) = 0;
  virtual void Destroy(std::string const& session_id, std::string const& reason) = 0;
  /// Every kernel the backend knows, live or finished-but-unreported, with its latest state.
  virtual std::vector<KernelReport> Snapshot() = 0;
  /// Forget finished kernels that have been reported.
  virtual void Acknowledge(std::string const& session_id) = 0;

  /// Runs one execute step (PROTOCOL.md §5.5) in the session's kernel; `request_json` has
  /// mode, run_id, code and options. Returns the result object ({runId, status, exitCode,
  /// console, options, files}) as JSON text; an unknown session gives status "finished" with
  /// exitCode 130, as Backend.AI answers for a vanished kernel.
  virtual std::string Execute(std::string const& session_id, std::string const& request_json) = 0;

  /// Restarts a running kernel in place (PATCH /session/{id}): the old one is stopped without a
  /// report, a fresh one with the same spec is started; returns once it runs again. Interpreter
  /// state and scratch files are lost, as in Backend.AI.
  virtual Status Restart(std::string const& session_id) = 0;

 protected:
  /// Sends `r` to the reporter; the reporter runs outside the lock.
  void Emit(KernelReport const& r) {
    Report report;
    {
      std::lock_guard<std::mutex> lock(report_mu_);
      report = report_;
    }
    if (report) report(r);
  }

 private:
  std::mutex report_mu_;
  Report report_;
};

}  // namespace bai::agent
