// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/agents/agents.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"
#include "server-reference/common/log/log.h"
#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/agent_store.h"
#include "server-reference/manager/state/dotfiles.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/store.h"
#include "server-reference/manager/usage/usage.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace bai::manager {

using nlohmann::json;
using protocol::SessionStatus;
namespace ap = server::agent_protocol;

namespace {

constexpr std::size_t kMaxLogBytes = 1 << 20;

// Where the agent pulls a registry image from (the registry the manager knows for it, with
// its credentials and the digest the last rescan found); none for another image.
std::optional<ap::ImageRegistry> ImageSource(server::Database& db, SessionRecord const& r,
                                             std::string const& auto_pull) {
  RegistryStore registries(db);
  auto source = registries.SourceOf(r.image);
  if (!source.ok() || !*source) return std::nullopt;
  auto const& reg = **source;
  ap::ImageRegistry out{reg.registry_name,
                        reg.url,
                        reg.username.value_or(""),
                        reg.password.value_or(""),
                        reg.ssl_verify,
                        auto_pull,
                        ""};
  if (auto found = registries.FindImage(r.image, r.architecture); found.ok() && *found) {
    out.digest = (*found)->manifest_digest;
  }
  return out;
}

// What the agent needs to start the session's kernel, its folders' host paths included.
ap::CreateKernel CreateMessage(SessionRecord const& r) {
  ap::CreateKernel m;
  m.session_id = r.id;
  m.session_name = r.name;
  m.session_type = r.type;
  m.image = r.image;
  m.architecture = r.architecture;
  m.resources = r.requested;
  m.environ = r.environ;
  m.startup_command = r.startup_command;
  m.bootstrap_script = r.bootstrap_script;
  m.batch_timeout = r.batch_timeout;
  m.access_key = r.access_key;
  m.devices = r.devices;
  m.network = r.network;
  for (auto const& p : r.service_ports) {
    if (p.protocol == "preopen" && !p.container_ports.empty()) {
      m.preopen_ports.push_back(p.container_ports.front());
    }
  }
  for (auto const& v : r.vfolder_mounts) {
    m.mounts.push_back({v.name, v.host_path, v.kernel_path, v.permission});
  }
  return m;
}

}  // namespace

AgentRegistry::AgentRegistry(server::Database& db, SessionStore& sessions,
                             BackgroundTaskStore& tasks, AgentOptions options,
                             std::function<void(std::string const&)> schedule,
                             std::function<void()> wake, std::string cluster_secret)
    : db_(db),
      store_(db),
      sessions_(sessions),
      tasks_(tasks),
      options_(options),
      schedule_(std::move(schedule)),
      wake_(std::move(wake)),
      cluster_secret_(std::move(cluster_secret)) {}

std::set<std::string> AgentRegistry::Connected() {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (auto const& [id, link] : links_) out.insert(id);
  return out;
}

server::WebSocketHandlers AgentRegistry::Handlers(std::string const& agent_id) {
  server::WebSocketHandlers h;
  auto conn = std::make_shared<Connection>();
  conn->agent_id = agent_id;
  conn->nonce = ap::MakeNonce();
  h.on_open = [conn](std::shared_ptr<server::WebSocket> const& ws) {
    conn->socket = ws;
    ws->Send(ap::Encode(ap::ToAgent(ap::Challenge{conn->nonce})));
  };
  h.on_message = [this, conn](std::shared_ptr<server::WebSocket> const&, std::string const& text) {
    OnMessage(*conn, text);
  };
  h.on_close = [this, conn](int) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(conn->agent_id);
    if (it != links_.end() && it->second.socket == conn->socket) links_.erase(it);
  };
  return h;
}

void AgentRegistry::Send(std::string const& agent_id, ap::ToAgent const& message) {
  std::shared_ptr<server::WebSocket> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it != links_.end()) ws = it->second.socket;
  }
  if (ws) ws->Send(ap::Encode(message));
}

bool AgentRegistry::Notify(std::string const& agent_id, ap::ToAgent const& message) {
  if (auto const* open = std::get_if<ap::OpenStream>(&message)) Touch(open->session_id);
  std::shared_ptr<server::WebSocket> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it != links_.end()) ws = it->second.socket;
  }
  return ws && ws->Send(ap::Encode(message));
}

bool AgentRegistry::IsLink(Connection const& c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = links_.find(c.agent_id);
  return it != links_.end() && it->second.socket == c.socket;
}

void AgentRegistry::Refuse(Connection const& c, std::string const& why) {
  server::log::Warn("refused an agent's message", {{"agent", c.agent_id}, {"reason", why}});
  c.socket->Send(ap::Encode(ap::ToAgent(ap::ErrorReport{why})));
}

void AgentRegistry::OnMessage(Connection const& c, std::string const& text) {
  auto message = ap::DecodeToManager(text);
  if (!message.ok()) {
    Refuse(c, message.status().message());
    // An agent whose registration cannot be read has nothing to do on this connection; a
    // registered one keeps it.
    if (!IsLink(c)) c.socket->Close();
    return;
  }
  if (!std::holds_alternative<ap::Register>(*message) && !IsLink(c)) {
    Refuse(c, "register first");
    return;
  }
  std::visit([this, &c](auto const& m) { Handle(c, m); }, *message);
}

void AgentRegistry::Handle(Connection const& c, ap::Register const& m) {
  if (m.version != ap::kVersion) {
    Refuse(c, "unsupported agent protocol version");
    c.socket->Close();
    return;
  }
  if (!ap::VerifyRegisterProof(m.proof, c.agent_id, cluster_secret_, c.nonce)) {
    Refuse(c, "the registration does not answer this connection's challenge");
    c.socket->Close();
    return;
  }
  AgentRow row{c.agent_id,
               m.scaling_group,
               m.architecture,
               m.agent_version,
               m.slots,
               m.slot_types,
               {},
               AgentDevices{m.device_policy, m.devices}};
  row.images = m.images;
  auto exists = store_.ScalingGroupExists(row.scaling_group);
  if (!exists.ok() || !*exists) row.scaling_group = "default";
  std::string const& group = row.scaling_group;
  // New capacity (smaller, or moved to another group) under the scheduling scopes of the groups
  // it leaves and joins, so that no pass decides on the old figures meanwhile.
  server::LockScopes scopes = {SchedulingScope(group)};
  auto before = store_.GroupOf(c.agent_id);
  if (before.ok() && *before) scopes.push_back(SchedulingScope(**before));
  auto r = store_.Register(row, scopes);
  if (!r.ok()) {
    server::log::Error("registering an agent failed",
                       {{"agent", c.agent_id}, {"reason", r.message()}});
    c.socket->Close();
    return;
  }
  Adopt(c, m, group);
}

void AgentRegistry::Adopt(Connection const& c, ap::Register const& m, std::string const& group) {
  std::shared_ptr<server::WebSocket> previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& link = links_[c.agent_id];
    previous = link.socket;  // a reconnect replaces a half-dead old link
    link = Link{};
    link.socket = c.socket;
  }
  if (previous && previous != c.socket) previous->Close();
  server::log::Info("agent registered", {{"agent", c.agent_id},
                                         {"scaling_group", group},
                                         {"primary", m.primary},
                                         {"kernels", m.kernels.size()}});
  if (!m.primary) {
    // One of several links of an agent (docs/agent-protocol.md, "Several managers"): its
    // kernels are reconciled by the registration of its primary link, which reports them;
    // this manager only learns which it runs, so as not to send their creates again.
    std::set<std::string> running;
    for (auto const& k : m.kernels) {
      if (!k.Ended()) running.insert(k.session_id);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      links_[c.agent_id].created = std::move(running);
    }
    Send(c.agent_id, ap::Registered{options_.heartbeat_interval.count() * 1000, group});
    Dispatch();
    return;
  }
  // Reconcile: keep the kernels the manager still wants, kill the rest (DECISIONS.md).
  std::set<std::string> live;
  std::vector<std::string> kill;
  for (auto const& k : m.kernels) {
    if (k.Ended()) {
      // Finished while the agent was away: record how, before reconciling.
      Handle(c, k);
      continue;
    }
    auto s = sessions_.Get(k.session_id);
    bool wanted = s.ok() && *s && (*s)->agent_id == c.agent_id &&
                  !protocol::IsTerminal((*s)->status) && (*s)->status != SessionStatus::kError;
    if (wanted) {
      live.insert(k.session_id);
      if ((*s)->status_info == "agent-lost") (void)sessions_.SetStatusInfo(k.session_id, "");
    } else {
      kill.push_back(k.session_id);
    }
  }
  auto held = store_.Held(c.agent_id);
  std::set<std::string> created;
  if (held.ok()) {
    for (auto const& [id, status] : *held) {
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
    links_[c.agent_id].created = created;
  }
  Send(c.agent_id, ap::Registered{options_.heartbeat_interval.count() * 1000, group});
  for (auto const& id : kill) Send(c.agent_id, ap::DestroyKernel{id, "not-wanted"});
  schedule_(group);
  Dispatch();
  wake_();
}

void AgentRegistry::Handle(Connection const& c, ap::Heartbeat const& m) {
  // A heartbeat without slots keeps the registered ones. The usual heartbeat repeats them: one
  // UPDATE that changes nothing else. New slots are a capacity change, made under the group's
  // scheduling scope.
  std::optional<std::string> load;
  if (m.stats) load = ap::NodeStatsJson(*m.stats).dump();
  if (!m.usage.empty()) {
    // cpu_util from this heartbeat's CPU time and the last one's (each manager its own).
    std::map<std::string, std::string> stats;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(cpu_mu_);
    for (auto const& [id, u] : m.usage) {
      std::optional<double> util;
      if (auto last = cpu_samples_.find(id); last != cpu_samples_.end()) {
        auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(now - last->second.at);
        util = usage::CpuUtilPercent(last->second.cpu_ms, u.cpu_used_ms, wall.count());
      }
      cpu_samples_[id] = {u.cpu_used_ms, now};
      stats[id] = usage::StatJson(u, util).dump();
    }
    // Sessions no agent reports any more are forgotten after a while.
    for (auto it = cpu_samples_.begin(); it != cpu_samples_.end();) {
      it = now - it->second.at > std::chrono::minutes(10) ? cpu_samples_.erase(it) : std::next(it);
    }
    (void)sessions_.SetLiveStats(c.agent_id, stats);
  }
  auto same = store_.Beat(c.agent_id, m.slots, load);
  if (!same.ok() || *same) return;
  auto group = store_.GroupOf(c.agent_id);
  if (!group.ok() || !*group) return;
  (void)store_.SetSlots(c.agent_id, *m.slots, {SchedulingScope(**group)});
}

void AgentRegistry::Handle(Connection const& c, ap::Response const& m) {
  std::function<void(StatusOr<std::string>)> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(m.request_id);
    if (it == pending_.end()) return;  // too late: already timed out
    (void)c;
    done = std::move(it->second.done);
    pending_.erase(it);
  }
  done(m.result_json);
}

void AgentRegistry::Handle(Connection const& c, ap::ErrorReport const& m) {
  server::log::Warn("an agent could not use a message", {{"agent", c.agent_id}, {"reason", m.msg}});
}

void AgentRegistry::Handle(Connection const& c, ap::TaskReport const& m) {
  auto task = tasks_.Get(m.task_id);
  if (!task.ok() || !*task || (*task)->Finished()) return;
  // Only the agent running the task's session may advance it.
  auto session = sessions_.Get((*task)->subject);
  if (!session.ok() || !*session || (*session)->agent_id != c.agent_id) return;
  if (m.status == protocol::TaskStatus::kOngoing) {
    (void)tasks_.Update((*task)->id, m.current_progress.value_or((*task)->current_progress),
                        m.total_progress.value_or((*task)->total_progress), m.message);
  } else {
    (void)tasks_.Finish((*task)->id, m.status, m.message);
  }
  wake_();
}

void AgentRegistry::Handle(Connection const& c, ap::KernelOutput const& m) {
  // Only the agent running the session speaks for its output.
  auto s = sessions_.Get(m.session_id);
  if (!s.ok() || !*s || (*s)->agent_id != c.agent_id) return;
  output_.Publish(m.session_id, m.offset, m.chunks);
}

void AgentRegistry::Handle(Connection const& c, ap::KernelStatus const& m) {
  std::string const& session_id = m.session_id;
  auto const status = m.status;
  auto s = sessions_.Get(session_id);
  if (!s.ok() || !*s || (*s)->agent_id != c.agent_id) return;
  auto current = (*s)->status;
  if ((protocol::IsTerminal(current) || current == SessionStatus::kError) &&
      (status == protocol::KernelStatus::kPreparing ||
       status == protocol::KernelStatus::kRunning)) {
    // Cancelled or failed while the agent was starting it: the manager does not want it.
    Send(c.agent_id, ap::DestroyKernel{session_id, "not-wanted"});
  }
  if (m.Ended()) {
    // Its final figures (or, from an agent that could not read them, the last heartbeat's).
    std::optional<std::string> stat;
    if (m.usage) stat = usage::StatJson(*m.usage).dump();
    (void)sessions_.SetLastStat(session_id, stat);
  }
  if (m.logs) {
    std::string log_text = *m.logs;
    if (log_text.size() > kMaxLogBytes) log_text = log_text.substr(log_text.size() - kMaxLogBytes);
    (void)store_.SetKernelLogs(session_id, log_text);
  }
  std::optional<std::int64_t> exit_code = m.exit_code;
  std::string const& reason = m.reason;
  TransitionDetails d;
  if (status == protocol::KernelStatus::kPreparing) {
    if (current == SessionStatus::kScheduled) {
      (void)sessions_.Transition(session_id, current, SessionStatus::kPreparing, d);
      current = SessionStatus::kPreparing;
    }
    if (m.pull && current == SessionStatus::kPreparing) {
      // Its image is being pulled: said in status_info and as a kernel_pulling event.
      std::string info = protocol::EncodePullInfo({m.pull->image, m.pull->done, m.pull->total});
      (void)sessions_.SetStatusInfo(session_id, info);
      (void)sessions_.RecordEvent(**s, "kernel_pulling", info);
    }
  } else if (status == protocol::KernelStatus::kRunning) {
    if (!m.service_ports.empty()) (void)sessions_.SetServicePorts(session_id, m.service_ports);
    if (m.setup) (void)sessions_.SetKernelSetup(session_id, *m.setup);
    if (current == SessionStatus::kScheduled) {
      (void)sessions_.Transition(session_id, current, SessionStatus::kPreparing, d);
      current = SessionStatus::kPreparing;
    }
    if (current == SessionStatus::kPreparing || current == SessionStatus::kPulling) {
      d.event = "session_started";
      (void)sessions_.Transition(session_id, current, SessionStatus::kRunning, d);
    }
  } else if (status == protocol::KernelStatus::kTerminated) {
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
  } else if (status == protocol::KernelStatus::kError) {
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
  // After the session's end is recorded: a follower that hears it reads the final status.
  if (m.Ended()) output_.End(session_id);
  wake_();
}

void AgentRegistry::Request(std::string const& agent_id, ap::AgentRequest request,
                            std::chrono::milliseconds timeout,
                            std::function<void(StatusOr<std::string>)> done) {
  // What a user does with a session counts as activity; the manager's own reads do not.
  std::visit(
      [this](auto const& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, ap::Execute> || std::is_same_v<T, ap::KernelFiles> ||
                      std::is_same_v<T, ap::StartService> || std::is_same_v<T, ap::RestartKernel>) {
          Touch(r.session_id);
        }
      },
      request);
  std::shared_ptr<server::WebSocket> socket;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(agent_id);
    if (it != links_.end()) socket = it->second.socket;
    if (socket) {
      id = "r" + std::to_string(++next_request_);
      pending_[id] = {std::chrono::steady_clock::now() + timeout, std::move(done)};
    }
  }
  if (!socket) {
    done(protocol::MakeProblemStatus(protocol::ProblemType::kInstanceNotAvailable,
                                     "The session's agent is not connected to this manager."));
    return;
  }
  if (!socket->Send(ap::Encode(ap::WithRequestId(std::move(request), id)))) {
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
      auto st = (*s)->status;
      if (protocol::IsTerminal(st) || st == SessionStatus::kError) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          links_[agent_id].created.erase(id);
        }
        Send(agent_id, ap::DestroyKernel{id, (*s)->status_info});
      }
    }
    auto rows = store_.ToDispatch(agent_id);
    if (!rows.ok()) continue;
    for (auto const& [id, status] : *rows) {
      bool create = status == SessionStatus::kScheduled;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto& link = links_[agent_id];
        auto& sent = create ? link.created : link.destroyed;
        if (sent.count(id)) continue;
        sent.insert(id);
      }
      if (!create) {
        Send(agent_id, ap::DestroyKernel{id, "user-requested"});
        continue;
      }
      auto s = sessions_.Get(id);
      if (!s.ok() || !*s) continue;
      auto message = CreateMessage(**s);
      message.registry = ImageSource(db_, **s, options_.auto_pull);
      auto dotfiles =
          DotfileStore(db_).ForKernel((*s)->domain_name, (*s)->group_id, (*s)->access_key);
      if (dotfiles.ok()) message.dotfiles = std::move(*dotfiles);
      Send(agent_id, message);
    }
  }
}

void AgentRegistry::ForgetLostAgents() {
  // Long LOST and holding nothing: the row only clutters agent lists and capacity sums.
  (void)store_.ForgetLost(std::chrono::system_clock::now() - options_.lost_grace -
                          options_.lost_forget);
}

void AgentRegistry::Touch(std::string const& session_id) {
  auto now = std::chrono::system_clock::now();
  std::lock_guard<std::mutex> lock(activity_mu_);
  activity_[session_id] = now;
}

void AgentRegistry::Tick() {
  // Silent agents become LOST; their sessions keep their status and say why.
  auto now = std::chrono::system_clock::now();
  auto silent = store_.SilentSince(now - options_.heartbeat_timeout);
  if (silent.ok()) {
    for (auto const& id : *silent) {
      (void)store_.MarkLost(id);
      server::log::Warn("agent lost: silent too long",
                        {{"agent", id}, {"seconds", options_.heartbeat_timeout.count()}});
      std::lock_guard<std::mutex> lock(mu_);
      auto it = links_.find(id);
      if (it != links_.end() && it->second.socket) it->second.socket->Close();
    }
  }
  // After the grace period their sessions end as ERROR and free their slots.
  auto expired = store_.LostBefore(now - options_.lost_grace);
  if (expired.ok()) {
    for (auto const& [agent_id, group] : *expired) {
      auto held = store_.Held(agent_id);
      if (!held.ok()) continue;
      for (auto const& [id, from] : *held) {
        TransitionDetails d;
        d.status_info = "agent-lost";
        d.event = "session_failure";
        d.reason = "agent-lost";
        d.result = "failure";
        if (protocol::CanTransition(from, SessionStatus::kError)) {
          (void)sessions_.Transition(id, from, SessionStatus::kError, d);
        }
      }
      if (!held->empty()) schedule_(group);
    }
  }
  ForgetLostAgents();
  // Activity seen here since the last tick, then sessions past their policy's time limits.
  std::map<std::string, std::chrono::system_clock::time_point> activity;
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    activity.swap(activity_);
  }
  (void)RecordActivity(db_, activity);
  if (auto timed_out = ExpiredSessions(db_, now); timed_out.ok()) {
    for (auto const& [id, why] : *timed_out) {
      TransitionDetails d;
      d.status_info = why;
      d.event = "session_terminating";
      d.reason = why;
      (void)sessions_.Transition(id, SessionStatus::kRunning, SessionStatus::kTerminating, d);
    }
  }
  // Batch jobs past their batch_timeout are stopped.
  auto batches = sessions_.RunningBatchesWithTimeout();
  if (batches.ok()) {
    auto now_secs =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    for (auto const& b : *batches) {
      auto since = b.status_history.find(std::string(protocol::ToString(SessionStatus::kRunning)));
      if (since == b.status_history.end()) continue;
      auto started = protocol::ParseHttpDate(since->second);
      if (!started || now_secs - started->unix_seconds < b.batch_timeout.value_or(0)) continue;
      TransitionDetails d;
      d.status_info = "batch-timeout";
      d.event = "session_failure";
      d.reason = "batch-timeout";
      d.result = "failure";
      (void)sessions_.Transition(b.id, SessionStatus::kRunning, SessionStatus::kTerminating, d);
    }
  }
  Dispatch();
}

}  // namespace bai::manager
