// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/db/database.h"
#include "server-reference/common/http/http.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/manager/agents/output_hub.h"
#include "server-reference/manager/state/agent_store.h"
#include "server-reference/manager/state/bgtasks.h"
#include "server-reference/manager/state/sessions.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace bai::manager {

struct AgentOptions {
  std::chrono::seconds heartbeat_interval{5};
  std::chrono::seconds heartbeat_timeout{15};  ///< silence before an agent is LOST
  std::chrono::seconds lost_grace{300};        ///< LOST this long → its sessions end as ERROR
  /// LOST this long past the grace, holding no session → the agent's row is removed.
  std::chrono::seconds lost_forget{3600};
  /// Registry images: when agents pull them (digest, tag, none; 24.09's auto_pull).
  std::string auto_pull = "digest";
};

/// The manager's side of docs/agent-protocol.md: agents connected to this manager, their
/// registration and heartbeats, kernel status reports, and the dispatch of SCHEDULED and
/// TERMINATING sessions to them. State lives in the database; the only memory is which agent is
/// connected here and which commands went out on that connection.
class AgentRegistry {
 public:
  AgentRegistry(server::Database& db, SessionStore& sessions, BackgroundTaskStore& tasks,
                AgentOptions options, std::function<void(std::string const&)> schedule,
                std::function<void()> wake, std::string cluster_secret);

  /// WebSocket callbacks for an agent connection whose handshake proved the cluster secret.
  /// The connection becomes the agent's only once its `register` answers this connection's
  /// challenge, so a replayed handshake can neither register nor displace the live agent.
  server::WebSocketHandlers Handlers(std::string const& agent_id);

  /// Lost-agent detection, grace expiry and dispatch; call about once a second.
  void Tick();

  /// Sends pending create/destroy commands to the agents connected here.
  void Dispatch();

  /// Sends `request` (its request id set here) to `agent_id` and calls `done` once with the
  /// agent's `result` (JSON text), or an error: 503 when the agent is not connected here, 500
  /// kernel-execution-failed after `timeout`. Runs `done` on an I/O or the hub's thread.
  void Request(std::string const& agent_id, server::agent_protocol::AgentRequest request,
               std::chrono::milliseconds timeout, std::function<void(StatusOr<std::string>)> done);
  /// Sends a one-way `message` to `agent_id`; false when it is not connected to this manager.
  bool Notify(std::string const& agent_id, server::agent_protocol::ToAgent const& message);
  /// Fails requests whose time is up; call often (the hub does, every 100 ms).
  void ExpireRequests();

  /// The session's user did something with it now (execute, a stream message, app traffic, a
  /// file transfer): the idle_timeout clock starts over. Cheap; written out by Tick.
  void Touch(std::string const& session_id);

  /// Agents connected to this manager now.
  std::set<std::string> Connected();
  /// Kernel output relayed by the agents connected here, for followers.
  OutputHub& output() { return output_; }

 private:
  struct Link {
    std::shared_ptr<server::WebSocket> socket;
    std::set<std::string> created;    ///< sessions sent create_kernel on this link
    std::set<std::string> destroyed;  ///< sessions sent destroy_kernel on this link
  };
  /// One connection of an agent, from its open to its close.
  struct Connection {
    std::string agent_id;
    std::shared_ptr<server::WebSocket> socket;
    std::string nonce;  ///< the challenge its register must answer
  };

  void OnMessage(Connection const& c, std::string const& text);
  void Handle(Connection const& c, server::agent_protocol::Register const& m);
  void Handle(Connection const& c, server::agent_protocol::Heartbeat const& m);
  /// A kernel's report (also the finished kernels a re-registering agent lists).
  void Handle(Connection const& c, server::agent_protocol::KernelStatus const& m);
  void Handle(Connection const& c, server::agent_protocol::Response const& m);
  /// Progress or the end of a background task the agent works on (a commit of its kernel).
  void Handle(Connection const& c, server::agent_protocol::TaskReport const& m);
  /// Output of a kernel the agent runs: to the session's followers.
  void Handle(Connection const& c, server::agent_protocol::KernelOutput const& m);
  void Handle(Connection const& c, server::agent_protocol::ErrorReport const& m);
  /// Logs why a message was refused and tells the agent.
  void Refuse(Connection const& c, std::string const& why);
  /// Makes `c` the agent's link (closing an older one) and reconciles its kernels.
  void Adopt(Connection const& c, server::agent_protocol::Register const& m,
             std::string const& group);
  bool IsLink(Connection const& c);
  void Send(std::string const& agent_id, server::agent_protocol::ToAgent const& message);
  void ForgetLostAgents();

  server::Database& db_;
  AgentStore store_;
  SessionStore& sessions_;
  BackgroundTaskStore& tasks_;
  AgentOptions options_;
  std::function<void(std::string const&)> schedule_;
  std::function<void()> wake_;
  std::string cluster_secret_;
  struct Pending {
    std::chrono::steady_clock::time_point deadline;
    std::function<void(StatusOr<std::string>)> done;
  };

  std::mutex mu_;
  std::map<std::string, Link> links_;       ///< registered agents connected here
  std::map<std::string, Pending> pending_;  ///< request_id → waiting caller
  std::uint64_t next_request_ = 0;
  OutputHub output_;
  std::mutex activity_mu_;
  std::map<std::string, std::chrono::system_clock::time_point> activity_;  ///< since last Tick
  /// Each running session's last CPU sample (CPU ms, when it came), for cpu_util.
  struct CpuSample {
    std::int64_t cpu_ms = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::mutex cpu_mu_;
  std::map<std::string, CpuSample> cpu_samples_;
};

}  // namespace bai::manager
