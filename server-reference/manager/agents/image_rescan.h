// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/session_status.h"
#include "bai/status.h"

#include "server-reference/common/daemon/workers.h"
#include "server-reference/common/db/database.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/state/bgtasks.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bai::manager {

/// One agent's part of a rescan: the images it offers now, or why it did not answer; or one
/// registry's (`registry`): the images found in it, or why it could not be listed.
struct AgentRescan {
  std::string agent_id;               ///< or the registry's name
  std::optional<std::size_t> images;  ///< nullopt: it failed (`error` says why)
  std::string error;                  ///< also a registry's tags that could not be read
  bool registry = false;
};

/// How a rescan ends (pure): done when some agent or registry answered or there is nothing to
/// rescan, failed when none could be (each failed, or each agent is another manager's); the
/// message counts the images in registries and on agents and names each that failed or that
/// another manager holds (`elsewhere`: not asked from here).
std::pair<protocol::TaskStatus, std::string> RescanOutcome(
    std::vector<AgentRescan> const& results, std::vector<std::string> const& elsewhere);

/// purge_images (25.4's mutation): the images to remove from one agent's store.
struct PurgeKey {
  std::string agent_id;
  std::vector<std::string> images;  ///< names, aliases or registry references
};
/// One agent's answer to purge_images, or why there was none (`answered` false).
struct AgentPurge {
  std::string agent_id;
  bool answered = false;
  std::string error;
  std::vector<std::string> removed, refused;  ///< refused: "IMAGE: why"
  std::int64_t freed = 0;
};
/// How a purge ends (pure): failed when no agent answered, or none removed anything while some
/// image was refused; the message counts what went and the bytes freed and names each refusal.
std::pair<protocol::TaskStatus, std::string> PurgeTaskOutcome(
    std::vector<AgentPurge> const& results);

/// `rescan_images` (24.09's mutation): a background task that scans the container registries
/// (registry_scan.h: their images into registry_images) and asks every ALIVE agent connected
/// to this manager to read its store again (rescan_images in docs/agent-protocol.md), keeping
/// each answer as the agent's images; one step of progress per registry and per agent
/// (GET /events/background-task).
class ImageRescan {
 public:
  ImageRescan(server::Database& db, AgentRegistry& agents, BackgroundTaskStore& tasks)
      : db_(db), agents_(agents), tasks_(tasks) {}

  /// Starts a rescan for `access_key`: of every registry and agent, of the registry named
  /// `registry` alone, or of one image when `registry` is a reference (REGISTRY/REPO:TAG; for
  /// registries without a catalog); kNotFound when there is no such registry; the task's id.
  /// Agents answer within `timeout` each.
  StatusOr<std::string> Start(std::string const& access_key, std::string const& registry = "",
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));
  /// Starts purge_images: each key's agent (ALIVE, connected here: kNotFound naming it
  /// otherwise) removes those of its images no kernel uses, and with `prune` the layers no
  /// image needs; each answer becomes the agent's images. The task's id.
  StatusOr<std::string> StartPurge(std::string const& access_key, std::vector<PurgeKey> const& keys,
                                   bool prune,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(120));

 private:
  server::Database& db_;
  AgentRegistry& agents_;
  BackgroundTaskStore& tasks_;
  server::Workers scans_;  ///< registry scans; last, so joined before the rest goes
};

}  // namespace bai::manager
