// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/node_stats.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace bai::agent {
namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// "cpu  1 2 3 4 5 6 7 8": user nice system idle iowait irq softirq steal (guest is in user).
CpuTimes::Line ParseCpuLine(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string label;
  in >> label;
  std::uint64_t v[8] = {};
  for (auto& x : v) {
    if (!(in >> x)) break;
  }
  CpuTimes::Line out;
  std::uint64_t idle = v[3] + v[4];
  for (auto x : v) out.total += x;
  out.busy = out.total - idle;
  return out;
}

double Percent(CpuTimes::Line const& a, CpuTimes::Line const& b) {
  if (b.total <= a.total || b.busy < a.busy) return 0;
  double pct =
      100.0 * static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total);
  return std::clamp(pct, 0.0, 100.0);
}

}  // namespace

std::string ReadWholeFile(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<CpuTimes> ParseProcStat(std::string_view text) {
  CpuTimes out;
  bool node = false;
  for (auto line : Lines(text)) {
    if (line.rfind("cpu", 0) != 0) continue;
    if (line.size() > 3 && line[3] == ' ') {
      out.node = ParseCpuLine(line);
      node = true;
    } else if (line.size() > 3 && line[3] >= '0' && line[3] <= '9') {
      out.cores.push_back(ParseCpuLine(line));
    }
  }
  if (!node) return std::nullopt;
  return out;
}

std::optional<MemInfo> ParseMeminfo(std::string_view text) {
  std::optional<std::int64_t> total, available;
  for (auto line : Lines(text)) {
    auto kib = [&](std::string_view key) -> std::optional<std::int64_t> {
      if (line.rfind(key, 0) != 0) return std::nullopt;
      return std::strtoll(std::string(line.substr(key.size())).c_str(), nullptr, 10) * 1024;
    };
    if (auto v = kib("MemTotal:")) total = v;
    if (auto v = kib("MemAvailable:")) available = v;
  }
  if (!total || !available) return std::nullopt;
  return MemInfo{*total, *available};
}

server::agent_protocol::NodeStats Load(CpuTimes const& before, CpuTimes const& after,
                                       MemInfo const& mem) {
  server::agent_protocol::NodeStats out;
  out.cpu_pct = Percent(before.node, after.node);
  for (std::size_t i = 0; i < after.cores.size(); ++i) {
    out.core_pct.push_back(i < before.cores.size() ? Percent(before.cores[i], after.cores[i])
                                                   : Percent({}, after.cores[i]));
  }
  out.mem_total = mem.total;
  out.mem_used = std::max<std::int64_t>(0, mem.total - mem.available);
  return out;
}

std::optional<server::agent_protocol::NodeStats> NodeSampler::Sample() {
  auto cpu = ParseProcStat(ReadWholeFile("/proc/stat"));
  auto mem = ParseMeminfo(ReadWholeFile("/proc/meminfo"));
  if (!cpu || !mem) return std::nullopt;
  auto stats = Load(last_.value_or(CpuTimes{}), *cpu, *mem);
  last_ = std::move(cpu);
  return stats;
}

}  // namespace bai::agent
