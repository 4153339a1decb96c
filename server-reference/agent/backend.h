// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/service_ports.h"
#include "bai/status.h"

#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/common/wire/runner_messages.h"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bai::agent {

/// What the manager asks for: the create_kernel message.
using KernelSpec = server::agent_protocol::CreateKernel;

/// A kernel's state as reported to the manager: the kernel_status message.
using KernelReport = server::agent_protocol::KernelStatus;

/// `<commit_dir>/<session_id>/<filename>` for a commit, its directories made (0700), or
/// `<directory>/<filename>` when a folder's host directory is given (it must exist and be a
/// directory, not a link); an error for a name that is not bare, or when the file exists (a
/// commit never overwrites).
/// A kernel's apps (service ports): its image's `ai.backend.service-ports` label (refused with
/// 24.09's messages: reserved or repeated ports…), the preopen ports asked for, and the intrinsic
/// `terminal` (protocol `pty`, reached through /stream/session/{id}/pty); each with the URL
/// template and the allowed arguments and environment of its service definition
/// (`/etc/backend.ai/service-defs/NAME.json` read inside the image root `rootfs`, never through
/// a link out of it; none when `rootfs` is empty).
StatusOr<std::vector<protocol::ServicePort>> KernelApps(
    std::map<std::string, std::string> const& labels, std::vector<int> const& preopen_ports,
    std::string const& rootfs);

/// Connects to the Unix socket `name` in a kernel's run directory `run_dir`, which the kernel
/// can write: the entry is opened without following a link (a socket the kernel planted as a
/// link to another kernel's is refused), must be a socket, and the process listening on it must
/// pass `peer_ok` (its pid, as SO_PEERCRED gives it: the caller checks it is the kernel's own).
/// kPermissionDenied for a link, something else or a foreign peer; kUnavailable when nothing
/// listens there (yet).
StatusOr<int> ConnectKernelSocket(std::string const& run_dir, char const* name,
                                  std::function<bool(pid_t)> const& peer_ok);

/// Whether `pid` runs in the cgroup `cgroup_path` (or beneath it), as /proc/PID/cgroup says:
/// the unified hierarchy's entry (`version` 2) or the memory controller's (1).
bool ProcessInCgroup(pid_t pid, int version, std::string const& cgroup_path);

/// Sends `open` on `fd`, a connection to a kernel's stream socket, and reads the answer: `fd`
/// when accepted; else the refusal (closing `fd`), kUnavailable for close code 1013.
StatusOr<int> HandshakeStream(int fd, server::runner_protocol::StreamOpen const& open,
                              std::string* status = nullptr);

StatusOr<std::string> CommitFile(std::string const& commit_dir, std::string const& session_id,
                                 std::string const& filename, std::string const& directory = {});

/// Runs kernels. Implementations: DummyBackend (simulated), RuncBackend (containers).
/// Backends call Emit() from any thread; it reaches the reporter set by the agent.
class KernelBackend {
 public:
  using Report = std::function<void(KernelReport const&)>;
  /// Output of a kernel as it is produced: (session id, stdout or stderr, bytes).
  using Output = std::function<void(std::string const&, std::string const&, std::string const&)>;
  virtual ~KernelBackend() = default;
  /// Where kernel output goes (the agent's log store and relay); empty = nowhere.
  void SetOutputSink(Output output) {
    std::lock_guard<std::mutex> lock(report_mu_);
    output_ = std::move(output);
  }
  /// Where kernel state changes go (the agent's control channel); empty = nowhere.
  void SetReporter(Report report) {
    std::lock_guard<std::mutex> lock(report_mu_);
    report_ = std::move(report);
  }
  virtual void Create(KernelSpec const& spec) = 0;
  virtual void Destroy(std::string const& session_id, std::string const& reason) = 0;
  /// Every kernel the backend knows, live or finished-but-unreported, with its latest state.
  virtual std::vector<KernelReport> Snapshot() = 0;
  /// What each running kernel has used so far, by session id (sent with heartbeats); kernels
  /// whose figures cannot be read are left out.
  virtual std::map<std::string, server::agent_protocol::KernelUsage> Usage() { return {}; }
  /// The GPUs each kernel that has not ended holds, by session id (the agent's /metrics).
  virtual std::map<std::string, std::vector<server::DeviceAllocation>> Devices() { return {}; }
  /// Forget finished kernels that have been reported.
  virtual void Acknowledge(std::string const& session_id) = 0;

  /// Runs one execute step (PROTOCOL.md §5.5) in the request's session's kernel. Returns the
  /// result object ({runId, status, exitCode, console, options, files}) as JSON text; an
  /// unknown session gives status "finished" with exitCode 130, as Backend.AI answers for a
  /// vanished kernel.
  virtual std::string Execute(server::agent_protocol::Execute const& request) = 0;

  /// Restarts a running kernel in place (PATCH /session/{id}): the old one is stopped without a
  /// report, a fresh one with the same spec is started; returns once it runs again. Interpreter
  /// state and scratch files are lost, as in Backend.AI.
  virtual Status Restart(std::string const& session_id) = 0;

  /// The file a commit of the session's running kernel called `filename` (a bare name) will
  /// be written to on this agent (in `directory` when given: a virtual folder's directory on
  /// this host); an error when the kernel is not running or the file exists.
  virtual StatusOr<std::string> CommitTarget(std::string const& session_id,
                                             std::string const& filename,
                                             std::string const& directory) = 0;
  /// Archives what the kernel changed into the tar file `path` (from CommitTarget): images are
  /// read-only, so that is its writable directories /home/work and /tmp, without the vfolders
  /// mounted there (they persist on their own). Takes as long as the archive does.
  virtual Status Commit(std::string const& session_id, std::string const& path) = 0;

  /// A file request on the running kernel's /home/work (PROTOCOL.md §5.6, ConfinedTree's rules);
  /// kNotFound when the kernel is not running.
  virtual server::runner_protocol::FileResult Files(
      std::string const& session_id, server::runner_protocol::FileRequest const& request) = 0;
  /// A data stream into the running kernel (docs/agent-protocol.md, "Data streams"): a
  /// connected socket on which `open` was accepted, ready for pty frames or the TCP bytes.
  /// Refusals: kNotFound (no such running kernel), kUnavailable (the port refuses: close code
  /// 1013), others (1011), with the runner's message.
  /// `status`, when given, gets the answer's status (a service: started or running).
  virtual StatusOr<int> OpenStream(std::string const& session_id,
                                   server::runner_protocol::StreamOpen const& open,
                                   std::string* status = nullptr) = 0;

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
  /// Sends output to the sink, before the kernel's next Emit (so it is relayed first).
  void EmitOutput(std::string const& session_id, std::string const& stream,
                  std::string const& data) {
    Output output;
    {
      std::lock_guard<std::mutex> lock(report_mu_);
      output = output_;
    }
    if (output && !data.empty()) output(session_id, stream, data);
  }

 private:
  std::mutex report_mu_;
  Report report_;
  Output output_;
};

}  // namespace bai::agent
