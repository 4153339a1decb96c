// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/groups.h"

#include "libbai/util/json_parse.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/store.h"

namespace bai::manager {

using server::SqlValue;

namespace {

constexpr char kColumns[] =
    "id, name, description, is_active, created_at, modified_at, domain_name, type, "
    "total_resource_slots, allowed_vfolder_hosts, integration_id, resource_policy";

protocol::Group FromRow(server::SqlRow& r) {
  protocol::Group g;
  g.id = r.TakeText(0);
  g.name = r.TakeText(1);
  g.description = r.TakeText(2);
  g.is_active = r.Bool(3);
  g.created_at = r.TakeText(4);
  g.modified_at = r.IsNull(5) ? g.created_at : r.TakeText(5);
  g.domain_name = r.TakeText(6);
  g.type = r.TakeText(7);
  g.total_resource_slots = r.TakeText(8);
  g.allowed_vfolder_hosts = r.TakeText(9);
  g.integration_id = r.TakeOptText(10);
  g.resource_policy = r.TakeText(11);
  return g;
}

Status Taken(std::string const& domain, std::string const& name) {
  return Status(StatusCode::kAlreadyExists,
                "duplicate key value violates unique constraint: the domain \"" + domain +
                    "\" has a project \"" + name + "\"");
}

// The resource groups of each listed project.
Status AddScalingGroups(server::Database& db, std::vector<protocol::Group>& groups) {
  auto rows = db.Query("SELECT group_id, scaling_group FROM sgroups_for_groups ORDER BY 2");
  if (!rows.ok()) return rows.status();
  for (auto& g : groups) {
    for (auto const& r : *rows) {
      if (r.Text(0) == g.id) g.scaling_groups.push_back(r.Text(1));
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::optional<protocol::Group>> GroupStore::Get(std::string const& id) {
  auto rows = db_.Query(std::string("SELECT ") + kColumns + " FROM groups WHERE id = ?", {id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<protocol::Group>();
  std::vector<protocol::Group> one{FromRow(rows->front())};
  if (auto s = AddScalingGroups(db_, one); !s.ok()) return s;
  return std::optional<protocol::Group>(std::move(one.front()));
}

StatusOr<std::vector<protocol::Group>> GroupStore::List(std::string const& domain,
                                                        std::string const& name,
                                                        std::optional<bool> is_active) {
  std::string sql = std::string("SELECT ") + kColumns + " FROM groups WHERE 1 = 1";
  std::vector<SqlValue> params;
  if (!domain.empty()) {
    sql += " AND domain_name = ?";
    params.push_back(domain);
  }
  if (!name.empty()) {
    sql += " AND name = ?";
    params.push_back(name);
  }
  if (is_active) sql += *is_active ? " AND is_active = 1" : " AND is_active = 0";
  auto rows = db_.Query(sql + " ORDER BY domain_name, name", params);
  if (!rows.ok()) return rows.status();
  std::vector<protocol::Group> out;
  for (auto& r : *rows) out.push_back(FromRow(r));
  if (auto s = AddScalingGroups(db_, out); !s.ok()) return s;
  return out;
}

StatusOr<std::string> GroupStore::Create(protocol::Group const& g) {
  std::string id = GenerateUuid();
  std::string now = NowIso();
  Status result;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto domain = db.Query("SELECT 1 FROM domains WHERE name = ?", {g.domain_name});
    if (!domain.ok()) return domain.status();
    if (domain->empty()) {
      return result = Status(StatusCode::kNotFound, "no such domain \"" + g.domain_name + "\"");
    }
    auto r = db.Exec(
        std::string("INSERT INTO groups (") + kColumns +
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {id, g.name, g.description, server::SqlBool(g.is_active), now, now, g.domain_name,
         g.type.value_or("GENERAL"), g.total_resource_slots, g.allowed_vfolder_hosts,
         g.integration_id ? SqlValue(*g.integration_id) : SqlValue(nullptr), g.resource_policy});
    if (!r.ok()) {
      if (server::IsUniqueViolation(r.status())) return result = Taken(g.domain_name, g.name);
      return r.status();
    }
    return Status();
  });
  if (!result.ok()) return result;
  if (!tx.ok()) return tx;
  return id;
}

Status GroupStore::Modify(std::string const& id, GroupChanges const& c) {
  std::string sets = "modified_at = ?";
  std::vector<SqlValue> params{NowIso()};
  auto set = [&](char const* column, SqlValue value) {
    sets += std::string(", ") + column + " = ?";
    params.push_back(std::move(value));
  };
  if (c.name) set("name", *c.name);
  if (c.description) set("description", *c.description);
  if (c.is_active) set("is_active", server::SqlBool(*c.is_active));
  if (c.domain_name) set("domain_name", *c.domain_name);
  if (c.total_resource_slots) set("total_resource_slots", *c.total_resource_slots);
  if (c.allowed_vfolder_hosts) set("allowed_vfolder_hosts", *c.allowed_vfolder_hosts);
  if (c.integration_id) {
    set("integration_id", c.integration_id->empty() ? SqlValue(nullptr) : *c.integration_id);
  }
  if (c.resource_policy) set("resource_policy", *c.resource_policy);
  params.push_back(id);
  Status result;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto n = db.Exec("UPDATE groups SET " + sets + " WHERE id = ?", params);
    if (!n.ok()) {
      if (server::IsUniqueViolation(n.status())) {
        return result = Taken(c.domain_name.value_or("its domain"), c.name.value_or(""));
      }
      return n.status();
    }
    if (*n == 0) return result = Status(StatusCode::kNotFound, "no such group");
    if (c.user_uuids.empty()) return Status();
    auto domain = db.Query("SELECT domain_name FROM groups WHERE id = ?", {id});
    if (!domain.ok()) return domain.status();
    for (auto const& user : c.user_uuids) {
      if (c.user_update_mode == "add") {
        auto found = db.Query("SELECT domain_name FROM users WHERE uuid = ?", {user});
        if (!found.ok()) return found.status();
        if (found->empty() || found->front().Text(0) != domain->front().Text(0)) {
          return result = Status(StatusCode::kInvalidArgument,
                                 "no user " + user + " in the project's domain");
        }
        auto added = db.Exec(
            "INSERT INTO association_groups_users (group_id, user_id) VALUES (?, ?) "
            "ON CONFLICT DO NOTHING",
            {id, user});
        if (!added.ok()) return added.status();
      } else {
        auto removed = db.Exec(
            "DELETE FROM association_groups_users WHERE group_id = ? AND user_id = ?", {id, user});
        if (!removed.ok()) return removed.status();
      }
    }
    return Status();
  });
  return result.ok() ? tx : result;
}

Status GroupStore::Purge(std::string const& id) {
  Status result;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto exists = db.Query("SELECT 1 FROM groups WHERE id = ?", {id});
    if (!exists.ok()) return exists.status();
    if (exists->empty()) return result = Status(StatusCode::kNotFound, "no such group");
    auto active = db.Query(
        "SELECT 1 FROM sessions WHERE group_id = ? AND status NOT IN "
        "('TERMINATED', 'CANCELLED', 'ERROR') LIMIT 1",
        {id});
    if (!active.ok()) return active.status();
    if (!active->empty()) {
      return result = Status(StatusCode::kFailedPrecondition,
                             "Group has some active session. Terminate them first to proceed "
                             "removal.");
    }
    // 24.09 deletes the project's folders with their data; bai keeps data unless asked: a
    // project with folders is not purged until they are deleted (bai vfolder rm).
    auto folders = db.Query("SELECT name FROM vfolders WHERE group_id = ? LIMIT 1", {id});
    if (!folders.ok()) return folders.status();
    if (!folders->empty()) {
      return result = Status(StatusCode::kFailedPrecondition,
                             "The project still has virtual folders (" + folders->front().Text(0) +
                                 "): delete them first.");
    }
    for (char const* sql :
         {"DELETE FROM sessions WHERE group_id = ?",
          "DELETE FROM association_groups_users WHERE group_id = ?",
          "DELETE FROM sgroups_for_groups WHERE group_id = ?", "DELETE FROM groups WHERE id = ?"}) {
      auto n = db.Exec(sql, {id});
      if (!n.ok()) return n.status();
    }
    return Status();
  });
  return result.ok() ? tx : result;
}

}  // namespace bai::manager
