// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a kernel has used, from its cgroup: pure parsers of the cgroup v1 and v2 files and of the
// GPU reconciler's gpu-usage.json, and a thin reader that opens the files. The agent sends the
// figures with each heartbeat (live_stat) and with a kernel's end (last_stat).

#include "server-reference/common/wire/agent_messages.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bai::agent {

/// The text of each file a v2 cgroup keeps (empty when it could not be read). `cpu_stat` must
/// have usage_usec and `memory_current` a number, or nothing is known.
struct CgroupV2Files {
  std::string cpu_stat;        ///< cpu.stat: usage_usec
  std::string memory_current;  ///< memory.current
  std::string memory_peak;     ///< memory.peak (Linux 5.19+; else the current value is the peak)
  std::string memory_max;      ///< memory.max: bytes or "max"
  std::string io_stat;         ///< io.stat: "MAJ:MIN rbytes=N wbytes=N …" per device
};
std::optional<server::agent_protocol::KernelUsage> ParseCgroupV2(CgroupV2Files const& files);

/// The same from v1's controllers.
struct CgroupV1Files {
  std::string cpuacct_usage;     ///< cpuacct/…/cpuacct.usage: nanoseconds
  std::string memory_usage;      ///< memory/…/memory.usage_in_bytes
  std::string memory_max_usage;  ///< memory/…/memory.max_usage_in_bytes
  std::string memory_limit;      ///< memory/…/memory.limit_in_bytes (huge: none)
  std::string blkio_bytes;  ///< blkio/…/blkio.throttle.io_service_bytes: "MAJ:MIN Read N" lines
};
std::optional<server::agent_protocol::KernelUsage> ParseCgroupV1(CgroupV1Files const& files);

/// The GPU memory a kernel holds from gpu-usage.json (GpuReconciler): per device the larger of
/// what the shim's ledger and NVML show, summed; nullopt when the text is not that file.
std::optional<std::int64_t> GpuMemoryHeld(std::string_view gpu_usage_json);

/// Reads `cgroups_path` (as runc's cgroupsPath, under /sys/fs/cgroup) for cgroup `version` 1 or
/// 2; nullopt when the cgroup is gone or unreadable.
std::optional<server::agent_protocol::KernelUsage> ReadCgroupUsage(
    int version, std::string const& cgroups_path, std::string const& root = "/sys/fs/cgroup");

}  // namespace bai::agent
