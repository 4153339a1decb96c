// SPDX-License-Identifier: Apache-2.0
#pragma once
// The node's CPU and memory load for heartbeats: pure parsers of /proc/stat and /proc/meminfo
// and the difference of two CPU samples, with a thin sampler that reads the files.

#include "server-reference/common/wire/agent_messages.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::agent {

/// A file read whole (what /proc, /sys and the agent's state files hold): empty when it cannot
/// be read. For the samplers here, kernel_usage and the runc backend.
std::string ReadWholeFile(std::string const& path);

/// Jiffies from /proc/stat: busy and total, for the node ("cpu") and each core ("cpuN").
struct CpuTimes {
  struct Line {
    std::uint64_t busy = 0;
    std::uint64_t total = 0;
  };
  Line node;
  std::vector<Line> cores;
};
/// nullopt when the text has no "cpu" line.
std::optional<CpuTimes> ParseProcStat(std::string_view text);

/// MemTotal and MemAvailable of /proc/meminfo, in bytes; nullopt when either is missing.
struct MemInfo {
  std::int64_t total = 0;
  std::int64_t available = 0;
};
std::optional<MemInfo> ParseMeminfo(std::string_view text);

/// The load between two samples (busy share of the elapsed jiffies, 0–100), and memory.
server::agent_protocol::NodeStats Load(CpuTimes const& before, CpuTimes const& after,
                                       MemInfo const& mem);

/// Reads /proc each time it is asked; the first answer (no earlier sample) is the load since
/// boot. nullopt when /proc cannot be read.
class NodeSampler {
 public:
  std::optional<server::agent_protocol::NodeStats> Sample();

 private:
  std::optional<CpuTimes> last_;
};

}  // namespace bai::agent
