// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/agent/backend.h"
#include "server-reference/agent/gpu_reconcile.h"
#include "server-reference/agent/gpus.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/network_plan.h"
#include "server-reference/agent/oci_config.h"
#include "server-reference/agent/oci_hooks.h"
#include "server-reference/agent/scratch.h"
#include "server-reference/common/daemon/workers.h"
#include "server-reference/common/wire/runner_messages.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace bai::agent {

/// Kernels as runc containers, with the kernel runner as their first process (DECISIONS.md
/// "Containers", "Kernel runner"). Kernel state lives under `state_dir`, so a restarted agent
/// re-adopts running kernels and removes dead ones.
class RuncBackend : public KernelBackend {
 public:
  explicit RuncBackend(RuncOptions options);
  ~RuncBackend() override;

  /// Checks runc and the runner, re-adopts or cleans up the kernels of an earlier run.
  Status Init();

  void Create(KernelSpec const& spec) override;
  void Destroy(std::string const& session_id, std::string const& reason) override;
  std::vector<KernelReport> Snapshot() override;
  /// From each running kernel's cgroup and, with a GPU, its gpu-usage.json.
  std::map<std::string, server::agent_protocol::KernelUsage> Usage() override;
  std::map<std::string, std::vector<server::DeviceAllocation>> Devices() override;
  void Acknowledge(std::string const& session_id) override;
  std::string Execute(server::agent_protocol::Execute const& request) override;
  Status Restart(std::string const& session_id) override;
  StatusOr<std::string> CommitTarget(std::string const& session_id, std::string const& filename,
                                     std::string const& directory) override;
  Status Commit(std::string const& session_id, std::string const& path) override;
  /// Relayed to the kernel runner, which works inside the container as the work user.
  server::runner_protocol::FileResult Files(
      std::string const& session_id, server::runner_protocol::FileRequest const& request) override;
  /// Through the runner's `stream.sock` in the kernel's run directory.
  StatusOr<int> OpenStream(std::string const& session_id,
                           server::runner_protocol::StreamOpen const& open,
                           std::string* status) override;

  /// The runc container id and cgroup path of a kernel (for tests and `bai-agent` tooling).
  std::string ContainerId(std::string const& session_id) const;
  std::string CgroupsPath(std::string const& session_id) const;

 private:
  struct Kernel;
  /// Init's parts: root, runc and the state directories, the runner copied in (PrepareHost);
  /// the kernels an earlier run left, running ones re-adopted and the rest cleaned up
  /// (ReadoptKernels), containers without a kernel directory deleted (DeleteStrayContainers);
  /// the adopted ones read again, their bridge rules loaded, the GPU reconciler started
  /// (Resume).
  Status PrepareHost();
  std::vector<std::shared_ptr<Kernel>> ReadoptKernels();
  /// The kernel an earlier run left in `dir`, as its kernel.json says.
  std::shared_ptr<Kernel> KernelFromRecord(std::filesystem::path const& dir) const;
  void DeleteStrayContainers() const;
  Status Resume(std::vector<std::shared_ptr<Kernel>> const& adopted);
  /// The session's kernel when it is RUNNING and not being torn down; else NotFound.
  StatusOr<std::shared_ptr<Kernel>> Running(std::string const& session_id) const;
  void Start(std::shared_ptr<Kernel> k);
  /// Everything before `runc run` (kernel_bundle.h): apps, run directory, scratch, GPU shim,
  /// CPUs, network, kernel.json and config.json. The kernel's network mode.
  StatusOr<std::string> Assemble(Kernel& k, Image image);
  /// Its cpuset, the least loaded CPUs by the kernels already here (PickCpus); "0-1".
  std::string PlaceCpus(Kernel& k);
  /// A start that failed: torn down, ERROR with the reason (unless destroyed meanwhile).
  void FailStart(std::shared_ptr<Kernel> const& k, std::string const& why);
  /// Destroyed while `runc run` was creating it: the container is removed here.
  bool DestroyedMeanwhile(Kernel& k);
  /// RUNNING: reported, a batch job sent to the runner, then the reader loop.
  void MarkRunning(std::shared_ptr<Kernel> const& k, std::string const& mode);
  void ReadLoop(std::shared_ptr<Kernel> k);
  void Teardown(std::shared_ptr<Kernel> k, std::string reason,
                std::optional<std::int64_t> exit_code, bool report);
  bool ConnectRunner(Kernel& k, std::chrono::milliseconds timeout);
  /// Whether a process (a socket's peer) is one of the kernel's own (in its cgroup).
  std::function<bool(pid_t)> OwnPeer(Kernel const& k) const;
  /// Writes the spec's dotfiles through the just-connected runner, as the work user.
  void WriteDotfiles(Kernel& k);
  /// Runs the spec's bootstrap script (as the work user, in /home/work) before the kernel is
  /// RUNNING; its output (both streams) goes to the kernel's stderr, a failure is said there
  /// too, and never stops the kernel.
  void RunBootstrap(Kernel& k);
  /// Writes one message to the kernel's runner (dropped when it is not connected).
  static void SendToRunner(Kernel& k, server::runner_protocol::ToRunner const& message);
  /// Whether the kernel's cgroup counted an OOM kill (read before the cgroup is deleted).
  bool OomKilled(Kernel const& k) const;
  /// What the kernel used (its cgroup, its GPU memory); nullopt once the cgroup is gone.
  std::optional<server::agent_protocol::KernelUsage> Sample(Kernel const& k) const;
  std::vector<std::string> Runc(std::vector<std::string> args) const;
  /// The running kernels with a GPU ledger, for the reconciler.
  std::vector<ReconcileTarget> ReconcileTargets() const;
  /// Bridge mode for a starting kernel: the bridge (set up on first use), a free address.
  StatusOr<KernelNetwork> JoinBridge(Kernel& k);
  void Spawn(std::function<void()> fn);

  RuncOptions options_;
  std::string runner_dir_;
  int cgroup_version_ = 1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Kernel>> kernels_;
  // Start, teardown and reader threads; finished ones are joined on the next Spawn, so a
  // long-running agent does not accumulate them.
  server::Workers workers_;
  bool stopping_ = false;
  QuantaMap quanta_;  ///< GPU time quanta held by this agent's kernels
  std::mutex bridge_mu_;
  bool bridge_ready_ = false;  ///< EnsureBridge succeeded in this run of the agent
  std::unique_ptr<GpuReconciler> reconciler_;
};

}  // namespace bai::agent
