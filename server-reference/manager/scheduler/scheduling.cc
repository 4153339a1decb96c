// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/scheduler/scheduling.h"

#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "libbai/protocol/wire_json.h"
#include "server-reference/manager/scheduler/scheduler.h"
#include "server-reference/manager/state/columns.h"
#include "server-reference/manager/state/images.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/sessions.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <tuple>

namespace bai::manager {

using nlohmann::json;
using protocol::SessionStatus;
using server::SqlExecutor;
using server::SqlValue;

namespace {

std::chrono::system_clock::time_point TimeOf(std::string const& iso) {
  auto d = protocol::ParseHttpDate(iso);
  return std::chrono::system_clock::time_point(std::chrono::seconds(d ? d->unix_seconds : 0));
}

}  // namespace

namespace {

// What a pass reads besides the scheduler's input.
struct PassState {
  scheduler::Input in;
  std::map<std::string, std::string> old_info;  // session → status_info before this pass
  std::vector<std::string> to_cancel;           // sessions whose dependencies failed
  std::set<std::string> access_keys;
  std::map<std::string, scheduler::Keypair> usage;  // by access key: what its sessions hold
  std::map<std::string, protocol::ResourceSlots> domain_usage;   // by domain name
  std::map<std::string, protocol::ResourceSlots> project_usage;  // by project id
};

// Whether `s` waits for starts_at or its dependencies; a failed dependency cancels it.
Status CheckReadiness(SqlExecutor& tx, std::string const& starts_at_or_empty,
                      std::vector<std::string> const& dependencies,
                      std::chrono::system_clock::time_point now, scheduler::Session& s,
                      PassState& st) {
  if (!starts_at_or_empty.empty() && TimeOf(starts_at_or_empty) > now) {
    s.ready = false;
    s.not_ready_reason = "waiting: starts at " + starts_at_or_empty;
    return Status();
  }
  // after-ok: every dependency must have succeeded; one that failed cancels this one.
  for (auto const& dep : dependencies) {
    auto d = tx.Query("SELECT status, result FROM sessions WHERE id = ?", {dep});
    if (!d.ok()) return d.status();
    auto status = d->empty() ? SessionStatus::kCancelled
                             : protocol::ParseSessionStatus((*d)[0].Text(0)).status;
    std::string result = d->empty() ? "failure" : (*d)[0].Text(1);
    bool done = protocol::IsTerminal(status) || status == SessionStatus::kError;
    if (done && result != "success") {
      st.to_cancel.push_back(s.id);
      s.ready = false;
      return Status();
    }
    if (!done) {
      s.ready = false;
      s.not_ready_reason =
          "waiting: dependency " + dep + " is " + std::string(protocol::ToString(status));
    }
  }
  return Status();
}

Status ReadQueue(SqlExecutor& tx, std::string const& scaling_group,
                 std::chrono::system_clock::time_point now, PassState& st) {
  auto pending = tx.Query(
      "SELECT id, access_key, architecture, requested_slots, seq, created_at, starts_at, "
      "dependencies, status_info, image, agent_list, domain_name, group_id FROM sessions WHERE "
      "scaling_group = ? AND "
      "status = 'PENDING' ORDER BY seq",
      {scaling_group});
  if (!pending.ok()) return pending.status();
  // Registry images a rescan found, read once in the pass when a session names one.
  std::optional<std::set<std::pair<std::string, std::string>>> scanned;
  for (auto const& r : *pending) {
    scheduler::Session s;
    s.id = r.Text(0);
    s.access_key = r.Text(1);
    s.architecture = r.Text(2);
    s.requested = SlotsFromColumn(r.Text(3));
    s.image = r.Text(9);
    if (s.image.find('/') != std::string::npos) {
      if (!scanned) {
        auto rows = tx.Query("SELECT canonical, architecture FROM registry_images");
        if (!rows.ok()) return rows.status();
        scanned.emplace();
        for (auto const& row : *rows) scanned->emplace(row.Text(0), row.Text(1));
      }
      s.pullable = scanned->count({CanonicalImage(s.image), s.architecture}) != 0;
    }
    s.agent_list = ListFromColumn(r.Text(10));
    s.domain_name = r.Text(11);
    s.group_id = r.Text(12);
    s.enqueue_seq = r.Int(4);
    s.enqueued_at = TimeOf(r.Text(5));
    st.old_info[s.id] = r.Text(8);
    st.access_keys.insert(s.access_key);
    if (auto ready = CheckReadiness(tx, r.Text(6), ListFromColumn(r.Text(7)), now, s, st);
        !ready.ok()) {
      return ready;
    }
    st.in.pending.push_back(std::move(s));
  }
  return Status();
}

// The group's live agents with what the sessions on them hold, and what every keypair holds.
Status ReadAgentsAndUsage(SqlExecutor& tx, std::string const& scaling_group, PassState& st) {
  auto agents = tx.Query(
      "SELECT id, architecture, available_slots, schedulable, images, devices FROM agents "
      "WHERE scaling_group = ? AND status = 'ALIVE' ORDER BY id",
      {scaling_group});
  if (!agents.ok()) return agents.status();
  std::map<std::string, std::size_t> agent_index;
  for (auto const& r : *agents) {
    scheduler::Agent a;
    a.id = r.Text(0);
    a.architecture = r.Text(1);
    a.capacity = SlotsFromColumn(r.Text(2));
    a.schedulable = r.Bool(3);
    a.images = ImageNames(r.Text(4));
    AgentDevices devices = AgentDevicesFromColumn(r.Text(5));
    a.device_policy = devices.policy == "fill" ? scheduler::DevicePolicy::kFill
                                               : scheduler::DevicePolicy::kEvenly;
    for (auto const& d : devices.devices) {
      scheduler::Device dev;
      dev.uuid = d.uuid;
      dev.fractional = !d.shares.is_zero();
      if (dev.fractional) dev.shares = d.shares;
      a.devices.push_back(dev);
    }
    agent_index[a.id] = st.in.agents.size();
    st.in.agents.push_back(std::move(a));
  }
  auto holding =
      tx.Query(std::string("SELECT agent_id, access_key, requested_slots, device_allocations, "
                           "status_history, domain_name, group_id FROM sessions WHERE status IN ") +
               kHoldingStatuses);
  if (!holding.ok()) return holding.status();
  for (auto const& r : *holding) {
    auto slots = SlotsFromColumn(r.Text(2));
    if (auto it = agent_index.find(r.Text(0)); it != agent_index.end()) {
      auto& agent = st.in.agents[it->second];
      scheduler::Placed placed;
      placed.slots = slots;
      placed.devices = AllocationsFromColumn(r.Text(3));
      auto history = MapFromColumn(r.Text(4));
      auto scheduled = history.find("SCHEDULED");
      // A session without the mark (placed before it was kept) counts as placed long ago.
      if (scheduled != history.end()) placed.scheduled_at = TimeOf(scheduled->second);
      scheduler::AddInto(agent.occupied, slots);
      scheduler::Occupy(agent.devices, placed.devices);
      agent.placed.push_back(std::move(placed));
    }
    auto& u = st.usage[r.Text(1)];
    u.active_sessions += 1;
    scheduler::AddInto(u.occupied, slots);
    scheduler::AddInto(st.domain_usage[r.Text(5)], slots);
    scheduler::AddInto(st.project_usage[r.Text(6)], slots);
  }
  return Status();
}

// The resource policies of the keypairs with sessions in the queue, with their usage.
Status ReadPolicies(SqlExecutor& tx, PassState& st) {
  for (auto const& ak : st.access_keys) {
    auto policy = tx.Query(
        "SELECT p.max_concurrent_sessions, p.total_resource_slots, p.default_for_unspecified "
        "FROM keypairs k JOIN keypair_resource_policies p ON k.resource_policy = p.name "
        "WHERE k.access_key = ?",
        {ak});
    if (!policy.ok()) return policy.status();
    if (policy->empty()) continue;
    scheduler::Keypair kp = st.usage[ak];
    kp.max_concurrent_sessions = static_cast<int>((*policy)[0].Int(0));
    kp.total_resource_slots = SlotsFromColumn((*policy)[0].Text(1));
    kp.unspecified_unlimited = (*policy)[0].Text(2) != "LIMITED";
    st.in.keypairs[ak] = kp;
  }
  // Domains' and projects' total_resource_slots ("{}": no limit, left out of the input).
  std::set<std::string> domains;
  std::set<std::string> projects;
  for (auto const& s : st.in.pending) {
    domains.insert(s.domain_name);
    projects.insert(s.group_id);
  }
  for (auto const& [names, sql, target, usage] :
       {std::tuple{&domains, "SELECT total_resource_slots FROM domains WHERE name = ?",
                   &st.in.domains, &st.domain_usage},
        std::tuple{&projects, "SELECT total_resource_slots FROM groups WHERE id = ?",
                   &st.in.projects, &st.project_usage}}) {
    for (auto const& name : *names) {
      auto rows = tx.Query(sql, {name});
      if (!rows.ok()) return rows.status();
      if (rows->empty()) continue;
      auto limit = SlotsFromColumn(rows->front().Text(0));
      if (limit.empty()) continue;
      (*target)[name] = scheduler::Scope{std::move(limit), (*usage)[name]};
    }
  }
  return Status();
}

// Writes the pass's outcome; returns how many sessions were placed.
StatusOr<int> ApplyDecisions(SqlExecutor& tx, PassState const& st,
                             std::vector<scheduler::Decision> const& decisions) {
  for (auto const& id : st.to_cancel) {
    TransitionDetails d;
    d.status_info = "dependency-failed";
    d.event = "session_cancelled";
    d.reason = "dependency-failed";
    auto r = TransitionIn(tx, id, SessionStatus::kPending, SessionStatus::kCancelled, d);
    if (!r.ok()) return r.status();
  }
  int placed = 0;
  for (auto const& decision : decisions) {
    if (std::find(st.to_cancel.begin(), st.to_cancel.end(), decision.session_id) !=
        st.to_cancel.end()) {
      continue;
    }
    if (decision.agent_id) {
      TransitionDetails d;
      d.event = "session_scheduled";
      d.agent_id = decision.agent_id;
      auto r = TransitionIn(tx, decision.session_id, SessionStatus::kPending,
                            SessionStatus::kScheduled, d);
      if (!r.ok()) return r.status();
      placed += *r ? 1 : 0;
      if (*r && !decision.devices.empty()) {
        auto w = tx.Exec("UPDATE sessions SET device_allocations = ? WHERE id = ?",
                         {AllocationsColumn(decision.devices), decision.session_id});
        if (!w.ok()) return w.status();
      }
    } else if (st.old_info.at(decision.session_id) != decision.status_info) {
      auto r = tx.Exec("UPDATE sessions SET status_info = ? WHERE id = ? AND status = 'PENDING'",
                       {decision.status_info, decision.session_id});
      if (!r.ok()) return r.status();
    }
  }
  return placed;
}

}  // namespace

Status AdmitSession(SqlExecutor& tx, std::string const& access_key, std::int64_t cluster_size,
                    protocol::ResourceSlots const& requested) {
  auto policy = tx.Query(
      "SELECT p.max_containers_per_session, p.max_pending_session_count, "
      "p.max_pending_session_resource_slots FROM keypairs k JOIN keypair_resource_policies p "
      "ON k.resource_policy = p.name WHERE k.access_key = ?",
      {access_key});
  if (!policy.ok()) return policy.status();
  if (policy->empty()) return Status();
  auto const& row = policy->front();
  scheduler::AdmissionLimits limits;
  limits.max_containers_per_session = row.Int(0);
  if (!row.IsNull(1)) limits.max_pending_session_count = row.Int(1);
  if (auto slots = row.OptText(2))
    limits.max_pending_session_resource_slots = SlotsFromColumn(*slots);
  scheduler::PendingUsage pending;
  if (limits.max_pending_session_count || limits.max_pending_session_resource_slots) {
    auto waiting =
        tx.Query("SELECT requested_slots FROM sessions WHERE access_key = ? AND status = 'PENDING'",
                 {access_key});
    if (!waiting.ok()) return waiting.status();
    for (auto const& r : *waiting) {
      pending.sessions += 1;
      scheduler::AddInto(pending.slots, SlotsFromColumn(r.Text(0)));
    }
  }
  auto why = scheduler::WhyRefused(limits, pending, cluster_size, requested);
  if (why.empty()) return Status();
  return protocol::MakeProblemStatus(protocol::ProblemType::kQuotaExceeded, why);
}

Status RecordActivity(
    server::Database& db,
    std::map<std::string, std::chrono::system_clock::time_point> const& activity) {
  for (auto const& [id, when] : activity) {
    std::string at = protocol::FormatRfc3339(when);
    auto r = db.Exec(
        "UPDATE sessions SET last_activity = ? WHERE id = ? AND (last_activity IS NULL OR "
        "last_activity < ?)",
        {at, id, at});
    if (!r.ok()) return r.status();
  }
  return Status();
}

StatusOr<std::map<std::string, std::string>> ExpiredSessions(
    server::Database& db, std::chrono::system_clock::time_point now) {
  auto rows = db.Query(
      "SELECT s.id, s.type, s.status_history, s.last_activity, p.idle_timeout, "
      "p.max_session_lifetime FROM sessions s JOIN keypairs k ON k.access_key = s.access_key "
      "JOIN keypair_resource_policies p ON p.name = k.resource_policy WHERE s.status = "
      "'RUNNING' AND (p.idle_timeout > 0 OR p.max_session_lifetime > 0)");
  if (!rows.ok()) return rows.status();
  std::map<std::string, std::string> out;
  for (auto const& r : *rows) {
    auto history = MapFromColumn(r.Text(2));
    auto running = history.find("RUNNING");
    if (running == history.end()) continue;
    scheduler::LiveSession s;
    s.id = r.Text(0);
    s.batch = r.Text(1) == "batch";
    s.running_since = TimeOf(running->second);
    if (auto last = r.OptText(3)) s.last_activity = TimeOf(*last);
    s.idle_timeout = r.Int(4);
    s.max_session_lifetime = r.Int(5);
    if (auto why = scheduler::WhyExpired(s, now); !why.empty()) out[s.id] = why;
  }
  return out;
}

StatusOr<int> RunSchedulingPass(server::Database& db, std::string const& scaling_group,
                                std::chrono::system_clock::time_point now,
                                std::chrono::seconds max_head_wait) {
  int placed = 0;
  // The pass decides from what it read: its scope keeps a second pass over the same group (on
  // this manager or another) from deciding on the same free capacity.
  auto status = db.Transaction({SchedulingScope(scaling_group)}, [&](SqlExecutor& tx) -> Status {
    PassState st;
    st.in.now = now;
    st.in.max_head_wait = max_head_wait;
    // Capacity first, then the queue: without the scope, a pass could read capacity before
    // another pass's placements and the queue after them (the test in
    // scheduling_concurrency_test.cc does exactly that).
    if (auto s = ReadAgentsAndUsage(tx, scaling_group, st); !s.ok()) return s;
    if (auto s = ReadQueue(tx, scaling_group, now, st); !s.ok()) return s;
    if (st.in.pending.empty()) return Status();
    if (auto s = ReadPolicies(tx, st); !s.ok()) return s;
    auto applied = ApplyDecisions(tx, st, scheduler::Schedule(st.in));
    if (!applied.ok()) return applied.status();
    placed = *applied;
    return Status();
  });
  if (!status.ok()) return status;
  return placed;
}

StatusOr<std::string> CheckPresets(server::Database& db, std::string const& access_key,
                                   std::vector<std::string> const& scaling_groups,
                                   std::vector<PresetRecord> const& presets) {
  using protocol::Decimal;
  using Slots = protocol::ResourceSlots;
  json out;
  auto status = db.Transaction([&](SqlExecutor& tx) -> Status {
    // Every slot the cluster knows, so that each map names all of them.
    std::set<std::string> names = {"cpu", "mem"};
    auto agents =
        tx.Query("SELECT id, scaling_group, available_slots FROM agents WHERE status = 'ALIVE'");
    if (!agents.ok()) return agents.status();
    for (auto const& r : *agents) {
      for (auto const& [k, v] : SlotsFromColumn(r.Text(2))) names.insert(k);
    }
    auto policy = tx.Query(
        "SELECT p.total_resource_slots, p.default_for_unspecified FROM keypairs k "
        "JOIN keypair_resource_policies p ON k.resource_policy = p.name WHERE k.access_key = ?",
        {access_key});
    if (!policy.ok()) return policy.status();
    Slots declared = policy->empty() ? Slots{} : SlotsFromColumn((*policy)[0].Text(0));
    bool unspecified_unlimited = policy->empty() || (*policy)[0].Text(1) != "LIMITED";
    for (auto const& [k, v] : declared) names.insert(k);
    Slots limits, using_kp;
    for (auto const& n : names) {
      auto it = declared.find(n);
      limits[n] = it != declared.end()    ? it->second
                  : unspecified_unlimited ? Decimal::Unlimited()
                                          : Decimal();
      using_kp[n] = Decimal();
    }
    auto holding =
        tx.Query(std::string("SELECT agent_id, access_key, requested_slots FROM sessions "
                             "WHERE status IN ") +
                 kHoldingStatuses);
    if (!holding.ok()) return holding.status();
    std::map<std::string, Slots> agent_occupied;
    for (auto const& r : *holding) {
      Slots slots = SlotsFromColumn(r.Text(2));
      scheduler::AddInto(agent_occupied[r.Text(0)], slots);
      if (r.Text(1) == access_key) scheduler::AddInto(using_kp, slots);
    }
    Slots remaining_kp;
    for (auto const& n : names) {
      auto left = limits[n].Sub(using_kp[n]);
      remaining_kp[n] = left ? *left : Decimal::Unlimited();
    }
    // Free capacity per agent of the asked groups, and per group.
    json groups = json::object();
    Slots group_total_remaining;
    std::vector<Slots> agent_free;
    for (auto const& n : names) group_total_remaining[n] = Decimal();
    for (auto const& sg : scaling_groups) {
      Slots sg_using, sg_remaining;
      for (auto const& n : names) sg_using[n] = sg_remaining[n] = Decimal();
      for (auto const& r : *agents) {
        if (r.Text(1) != sg) continue;
        Slots capacity = SlotsFromColumn(r.Text(2));
        Slots const& occupied = agent_occupied[r.Text(0)];
        Slots free;
        for (auto const& n : names) {
          Decimal cap = capacity.count(n) ? capacity[n] : Decimal();
          Decimal occ = occupied.count(n) ? occupied.at(n) : Decimal();
          auto left = cap.Sub(occ);
          free[n] = left && !left->is_negative() ? *left : Decimal();
          auto u = sg_using[n].Add(occ);
          sg_using[n] = u ? *u : Decimal::Unlimited();
        }
        scheduler::AddInto(sg_remaining, free);
        agent_free.push_back(free);
      }
      scheduler::AddInto(group_total_remaining, sg_remaining);
      groups[sg] = {{"using", internal::SlotsToJson(sg_using)},
                    {"remaining", internal::SlotsToJson(sg_remaining)}};
    }
    json nan = json::object();
    for (auto const& n : names) nan[n] = "NaN";
    json preset_list = json::array();
    for (auto const& p : presets) {
      Slots const& want = p.resource_slots;
      bool within_keypair = true;
      for (auto const& [k, v] : want) {
        if (remaining_kp.count(k) && v > remaining_kp[k]) within_keypair = false;
      }
      bool on_an_agent = false;
      for (auto const& free : agent_free) {
        bool fits = true;
        for (auto const& [k, v] : want) {
          Decimal have = free.count(k) ? free.at(k) : Decimal();
          if (v > have) fits = false;
        }
        on_an_agent = on_an_agent || fits;
      }
      preset_list.push_back(
          {{"name", p.name},
           {"resource_slots", internal::SlotsToJson(want)},
           {"shared_memory", p.shared_memory ? json(*p.shared_memory) : json(nullptr)},
           {"allocatable", within_keypair && on_an_agent}});
    }
    out = {{"keypair_limits", internal::SlotsToJson(limits)},
           {"keypair_using", internal::SlotsToJson(using_kp)},
           {"keypair_remaining", internal::SlotsToJson(remaining_kp)},
           {"group_limits", nan},
           {"group_using", nan},
           {"group_remaining", nan},
           {"scaling_group_remaining", internal::SlotsToJson(group_total_remaining)},
           {"scaling_groups", groups},
           {"presets", preset_list}};
    return Status();
  });
  if (!status.ok()) return status;
  return out.dump();
}

StatusOr<bool> AgentServes(server::Database& db, std::string const& scaling_group) {
  auto rows = db.Query("SELECT 1 FROM agents WHERE scaling_group = ? AND status = 'ALIVE' LIMIT 1",
                       {scaling_group});
  if (!rows.ok()) return rows.status();
  return !rows->empty();
}

Status CheckAgentsKnown(server::Database& db, std::string const& scaling_group,
                        std::vector<std::string> const& agent_ids) {
  for (auto const& id : agent_ids) {
    auto rows =
        db.Query("SELECT 1 FROM agents WHERE id = ? AND scaling_group = ?", {id, scaling_group});
    if (!rows.ok()) return rows.status();
    if (rows->empty()) {
      return protocol::MakeProblemStatus(
          protocol::ProblemType::kInvalidApiParams, "Input validation error",
          nlohmann::json{
              {"config.agent_list", "no agent " + id + " in resource group " + scaling_group}}
              .dump());
    }
  }
  return Status();
}

Status CheckCanEverFit(server::Database& db, std::string const& scaling_group,
                       protocol::ResourceSlots const& requested, bool unoffered_ok) {
  auto rows = db.Query(
      "SELECT available_slots FROM agents WHERE scaling_group = ? AND status = 'ALIVE' AND "
      "schedulable = 1",
      {scaling_group});
  if (!rows.ok()) return rows.status();
  std::vector<protocol::ResourceSlots> capacities;
  for (auto const& r : *rows) capacities.push_back(SlotsFromColumn(r.Text(0)));
  auto why = scheduler::WhyNeverFits(capacities, requested, unoffered_ok);
  if (why.empty()) return Status();
  return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams, why);
}

}  // namespace bai::manager
