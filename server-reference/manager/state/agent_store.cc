// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/agent_store.h"

#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/columns.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using nlohmann::json;
using server::SqlExecutor;
using server::SqlRow;

namespace {

StatusOr<std::vector<AgentSession>> Sessions(StatusOr<std::vector<SqlRow>> rows) {
  if (!rows.ok()) return std::move(rows).status();
  std::vector<AgentSession> out;
  for (auto const& r : *rows) {
    out.push_back({r.Text(0), protocol::ParseSessionStatus(r.Text(1)).status});
  }
  return out;
}

}  // namespace

StatusOr<std::vector<AgentRecord>> AgentStore::List() {
  auto rows = db_.Query(
      "SELECT id, scaling_group, status, architecture, available_slots, slot_types, images, "
      "version, schedulable, first_contact, last_heartbeat, lost_at, live_stat, devices "
      "FROM agents ORDER BY id");
  if (!rows.ok()) return std::move(rows).status();
  auto held = db_.Query(std::string("SELECT agent_id, requested_slots FROM sessions WHERE agent_id "
                                    "IS NOT NULL AND status IN ") +
                        kHoldingStatuses);
  if (!held.ok()) return std::move(held).status();
  std::vector<AgentRecord> out;
  for (auto& r : *rows) {
    AgentRecord a;
    a.row.id = r.TakeText(0);
    a.row.scaling_group = r.TakeText(1);
    a.status = r.TakeText(2);
    a.row.architecture = r.TakeText(3);
    a.row.slots = SlotsFromColumn(r.Text(4));
    for (auto const& [name, type] : MapFromColumn(r.Text(5))) {
      if (auto t = protocol::ParseSlotType(type)) a.row.slot_types[name] = *t;
    }
    a.row.images = ImagesFromColumn(r.Text(6));
    a.row.version = r.TakeText(7);
    a.schedulable = r.Bool(8);
    a.first_contact = r.TakeText(9);
    a.last_heartbeat = r.TakeText(10);
    a.lost_at = r.TakeOptText(11);
    a.live_stat = r.TakeOptText(12);
    a.row.devices = AgentDevicesFromColumn(r.Text(13));
    for (auto const& h : *held) {
      if (h.Text(0) != a.row.id) continue;
      protocol::AddInto(a.occupied, SlotsFromColumn(h.Text(1)));
      ++a.container_count;
    }
    out.push_back(std::move(a));
  }
  return out;
}

StatusOr<bool> AgentStore::ScalingGroupExists(std::string const& name) {
  auto rows = db_.Query("SELECT 1 FROM scaling_groups WHERE name = ?", {name});
  if (!rows.ok()) return std::move(rows).status();
  return !rows->empty();
}

StatusOr<std::optional<std::string>> AgentStore::GroupOf(std::string const& agent_id) {
  auto rows = db_.Query("SELECT scaling_group FROM agents WHERE id = ?", {agent_id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

Status AgentStore::Register(AgentRow const& a, server::LockScopes const& scopes) {
  json slot_types = json::object();
  for (auto const& [name, type] : a.slot_types) slot_types[name] = std::string(ToString(type));
  std::string now = NowIso();
  return db_.Transaction(scopes, [&](SqlExecutor& tx) -> Status {
    return tx
        .Exec(
            "INSERT INTO agents (id, scaling_group, status, architecture, available_slots, "
            "slot_types, images, version, first_contact, last_heartbeat, devices) "
            "VALUES (?, ?, 'ALIVE', ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "scaling_group = excluded.scaling_group, status = 'ALIVE', "
            "architecture = excluded.architecture, available_slots = excluded.available_slots, "
            "slot_types = excluded.slot_types, images = excluded.images, "
            "version = excluded.version, last_heartbeat = excluded.last_heartbeat, "
            "devices = excluded.devices, lost_at = NULL",
            {a.id, a.scaling_group, a.architecture, SlotsColumn(a.slots), slot_types.dump(),
             ImagesColumn(a.images), a.version, now, now, AgentDevicesColumn(a.devices)})
        .status();
  });
}

StatusOr<bool> AgentStore::Beat(std::string const& agent_id,
                                std::optional<protocol::ResourceSlots> const& slots,
                                std::optional<std::string> const& live_stat) {
  std::string text = slots ? SlotsColumn(*slots) : std::string();
  auto n = db_.Exec(
      "UPDATE agents SET last_heartbeat = ?, status = 'ALIVE', lost_at = NULL, "
      "live_stat = COALESCE(?, live_stat) WHERE id = ? AND (? = '' OR available_slots = ?)",
      {NowIso(), live_stat ? server::SqlValue(*live_stat) : server::SqlValue(nullptr), agent_id,
       text, text});
  if (!n.ok()) return std::move(n).status();
  return *n > 0 || !slots;
}

Status AgentStore::SetSlots(std::string const& agent_id, protocol::ResourceSlots const& slots,
                            server::LockScopes const& scopes) {
  return db_.Transaction(scopes, [&](SqlExecutor& tx) -> Status {
    return tx
        .Exec(
            "UPDATE agents SET last_heartbeat = ?, status = 'ALIVE', lost_at = NULL, "
            "available_slots = ? WHERE id = ?",
            {NowIso(), SlotsColumn(slots), agent_id})
        .status();
  });
}

StatusOr<std::vector<std::string>> AgentStore::SilentSince(
    std::chrono::system_clock::time_point since) {
  auto rows = db_.Query("SELECT id FROM agents WHERE status = 'ALIVE' AND last_heartbeat < ?",
                        {IsoTime(since)});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<std::string> out;
  for (auto const& r : *rows) out.push_back(r.Text(0));
  return out;
}

Status AgentStore::SetImages(std::string const& agent_id, ImageList const& images) {
  return db_.Exec("UPDATE agents SET images = ? WHERE id = ?", {ImagesColumn(images), agent_id})
      .status();
}

Status AgentStore::MarkLost(std::string const& agent_id) {
  return db_.Transaction([&](SqlExecutor& tx) -> Status {
    auto a =
        tx.Exec("UPDATE agents SET status = 'LOST', lost_at = ? WHERE id = ? AND status = 'ALIVE'",
                {NowIso(), agent_id});
    if (!a.ok()) return a.status();
    return tx
        .Exec(std::string("UPDATE sessions SET status_info = 'agent-lost' WHERE agent_id = ? "
                          "AND status IN ") +
                  kHoldingStatuses,
              {agent_id})
        .status();
  });
}

StatusOr<std::vector<std::pair<std::string, std::string>>> AgentStore::LostBefore(
    std::chrono::system_clock::time_point before) {
  auto rows =
      db_.Query("SELECT id, scaling_group FROM agents WHERE status = 'LOST' AND lost_at < ?",
                {IsoTime(before)});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<std::pair<std::string, std::string>> out;
  for (auto const& r : *rows) out.emplace_back(r.Text(0), r.Text(1));
  return out;
}

Status AgentStore::ForgetLost(std::chrono::system_clock::time_point before) {
  return db_
      .Exec(std::string("DELETE FROM agents WHERE status = 'LOST' AND lost_at < ? AND NOT "
                        "EXISTS (SELECT 1 FROM sessions WHERE sessions.agent_id = agents.id "
                        "AND sessions.status IN ") +
                kHoldingStatuses + ")",
            {IsoTime(before)})
      .status();
}

StatusOr<std::vector<AgentSession>> AgentStore::Held(std::string const& agent_id) {
  return Sessions(
      db_.Query(std::string("SELECT id, status FROM sessions WHERE agent_id = ? AND status IN ") +
                    kHoldingStatuses,
                {agent_id}));
}

StatusOr<std::vector<AgentSession>> AgentStore::ToDispatch(std::string const& agent_id) {
  return Sessions(
      db_.Query("SELECT id, status FROM sessions WHERE agent_id = ? AND status IN ('SCHEDULED', "
                "'TERMINATING') ORDER BY seq",
                {agent_id}));
}

Status AgentStore::SetKernelLogs(std::string const& session_id, std::string const& logs) {
  return db_
      .Exec("UPDATE kernels SET logs = ? WHERE session_id = ? AND cluster_role = 'main'",
            {logs, session_id})
      .status();
}

}  // namespace bai::manager
