// SPDX-License-Identifier: Apache-2.0
#pragma once
// Usage, the pure core (no I/O, no clock): a kernel's stat in 24.09's live_stat shape from the
// agent's figures and back, the windows the REST endpoints take, and the reports built from the
// sessions a window covers — per project (usage/period, usage/month) and in 15-minute bins
// (stats/*/month). The API handlers are the shell: they read the sessions and answer.

#include "bai/protocol/usage_wire.h"
#include "bai/status.h"

#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/manager/state/sessions.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::manager::usage {

/// 24.09's stat: {cpu_used, mem, io_read, io_write[, cuda_mem][, cpu_util]}, each {current,
/// capacity, pct, unit_hint, stats.max} with numbers as decimal strings; `cpu_util` (percent of
/// one core, "150.0" for one and a half) when the caller knows it (CpuUtilPercent).
nlohmann::json StatJson(server::agent_protocol::KernelUsage const& usage,
                        std::optional<double> cpu_util = std::nullopt);
/// The CPU a kernel used between two of its samples: CPU milliseconds over wall milliseconds, in
/// percent of one core; nullopt when the samples say nothing (no wall time between them, or the
/// CPU time went back: another kernel under the same session id).
std::optional<double> CpuUtilPercent(std::int64_t cpu_before_ms, std::int64_t cpu_now_ms,
                                     std::int64_t wall_ms);
/// The figures of a stat (StatJson's or 24.09's); missing parts read as zero.
server::agent_protocol::KernelUsage FromStat(std::string_view stat_json);

/// [start, end) in seconds since the epoch, UTC.
struct Window {
  std::int64_t start = 0;
  std::int64_t end = 0;
};
/// "20261101", "20261130" → the first's midnight to the day after the second (24.09: at most
/// 100 days; the end not before the start). Errors name the parameter.
StatusOr<Window> PeriodWindow(std::string_view start_yyyymmdd, std::string_view end_yyyymmdd);
/// "202611" → the month.
StatusOr<Window> MonthWindow(std::string_view yyyymm);

/// Each project's sessions and totals, projects in the order their first session came.
std::vector<protocol::ProjectUsage> ProjectUsages(std::vector<UsageRecord> const& records);
/// usage/month's answer: per project {domain_name, g_id, g_name, g_* totals, c_infos:[…]}.
nlohmann::json MonthGroups(std::vector<protocol::ProjectUsage> const& projects);
/// stats/*/month's answer: 2880 bins of 15 minutes ending at `now`, each {date, num_sessions,
/// cpu_allocated, mem_allocated, gpu_allocated, io_read_bytes, io_write_bytes, disk_used}
/// with {value, unit_hint}; a session counts in every bin its life touches (running ones up to
/// `now`).
nlohmann::json MonthlyBins(std::vector<UsageRecord> const& records, std::int64_t now);

/// 24.09's str(timedelta): "0:05:03.250000", "2 days, 1:00:00".
std::string DurationText(std::int64_t micros);
/// Microseconds since the epoch of an RFC 3339 time; nullopt when it is not one.
std::optional<std::int64_t> Micros(std::string_view rfc3339);

}  // namespace bai::manager::usage
