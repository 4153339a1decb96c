// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/database.h"

#include <chrono>
#include <string>

namespace bai::manager {

/// Statuses in which a session holds slots on its agent.
extern char const kHoldingStatuses[];

/// One scheduling pass for `scaling_group`, in one transaction: loads the queue, agents, policies
/// and usage; runs scheduler::Schedule; marks placed sessions SCHEDULED (with their agent and a
/// `session_scheduled` event), updates the status_info of waiting ones, and cancels sessions
/// whose dependencies failed. Occupied slots are derived from session rows, never kept as a
/// counter, so nothing drifts. Returns how many sessions were placed.
StatusOr<int> RunSchedulingPass(server::Database& db, std::string const& scaling_group,
                                std::chrono::system_clock::time_point now,
                                std::chrono::seconds max_head_wait = std::chrono::seconds(600));

}  // namespace bai::manager
