// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/resource.h"

#include "server-reference/common/wire/image_ref.h"
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

/// A domain's or project's total_resource_slots and what its sessions hold now. Slots absent
/// from the limit are unlimited (24.09's domain and group limits).
struct Scope {
  ResourceSlots limit;
  ResourceSlots occupied;
};

struct Session {
  std::string id;
  std::string access_key;
  std::string domain_name;
  std::string group_id;
  std::string architecture = "x86_64";
  std::string image;
  ResourceSlots requested;
  std::int64_t enqueue_seq = 0;  ///< FIFO order
  std::chrono::system_clock::time_point enqueued_at;
  bool ready = true;  ///< false while starts_at or dependencies hold it back
  std::string not_ready_reason;
  /// Non-empty: only these agents may take it (a superadmin's config.agent_list).
  std::vector<std::string> agent_list;
  /// Its image is a registry's that the manager knows (a rescan found it): any agent may take
  /// it and pull the image, whatever images it offers now.
  bool pullable = false;
};

using protocol::AddInto;

/// Whether an agent offering `offered` can run `reference` (the one rule, common/wire).
using server::OffersImage;

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
  std::map<std::string, Scope> domains;     ///< by name; absent = no limits
  std::map<std::string, Scope> projects;    ///< by id; absent = no limits
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
/// limits, domain and project total-slot limits. A session a limit holds back waits with the
/// limit named in its status_info. Pure: no I/O, no clock.
std::vector<Decision> Schedule(Input const& input);

/// What a keypair's policy says about submitting a session (24.09 checks these at enqueue and
/// in its scheduler's predicates; bai refuses at submission, when the user can act on it).
struct AdmissionLimits {
  std::int64_t max_containers_per_session = 0;  ///< 0 = unlimited
  std::optional<std::int64_t> max_pending_session_count;
  std::optional<ResourceSlots> max_pending_session_resource_slots;
};

/// The keypair's sessions waiting now.
struct PendingUsage {
  std::int64_t sessions = 0;
  ResourceSlots slots;
};

/// Why a new session of `cluster_size` containers requesting `requested` is refused, naming
/// the limit; "" when it is admitted.
std::string WhyRefused(AdmissionLimits const& limits, PendingUsage const& pending,
                       std::int64_t cluster_size, ResourceSlots const& requested);

/// A RUNNING session under its keypair policy's time limits.
struct LiveSession {
  std::string id;
  bool batch = false;  ///< batch jobs work unattended: never idle (they have batch_timeout)
  std::chrono::system_clock::time_point running_since;
  /// The last execute, stream message, app traffic or file transfer; none: running_since.
  std::optional<std::chrono::system_clock::time_point> last_activity;
  std::int64_t idle_timeout = 0;          ///< seconds; 0 = none
  std::int64_t max_session_lifetime = 0;  ///< seconds since it started; 0 = none
};

/// Why `s` ends now: "max-session-lifetime" or "idle-timeout" (the status_info it ends with),
/// or "" when it runs on.
std::string WhyExpired(LiveSession const& s, std::chrono::system_clock::time_point now);

/// "cpu=4 mem=8g cuda.shares=0.5": slot maps in words (sizes in binary units when exact).
std::string DescribeSlots(ResourceSlots const& slots);

}  // namespace bai::manager::scheduler
