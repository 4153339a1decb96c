// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/usage/usage.h"

#include "bai/protocol/dates.h"
#include "bai/protocol/resource.h"

#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

namespace bai::manager::usage {

using nlohmann::json;
using server::agent_protocol::KernelUsage;

namespace {

json Metric(std::int64_t current, std::int64_t capacity, std::int64_t max, char const* unit) {
  json pct = nullptr;
  if (capacity > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", 100.0 * static_cast<double>(current) / capacity);
    pct = buf;
  }
  return {{"current", std::to_string(current)},
          {"capacity", capacity > 0 ? json(std::to_string(capacity)) : json(nullptr)},
          {"pct", pct},
          {"unit_hint", unit},
          {"stats.max", std::to_string(max)}};
}

std::int64_t Field(json const& stat, char const* metric, char const* key) {
  auto m = stat.find(metric);
  if (m == stat.end() || !m->is_object()) return 0;
  auto v = m->find(key);
  if (v == m->end()) return 0;
  double d = 0;
  if (v->is_number()) {
    d = v->get<double>();
  } else if (v->is_string()) {
    try {
      d = std::stod(v->get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  // Figures are non-negative and within int64; anything else reads as nothing known.
  if (!(d >= 0 && d < 9.2e18)) return 0;
  return static_cast<std::int64_t>(d);
}

bool Digits(std::string_view text, std::size_t n) {
  return text.size() == n &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c); });
}

// Midnight (UTC) of YYYY, MM, DD given as digits, checked as the protocol's dates are; years
// before 1970 are not ones usage could cover.
std::optional<std::int64_t> Midnight(std::string_view y, std::string_view m, std::string_view d) {
  if (y < "1970") return std::nullopt;
  auto date = protocol::ParseHttpDate(std::string(y) + "-" + std::string(m) + "-" + std::string(d) +
                                      "T00:00:00Z");
  if (!date) return std::nullopt;
  return date->unix_seconds;
}

StatusOr<std::int64_t> DayStart(std::string_view text, char const* name) {
  auto start = Digits(text, 8) ? Midnight(text.substr(0, 4), text.substr(4, 2), text.substr(6, 2))
                               : std::nullopt;
  if (!start) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(name) + ": a date as YYYYMMDD, not \"" + std::string(text) + "\"");
  }
  return *start;
}

std::int64_t Amount(protocol::ResourceSlots const& slots, char const* name) {
  auto it = slots.find(name);
  return it == slots.end() ? 0 : static_cast<std::int64_t>(it->second.ToDouble());
}

double AmountD(protocol::ResourceSlots const& slots, char const* name) {
  auto it = slots.find(name);
  return it == slots.end() ? 0 : it->second.ToDouble();
}

protocol::SessionUsage SessionOf(UsageRecord const& r) {
  auto const& s = r.row.session;
  protocol::SessionUsage u;
  u.session_id = s.id;
  u.session_name = s.name;
  u.kernel_id = r.row.main_kernel_id;
  u.access_key = s.access_key;
  u.user_id = s.user_id;
  u.user_email = r.row.user_email;
  u.full_name = r.row.full_name;
  u.project_id = s.group_id;
  u.project_name = r.row.group_name;
  u.domain_name = s.domain_name;
  u.status = std::string(protocol::ToString(s.status));
  u.status_info = s.status_info;
  u.created_at = s.created_at;
  u.terminated_at = s.terminated_at;
  auto created = Micros(s.created_at);
  auto ended = s.terminated_at ? Micros(*s.terminated_at) : std::nullopt;
  if (created && ended) {
    u.used_time = DurationText(std::max<std::int64_t>(0, *ended - *created));
    auto day = [](std::int64_t us) {
      return (us >= 0 ? us : us - 86'399'999'999) / 86'400'000'000;
    };
    u.used_days = day(*ended) - day(*created) + 1;
  }
  u.images = {s.image};
  if (s.agent_id) u.agents = {*s.agent_id};
  KernelUsage figures;
  if (!r.stat.empty()) {
    u.last_stat = r.stat;
    figures = FromStat(r.stat);
  }
  auto& t = u.total_usage;
  t.cpu_allocated = AmountD(s.requested, "cpu");
  t.cpu_used = static_cast<double>(figures.cpu_used_ms);
  t.mem_allocated = Amount(s.requested, "mem");
  t.mem_used = figures.mem_peak;
  if (auto it = s.resource_opts.find("shmem"); it != s.resource_opts.end()) {
    auto size = protocol::ParseBinarySize(it->second);
    if (size.ok()) t.shared_memory = static_cast<std::int64_t>(size->ToDouble());
  }
  t.io_read = figures.io_read;
  t.io_write = figures.io_write;
  t.gpu_allocated = AmountD(s.requested, "cuda.shares") + AmountD(s.requested, "cuda.device");
  if (!s.devices.empty()) t.device_type = {"cuda"};
  t.gpu_mem_allocated = static_cast<double>(figures.gpu_mem.value_or(0));
  for (auto const& m : s.vfolder_mounts) {
    if (std::find(t.nfs.begin(), t.nfs.end(), m.host_path) == t.nfs.end())
      t.nfs.push_back(m.host_path);
  }
  return u;
}

}  // namespace

json StatJson(KernelUsage const& u, std::optional<double> cpu_util) {
  json j = {{"cpu_used", Metric(u.cpu_used_ms, 0, u.cpu_used_ms, "msec")},
            {"mem", Metric(u.mem_current, u.mem_limit, u.mem_peak, "bytes")},
            {"io_read", Metric(u.io_read, 0, u.io_read, "bytes")},
            {"io_write", Metric(u.io_write, 0, u.io_write, "bytes")}};
  if (u.gpu_mem) j["cuda_mem"] = Metric(*u.gpu_mem, 0, *u.gpu_mem, "bytes");
  if (cpu_util) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", *cpu_util);
    j["cpu_util"] = {{"current", buf},
                     {"capacity", nullptr},
                     {"pct", buf},
                     {"unit_hint", "percent"},
                     {"stats.max", buf}};
  }
  return j;
}

std::optional<double> CpuUtilPercent(std::int64_t cpu_before_ms, std::int64_t cpu_now_ms,
                                     std::int64_t wall_ms) {
  if (wall_ms <= 0 || cpu_now_ms < cpu_before_ms) return std::nullopt;
  return 100.0 * static_cast<double>(cpu_now_ms - cpu_before_ms) / static_cast<double>(wall_ms);
}

KernelUsage FromStat(std::string_view text) {
  KernelUsage u;
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return u;
  u.cpu_used_ms = Field(*j, "cpu_used", "current");
  u.mem_current = Field(*j, "mem", "current");
  u.mem_peak = std::max(u.mem_current, Field(*j, "mem", "stats.max"));
  u.mem_limit = Field(*j, "mem", "capacity");
  u.io_read = Field(*j, "io_read", "current");
  u.io_write = Field(*j, "io_write", "current");
  if (j->contains("cuda_mem")) u.gpu_mem = Field(*j, "cuda_mem", "current");
  return u;
}

StatusOr<Window> PeriodWindow(std::string_view start, std::string_view end) {
  auto s = DayStart(start, "start_date");
  if (!s.ok()) return s.status();
  auto e = DayStart(end, "end_date");
  if (!e.ok()) return e.status();
  Window w{*s, *e + 86400};  // the end date's sessions too
  if (w.end <= w.start) {
    return Status(StatusCode::kInvalidArgument, "end_date must not be before start_date");
  }
  if (w.end - w.start > 100 * 86400) {
    return Status(StatusCode::kInvalidArgument, "a period of at most 100 days");
  }
  return w;
}

StatusOr<Window> MonthWindow(std::string_view text) {
  auto start =
      Digits(text, 6) ? Midnight(text.substr(0, 4), text.substr(4, 2), "01") : std::nullopt;
  if (!start) {
    return Status(StatusCode::kInvalidArgument,
                  "month: a month as YYYYMM, not \"" + std::string(text) + "\"");
  }
  // The next month's first day: 31 days on from the 1st always lands in it.
  std::string next = protocol::FormatRfc3339(*start + 31 * 86400, 0);
  return Window{*start, *Midnight(next.substr(0, 4), next.substr(5, 2), "01")};
}

std::vector<protocol::ProjectUsage> ProjectUsages(std::vector<UsageRecord> const& records) {
  std::vector<protocol::ProjectUsage> out;
  std::map<std::string, std::size_t> index;
  for (auto const& r : records) {
    auto session = SessionOf(r);
    auto [it, fresh] = index.emplace(session.project_id, out.size());
    if (fresh) {
      protocol::ProjectUsage p;
      p.project_id = session.project_id;
      p.project_name = session.project_name;
      p.domain_name = session.domain_name;
      out.push_back(std::move(p));
    }
    auto& p = out[it->second];
    p.total_usage += session.total_usage;
    for (auto const& a : session.agents) {
      if (std::find(p.agents.begin(), p.agents.end(), a) == p.agents.end()) p.agents.push_back(a);
    }
    p.sessions.push_back(std::move(session));
  }
  return out;
}

json MonthGroups(std::vector<protocol::ProjectUsage> const& projects) {
  json out = json::array();
  for (auto const& p : projects) {
    json c_infos = json::array();
    for (auto const& s : p.sessions) {
      // Each row carries the ResourceUsage fields, then what identifies the session.
      json c = internal::ResourceUsageJson(s.total_usage);
      auto last = internal::ParseJson(s.last_stat);
      c.update({{"id", s.kernel_id},
                {"session_id", s.session_id},
                {"container_id", nullptr},
                {"domain_name", s.domain_name},
                {"group_id", p.project_id},
                {"group_name", p.project_name},
                {"name", s.session_name},
                {"access_key", s.access_key},
                {"email", s.user_email},
                {"full_name", s.full_name},
                {"agent", s.agents.empty() ? json(nullptr) : json(s.agents.front())},
                {"used_time", s.used_time ? json(*s.used_time) : json(nullptr)},
                {"used_days", s.used_days ? json(*s.used_days) : json(nullptr)},
                {"image_id", s.images.empty() ? "" : s.images.front()},
                {"image_name", s.images.empty() ? "" : s.images.front()},
                {"created_at", s.created_at},
                // 24.09 writes str(None) for a running session.
                {"terminated_at", s.terminated_at.value_or("None")},
                {"status", s.status},
                {"status_info", s.status_info},
                {"status_changed", s.terminated_at.value_or(s.created_at)},
                {"status_history", json::object()},
                {"cluster_mode", "single-node"},
                {"last_stat", last ? *last : json(nullptr)}});
      c_infos.push_back(std::move(c));
    }
    // The project's totals: the same fields as g_* (24.09 keeps no g_nfs).
    json group = {{"domain_name", p.domain_name},
                  {"g_id", p.project_id},
                  {"g_name", p.project_name},
                  {"c_infos", std::move(c_infos)}};
    json const totals = internal::ResourceUsageJson(p.total_usage);
    for (auto const& [key, value] : totals.items()) {
      if (key != "nfs") group["g_" + key] = value;
    }
    out.push_back(std::move(group));
  }
  return out;
}

json MonthlyBins(std::vector<UsageRecord> const& records, std::int64_t now) {
  constexpr std::int64_t kBin = 900;
  constexpr std::int64_t kBins = 2880;
  std::int64_t const start = now - kBins * kBin;
  struct Bin {
    std::int64_t sessions = 0;
    double cpu = 0;
    std::int64_t mem = 0;
    double gpu = 0;
    std::int64_t io_read = 0;
    std::int64_t io_write = 0;
  };
  std::vector<Bin> bins(kBins);
  for (auto const& r : records) {
    auto const& s = r.row.session;
    auto created = Micros(s.created_at);
    if (!created) continue;
    std::int64_t from = *created / 1'000'000;
    std::int64_t to = now;
    if (s.terminated_at) {
      auto ended = Micros(*s.terminated_at);
      if (ended) to = *ended / 1'000'000;
    }
    if (to < start || from > now) continue;
    auto figures = r.stat.empty() ? KernelUsage{} : FromStat(r.stat);
    std::int64_t first = std::max<std::int64_t>(0, (from - start) / kBin);
    std::int64_t last = std::min<std::int64_t>(kBins - 1, (to - start) / kBin);
    for (std::int64_t i = first; i <= last; ++i) {
      auto& b = bins[static_cast<std::size_t>(i)];
      b.sessions += 1;
      b.cpu += AmountD(s.requested, "cpu");
      b.mem += Amount(s.requested, "mem");
      b.gpu += AmountD(s.requested, "cuda.shares") + AmountD(s.requested, "cuda.device");
      b.io_read += figures.io_read;
      b.io_write += figures.io_write;
    }
  }
  json out = json::array();
  for (std::int64_t i = 0; i < kBins; ++i) {
    auto const& b = bins[static_cast<std::size_t>(i)];
    auto v = [](auto value, char const* unit) {
      return json{{"value", value}, {"unit_hint", unit}};
    };
    out.push_back({{"date", static_cast<double>(start + i * kBin)},
                   {"num_sessions", v(b.sessions, "count")},
                   {"cpu_allocated", v(b.cpu, "count")},
                   {"mem_allocated", v(b.mem, "bytes")},
                   {"gpu_allocated", v(b.gpu, "count")},
                   {"io_read_bytes", v(b.io_read, "bytes")},
                   {"io_write_bytes", v(b.io_write, "bytes")},
                   {"disk_used", v(std::int64_t{0}, "bytes")}});
  }
  return out;
}

std::string DurationText(std::int64_t micros) {
  std::int64_t days = micros / 86'400'000'000;
  std::int64_t rest = micros % 86'400'000'000;
  char buf[64];
  std::int64_t s = rest / 1'000'000;
  std::int64_t us = rest % 1'000'000;
  if (us != 0) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld.%06lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60),
                  static_cast<long long>(us));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  }
  if (days == 0) return buf;
  return std::to_string(days) + (days == 1 ? " day, " : " days, ") + buf;
}

std::optional<std::int64_t> Micros(std::string_view text) {
  auto date = protocol::ParseHttpDate(text);
  if (!date) return std::nullopt;
  std::int64_t micros = 0;
  // The fraction after the seconds, when there is one (ParseHttpDate keeps whole seconds).
  auto dot = text.find('.');
  if (dot != std::string_view::npos && dot > 10) {
    std::int64_t scale = 100000;
    for (std::size_t i = dot + 1; i < text.size() && std::isdigit(text[i]); ++i) {
      if (scale > 0) micros += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  return date->unix_seconds * 1'000'000 + micros;
}

}  // namespace bai::manager::usage
