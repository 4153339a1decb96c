// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the runc backend is told at start (bai-agent's flags and TOML, agent/main.cc).

#include "server-reference/agent/gpu_reconcile.h"
#include "server-reference/agent/gpus.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/network_plan.h"
#include "server-reference/agent/scratch.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
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
  RootfsProvider* images = nullptr;  ///< where kernels' root filesystems come from
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

}  // namespace bai::agent
