// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/state/store.h"

#include <array>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace bai::manager {

/// One scheduling pass for `scaling_group`, in one transaction holding SchedulingScope: loads the
/// queue, agents, policies and usage; runs scheduler::Schedule; marks placed sessions SCHEDULED
/// (with their agent and a `session_scheduled` event), updates the status_info of waiting ones, and
/// cancels sessions whose dependencies failed. Occupied slots are derived from session rows, never
/// kept as a counter, so nothing drifts. Returns how many sessions were placed.
StatusOr<int> RunSchedulingPass(server::Database& db, std::string const& scaling_group,
                                std::chrono::system_clock::time_point now,
                                std::chrono::seconds max_head_wait = std::chrono::seconds(600));

/// The keypair policy's admission check for a new session (scheduler::WhyRefused over the
/// keypair's waiting sessions), inside the submission's transaction: 412 quota-exceeded naming
/// the limit.
Status AdmitSession(server::SqlExecutor& tx, std::string const& access_key,
                    std::int64_t cluster_size, protocol::ResourceSlots const& requested);

/// Writes the last activity of each session in `activity` (a later time only: several managers
/// record it).
Status RecordActivity(server::Database& db,
                      std::map<std::string, std::chrono::system_clock::time_point> const& activity);

/// RUNNING sessions past their keypair policy's max_session_lifetime or idle_timeout
/// (scheduler::WhyExpired): session id → the status_info to end it with.
StatusOr<std::map<std::string, std::string>> ExpiredSessions(
    server::Database& db, std::chrono::system_clock::time_point now);

/// Whether an agent that is not LOST serves `scaling_group`: with none, a new session cannot
/// start until one registers.
StatusOr<bool> AgentServes(server::Database& db, std::string const& scaling_group);

/// 400 `invalid-api-params` naming config.agent_list unless every id in `agent_ids` is an agent
/// registered in `scaling_group` (alive or not: a pinned session may wait for its agent).
Status CheckAgentsKnown(server::Database& db, std::string const& scaling_group,
                        std::vector<std::string> const& agent_ids);

/// 400 invalid-api-params when `requested` can never start in `scaling_group`
/// (scheduler::WhyNeverFits over its ALIVE, schedulable agents).
Status CheckCanEverFit(server::Database& db, std::string const& scaling_group,
                       protocol::ResourceSlots const& requested, bool unoffered_ok);

/// `POST /resource/check-presets` (PROTOCOL.md §9): the keypair's limits, usage and remainder,
/// the remainder of each of `scaling_groups` (ALIVE agents' capacity minus what sessions hold),
/// and for each preset whether it would fit now (within the keypair's remainder and on one
/// agent). Project values are
/// "NaN" (project resource visibility is off, as Backend.AI's default). Slot maps have strings.
StatusOr<std::string> CheckPresets(server::Database& db, std::string const& access_key,
                                   std::vector<std::string> const& scaling_groups,
                                   std::vector<PresetRecord> const& presets);

}  // namespace bai::manager
