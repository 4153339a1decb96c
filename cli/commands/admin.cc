// SPDX-License-Identifier: Apache-2.0
// `bai admin`: the nouns' wiring, what their commands share (admin_util.h) and `bai admin usage`.
// Each noun is in its own file (admin_org.cc, admin_users.cc, admin_policies.cc,
// admin_cluster.cc): tables on a terminal, `-o json` documents with the 24.09 field names.
#include "cli/commands/admin.h"

#include "bai/admin_client.h"
#include "bai/protocol/dates.h"

#include "cli/commands/admin_util.h"
#include "cli/commands/session_util.h"
#include "cli/commands/vfolder.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace bai::cli {

using nlohmann::json;

int WithAdmin(Context& ctx, std::function<Status(AdminClient&)> const& body) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  AdminClient admin(*client);
  Status s = body(admin);
  if (!s.ok()) return ReportError(ctx, s);
  return 0;
}

json SlotsObject(std::string const& text) {
  auto j = internal::ParseJson(text);
  json out = json::object();
  if (!j || !j->is_object()) return out;
  for (auto const& [k, v] : j->items()) {
    if (v.is_number()) {
      out[k] = v;
      continue;
    }
    auto amount = v.is_string()
                      ? protocol::Decimal::Parse(v.get<std::string>())
                      : StatusOr<protocol::Decimal>(Status(StatusCode::kInvalidArgument, ""));
    if (!amount.ok()) {
      out[k] = v;
    } else if (amount->is_unlimited()) {
      out[k] = nullptr;
    } else if (amount->Floor() == *amount) {
      out[k] = static_cast<std::int64_t>(amount->units() / protocol::Decimal::kUnitsPerOne);
    } else {
      out[k] = amount->ToDouble();
    }
  }
  return out;
}

json JsonOrText(std::string const& text) {
  auto j = internal::ParseJson(text);
  return j ? *j : json(text);
}

std::string SlotsWords(std::string const& text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object() || j->empty()) return "-";
  std::string out;
  for (auto const& [k, v] : j->items()) {
    std::string raw = v.is_string() ? v.get<std::string>() : v.dump();
    auto amount = protocol::Decimal::Parse(raw);
    out += (out.empty() ? "" : " ") + k + "=" + (amount.ok() ? HumanSlotAmount(k, *amount) : raw);
  }
  return out;
}

StatusOr<std::string> SlotsFlag(std::string const& flag, std::string const& value) {
  if (value.empty()) return std::string("{}");
  if (value.front() == '{') {
    auto j = internal::ParseJson(value);
    if (!j || !j->is_object()) {
      return UsageError(flag + ": not a JSON object");
    }
    return j->dump();
  }
  protocol::ResourceSlots slots;
  if (auto s = protocol::ParseSlotAssignment(value, slots); !s.ok()) {
    return UsageError(flag + ": " + s.message());
  }
  return internal::SlotsToJson(slots).dump();
}

void AddRemoveCommand(CommandSet& set, CLI::App& noun, std::string const& help,
                      std::string const& arg, std::string const& arg_help, std::string const& done,
                      std::function<Status(AdminClient&, std::string const&)> remove) {
  auto& ctx = set.ctx();
  auto& value = set.Keep<std::string>();
  auto* rm = noun.add_subcommand("rm", help);
  rm->add_option(arg, value, arg_help)->required();
  OnAdminRun(set, rm, [&ctx, &value, done, remove = std::move(remove)](AdminClient& a) {
    auto s = remove(a, value);
    if (s.ok()) PrintDone(ctx, done + " " + value);
    return s;
  });
}

namespace {

// ---- usage ---------------------------------------------------------------------------------

// "2026-11-01..2026-11-30" (or "20261101..20261130") → its two dates; "2026-11" → that month.
StatusOr<std::pair<std::string, std::string>> PeriodFlag(std::string const& text) {
  auto dots = text.find("..");
  if (dots != std::string::npos) return std::make_pair(text.substr(0, dots), text.substr(dots + 2));
  int y = 0, m = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d%c", &y, &m, &rest) == 2) {
    char first[16];
    std::snprintf(first, sizeof first, "%04d-%02d-01", y, m);
    if (auto start = protocol::ParseHttpDate(std::string(first) + "T00:00:00Z")) {
      // The last day: the one before the next month's first (31 days on always lands in it).
      std::string next = protocol::FormatRfc3339(start->unix_seconds + 31 * 86400, 0);
      auto after = protocol::ParseHttpDate(next.substr(0, 8) + "01T00:00:00Z");
      return std::make_pair(std::string(first),
                            protocol::FormatRfc3339(after->unix_seconds - 86400, 0).substr(0, 10));
    }
  }
  return Status(
      StatusCode::kInvalidArgument,
      "--period: START..END (2026-11-01..2026-11-30) or a month (2026-11), not \"" + text + "\"");
}

// "1:02:03" from 24.09's "1:02:03.250000" (whole seconds read better in a table).
std::string ShortDuration(std::optional<std::string> const& text) {
  if (!text) return "running";
  auto dot = text->find('.');
  return dot == std::string::npos ? *text : text->substr(0, dot);
}

std::string Number(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

struct UsageOptions {
  std::string period, project;
};

// bai admin usage (the report of a period)
Status RunUsage(UsageOptions& f, Context& ctx, AdminClient& a) {
  auto period = PeriodFlag(f.period);
  if (!period.ok()) return period.status();
  std::string project_id;
  if (!f.project.empty()) {
    auto found = FindProject(a, f.project, "");
    if (!found.ok()) return found.status();
    project_id = found->id;
  }
  auto usage = a.Usage(period->first, period->second, project_id);
  if (!usage.ok()) return usage.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"period", {{"start", period->first}, {"end", period->second}}},
                    {"projects", json::parse(protocol::EncodeProjectUsages(*usage))}});
    return Status();
  }
  // CSV keeps raw units (bytes, CPU milliseconds) for spreadsheets; the table reads easily.
  bool raw = ctx.csv();
  auto bytes = [raw](std::int64_t b) {
    return raw ? std::to_string(b) : HumanBytes(static_cast<double>(b));
  };
  auto cpu = [raw](double ms) { return raw ? Number(ms, 0) : Number(ms / 1000, 1) + "s"; };
  std::vector<std::vector<std::string>> rows{
      {"PROJECT", "SESSION", "USER", "STARTED", "DURATION", "STATUS", raw ? "CPU_ALLOCATED" : "CPU",
       raw ? "CPU_TIME_MS" : "CPU TIME", raw ? "MEM_ALLOCATED" : "MEM",
       raw ? "MEM_PEAK" : "MEM PEAK", raw ? "IO_READ" : "READ", raw ? "IO_WRITE" : "WRITTEN",
       "GPU"}};
  for (auto const& p : *usage) {
    for (auto const& s : p.sessions) {
      auto const& u = s.total_usage;
      rows.push_back({p.project_name, s.session_name, s.user_email,
                      raw ? s.created_at : s.created_at.substr(0, 16), ShortDuration(s.used_time),
                      s.status, Number(u.cpu_allocated, 1), cpu(u.cpu_used), bytes(u.mem_allocated),
                      bytes(u.mem_used), bytes(u.io_read), bytes(u.io_write),
                      Number(u.gpu_allocated, 2)});
    }
    if (!raw) {
      auto const& t = p.total_usage;
      rows.push_back({p.project_name,
                      "(" + std::to_string(p.sessions.size()) +
                          (p.sessions.size() == 1 ? " session)" : " sessions)"),
                      "", "", "", "total", Number(t.cpu_allocated, 1), cpu(t.cpu_used),
                      bytes(t.mem_allocated), bytes(t.mem_used), bytes(t.io_read),
                      bytes(t.io_write), Number(t.gpu_allocated, 2)});
    }
  }
  if (usage->empty() && !raw) {
    ctx.out() << "no sessions from " << period->first << " to " << period->second << "\n";
    return Status();
  }
  PrintTable(ctx, rows);
  return Status();
}

void AddUsage(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto& f = set.Keep<UsageOptions>();
  auto* cmd = admin.add_subcommand(
      "usage", "What sessions used over a period: CPU time, memory peak, I/O, per project");
  cmd->add_option("--period", f.period, "START..END (2026-11-01..2026-11-30) or a month (2026-11)")
      ->required();
  cmd->add_option("--project", f.project, "Only this project (name or id)");
  OnAdminRun(set, cmd, [&f, &ctx](AdminClient& a) { return RunUsage(f, ctx, a); });
}

}  // namespace

void AddAdminCommands(CommandSet& set) {
  auto* admin = set.root().add_subcommand("admin",
                                          "Administration: domains, projects, users, "
                                          "keypairs, policies, resource groups, images, "
                                          "registries, agents, presets, usage");
  if (set.names_only()) return;
  admin->require_subcommand(1);
  AddOrganizationAdminCommands(set, *admin);
  AddUserAdminCommands(set, *admin);
  AddPolicyAdminCommands(set, *admin);
  AddClusterAdminCommands(set, *admin);
  AddRegistryAdminCommands(set, *admin);
  AddUsage(set, *admin);
}

}  // namespace bai::cli
