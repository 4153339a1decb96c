// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the runc backend writes into a kernel's directory before `runc run` (issue 45): the run
// directory, the GPU shim's files and activity stamps, resolv.conf, and kernel.json, the record
// a restarted agent re-adopts the kernel from (one typed KernelRecord, one codec).

#include "bai/status.h"

#include "server-reference/agent/gpus.h"
#include "server-reference/agent/network_plan.h"
#include "server-reference/agent/runc_options.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai::agent {

/// kernel.json: what the agent needs of a kernel it finds running after a restart.
struct KernelRecord {
  std::string session_id;
  std::string session_name;
  std::string session_type = "interactive";
  std::string image;
  std::string cgroups_path;
  std::string container_id;
  std::map<std::string, Quanta> gpu_quanta;  ///< GPU time quanta held, by device UUID
  std::vector<int> cpus;                     ///< its cpuset
  std::string network_mode;                  ///< with `network` (bridge mode)
  std::optional<KernelNetwork> network;      ///< its place on the bridge

  std::string ToJson() const;
  /// Lenient: what cannot be read stays as default (`container_id` as given: a directory's
  /// kernel without a readable record is still removed by its container id).
  static KernelRecord FromJson(std::string const& text, std::string container_id);
};

/// The kernel's run directory (`dir`/run, the runner's sockets), owned by the work user.
Status PrepareRunDir(std::string const& dir, RuncOptions const& options);

/// A kernel's GPU shim files (`plan.limits` non-empty: fractions): the ledger, the limits,
/// ld.so.preload, and in soft mode a zero activity stamp per GPU on the agent's boards. The
/// stamps made (removed with the kernel).
StatusOr<std::vector<std::string>> PrepareGpuShim(std::string const& dir,
                                                  std::string const& session_id,
                                                  GpuPlan const& plan, RuncOptions const& options);

/// Bridge mode's /etc/resolv.conf for the kernel (from the host's).
Status WriteResolvConf(std::string const& dir);
/// `dir`/etc/passwd and `dir`/etc/group, the kernel's own (image_process.h); the directory.
StatusOr<std::string> WriteKernelEtc(std::string const& dir, std::string const& passwd,
                                     std::string const& group);

/// kernel.json and config.json: the bundle `runc run` starts.
Status WriteBundle(std::string const& dir, KernelRecord const& record,
                   std::string const& oci_config);

}  // namespace bai::agent
