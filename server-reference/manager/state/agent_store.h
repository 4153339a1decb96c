// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/resource.h"
#include "bai/protocol/session_status.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/state/columns.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bai::manager {

/// What an agent's registration stores.
struct AgentRow {
  std::string id;
  std::string scaling_group;
  std::string architecture;
  std::string version;
  protocol::ResourceSlots slots;
  std::map<std::string, protocol::SlotType> slot_types;
  ImageList images;      ///< names with their aliases and sizes
  AgentDevices devices;  ///< its GPUs (columns.h)
};

/// An agent row as lists show it.
struct AgentRecord {
  AgentRow row;
  std::string status;  ///< ALIVE, LOST
  bool schedulable = true;
  std::string first_contact;
  std::string last_heartbeat;
  std::optional<std::string> lost_at;
  protocol::ResourceSlots occupied;  ///< what its sessions hold
  int container_count = 0;           ///< sessions holding slots on it
  /// Its last heartbeat's load, {cpu_pct, core_pct, mem_used, mem_total}; nullopt before one.
  std::optional<std::string> live_stat;
};

/// A session an agent holds or is asked to act on, as the registry needs it.
struct AgentSession {
  std::string id;
  protocol::SessionStatus status = protocol::SessionStatus::kUnknown;
};

/// The agents table, and the session reads and writes that follow an agent's state. Capacity
/// changes run under the lock scopes the caller names (the scheduling scopes of the groups an
/// agent leaves and joins; ADR 9).
class AgentStore {
 public:
  explicit AgentStore(server::Database& db) : db_(db) {}

  StatusOr<bool> ScalingGroupExists(std::string const& name);
  /// The group the agent is registered in, if it is.
  StatusOr<std::optional<std::string>> GroupOf(std::string const& agent_id);
  /// Inserts or refreshes the agent as ALIVE.
  Status Register(AgentRow const& agent, server::LockScopes const& scopes);
  /// A heartbeat: ALIVE now. With `slots`, only when they are the stored ones: false when they
  /// changed (then SetSlots, under the group's scope).
  StatusOr<bool> Beat(std::string const& agent_id,
                      std::optional<protocol::ResourceSlots> const& slots,
                      std::optional<std::string> const& live_stat = std::nullopt);
  Status SetSlots(std::string const& agent_id, protocol::ResourceSlots const& slots,
                  server::LockScopes const& scopes);

  /// Every agent with what its sessions hold, by id.
  StatusOr<std::vector<AgentRecord>> List();

  /// ALIVE agents silent since `since`.
  StatusOr<std::vector<std::string>> SilentSince(std::chrono::system_clock::time_point since);
  /// ALIVE → LOST; its sessions keep their status and say "agent-lost".
  Status MarkLost(std::string const& agent_id);
  /// LOST agents lost before `before`: (id, scaling group).
  StatusOr<std::vector<std::pair<std::string, std::string>>> LostBefore(
      std::chrono::system_clock::time_point before);
  /// Deletes agents LOST before `before` that hold no session.
  Status ForgetLost(std::chrono::system_clock::time_point before);

  /// The agent's sessions in a status that holds slots.
  StatusOr<std::vector<AgentSession>> Held(std::string const& agent_id);
  /// The agent's sessions to start (SCHEDULED) or stop (TERMINATING), in queue order.
  StatusOr<std::vector<AgentSession>> ToDispatch(std::string const& agent_id);
  /// The images the agent offers now (its answer to rescan_images).
  Status SetImages(std::string const& agent_id, ImageList const& images);
  /// The main kernel's logs, as last reported.
  Status SetKernelLogs(std::string const& session_id, std::string const& logs);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
