// SPDX-License-Identifier: Apache-2.0
#pragma once
// A kernel's OCI runtime configuration (config.json) and what it is made of: the sandbox,
// cgroup limits, CPU sets, vfolder mounts (issue 45: out of the runc backend).

#include "bai/status.h"

#include "server-reference/agent/backend.h"
#include "server-reference/agent/image_process.h"
#include "server-reference/agent/runc_options.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::agent {

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
/// The number of CPUs a cpuset list names ("0-2,5": 4). Pure.
std::size_t CpuCount(std::string_view list);
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
  /// Who the kernel's processes run as (image_process.h); nullptr: the agent's work user.
  KernelUser const* user = nullptr;
  /// A directory holding `passwd` and `group` for the kernel (PasswdWithUser), mounted
  /// read-only over the image's; empty: the image's own (the built-ins already have the user).
  std::string etc_dir = {};
};
std::string OciConfig(KernelSpec const& spec, Image const& image, RuncOptions const& options,
                      BundleLayout const& layout);
/// Where the agent keeps a GPU's activity board (soft mode): one stamp file per kernel on it.
std::string ActivityBoardDir(RuncOptions const& options, std::string const& uuid);

}  // namespace bai::agent
