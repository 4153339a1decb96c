// SPDX-License-Identifier: Apache-2.0
// Reconciliation of a container's ledger with what the driver reports (gpu-shim design §6.4):
// the ledger counts what the shim saw; NVML's per-process `usedGpuMemory` counts what the
// driver holds for each host PID, including what the shim never saw (a statically linked
// program, driver-internal allocations, a process that bypassed the preload). The agent, which
// knows the container's host PIDs from its cgroup, compares the two off the hot path and may
// charge the excess to the container so that its cap holds on max(ledger, NVML).
//
// Pure: no I/O, no clock. The agent's shell (agent/gpu_reconcile.h) gathers the inputs and
// applies the result.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace bai::gpushim {

/// One process on a device, as NVML reports it (host PID, bytes).
struct GpuProcess {
  unsigned pid = 0;
  std::uint64_t bytes = 0;
};

struct ReconcilePolicy {
  /// Charge the excess of NVML over the ledger to the container (else report it only).
  bool enforce = true;
  /// Excess up to this much is normal (allocation rounding, a context's estimate) and not
  /// charged.
  std::uint64_t slack = 64ull << 20;
};

/// One device of one container, reconciled.
struct DeviceUsage {
  std::string uuid;
  std::uint64_t limit = 0;      ///< the cap (0: not capped)
  std::uint64_t ledger = 0;     ///< what the ledger counts
  std::uint64_t nvml = 0;       ///< what NVML reports for the container's processes
  std::int64_t drift = 0;       ///< nvml − ledger
  std::uint64_t untracked = 0;  ///< what the ledger is to charge beyond its count
  /// The container's processes holding memory on the device without a ledger slot (the shim
  /// is not in them), by host PID, ascending.
  std::vector<unsigned> unshimmed;
};

/// `on_device`: every process NVML lists on the device; `container`: the container's host
/// PIDs (its cgroup); `shimmed`: the host PIDs owning ledger slots.
DeviceUsage ReconcileDevice(std::string uuid, std::uint64_t limit, std::uint64_t ledger_used,
                            std::vector<GpuProcess> const& on_device,
                            std::set<unsigned> const& container, std::set<unsigned> const& shimmed,
                            ReconcilePolicy const& policy);

}  // namespace bai::gpushim
