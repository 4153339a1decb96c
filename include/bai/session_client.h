// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/export.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/session_status.h"
#include "bai/protocol/session_wire.h"
#include "bai/status.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai {

/// What to create, what the server answered, and a session's info: the wire types
/// (bai/protocol/session_wire.h).
using SessionCreateRequest = protocol::SessionCreateRequest;
using SessionCreateResult = protocol::SessionCreateResult;
using SessionInfo = protocol::SessionInfo;

/// One Server-Sent Event of `/events/session`.
struct SessionEvent {
  std::string name;  ///< session_started, session_success, …
  std::string session_id;
  std::string session_name;
  std::optional<std::string> reason;
  std::optional<std::int64_t> exit_code;
  std::string raw_json;
};

/// `POST /session/{id}/commit`: the background task to follow and where the archive goes.
struct CommitResult {
  std::string task_id;
  std::string kernel_id;
  std::string path;  ///< on the session's agent
};

/// One event of `/events/background-task` (PROTOCOL.md §5.6).
struct TaskProgress {
  /// bgtask_updated, bgtask_done, bgtask_failed, bgtask_cancelled; "server_close" when the
  /// stream ended with no final event (24.09 sends only that for a failed task).
  std::string event;
  std::string task_id;
  std::string message;
  std::int64_t current_progress = 0;
  std::int64_t total_progress = 0;
  bool Finished() const { return event != "bgtask_updated"; }
  bool Succeeded() const { return event == "bgtask_done"; }
};

/// One execute step and what it returned: the wire types (bai/protocol/session_wire.h).
using ExecuteStep = protocol::ExecuteStep;
using ExecuteResult = protocol::ExecuteResult;

struct SessionEventFilter {
  std::optional<std::string> session_id;
  std::optional<std::string> session_name;
  std::optional<std::string> owner_access_key;
  std::optional<std::string> group;
};

/// How a session ended, as SessionClient::WaitForEnd saw it.
struct SessionEnd {
  std::string status;                     ///< "TERMINATED", "CANCELLED" or "ERROR"
  std::optional<std::int64_t> exit_code;  ///< the main process's, when known
  std::string reason;                     ///< why, in the server's words ("" when none)
};

/// What SessionClient::WaitForEnd does while it waits.
struct WaitOptions {
  /// Called once (on the waiting thread) when the session is seen running.
  std::function<void()> on_started;
  /// Checked about every 100 ms; true ends the wait with StatusCode::kCancelled (the session
  /// is left as it is). Suits a flag set by a signal handler.
  std::function<bool()> cancelled;
  /// How often the session's info is read while its event stream is quiet (or, every second at
  /// most, once the stream is gone): events are the fast path, the look is the safety net.
  std::chrono::milliseconds poll_interval{3000};
};

/// Compute sessions: create, inspect, destroy, logs, events. A thin typed layer over Client.
///
/// @par Example
/// @code
/// bai::SessionClient sessions(*client);
/// bai::SessionCreateRequest req;
/// req.image = "python";
/// req.type = "batch";
/// req.startup_command = "python3 train.py";
/// auto created = sessions.Create(req);
/// @endcode
class BAI_EXPORT SessionClient {
 public:
  explicit SessionClient(Client client) : client_(std::move(client)) {}

  StatusOr<SessionCreateResult> Create(SessionCreateRequest const& request) const;
  /// By id, name or unique prefix.
  StatusOr<SessionInfo> Info(std::string const& session) const;
  Status Destroy(std::string const& session, bool forced = false) const;
  StatusOr<std::string> Logs(std::string const& session) const;
  /// Status → time of entering it.
  StatusOr<std::map<std::string, std::string>> StatusHistory(std::string const& session) const;

  /// One execute step in a RUNNING session.
  StatusOr<ExecuteResult> Execute(std::string const& session, ExecuteStep const& step) const;

  /// Streams events until `on_event` returns false (ok), the stream ends, or `keep_going`
  /// (asked about once a second while the stream is quiet) returns false (ok). The stream is
  /// open once `on_open` runs (subscribe, then create, to miss nothing).
  Status WatchEvents(SessionEventFilter const& filter,
                     std::function<bool(SessionEvent const&)> const& on_event,
                     std::function<void()> const& on_open = {},
                     std::function<bool()> const& keep_going = {}) const;

  /// Waits until the session `session_id` has ended (a batch job's exit code, for instance):
  /// follows its events and reads its info now and then, so neither a missed event nor a
  /// dropped stream makes it hang. A session that ended before the call is reported at once.
  /// Errors: kNotFound for an unknown session, kCancelled when `options.cancelled` said so.
  StatusOr<SessionEnd> WaitForEnd(std::string const& session_id,
                                  WaitOptions const& options = {}) const;

  /// Commits the kernel of a RUNNING session to a tar file on its agent (`filename` empty: the
  /// server names it after the session and the time). Returns at once; follow the task.
  StatusOr<CommitResult> Commit(std::string const& session, std::string const& filename = {}) const;

  /// Follows a background task to its end: `on_update` sees every event; returns the last one.
  /// An unknown task is kNotFound.
  StatusOr<TaskProgress> FollowTask(
      std::string const& task_id,
      std::function<void(TaskProgress const&)> const& on_update = {}) const;

  Client const& client() const { return client_; }

 private:
  Client client_;
};

/// Joins argv into one POSIX shell command line that reproduces exactly these arguments
/// ('…' quoting where needed).
BAI_EXPORT std::string ShellJoin(std::vector<std::string> const& argv);

}  // namespace bai
