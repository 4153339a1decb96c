// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/domains.h"

#include "libbai/util/json_parse.h"
#include "server-reference/manager/state/store.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using server::SqlValue;

namespace {

constexpr char kColumns[] =
    "name, description, is_active, created_at, modified_at, total_resource_slots, "
    "allowed_vfolder_hosts, allowed_docker_registries, integration_id";

protocol::Domain FromRow(server::SqlRow& r) {
  protocol::Domain d;
  d.name = r.TakeText(0);
  d.description = r.TakeText(1);
  d.is_active = r.Bool(2);
  d.created_at = r.TakeText(3);
  d.modified_at = r.IsNull(4) ? d.created_at : r.TakeText(4);
  d.total_resource_slots = r.TakeText(5);
  d.allowed_vfolder_hosts = r.TakeText(6);
  auto registries = internal::ParseJson(r.Text(7));
  if (registries && registries->is_array()) {
    for (auto const& v : *registries) {
      if (v.is_string()) d.allowed_docker_registries.push_back(v.get<std::string>());
    }
  }
  d.integration_id = r.TakeOptText(8);
  return d;
}

}  // namespace

StatusOr<std::optional<protocol::Domain>> DomainStore::Get(std::string const& name) {
  auto rows = db_.Query(std::string("SELECT ") + kColumns + " FROM domains WHERE name = ?", {name});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<protocol::Domain>();
  auto d = FromRow(rows->front());
  auto groups = db_.Query(
      "SELECT scaling_group FROM sgroups_for_domains WHERE domain = ? ORDER BY scaling_group",
      {name});
  if (!groups.ok()) return groups.status();
  for (auto const& g : *groups) d.scaling_groups.push_back(g.Text(0));
  return std::optional<protocol::Domain>(std::move(d));
}

StatusOr<std::vector<protocol::Domain>> DomainStore::List(std::optional<bool> is_active) {
  std::string sql = std::string("SELECT ") + kColumns + " FROM domains";
  std::vector<SqlValue> params;
  if (is_active) {
    sql += " WHERE is_active = ?";
    params.push_back(std::int64_t{*is_active ? 1 : 0});
  }
  auto rows = db_.Query(sql + " ORDER BY name", params);
  if (!rows.ok()) return rows.status();
  auto groups = db_.Query("SELECT domain, scaling_group FROM sgroups_for_domains ORDER BY 2");
  if (!groups.ok()) return groups.status();
  std::vector<protocol::Domain> out;
  for (auto& r : *rows) {
    out.push_back(FromRow(r));
    for (auto const& g : *groups) {
      if (g.Text(0) == out.back().name) out.back().scaling_groups.push_back(g.Text(1));
    }
  }
  return out;
}

Status DomainStore::Create(protocol::Domain const& d) {
  std::string now = NowIso();
  auto r = db_.Exec(
      std::string("INSERT INTO domains (") + kColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {d.name, d.description, std::int64_t{d.is_active ? 1 : 0}, now, now, d.total_resource_slots,
       d.allowed_vfolder_hosts, nlohmann::json(d.allowed_docker_registries).dump(),
       d.integration_id ? SqlValue(*d.integration_id) : SqlValue(nullptr)});
  if (!r.ok()) {
    if (server::IsUniqueViolation(r.status())) {
      return Status(
          StatusCode::kAlreadyExists,
          "duplicate key value violates unique constraint: the domain \"" + d.name + "\" exists");
    }
    return r.status();
  }
  return Status();
}

Status DomainStore::Modify(std::string const& name, DomainChanges const& c) {
  std::string sets = "modified_at = ?";
  std::vector<SqlValue> params{NowIso()};
  auto set = [&](char const* column, SqlValue value) {
    sets += std::string(", ") + column + " = ?";
    params.push_back(std::move(value));
  };
  if (c.description) set("description", *c.description);
  if (c.is_active) set("is_active", std::int64_t{*c.is_active ? 1 : 0});
  if (c.total_resource_slots) set("total_resource_slots", *c.total_resource_slots);
  if (c.allowed_vfolder_hosts) set("allowed_vfolder_hosts", *c.allowed_vfolder_hosts);
  if (c.allowed_docker_registries) {
    set("allowed_docker_registries", nlohmann::json(*c.allowed_docker_registries).dump());
  }
  if (c.integration_id) set("integration_id", *c.integration_id);
  bool rename = c.name && *c.name != name;
  params.push_back(rename ? *c.name : name);
  Status result;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    if (rename) {
      // Foreign keys point at the name: a copy under the new name first, then what the domain
      // holds moves to it (users, projects, sessions, folders, resource-group links), then the
      // old row goes.
      auto copied =
          db.Exec(std::string("INSERT INTO domains (") + kColumns + ") SELECT ?, " +
                      (std::string(kColumns).substr(std::string(kColumns).find(',') + 1)) +
                      " FROM domains WHERE name = ?",
                  {*c.name, name});
      if (!copied.ok()) {
        if (server::IsUniqueViolation(copied.status())) {
          return result = Status(StatusCode::kAlreadyExists,
                                 "duplicate key value violates unique constraint: the domain \"" +
                                     *c.name + "\" exists");
        }
        return copied.status();
      }
      if (*copied == 0) return result = Status(StatusCode::kNotFound, "no such domain");
      for (char const* sql : {"UPDATE groups SET domain_name = ? WHERE domain_name = ?",
                              "UPDATE users SET domain_name = ? WHERE domain_name = ?",
                              "UPDATE sessions SET domain_name = ? WHERE domain_name = ?",
                              "UPDATE vfolders SET domain_name = ? WHERE domain_name = ?",
                              "UPDATE sgroups_for_domains SET domain = ? WHERE domain = ?"}) {
        auto moved = db.Exec(sql, {*c.name, name});
        if (!moved.ok()) return moved.status();
      }
      auto gone = db.Exec("DELETE FROM domains WHERE name = ?", {name});
      if (!gone.ok()) return gone.status();
    }
    auto n = db.Exec("UPDATE domains SET " + sets + " WHERE name = ?", params);
    if (!n.ok()) return n.status();
    if (*n == 0) return result = Status(StatusCode::kNotFound, "no such domain");
    return Status();
  });
  return result.ok() ? tx : result;
}

Status DomainStore::Purge(std::string const& name) {
  Status result;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto exists = db.Query("SELECT 1 FROM domains WHERE name = ?", {name});
    if (!exists.ok()) return exists.status();
    if (exists->empty()) return result = Status(StatusCode::kNotFound, "no such domain");
    struct Check {
      char const* sql;
      char const* why;
    };
    for (Check check : {Check{"SELECT 1 FROM sessions WHERE domain_name = ? AND status NOT IN "
                              "('TERMINATED', 'CANCELLED', 'ERROR') LIMIT 1",
                              "Domain has some active kernels. Terminate them first."},
                        Check{"SELECT 1 FROM users WHERE domain_name = ? LIMIT 1",
                              "There are users bound to the domain. Remove users first."},
                        Check{"SELECT 1 FROM groups WHERE domain_name = ? LIMIT 1",
                              "There are groups bound to the domain. Remove groups first."}}) {
      auto rows = db.Query(check.sql, {name});
      if (!rows.ok()) return rows.status();
      if (!rows->empty()) return result = Status(StatusCode::kFailedPrecondition, check.why);
    }
    for (char const* sql :
         {"DELETE FROM sgroups_for_domains WHERE domain = ?",
          "DELETE FROM sessions WHERE domain_name = ?", "DELETE FROM domains WHERE name = ?"}) {
      auto n = db.Exec(sql, {name});
      if (!n.ok()) return n.status();
    }
    return Status();
  });
  return result.ok() ? tx : result;
}

}  // namespace bai::manager
