// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/agents.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "libbai/internal/json_codec.h"
#include "server-reference/common/agent_protocol.h"
#include "server-reference/manager/scheduling.h"
#include "server-reference/manager/store.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace bai::manager {

using nlohmann::json;
using protocol::ParseSessionStatus;
using protocol::SessionStatus;
using server::SqlValue;

namespace {

std::string IsoAgo(std::chrono::seconds ago) {
  return IsoTime(std::chrono::system_clock::now() - ago);
}

constexpr std::size_t kMaxLogBytes = 1 << 20;

}  // namespace

AgentRegistry::AgentRegistry(server::Database& db, SessionStore& sessions,
                             BackgroundTaskStore& tasks, AgentOptions options,
                             std::function<void(std::string const&)> schedule,
                             std::function<void()> wake)
    : db_(db),
      sessions_(sessions),
      tasks_(tasks),
      options_(options),
      schedule_(std::move(schedule)),
      wake_(std::move(wake)) {}

std::set<std::string> AgentRegistry::Connected() {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (auto const& [id, link] : links_) {
    if (link.registered) out.insert(id);
  }
  return out;
}

server::WebSocketHandlers AgentRegistry::Handlers(std::string const& agent_id) {
  server::WebSocketHandlers h;
  auto socket_holder = std::make_shared<std::weak_ptr<server::WebSocket>>();
  h.on_open = [this, agent_id, socket_holder](std::shared_ptr<server::WebSocket> const& ws) {
    *socket_holder = ws;
    std::shared_ptr<server::WebSocket> previous;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& link = links_[agent_id];
      previous = link.socket;  // a reconnect replaces a half-dead old link
      link = Link{};
      link.socket = ws;
    }
    if (previous && previous != ws) previous->Close();
  };
  h.on_message = [this, agent_id](std::shared_ptr<server::WebSocket> const& ws,
                                  std::string const& text) { OnMessage(agent_id, ws, text); };
  h.on_close = [this, agent_id, socket_holder] {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it != links_.end() && it->second.socket == socket_holder->lock()) links_.erase(it);
  };
  return h;
}

void AgentRegistry::Send(std::string const& agent_id, std::string const& text) {
  std::shared_ptr<server::WebSocket> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it != links_.end()) ws = it->second.socket;
  }
  if (ws) ws->Send(text);
}

void AgentRegistry::OnMessage(std::string const& agent_id,
                              std::shared_ptr<server::WebSocket> const& socket,
                              std::string const& text) {
  auto msg = internal::ParseJson(text);
  if (!msg || !msg->is_object() || !msg->contains("type") || !(*msg)["type"].is_string()) {
    socket->Send(json{{"type", "error"}, {"msg", "expected a JSON object with a type"}}.dump());
    return;
  }
  std::string type = (*msg)["type"];
  std::string now = NowIso();
  if (type == "register") {
    if (msg->value("version", 0) != server::agent_protocol::kVersion) {
      socket->Send(json{{"type", "error"}, {"msg", "unsupported agent protocol version"}}.dump());
      socket->Close();
      return;
    }
    std::string group = msg->value("scaling_group", "default");
    auto exists = db_.Query("SELECT 1 FROM scaling_groups WHERE name = ?", {group});
    if (!exists.ok() || exists->empty()) group = "default";
    auto slots = msg->value("slots", json::object());
    auto r = db_.Exec(
        "INSERT INTO agents (id, scaling_group, status, architecture, available_slots, "
        "slot_types, images, version, first_contact, last_heartbeat) "
        "VALUES (?, ?, 'ALIVE', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
        "scaling_group = excluded.scaling_group, status = 'ALIVE', "
        "architecture = excluded.architecture, available_slots = excluded.available_slots, "
        "slot_types = excluded.slot_types, images = excluded.images, version = excluded.version, "
        "last_heartbeat = excluded.last_heartbeat, lost_at = NULL",
        {agent_id, group, msg->value("architecture", "x86_64"), slots.dump(),
         msg->value("slot_types", json::object()).dump(),
         msg->value("images", json::array()).dump(), msg->value("agent_version", ""), now, now});
    if (!r.ok()) {
      std::fprintf(stderr, "bai-manager: registering agent %s failed: %s\n", agent_id.c_str(),
                   r.status().message().c_str());
      socket->Close();
      return;
    }
    // Reconcile: keep the kernels the manager still wants, kill the rest (DECISIONS.md).
    std::set<std::string> live;
    std::vector<std::string> kill;
    for (auto const& k : msg->value("kernels", json::array())) {
      std::string session_id = k.value("session_id", "");
      std::string reported = k.value("status", "RUNNING");
      if (reported == "TERMINATED" || reported == "ERROR") {
        // Finished while the agent was away: record how, before reconciling.
        ApplyKernelStatus(agent_id, socket, k.dump());
        continue;
      }
      auto s = sessions_.Get(session_id);
      bool wanted = s.ok() && *s && (*s)->agent_id == agent_id &&
                    !protocol::IsTerminal(ParseSessionStatus((*s)->status).status) &&
                    (*s)->status != "ERROR";
      if (wanted) {
        live.insert(session_id);
        if ((*s)->status_info == "agent-lost") (void)sessions_.SetStatusInfo(session_id, "");
      } else {
        kill.push_back(session_id);
      }
    }
    auto held = db_.Query(std::string("SELECT id, status FROM sessions WHERE agent_id = ? AND "
                                      "status IN ") +
                              kHoldingStatuses,
                          {agent_id});
    std::set<std::string> created;
    if (held.ok()) {
      for (auto const& row : *held) {
        std::string id = row.Text(0);
        auto status = ParseSessionStatus(row.Text(1)).status;
        if (live.count(id)) {
          created.insert(id);
          continue;
        }
        TransitionDetails d;
        if (status == SessionStatus::kTerminating) {
          d.status_info = "terminated-while-agent-away";
          d.event = "session_terminated";
          (void)sessions_.Transition(id, status, SessionStatus::kTerminated, d);
        } else if (status != SessionStatus::kScheduled) {
          // Its kernel did not survive the agent's absence.
          d.status_info = "kernel-lost";
          d.event = "session_failure";
          d.reason = "kernel-lost";
          (void)sessions_.Transition(id, status, SessionStatus::kError, d);
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& link = links_[agent_id];
      link.registered = true;
      link.created = created;
    }
    socket->Send(json{
        {"type", "registered"},
        {"heartbeat_interval_ms", options_.heartbeat_interval.count() * 1000},
        {"scaling_group",
         group}}.dump());
    for (auto const& id : kill) {
      socket->Send(
          json{{"type", "destroy_kernel"}, {"session_id", id}, {"reason", "not-wanted"}}.dump());
    }
    schedule_(group);
    Dispatch();
    wake_();
    return;
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it == links_.end() || !it->second.registered) {
      socket->Send(json{{"type", "error"}, {"msg", "register first"}}.dump());
      return;
    }
  }
  if (type == "heartbeat") {
    std::vector<SqlValue> params = {now, agent_id};
    std::string sql = "UPDATE agents SET last_heartbeat = ?, status = 'ALIVE', lost_at = NULL";
    if (msg->contains("slots")) {
      sql += ", available_slots = ?";
      params.insert(params.begin() + 1, (*msg)["slots"].dump());
    }
    (void)db_.Exec(sql + " WHERE id = ?", params);
    return;
  }
  if (type == "kernel_status") {
    ApplyKernelStatus(agent_id, socket, text);
    wake_();
    return;
  }
  if (type == "bgtask") {
    ApplyTaskReport(agent_id, text);
    wake_();
    return;
  }
  if (type == "response") {
    std::function<void(StatusOr<std::string>)> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(msg->value("request_id", ""));
      if (it == pending_.end()) return;  // too late: already timed out
      done = std::move(it->second.done);
      pending_.erase(it);
    }
    done(msg->value("result", json::object()).dump());
    return;
  }
  socket->Send(json{{"type", "error"}, {"msg", "unknown message type " + type}}.dump());
}

void AgentRegistry::ApplyTaskReport(std::string const& agent_id, std::string const& text) {
  auto msg = internal::ParseJson(text);
  if (!msg || !msg->is_object()) return;
  auto task = tasks_.Get(msg->value("task_id", ""));
  if (!task.ok() || !*task || (*task)->Finished()) return;
  // Only the agent running the task's session may advance it.
  auto session = sessions_.Get((*task)->subject);
  if (!session.ok() || !*session || (*session)->agent_id != agent_id) return;
  std::string status = msg->value("status", "ongoing");
  std::string message = msg->value("message", "");
  if (status == "ongoing") {
    auto current = msg->value("current_progress", (*task)->current_progress);
    auto total = msg->value("total_progress", (*task)->total_progress);
    (void)tasks_.Update((*task)->id, current, total, message);
  } else if (status == "done" || status == "failed" || status == "cancelled") {
    (void)tasks_.Finish((*task)->id, status, message);
  }
}

void AgentRegistry::ApplyKernelStatus(std::string const& agent_id,
                                      std::shared_ptr<server::WebSocket> const& socket,
                                      std::string const& text) {
  auto parsed = internal::ParseJson(text);
  if (!parsed || !parsed->is_object()) return;
  auto const* msg = &*parsed;
  std::string session_id = msg->value("session_id", "");
  std::string status = msg->value("status", "");
  auto s = sessions_.Get(session_id);
  if (!s.ok() || !*s || (*s)->agent_id != agent_id) return;
  auto current = ParseSessionStatus((*s)->status).status;
  if ((protocol::IsTerminal(current) || current == SessionStatus::kError) &&
      (status == "PREPARING" || status == "RUNNING")) {
    // Cancelled or failed while the agent was starting it: the manager does not want it.
    socket->Send(
        json{{"type", "destroy_kernel"}, {"session_id", session_id}, {"reason", "not-wanted"}}
            .dump());
  }
  if (auto logs = msg->find("logs"); logs != msg->end() && logs->is_string()) {
    std::string log_text = logs->get<std::string>();
    if (log_text.size() > kMaxLogBytes) log_text = log_text.substr(log_text.size() - kMaxLogBytes);
    (void)db_.Exec("UPDATE kernels SET logs = ? WHERE session_id = ? AND cluster_role = 'main'",
                   {log_text, session_id});
  }
  std::optional<std::int64_t> exit_code;
  if (auto e = msg->find("exit_code"); e != msg->end() && e->is_number_integer()) {
    exit_code = e->get<std::int64_t>();
  }
  std::string reason = msg->value("reason", "");
  TransitionDetails d;
  if (status == "PREPARING" && current == SessionStatus::kScheduled) {
    (void)sessions_.Transition(session_id, current, SessionStatus::kPreparing, d);
  } else if (status == "RUNNING") {
    if (current == SessionStatus::kScheduled) {
      (void)sessions_.Transition(session_id, current, SessionStatus::kPreparing, d);
      current = SessionStatus::kPreparing;
    }
    if (current == SessionStatus::kPreparing || current == SessionStatus::kPulling) {
      d.event = "session_started";
      (void)sessions_.Transition(session_id, current, SessionStatus::kRunning, d);
    }
  } else if (status == "TERMINATED") {
    std::string info = (*s)->status_info;
    if (current == SessionStatus::kRunning && (*s)->type == "batch" && exit_code) {
      // The batch result first, then the end of the session (PROTOCOL.md §5.6).
      TransitionDetails result;
      result.result = *exit_code == 0 ? "success" : "failure";
      result.exit_code = exit_code;
      result.status_info = reason.empty() ? "task-finished" : reason;
      result.event = *exit_code == 0 ? "session_success" : "session_failure";
      result.reason = result.status_info;
      (void)sessions_.Transition(session_id, current, SessionStatus::kTerminating, result);
      current = SessionStatus::kTerminating;
      info = result.status_info;
    } else if (current != SessionStatus::kTerminating) {
      info = reason.empty() ? "self-terminated" : reason;
    }
    if (protocol::CanTransition(current, SessionStatus::kTerminated)) {
      d.status_info = info;
      d.event = "session_terminated";
      d.reason = info;
      d.exit_code = exit_code;
      (void)sessions_.Transition(session_id, current, SessionStatus::kTerminated, d);
    }
    schedule_((*s)->scaling_group);
  } else if (status == "ERROR") {
    if (protocol::CanTransition(current, SessionStatus::kError)) {
      d.status_info = reason.empty() ? "kernel-error" : reason;
      d.event = "session_failure";
      d.reason = d.status_info;
      d.exit_code = exit_code;
      d.result = "failure";
      (void)sessions_.Transition(session_id, current, SessionStatus::kError, d);
    }
    schedule_((*s)->scaling_group);
  }
}

void AgentRegistry::Request(std::string const& agent_id, std::string const& message_json,
                            std::chrono::milliseconds timeout,
                            std::function<void(StatusOr<std::string>)> done) {
  auto msg = internal::ParseJson(message_json);
  std::shared_ptr<server::WebSocket> socket;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it != links_.end() && it->second.registered) socket = it->second.socket;
    if (socket && msg) {
      id = "r" + std::to_string(++next_request_);
      pending_[id] = {std::chrono::steady_clock::now() + timeout, std::move(done)};
    }
  }
  if (!socket || !msg) {
    done(protocol::MakeProblemStatus(protocol::ProblemType::kInstanceNotAvailable,
                                     "The session's agent is not connected to this manager."));
    return;
  }
  (*msg)["request_id"] = id;
  if (!socket->Send(msg->dump())) {
    std::function<void(StatusOr<std::string>)> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      cb = std::move(it->second.done);
      pending_.erase(it);
    }
    cb(protocol::MakeProblemStatus(protocol::ProblemType::kInstanceNotAvailable,
                                   "The session's agent went away."));
  }
}

void AgentRegistry::ExpireRequests() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::function<void(StatusOr<std::string>)>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.deadline <= now) {
        expired.push_back(std::move(it->second.done));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& done : expired) {
    done(protocol::MakeProblemStatus(protocol::ProblemType::kKernelExecutionFailed,
                                     "The kernel did not answer in time."));
  }
}

void AgentRegistry::Dispatch() {
  auto connected = Connected();
  for (auto const& agent_id : connected) {
    // Kernels created on this link whose session ended without them (cancelled while
    // starting): tell the agent to drop them.
    std::vector<std::string> created;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& link = links_[agent_id];
      created.assign(link.created.begin(), link.created.end());
    }
    for (auto const& id : created) {
      auto s = sessions_.Get(id);
      if (!s.ok() || !*s) continue;
      auto st = ParseSessionStatus((*s)->status).status;
      if (protocol::IsTerminal(st) || st == SessionStatus::kError) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          links_[agent_id].created.erase(id);
        }
        Send(agent_id,
             json{{"type", "destroy_kernel"}, {"session_id", id}, {"reason", (*s)->status_info}}
                 .dump());
      }
    }
    auto rows = db_.Query(
        "SELECT id, status FROM sessions WHERE agent_id = ? AND status IN ('SCHEDULED', "
        "'TERMINATING') ORDER BY seq",
        {agent_id});
    if (!rows.ok()) continue;
    for (auto const& row : *rows) {
      std::string id = row.Text(0);
      bool create = row.Text(1) == "SCHEDULED";
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto& link = links_[agent_id];
        auto& sent = create ? link.created : link.destroyed;
        if (sent.count(id)) continue;
        sent.insert(id);
      }
      if (!create) {
        Send(agent_id,
             json{{"type", "destroy_kernel"}, {"session_id", id}, {"reason", "user-requested"}}
                 .dump());
        continue;
      }
      auto s = sessions_.Get(id);
      if (!s.ok() || !*s) continue;
      auto const& r = **s;
      json create_msg = {
          {"type", "create_kernel"},
          {"session_id", r.id},
          {"session_name", r.name},
          {"session_type", r.type},
          {"image", r.image},
          {"architecture", r.architecture},
          {"resources", internal::ParseJson(r.requested_json).value_or(json::object())},
          {"environ", internal::ParseJson(r.environ).value_or(json::object())},
          {"mounts", internal::ParseJson(r.mounts).value_or(json::array())},
          {"startup_command", r.startup_command ? json(*r.startup_command) : json(nullptr)},
          {"bootstrap_script", r.bootstrap_script ? json(*r.bootstrap_script) : json(nullptr)},
          {"batch_timeout", r.batch_timeout ? json(*r.batch_timeout) : json(nullptr)},
          {"access_key", r.access_key}};
      Send(agent_id, create_msg.dump());
    }
  }
}

void AgentRegistry::Tick() {
  // Silent agents become LOST; their sessions keep their status and say why.
  auto silent = db_.Query("SELECT id FROM agents WHERE status = 'ALIVE' AND last_heartbeat < ?",
                          {IsoAgo(options_.heartbeat_timeout)});
  if (silent.ok()) {
    for (auto const& row : *silent) {
      std::string id = row.Text(0);
      (void)db_.Exec(
          "UPDATE agents SET status = 'LOST', lost_at = ? WHERE id = ? AND status = 'ALIVE'",
          {NowIso(), id});
      (void)db_.Exec(
          std::string("UPDATE sessions SET status_info = 'agent-lost' WHERE agent_id = ? "
                      "AND status IN ") +
              kHoldingStatuses,
          {id});
      std::lock_guard<std::mutex> lock(mu_);
      auto it = links_.find(id);
      if (it != links_.end() && it->second.socket) it->second.socket->Close();
    }
  }
  // After the grace period their sessions end as ERROR and free their slots.
  auto expired =
      db_.Query("SELECT id, scaling_group FROM agents WHERE status = 'LOST' AND lost_at < ?",
                {IsoAgo(options_.lost_grace)});
  if (expired.ok()) {
    for (auto const& row : *expired) {
      auto held = db_.Query(std::string("SELECT id, status FROM sessions WHERE agent_id = ? AND "
                                        "status IN ") +
                                kHoldingStatuses,
                            {row.Text(0)});
      if (!held.ok()) continue;
      for (auto const& s : *held) {
        TransitionDetails d;
        d.status_info = "agent-lost";
        d.event = "session_failure";
        d.reason = "agent-lost";
        d.result = "failure";
        auto from = ParseSessionStatus(s.Text(1)).status;
        if (protocol::CanTransition(from, SessionStatus::kError)) {
          (void)sessions_.Transition(s.Text(0), from, SessionStatus::kError, d);
        }
      }
      if (!held->empty()) schedule_(row.Text(1));
    }
  }
  // Batch jobs past their batch_timeout are stopped.
  auto batches = db_.Query(
      "SELECT id, status_history, batch_timeout FROM sessions WHERE status = 'RUNNING' AND "
      "type = 'batch' AND batch_timeout IS NOT NULL");
  if (batches.ok()) {
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    for (auto const& row : *batches) {
      auto history = internal::ParseJson(row.Text(1));
      if (!history || !history->contains("RUNNING") || !(*history)["RUNNING"].is_string()) continue;
      auto started = protocol::ParseHttpDate((*history)["RUNNING"].get<std::string>());
      if (!started || now - started->unix_seconds < row.Int(2)) continue;
      TransitionDetails d;
      d.status_info = "batch-timeout";
      d.event = "session_failure";
      d.reason = "batch-timeout";
      d.result = "failure";
      (void)sessions_.Transition(row.Text(0), SessionStatus::kRunning, SessionStatus::kTerminating,
                                 d);
    }
  }
  Dispatch();
}

}  // namespace bai::manager
