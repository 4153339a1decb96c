// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/kernel_usage.h"

#include "libbai/util/json_parse.h"
#include "server-reference/agent/node_stats.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <sstream>

namespace bai::agent {
namespace {

using server::agent_protocol::KernelUsage;

std::optional<std::int64_t> Number(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
    return std::nullopt;
  return v;
}

// The value after `key` in a "key value" line of `text` (cpu.stat's form).
std::optional<std::int64_t> KeyedValue(std::string_view text, std::string_view key) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
      return Number(line.substr(key.size() + 1));
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<KernelUsage> ParseCgroupV2(CgroupV2Files const& f) {
  auto usec = KeyedValue(f.cpu_stat, "usage_usec");
  auto current = Number(f.memory_current);
  if (!usec || !current) return std::nullopt;
  KernelUsage u;
  u.cpu_used_ms = *usec / 1000;
  u.mem_current = *current;
  u.mem_peak = std::max(*current, Number(f.memory_peak).value_or(0));
  u.mem_limit = Number(f.memory_max).value_or(0);  // "max": none
  // io.stat: one line per device, "8:0 rbytes=1 wbytes=2 rios=3 …".
  std::istringstream lines(f.io_stat);
  std::string word;
  while (lines >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    auto key = std::string_view(word).substr(0, eq);
    auto value = Number(std::string_view(word).substr(eq + 1)).value_or(0);
    if (key == "rbytes") u.io_read += value;
    if (key == "wbytes") u.io_write += value;
  }
  return u;
}

std::optional<KernelUsage> ParseCgroupV1(CgroupV1Files const& f) {
  auto nsec = Number(f.cpuacct_usage);
  auto current = Number(f.memory_usage);
  if (!nsec || !current) return std::nullopt;
  KernelUsage u;
  u.cpu_used_ms = *nsec / 1'000'000;
  u.mem_current = *current;
  u.mem_peak = std::max(*current, Number(f.memory_max_usage).value_or(0));
  // v1 says "no limit" with a page-rounded LONG_MAX.
  auto limit = Number(f.memory_limit).value_or(0);
  u.mem_limit = limit >= (std::int64_t{1} << 62) ? 0 : limit;
  std::istringstream lines(f.blkio_bytes);
  std::string device, op;
  std::int64_t value = 0;
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    if (!(words >> device >> op >> value)) continue;  // "Total N" has two words
    if (op == "Read") u.io_read += value;
    if (op == "Write") u.io_write += value;
  }
  return u;
}

std::optional<std::int64_t> GpuMemoryHeld(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object() || !j->contains("devices") || !(*j)["devices"].is_array())
    return std::nullopt;
  std::int64_t total = 0;
  for (auto const& d : (*j)["devices"]) {
    auto get = [&](char const* key) -> std::int64_t {
      auto it = d.find(key);
      return it != d.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
    };
    total += std::max(get("ledger"), get("nvml"));
  }
  return total;
}

std::optional<KernelUsage> ReadCgroupUsage(int version, std::string const& path,
                                           std::string const& root) {
  if (version == 2) {
    std::string dir = root + path + "/";
    return ParseCgroupV2({ReadWholeFile(dir + "cpu.stat"), ReadWholeFile(dir + "memory.current"),
                          ReadWholeFile(dir + "memory.peak"), ReadWholeFile(dir + "memory.max"),
                          ReadWholeFile(dir + "io.stat")});
  }
  std::string blkio = ReadWholeFile(root + "/blkio" + path + "/blkio.throttle.io_service_bytes");
  if (blkio.empty()) blkio = ReadWholeFile(root + "/blkio" + path + "/blkio.io_service_bytes");
  return ParseCgroupV1({ReadWholeFile(root + "/cpuacct" + path + "/cpuacct.usage"),
                        ReadWholeFile(root + "/memory" + path + "/memory.usage_in_bytes"),
                        ReadWholeFile(root + "/memory" + path + "/memory.max_usage_in_bytes"),
                        ReadWholeFile(root + "/memory" + path + "/memory.limit_in_bytes"), blkio});
}

}  // namespace bai::agent
