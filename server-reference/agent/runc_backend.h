// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/agent/backend.h"
#include "server-reference/agent/gpu_reconcile.h"
#include "server-reference/agent/gpus.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/network_plan.h"
#include "server-reference/agent/scratch.h"
#include "server-reference/common/wire/runner_messages.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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

struct RuncOptions {
  std::string agent_id;
  std::string state_dir;    ///< kernels/, runc/ and bin/ live here; unique per agent instance
  std::string runner_path;  ///< host path of bai-kernel-runner (copied into state_dir/bin)
  std::string hook_path;    ///< host path of bai-agent, run as the OCI hook that raises loopback
  std::string runc = "runc";
  int uid = 1000;
  int gid = 1000;
  std::string home_size = "1g";   ///< size of /home/work
  std::string tmp_size = "256m";  ///< size of /tmp
  /// Where scratch lives (scratch.h): kScratchTmpfs (counted as the session's memory) or
  /// kScratchDisk (an ext4 image of home_size + tmp_size on the agent's disk).
  std::string scratch = kScratchTmpfs;
  std::int64_t pids_limit = 4096;
  std::chrono::milliseconds grace{3000};           ///< SIGTERM → SIGKILL
  std::chrono::milliseconds start_timeout{20000};  ///< runner handshake
  std::chrono::milliseconds flush_timeout{2000};   ///< one execute step waits at most this long
  std::chrono::milliseconds files_timeout{30000};  ///< a file request waits at most this long
  /// A bootstrap script runs at most this long (then SIGINT, and the kernel starts anyway).
  std::chrono::milliseconds bootstrap_timeout{600000};
  ImageStore* images = nullptr;
  /// GPUs (gpus.h): what this agent has, how it shares them, the host files containers get.
  std::vector<GpuDevice> gpus;
  GpuSharing gpu_sharing;
  GpuFiles gpu_files;
  /// Reconciliation of GPU kernels' ledgers with NVML (gpu_reconcile.h); interval 0: off.
  std::string nvml_library = "libnvidia-ml.so.1";
  gpushim::ReconcilePolicy gpu_reconcile;
  std::chrono::milliseconds gpu_reconcile_interval{2000};
  /// A kernel's network when its session does not say (network_plan.h): "bridge" (DECISIONS.md:
  /// an address on the agent's bridge, NAT to the outside) or "none" (loopback only).
  std::string network_default = kNetworkBridge;
  /// Bridge mode's bridge, pool and NAT; nullopt: bridge mode is off on this agent.
  std::optional<BridgeConfig> bridge = BridgeConfig{};
  /// The operator's per-image exceptions to the kernel sandbox (issue 43, 5g): image name or
  /// alias ("python" for every tag, "python:3.11" for one) → exception names
  /// (SandboxExceptionNames()). An image cannot ask for one itself.
  std::map<std::string, std::set<std::string>> sandbox_exceptions;
};

/// The exceptions an operator may grant an image: "userns" (user namespaces and the mounts made
/// inside them: rootless containers, bubblewrap), "io_uring", "perf" (perf_event_open; the
/// host's perf_event_paranoid still applies).
std::vector<std::string> SandboxExceptionNames();
/// One `--sandbox-exception IMAGE=NAME[,NAME…]`; a clear error naming the known exceptions.
StatusOr<std::pair<std::string, std::set<std::string>>> ParseSandboxException(
    std::string_view text);
/// The exceptions `policy` grants `image` (by its name or any alias; "python" covers every
/// "python:TAG"). Pure.
std::set<std::string> SandboxExceptionsFor(
    std::map<std::string, std::set<std::string>> const& policy, Image const& image);
/// The kernel's seccomp profile (an OCI `linux.seccomp` object): Docker's default refusals plus
/// user namespaces and io_uring, less what `exceptions` lets back in. Pure.
nlohmann::json SeccompProfile(std::set<std::string> const& exceptions);

/// A virtual folder of create_kernel's `mounts` where the kernel sees it: the default kernel
/// path is /home/work/NAME, a relative one goes under /home/work; entries with ".." or without
/// a host path are skipped.
struct VfolderMount {
  std::string kernel_path;
  std::string host_path;
  bool read_only = true;
};
std::vector<VfolderMount> VfolderMounts(std::vector<server::agent_protocol::Mount> const& mounts);

/// Limits derived from a kernel's allocated slots.
struct CgroupLimits {
  std::int64_t cpu_quota_us = -1;  ///< -1: unlimited
  std::int64_t cpu_period_us = 100000;
  std::int64_t memory_bytes = -1;
  std::int64_t pids = 4096;
};

/// From the create_kernel `resources` (cpu, mem in bytes).
CgroupLimits LimitsFromResources(protocol::ResourceSlots const& resources, std::int64_t pids);

/// The cgroup files (relative to the cgroup root) and values that `limits` mean for a kernel
/// at `cgroups_path`, for cgroup v1 (one hierarchy per controller) or v2 (unified). runc writes
/// them from the OCI spec; the agent reads them back in tests and reads the OOM counters.
std::vector<std::pair<std::string, std::string>> CgroupFiles(int version,
                                                             std::string const& cgroups_path,
                                                             CgroupLimits const& limits);
/// The file holding the kernel's OOM-kill counter, and the key in it ("oom_kill").
std::string OomCounterFile(int version, std::string const& cgroups_path);
/// The file listing the host PIDs of the kernel's processes.
std::string CgroupProcsFile(int version, std::string const& cgroups_path);
/// 1 or 2 for this host (v2 when /sys/fs/cgroup/cgroup.controllers exists).
int HostCgroupVersion();

/// The host CPUs a kernel is pinned to (its cpuset), so that `nproc`, `os.cpu_count()` and
/// thread pools see its share, as container runtimes show it: ceil(cpu) CPUs (at least 1, at
/// most all), the least loaded of `allowed` by the kernels already placed (`load`: kernels per
/// CPU), ties to the lowest number. The cpu.max quota still bounds the time. Pure.
std::vector<int> PickCpus(std::vector<int> const& allowed, std::map<int, int> const& load,
                          protocol::Decimal const& cpu);
/// "0-2,5": the cpuset list syntax.
std::string CpuList(std::vector<int> cpus);
/// The CPUs this process may run on (sched_getaffinity).
std::vector<int> AllowedCpus();

/// The OCI runtime configuration (config.json) of one kernel: namespaces, limits, mounts, user,
/// no capabilities, no_new_privs, the default seccomp profile.
struct BundleLayout {
  std::string kernel_dir;  ///< per-kernel directory on the host
  std::string runner_dir;  ///< host directory with bai-kernel-runner (mounted at /opt/bai/bin)
  std::string cgroups_path;
  GpuPlan const* gpus = nullptr;  ///< the kernel's GPUs, when it has any
  std::string cpus;               ///< its cpuset ("0-1"); empty: every CPU
  /// Its place on the bridge (bridge mode); nullptr: loopback only. Bridge mode mounts
  /// `kernel_dir`/resolv.conf as /etc/resolv.conf.
  KernelNetwork const* network = nullptr;
};
std::string OciConfig(KernelSpec const& spec, Image const& image, RuncOptions const& options,
                      BundleLayout const& layout);
/// Where the agent keeps a GPU's activity board (soft mode): one stamp file per kernel on it.
std::string ActivityBoardDir(RuncOptions const& options, std::string const& uuid);

/// Runs an OCI hook of ours with the container state (JSON on stdin): `loopback-up` raises `lo`
/// in the container's new network namespace (network mode "none": loopback only);
/// `network-up ARGS` puts it on the agent's bridge (NetworkHookArgs).
Status RunHook(std::string const& name, std::string const& state_json,
               std::vector<std::string> const& args = {});

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
  /// The session's kernel when it is RUNNING and not being torn down; else NotFound.
  StatusOr<std::shared_ptr<Kernel>> Running(std::string const& session_id) const;
  void Start(std::shared_ptr<Kernel> k);
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
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex threads_mu_;
  std::vector<Worker> threads_;
  bool stopping_ = false;
  QuantaMap quanta_;  ///< GPU time quanta held by this agent's kernels
  std::mutex bridge_mu_;
  bool bridge_ready_ = false;  ///< EnsureBridge succeeded in this run of the agent
  std::unique_ptr<GpuReconciler> reconciler_;
};

}  // namespace bai::agent
