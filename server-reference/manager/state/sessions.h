// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/resource.h"
#include "bai/protocol/service_ports.h"
#include "bai/protocol/session_status.h"
#include "bai/protocol/session_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/common/wire/device_allocation.h"
#include "server-reference/manager/graphql/minilang.h"
#include "server-reference/manager/state/page.h"
#include "server-reference/manager/state/store.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

/// A virtual folder a session mounts, as resolved when it was created.
struct SessionMount {
  std::string name;
  std::string vfolder_id;
  std::string host_path;    ///< on the storage host (and every agent)
  std::string kernel_path;  ///< in the container
  std::string permission;   ///< ro, rw, wd
};

/// A session row, typed: the store parses its JSON columns once, where the row is read.
struct SessionRecord {
  std::string id;
  std::int64_t seq = 0;
  std::string name;
  std::string access_key;
  std::string user_id;
  std::string domain_name;
  std::string group_id;
  std::string scaling_group;
  std::string type = "interactive";
  std::string image;
  std::string architecture = "x86_64";
  int cluster_size = 1;
  protocol::SessionStatus status = protocol::SessionStatus::kPending;
  std::string status_info;
  std::map<std::string, std::string> status_history;  ///< STATUS → when it was entered
  protocol::ResourceSlots requested;
  std::optional<std::string> agent_id;
  std::map<std::string, std::string> environ;
  std::vector<std::string> mounts;
  std::map<std::string, std::string> mount_map;
  std::vector<SessionMount> vfolder_mounts;
  std::vector<server::DeviceAllocation> devices;  ///< GPUs the scheduler gave it (read only)
  /// The main kernel's apps: the preopen ports asked for at creation, then what its agent
  /// reported when it started (image labels, preopen ports, the intrinsic terminal).
  std::vector<protocol::ServicePort> service_ports;
  std::map<std::string, std::string> resource_opts;
  std::string network;  ///< bridge, none; empty: the agent's default
  std::optional<std::string> startup_command;
  std::optional<std::string> bootstrap_script;
  std::optional<std::string> tag;
  int priority = 10;
  std::optional<std::string> starts_at;
  std::optional<std::int64_t> batch_timeout;
  std::vector<std::string> dependencies;  ///< session ids
  std::optional<std::string> callback_url;
  std::string result = "undefined";
  std::optional<std::int64_t> exit_code;
  std::string created_at;
  std::optional<std::string> terminated_at;
  /// Non-empty: only these agents may run it (a superadmin's config.agent_list).
  std::vector<std::string> agent_list;
  std::int64_t num_queries = 0;  ///< execute requests so far (read only; counted by the manager)
  /// What its agent reported when the kernel started (read only; SetKernelSetup).
  std::optional<protocol::KernelSetup> kernel_setup;
};

/// A kernel row (one per session today: the main kernel).
struct KernelRecord {
  std::string id;
  std::string session_id;
  std::optional<std::string> agent_id;
  std::string cluster_role = "main";
  int cluster_idx = 1;
  std::string status;
  std::string status_info;
  std::optional<std::string> container_id;
  std::optional<std::int64_t> exit_code;
  std::string created_at;
  std::optional<std::string> terminated_at;
  /// Its session's stat (24.09's live_stat shape) while it runs, and its final one.
  std::optional<std::string> live_stat, last_stat;
};

/// A session as lists show it: the record, and what the users, groups and kernels tables add.
struct SessionListRow {
  SessionRecord session;
  std::string user_email;
  std::string full_name;
  std::string group_name;
  std::string main_kernel_id;
};

// ListQuery for sessions: conditions over `s` sessions, `u` users, `g` groups; `k` kernels
// for kernel lists.

/// The fields a session list filters and orders by (GraphQL `filter`/`order`), over List's
/// query.
graphql::ColumnMap const& SessionListColumns();
/// The same for kernel lists (ListKernels).
graphql::ColumnMap const& KernelListColumns();

/// A session for usage reports: the list row and its stat (last_stat once it ended, else
/// live_stat; empty when its agent never reported one).
struct UsageRecord {
  SessionListRow row;
  std::string stat;
};

/// Sessions whose life overlaps [start, end) (RFC 3339 times): created before `end` and still
/// running or ended at or after `start`; of one project or one user when given.
struct UsageQuery {
  std::string start;
  std::string end;
  std::optional<std::string> group_id;
  std::optional<std::string> user_id;
};

/// One row of the event log.
struct EventRecord {
  std::int64_t seq = 0;
  std::string name;
  std::string session_id;
  std::string session_name;
  std::optional<std::string> kernel_id;
  std::string access_key;
  std::string domain_name;
  std::string group_id;
  std::optional<std::string> reason;
  std::optional<std::int64_t> exit_code;
};

/// What else changes with a status.
struct TransitionDetails {
  std::string status_info;
  std::string event;  ///< event name to log ("" = none)
  std::optional<std::string> reason;
  std::optional<std::int64_t> exit_code;
  std::optional<std::string> agent_id;  ///< set when the session is placed
  std::optional<std::string> result;    ///< "success" / "failure" for batch sessions
};

/// The body of SessionStore::Transition, for callers that already hold a transaction.
StatusOr<bool> TransitionIn(server::SqlExecutor& tx, std::string const& id,
                            protocol::SessionStatus from, protocol::SessionStatus to,
                            TransitionDetails const& details);

/// Session queries and lifecycle writes. Status changes check the 24.09 transition table,
/// append to status_history and write the matching event in the same transaction; a change
/// whose `from` no longer holds (another manager got there first) does nothing.
class SessionStore {
 public:
  explicit SessionStore(server::Database& db) : db_(db) {}

  /// Inserts a PENDING session with its main kernel and a `session_enqueued` event. `admit`,
  /// when given, runs first inside the same transaction (which holds the queue's scope, so two
  /// submissions never both pass a count); its error refuses the session.
  Status Create(SessionRecord& session,
                std::function<Status(server::SqlExecutor&)> const& admit = {});

  StatusOr<std::optional<SessionRecord>> Get(std::string const& id);
  /// Resolves a path's session reference for `owner`: exact UUID (ended sessions too), then
  /// exact name among active sessions, then a unique prefix of either (DECISIONS.md "Protocol");
  /// several matches → 404 too-many-sessions-matched with data.matches, none → 404
  /// object-not-found. `allow_dead` also matches terminated sessions (logs, status history).
  /// `destructive` (destroy, restart) narrows the prefix step to id prefixes of at least
  /// kMinDestructivePrefix characters: `rm p` must never end `proj-a`.
  StatusOr<SessionRecord> Resolve(std::string const& ref, std::string const& owner, bool allow_dead,
                                  bool destructive = false);
  static constexpr std::size_t kMinDestructivePrefix = 8;
  /// A page of sessions, newest first unless ordered otherwise.
  StatusOr<Page<SessionListRow>> List(ListQuery const& query);
  /// Sessions by id, in no particular order; unknown ids are left out.
  StatusOr<std::vector<SessionRecord>> GetMany(std::vector<std::string> const& ids);
  /// The kernels of these sessions.
  StatusOr<std::vector<KernelRecord>> Kernels(std::vector<std::string> const& session_ids);
  /// A page of kernels, by cluster index unless ordered otherwise.
  StatusOr<Page<KernelRecord>> ListKernels(ListQuery const& query);

  /// Active sessions called `name` for `owner`.
  StatusOr<std::vector<SessionRecord>> ActiveByName(std::string const& owner,
                                                    std::string const& name);

  /// Moves `id` from `from` to `to`. Returns false when the session was not in `from`.
  StatusOr<bool> Transition(std::string const& id, protocol::SessionStatus from,
                            protocol::SessionStatus to, TransitionDetails const& details);
  Status SetStatusInfo(std::string const& id, std::string const& status_info);
  /// An event of the session that is no status change (kernel_pulling), with its reason.
  Status RecordEvent(SessionRecord const& session, std::string const& name,
                     std::string const& reason);
  Status Rename(std::string const& id, std::string const& name);
  StatusOr<std::string> MainKernelLogs(std::string const& session_id);
  /// The id of the session's main kernel; 404 object-not-found when it has none.
  StatusOr<std::string> MainKernelId(std::string const& session_id);
  /// The session a kernel belongs to; nullopt for no such kernel.
  StatusOr<std::optional<std::string>> SessionOfKernel(std::string const& kernel_id);

  /// One more execute request for the session (numQueriesExecuted).
  Status CountQuery(std::string const& id);
  /// The main kernel's apps, as its agent reported them.
  Status SetServicePorts(std::string const& id, std::vector<protocol::ServicePort> const& ports);
  Status SetKernelSetup(std::string const& id, protocol::KernelSetup const& setup);
  /// Each running session's stat from its agent's heartbeat (24.09's live_stat JSON), by
  /// session id; sessions of other agents or already ended are left alone.
  Status SetLiveStats(std::string const& agent_id, std::map<std::string, std::string> const& stats);
  /// The session's final stat; nullopt keeps the one recorded, or else the last live_stat.
  Status SetLastStat(std::string const& id, std::optional<std::string> const& stat);
  /// The sessions a usage report covers, oldest first.
  StatusOr<std::vector<UsageRecord>> Usage(UsageQuery const& query);
  /// The resource groups where sessions wait (PENDING).
  StatusOr<std::vector<std::string>> GroupsWithPending();
  /// Running batch sessions that have a batch_timeout.
  StatusOr<std::vector<SessionRecord>> RunningBatchesWithTimeout();

  StatusOr<std::vector<EventRecord>> EventsAfter(std::int64_t seq, int limit);
  StatusOr<std::int64_t> LastEventSeq();

 private:
  server::Database& db_;
};

/// The info of `GET /session/{id}` (PROTOCOL.md §5.4) for a record.
protocol::SessionInfo InfoOf(SessionRecord const& s);

}  // namespace bai::manager
