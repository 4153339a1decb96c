// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/resource_groups.h"

namespace bai::manager {

using server::SqlValue;

namespace {

SqlValue OptValue(std::optional<std::string> const& v) {
  return v && !v->empty() ? SqlValue(*v) : SqlValue(nullptr);
}

struct AssociationTable {
  char const* table;
  char const* column;
  char const* target_sql;  ///< a row when the target exists
  char const* what;
};

AssociationTable const& TableOf(AssociationKind kind) {
  static AssociationTable const kDomain{"sgroups_for_domains", "domain",
                                        "SELECT 1 FROM domains WHERE name = ?", "domain"};
  static AssociationTable const kProject{"sgroups_for_groups", "group_id",
                                         "SELECT 1 FROM groups WHERE id = ?", "project"};
  static AssociationTable const kKeypair{"sgroups_for_keypairs", "access_key",
                                         "SELECT 1 FROM keypairs WHERE access_key = ?", "keypair"};
  switch (kind) {
    case AssociationKind::kDomain:
      return kDomain;
    case AssociationKind::kProject:
      return kProject;
    case AssociationKind::kKeypair:
      break;
  }
  return kKeypair;
}

}  // namespace

Status ResourceGroupStore::Create(ScalingGroupRecord const& g) {
  auto r = db_.Exec(
      "INSERT INTO scaling_groups (name, description, is_active, is_public, scheduler, "
      "scheduler_opts, created_at, driver_opts, wsproxy_addr, wsproxy_api_token, "
      "use_host_network) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {g.name, g.description, server::SqlBool(g.is_active), server::SqlBool(g.is_public),
       g.scheduler, g.scheduler_opts, NowIso(), g.driver_opts, OptValue(g.wsproxy_addr),
       OptValue(g.wsproxy_api_token), server::SqlBool(g.use_host_network)});
  if (!r.ok() && server::IsUniqueViolation(r.status())) {
    return Status(StatusCode::kAlreadyExists,
                  "duplicate key value violates unique constraint: a resource group named \"" +
                      g.name + "\" exists");
  }
  return r.ok() ? Status() : r.status();
}

Status ResourceGroupStore::Modify(std::string const& name, ResourceGroupChanges const& c) {
  std::string sets;
  std::vector<SqlValue> params;
  auto set = [&](char const* column, SqlValue value) {
    sets += (sets.empty() ? "" : ", ") + std::string(column) + " = ?";
    params.push_back(std::move(value));
  };
  if (c.description) set("description", *c.description);
  if (c.is_active) set("is_active", server::SqlBool(*c.is_active));
  if (c.is_public) set("is_public", server::SqlBool(*c.is_public));
  if (c.scheduler) set("scheduler", *c.scheduler);
  if (c.scheduler_opts) set("scheduler_opts", *c.scheduler_opts);
  if (c.driver_opts) set("driver_opts", *c.driver_opts);
  if (c.wsproxy_addr) set("wsproxy_addr", OptValue(c.wsproxy_addr));
  if (c.wsproxy_api_token) set("wsproxy_api_token", OptValue(c.wsproxy_api_token));
  if (c.use_host_network) set("use_host_network", server::SqlBool(*c.use_host_network));
  if (sets.empty()) return Status(StatusCode::kInvalidArgument, "nothing to update");
  params.emplace_back(name);
  auto n = db_.Exec("UPDATE scaling_groups SET " + sets + " WHERE name = ?", params);
  if (!n.ok()) return n.status();
  return *n == 0 ? Status(StatusCode::kNotFound, "no such resource group") : Status();
}

Status ResourceGroupStore::Delete(std::string const& name) {
  Status refusal;
  auto tx = db_.Transaction({SchedulingScope(name)}, [&](server::SqlExecutor& db) -> Status {
    if (auto s = server::ExpectRow(db, "SELECT 1 FROM scaling_groups WHERE name = ?", {name},
                                   Status(StatusCode::kNotFound, "no such resource group"));
        !s.ok()) {
      return refusal = s;
    }
    auto agents = db.Query("SELECT id FROM agents WHERE scaling_group = ? LIMIT 1", {name});
    if (!agents.ok()) return agents.status();
    if (!agents->empty()) {
      return refusal = Status(StatusCode::kFailedPrecondition,
                              "integrity error: agents belong to the resource group (" +
                                  agents->front().Text(0) +
                                  "): move them first (modify_agent scaling_group)");
    }
    auto sessions = db.Query(
        "SELECT 1 FROM sessions WHERE scaling_group = ? AND status NOT IN ('TERMINATED', "
        "'CANCELLED', 'ERROR') LIMIT 1",
        {name});
    if (!sessions.ok()) return sessions.status();
    if (!sessions->empty()) {
      return refusal = Status(StatusCode::kFailedPrecondition,
                              "integrity error: sessions not ended use the resource group");
    }
    auto n = db.Exec("DELETE FROM scaling_groups WHERE name = ?", {name});
    return n.ok() ? Status() : n.status();
  });
  return refusal.ok() ? tx : refusal;
}

Status ResourceGroupStore::Associate(AssociationKind kind, std::string const& group,
                                     std::string const& target, bool on) {
  AssociationTable const& t = TableOf(kind);
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    if (auto s = server::ExpectRow(db, "SELECT 1 FROM scaling_groups WHERE name = ?", {group},
                                   Status(StatusCode::kNotFound, "no such resource group"));
        !s.ok()) {
      return refusal = s;
    }
    if (auto s = server::ExpectRow(db, t.target_sql, {target},
                                   Status(StatusCode::kNotFound, std::string("no such ") + t.what));
        !s.ok()) {
      return refusal = s;
    }
    std::string sql = on ? std::string("INSERT INTO ") + t.table + " (scaling_group, " + t.column +
                               ") VALUES (?, ?) ON CONFLICT DO NOTHING"
                         : std::string("DELETE FROM ") + t.table + " WHERE scaling_group = ? AND " +
                               t.column + " = ?";
    auto n = db.Exec(sql, {group, target});
    return n.ok() ? Status() : n.status();
  });
  return refusal.ok() ? tx : refusal;
}

Status ResourceGroupStore::DissociateAll(AssociationKind kind, std::string const& target) {
  AssociationTable const& t = TableOf(kind);
  auto n =
      db_.Exec(std::string("DELETE FROM ") + t.table + " WHERE " + t.column + " = ?", {target});
  return n.ok() ? Status() : n.status();
}

StatusOr<std::vector<std::string>> ResourceGroupStore::AssociatedWith(AssociationKind kind,
                                                                      std::string const& target) {
  AssociationTable const& t = TableOf(kind);
  auto rows = db_.Query(std::string("SELECT scaling_group FROM ") + t.table + " WHERE " + t.column +
                            " = ? ORDER BY scaling_group",
                        {target});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (auto& r : *rows) out.push_back(r.TakeText(0));
  return out;
}

Status ResourceGroupStore::ModifyAgent(std::string const& agent_id, std::optional<bool> schedulable,
                                       std::optional<std::string> const& scaling_group) {
  auto current = db_.Query("SELECT scaling_group FROM agents WHERE id = ?", {agent_id});
  if (!current.ok()) return current.status();
  if (current->empty()) return Status(StatusCode::kNotFound, "no such agent");
  server::LockScopes scopes = {SchedulingScope(current->front().Text(0))};
  if (scaling_group && *scaling_group != current->front().Text(0)) {
    scopes.push_back(SchedulingScope(*scaling_group));
  }
  std::sort(scopes.begin(), scopes.end());
  Status refusal;
  auto tx = db_.Transaction(scopes, [&](server::SqlExecutor& db) -> Status {
    if (scaling_group) {
      if (auto s =
              server::ExpectRow(db, "SELECT 1 FROM scaling_groups WHERE name = ?", {*scaling_group},
                                Status(StatusCode::kNotFound, "no such resource group"));
          !s.ok()) {
        return refusal = s;
      }
      auto n =
          db.Exec("UPDATE agents SET scaling_group = ? WHERE id = ?", {*scaling_group, agent_id});
      if (!n.ok()) return n.status();
    }
    if (schedulable) {
      auto n = db.Exec("UPDATE agents SET schedulable = ? WHERE id = ?",
                       {server::SqlBool(*schedulable), agent_id});
      if (!n.ok()) return n.status();
    }
    return Status();
  });
  return refusal.ok() ? tx : refusal;
}

Status PresetStore::Create(std::string const& name, std::string const& slots,
                           std::optional<std::string> const& shared_memory) {
  auto r = db_.Exec(
      "INSERT INTO resource_presets (name, resource_slots, shared_memory) VALUES (?, ?, ?)",
      {name, slots, OptValue(shared_memory)});
  if (!r.ok() && server::IsUniqueViolation(r.status())) {
    return Status(
        StatusCode::kAlreadyExists,
        "duplicate key value violates unique constraint: a preset named \"" + name + "\" exists");
  }
  return r.ok() ? Status() : r.status();
}

Status PresetStore::Modify(std::string const& name, std::optional<std::string> const& slots,
                           std::optional<std::string> const& shared_memory) {
  std::string sets;
  std::vector<SqlValue> params;
  if (slots) {
    sets = "resource_slots = ?";
    params.emplace_back(*slots);
  }
  if (shared_memory) {
    sets += std::string(sets.empty() ? "" : ", ") + "shared_memory = ?";
    params.push_back(OptValue(shared_memory));
  }
  if (sets.empty()) return Status(StatusCode::kInvalidArgument, "nothing to update");
  params.emplace_back(name);
  auto n = db_.Exec("UPDATE resource_presets SET " + sets + " WHERE name = ?", params);
  if (!n.ok()) return n.status();
  return *n == 0 ? Status(StatusCode::kNotFound, "no such preset") : Status();
}

Status PresetStore::Delete(std::string const& name) {
  auto n = db_.Exec("DELETE FROM resource_presets WHERE name = ?", {name});
  if (!n.ok()) return n.status();
  return *n == 0 ? Status(StatusCode::kNotFound, "no such preset") : Status();
}

}  // namespace bai::manager
