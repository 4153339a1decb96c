// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/session_status.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/state/bgtasks.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bai::manager {

/// One agent's part of a rescan: the images it offers now, or why it did not answer.
struct AgentRescan {
  std::string agent_id;
  std::optional<std::size_t> images;  ///< nullopt: it failed (`error` says why)
  std::string error;
};

/// How a rescan ends (pure): done when some agent answered or there is no agent at all,
/// failed when none could be rescanned (each failed, or each is another manager's); the message
/// counts the images and agents and names each agent that failed or that another manager holds
/// (`elsewhere`: not asked from here).
std::pair<protocol::TaskStatus, std::string> RescanOutcome(
    std::vector<AgentRescan> const& results, std::vector<std::string> const& elsewhere);

/// `rescan_images` (24.09's mutation; bai's images live in each agent's store, not in a
/// registry): a background task that asks every ALIVE agent connected to this manager to read
/// its store again (rescan_images in docs/agent-protocol.md), keeps each answer as the agent's
/// images, and reports one step of progress per agent (GET /events/background-task).
class ImageRescan {
 public:
  ImageRescan(server::Database& db, AgentRegistry& agents, BackgroundTaskStore& tasks)
      : db_(db), agents_(agents), tasks_(tasks) {}

  /// Starts a rescan for `access_key`; the task's id. Answers come within `timeout` each.
  StatusOr<std::string> Start(std::string const& access_key,
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));

 private:
  server::Database& db_;
  AgentRegistry& agents_;
  BackgroundTaskStore& tasks_;
};

}  // namespace bai::manager
