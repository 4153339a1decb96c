// SPDX-License-Identifier: Apache-2.0
// The shell around gpushim/core/reconcile.h: every few seconds, for each running kernel with a
// GPU ledger, the agent
//   1. writes the host PID of every ledger slot's owner into the slot (the record lock's owner
//      as the agent sees it), so the shim inside can map NVML's host PIDs to its own;
//   2. reads the container's host PIDs from its cgroup and NVML's compute processes of each of
//      its devices, and reconciles them with the ledger;
//   3. writes the excess NVML shows beyond the ledger as the device's untracked bytes (policy
//      `enforce`: the cap then holds on max(ledger, NVML)) and the figures to the kernel's
//      `gpu-usage.json` (the drift metric), logging when a container holds GPU memory the shim
//      did not see.
// No hot path waits for it: the shim only reads what it writes.
#pragma once

#include "server-reference/agent/nvml.h"
#include "server-reference/gpushim/core/ledger.h"
#include "server-reference/gpushim/core/reconcile.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace bai::agent {

/// One kernel to reconcile: host paths.
struct ReconcileTarget {
  std::string session_id;
  std::string ledger;  ///< the kernel's ledger file
  std::string procs;   ///< its cgroup's cgroup.procs (host PIDs)
  std::string report;  ///< where gpu-usage.json goes
};

/// gpu-usage.json: {"devices":[{uuid, limit, ledger, nvml, drift, untracked, unshimmed}]}.
std::string UsageJson(std::vector<gpushim::DeviceUsage> const& devices);
/// The PIDs of a cgroup.procs file (empty when it cannot be read).
std::set<unsigned> ReadPids(std::string const& procs_file);

class GpuReconciler {
 public:
  using Targets = std::function<std::vector<ReconcileTarget>()>;
  GpuReconciler(std::string nvml_library, gpushim::ReconcilePolicy policy, Targets targets);
  ~GpuReconciler();
  GpuReconciler(GpuReconciler const&) = delete;
  GpuReconciler& operator=(GpuReconciler const&) = delete;

  /// Runs RunOnce every `interval` on a thread of its own until destroyed.
  void Start(std::chrono::milliseconds interval);
  /// One pass over the targets; the figures by session.
  std::map<std::string, std::vector<gpushim::DeviceUsage>> RunOnce();

 private:
  std::string library_;
  gpushim::ReconcilePolicy policy_;
  Targets targets_;
  std::unique_ptr<Nvml> nvml_;
  bool nvml_failed_logged_ = false;
  std::map<std::string, std::unique_ptr<gpushim::Ledger>> ledgers_;  ///< by path
  std::map<std::string, std::string> last_note_;  ///< by session: the state last logged
  std::set<std::string> failing_;                 ///< devices NVML could not list (logged once)
  std::mutex run_mu_;                             ///< one pass at a time

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace bai::agent
