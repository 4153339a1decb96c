// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/agent/backend.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace bai::agent {

struct DummyOptions {
  std::chrono::milliseconds prepare_delay{100};  ///< SCHEDULED → PREPARING → RUNNING
  std::chrono::milliseconds run_time{200};       ///< how long a batch job runs
  int default_exit_code = 0;
  std::string commit_dir;  ///< where commits go (a directory per session); empty: none allowed
  std::string home_dir;    ///< each kernel's simulated /home/work goes here; empty: no files
};

/// Simulated kernels, for scale tests and for testing the manager without containers. A batch
/// job runs for `run_time` and exits with the N of a trailing `exit N` in its startup command
/// (else `default_exit_code`); its logs are the command it would have run (its output shows the
/// bootstrap script it would have run first). Interactive kernels
/// run until destroyed. Many dummy agents can share one machine.
class DummyBackend : public KernelBackend {
 public:
  explicit DummyBackend(DummyOptions options);
  ~DummyBackend() override;

  void Create(KernelSpec const& spec) override;
  void Destroy(std::string const& session_id, std::string const& reason) override;
  std::vector<KernelReport> Snapshot() override;
  /// Simulated (nothing runs): CPU time is the time the kernel has been running, as if it kept
  /// one core busy; memory is a constant 32 MiB; no I/O.
  std::map<std::string, server::agent_protocol::KernelUsage> Usage() override;
  std::map<std::string, std::vector<server::DeviceAllocation>> Devices() override;
  void Acknowledge(std::string const& session_id) override;
  /// Simulated: a query echoes its code on stdout and finishes with exit code 0 (or N for a
  /// trailing `exit N`); input mode finishes with the input echoed.
  std::string Execute(server::agent_protocol::Execute const& request) override;
  /// Simulated: a running kernel restarts at once.
  Status Restart(std::string const& session_id) override;
  StatusOr<std::string> CommitTarget(std::string const& session_id, std::string const& filename,
                                     std::string const& directory) override;
  /// Simulated: writes an empty tar archive.
  Status Commit(std::string const& session_id, std::string const& path) override;
  /// On the kernel's own directory under `home_dir` (made on first use, removed with the kernel).
  /// Served in a thread of the agent by the kernel runner's own stream code: a real login
  /// shell on a pseudo-terminal in the kernel's directory under `home_dir`, or a connection to
  /// 127.0.0.1:PORT on this host (a simulated kernel's services are the host's).
  StatusOr<int> OpenStream(std::string const& session_id,
                           server::runner_protocol::StreamOpen const& open,
                           std::string* status) override;
  server::runner_protocol::FileResult Files(
      std::string const& session_id, server::runner_protocol::FileRequest const& request) override;

 private:
  struct Kernel {
    KernelSpec spec;
    KernelReport state;
    std::chrono::steady_clock::time_point next;  ///< when its next step happens
    std::optional<std::chrono::steady_clock::time_point> running_since = std::nullopt;
  };
  /// The simulated figures: one core busy since it started running, kDummyMemory held.
  static server::agent_protocol::KernelUsage Simulated(Kernel const& k,
                                                       std::chrono::steady_clock::time_point now);
  void Loop();
  /// Into the kernel's simulated /home/work (home_dir), as a runner would.
  void WriteDotfiles(std::string const& session_id, Kernel& k);
  /// NotFound unless the session's kernel is RUNNING.
  Status CheckRunning(std::string const& session_id);

  DummyOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, Kernel> kernels_;
  std::thread thread_;
};

}  // namespace bai::agent
