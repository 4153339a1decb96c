// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/metrics.h"

#include "bai/protocol/resource.h"

#include "server-reference/common/log/log.h"
#include "server-reference/manager/state/agent_store.h"

#include <cctype>
#include <map>

namespace bai::manager {

namespace m = server::metrics;

void DeclareManagerMetrics(m::Registry& metrics, server::Database& db) {
  m::DeclareHttpMetrics(metrics);
  metrics.Histogram("bai_scheduler_pass_seconds",
                    "One scheduling pass over a resource group, database included.");
  metrics.Counter("bai_scheduler_placed_total", "Sessions placed by this manager's passes.");
  metrics.Counter("bai_scheduler_pass_failures_total", "Scheduling passes that failed.");
  metrics.Gauge("bai_sessions", "Sessions by status (every manager's, from the database).");
  metrics.Gauge("bai_queue_sessions", "PENDING sessions by resource group and reason.");
  metrics.Gauge("bai_agents", "Agents by status.");
  metrics.Gauge("bai_slots",
                "Resource slots of ALIVE agents by resource group, slot and kind "
                "(capacity, used).");
  metrics.Gauge("bai_metrics_database_up",
                "1 when this scrape could read the database, else 0 (the gauges above are "
                "then missing).");
  metrics.OnCollect([&db](m::Registry& r) {
    bool up = true;
    auto counts = ReadClusterCounts(db);
    if (counts.ok()) {
      for (auto const& [status, n] : counts->sessions) {
        r.Set("bai_sessions", {{"status", status}}, static_cast<double>(n));
      }
      for (auto const& q : counts->queue) {
        r.Set("bai_queue_sessions", {{"scaling_group", q.scaling_group}, {"reason", q.reason}},
              static_cast<double>(q.count));
      }
      for (auto const& [status, n] : counts->agents) {
        r.Set("bai_agents", {{"status", status}}, static_cast<double>(n));
      }
    } else {
      up = false;
    }
    auto agents = AgentStore(db).List();
    if (agents.ok()) {
      std::map<std::pair<std::string, std::string>, std::pair<double, double>> slots;
      for (auto const& a : *agents) {
        if (a.status != "ALIVE") continue;
        for (auto const& [slot, amount] : a.row.slots) {
          slots[{a.row.scaling_group, slot}].first += amount.ToDouble();
        }
        for (auto const& [slot, amount] : a.occupied) {
          slots[{a.row.scaling_group, slot}].second += amount.ToDouble();
        }
      }
      for (auto const& [key, v] : slots) {
        r.Set("bai_slots",
              {{"scaling_group", key.first}, {"slot", key.second}, {"kind", "capacity"}}, v.first);
        r.Set("bai_slots", {{"scaling_group", key.first}, {"slot", key.second}, {"kind", "used"}},
              v.second);
      }
    } else {
      up = false;
    }
    r.Set("bai_metrics_database_up", {}, up ? 1 : 0);
  });
}

StatusOr<ClusterCounts> ReadClusterCounts(server::Database& db) {
  ClusterCounts out;
  for (auto [table, into] : {std::pair{"sessions", &out.sessions}, {"agents", &out.agents}}) {
    auto rows = db.Query(std::string("SELECT status, COUNT(*) FROM ") + table + " GROUP BY status");
    if (!rows.ok()) return std::move(rows).status();
    for (auto const& r : *rows) (*into)[r.Text(0)] = r.Int(1);
  }
  auto queue = db.Query(
      "SELECT scaling_group, status_info, COUNT(*) FROM sessions WHERE status = 'PENDING' "
      "GROUP BY scaling_group, status_info");
  if (!queue.ok()) return std::move(queue).status();
  std::map<std::pair<std::string, std::string>, std::int64_t> by_reason;
  for (auto const& r : *queue) by_reason[{r.Text(0), QueueReason(r.Text(1))}] += r.Int(2);
  for (auto const& [key, n] : by_reason) out.queue.push_back({key.first, key.second, n});
  return out;
}

void ObserveRequest(m::Registry& metrics, server::HttpRequest const& request,
                    std::string const& route, int status, std::chrono::nanoseconds took) {
  double seconds = std::chrono::duration<double>(took).count();
  m::ObserveHttpRequest(metrics, request.method, route, status, seconds);
  // The access log (debug), and answers the server could not give (warn).
  auto level = status >= 500 ? server::log::Level::kWarn : server::log::Level::kDebug;
  if (server::log::Enabled(level)) {
    server::log::Write(level, "request",
                       {{"method", request.method},
                        {"peer", request.peer_address},
                        {"path", request.path},
                        {"route", route.empty() ? "unmatched" : route},
                        {"status", status},
                        {"ms", static_cast<std::int64_t>(seconds * 1000)}});
  }
}

std::string QueueReason(std::string const& status_info) {
  if (status_info.empty()) return "new";  // not seen by a pass yet
  std::string s = status_info;
  if (s.rfind("waiting: ", 0) == 0) s = s.substr(9);
  auto starts = [&s](char const* prefix) { return s.rfind(prefix, 0) == 0; };
  // The scheduler's reasons (scheduler/scheduler.cc), by kind.
  if (starts("the keypair already runs")) return "keypair-sessions";
  for (char const* whose : {"keypair", "domain", "project", "user"}) {
    if (starts((std::string(whose) + " limit").c_str())) return std::string(whose) + "-slots";
  }
  if (starts("none of the requested agents")) return "requested-agents";
  if (starts("no schedulable")) return "no-agent";
  if (starts("no agent in the resource group offers image")) return "image";
  if (starts("needs ")) {
    return s.find("largest free agent") != std::string::npos ? "capacity" : "too-large";
  }
  // Anything else: its first words, up to a figure, an id or a parenthesis.
  std::string out;
  int words = 0;
  for (char c : s) {
    if (c == '(' || c == ':' || c == ';' || c == '=' ||
        std::isdigit(static_cast<unsigned char>(c))) {
      break;
    }
    if (c == ' ' && ++words >= 3) break;
    out += c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ',')) out.pop_back();
  return out.empty() ? "other" : out;
}

}  // namespace bai::manager
