// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/database.h"
#include "server-reference/common/http.h"
#include "server-reference/manager/bgtasks.h"
#include "server-reference/manager/sessions.h"

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
};

/// The manager's side of docs/agent-protocol.md: agents connected to this manager, their
/// registration and heartbeats, kernel status reports, and the dispatch of SCHEDULED and
/// TERMINATING sessions to them. State lives in the database; the only memory is which agent is
/// connected here and which commands went out on that connection.
class AgentRegistry {
 public:
  AgentRegistry(server::Database& db, SessionStore& sessions, BackgroundTaskStore& tasks,
                AgentOptions options, std::function<void(std::string const&)> schedule,
                std::function<void()> wake);

  /// WebSocket callbacks for an authenticated agent connection.
  server::WebSocketHandlers Handlers(std::string const& agent_id);

  /// Lost-agent detection, grace expiry and dispatch; call about once a second.
  void Tick();

  /// Sends pending create/destroy commands to the agents connected here.
  void Dispatch();

  /// Sends `message` (a JSON object; a request_id is added) to `agent_id` and calls `done` once
  /// with the agent's `result`, or an error: 503 when the agent is not connected here, 500
  /// kernel-execution-failed after `timeout`. Runs `done` on an I/O or the hub's thread.
  void Request(std::string const& agent_id, std::string const& message_json,
               std::chrono::milliseconds timeout, std::function<void(StatusOr<std::string>)> done);
  /// Fails requests whose time is up; call often (the hub does, every 100 ms).
  void ExpireRequests();

  /// Agents connected to this manager now.
  std::set<std::string> Connected();

 private:
  struct Link {
    std::shared_ptr<server::WebSocket> socket;
    bool registered = false;
    std::set<std::string> created;    ///< sessions sent create_kernel on this link
    std::set<std::string> destroyed;  ///< sessions sent destroy_kernel on this link
  };

  void OnMessage(std::string const& agent_id, std::shared_ptr<server::WebSocket> const& socket,
                 std::string const& text);
  /// A kernel's report (also the finished kernels a re-registering agent lists).
  void ApplyKernelStatus(std::string const& agent_id,
                         std::shared_ptr<server::WebSocket> const& socket, std::string const& json);
  /// Progress or the end of a background task the agent works on (a commit of its kernel).
  void ApplyTaskReport(std::string const& agent_id, std::string const& json);
  void Send(std::string const& agent_id, std::string const& text);

  server::Database& db_;
  SessionStore& sessions_;
  BackgroundTaskStore& tasks_;
  AgentOptions options_;
  std::function<void(std::string const&)> schedule_;
  std::function<void()> wake_;
  struct Pending {
    std::chrono::steady_clock::time_point deadline;
    std::function<void(StatusOr<std::string>)> done;
  };

  std::mutex mu_;
  std::map<std::string, Link> links_;
  std::map<std::string, Pending> pending_;  ///< request_id → waiting caller
  std::uint64_t next_request_ = 0;
};

}  // namespace bai::manager
