// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/resource.h"

#include "server-reference/manager/scheduler/devices.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager::scheduler {

using protocol::Decimal;
using protocol::ResourceSlots;

/// A session already placed on an agent: what it holds there and since when.
struct Placed {
  std::chrono::system_clock::time_point scheduled_at;
  ResourceSlots slots;
  std::vector<DeviceAllocation> devices;
};

/// One agent of the resource group as the scheduler sees it.
struct Agent {
  std::string id;
  std::string architecture = "x86_64";
  ResourceSlots capacity;
  ResourceSlots occupied;  ///< by sessions already placed (SCHEDULED … TERMINATING)
  bool schedulable = true;
  std::vector<std::string> images;  ///< names and aliases it offers; empty = not reported
  /// Its GPUs, with what sessions already hold on each; empty: GPU slots are counted on the
  /// agent's totals only (a simulated agent's --slots).
  std::vector<Device> devices;
  DevicePolicy device_policy = DevicePolicy::kEvenly;
  /// The sessions making up `occupied`, when known: on an agent held for a starving session,
  /// those placed since the hold began are backfill, which must leave the held session its room.
  std::vector<Placed> placed;
};

/// A keypair's resource policy and what it uses now.
struct Keypair {
  int max_concurrent_sessions = 0;  ///< 0 = unlimited
  ResourceSlots total_resource_slots;
  bool unspecified_unlimited = true;  ///< default_for_unspecified: slots absent from the limit
  int active_sessions = 0;            ///< sessions holding resources now
  ResourceSlots occupied;
};

struct Session {
  std::string id;
  std::string access_key;
  std::string architecture = "x86_64";
  std::string image;
  ResourceSlots requested;
  std::int64_t enqueue_seq = 0;  ///< FIFO order
  std::chrono::system_clock::time_point enqueued_at;
  bool ready = true;  ///< false while starts_at or dependencies hold it back
  std::string not_ready_reason;
  /// Non-empty: only these agents may take it (a superadmin's config.agent_list).
  std::vector<std::string> agent_list;
};

/// Adds `more` into `total`, slot by slot (a sum past the largest amount saturates to unlimited).
void AddInto(ResourceSlots& total, ResourceSlots const& more);

/// Whether an agent offering `offered` (names and aliases) can run `reference`
/// (server::ImageServes, the rule the agent resolves by). An agent that reported no images is
/// not ruled out.
bool OffersImage(std::vector<std::string> const& offered, std::string const& reference);

/// Why `requested` can never start in a resource group whose agents (ALIVE, schedulable) have
/// `capacities`, or "" when it could: a slot none of them offers (allowed when `unoffered_ok`:
/// an agent offering it may still join), or more than any one agent holds (a session runs on
/// one agent). An empty group answers "": agents may still come.
std::string WhyNeverFits(std::vector<ResourceSlots> const& capacities,
                         ResourceSlots const& requested, bool unoffered_ok);

struct Input {
  std::vector<Session> pending;
  std::vector<Agent> agents;
  std::map<std::string, Keypair> keypairs;  ///< by access key; absent = no limits
  std::chrono::system_clock::time_point now;
  /// Once a session that could fit has waited this long, one agent that can take it is held for
  /// it: only backfill that leaves it its room starts there (what it needs stays reserved
  /// beside the sessions placed since the hold began, so it starts as soon as the sessions that
  /// were there before end), while later sessions keep starting on the other agents (the head
  /// guarantee of DECISIONS.md "Scheduler", ADR 15; manager setting scheduler.head_wait). Each
  /// starving session holds its own agent, oldest first.
  std::chrono::seconds max_head_wait{600};
};

/// What happens to one pending session in this pass.
struct Decision {
  std::string session_id;
  std::optional<std::string> agent_id;    ///< set: reserve its slots there and mark SCHEDULED
  std::vector<DeviceAllocation> devices;  ///< the agent's GPUs it gets (when it asked for any)
  std::string status_info;                ///< why it waits, in words ("" when scheduled)
};

/// One scheduling pass for one resource group: FIFO order with backfill and a head guarantee
/// (an agent held for a session that waited too long; the others keep backfilling),
/// first-fit over agents (in the given order), exact decimal accounting that never
/// over-allocates an agent or any one of its GPUs (devices.h), keypair concurrency and total-slot
/// limits. Pure: no I/O, no clock.
std::vector<Decision> Schedule(Input const& input);

/// "cpu=4 mem=8g cuda.shares=0.5": slot maps in words (sizes in binary units when exact).
std::string DescribeSlots(ResourceSlots const& slots);

}  // namespace bai::manager::scheduler
