// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/http/http.h"
#include "server-reference/manager/state/bgtasks.h"
#include "server-reference/manager/state/sessions.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace bai::manager {

/// Which rows of the `events` table a reader hands out next (pure: the caller reads and says
/// when). Numbers are taken when a transaction inserts and seen when it commits, so on
/// PostgreSQL a later number can be seen before an earlier one still in flight (SQLite's one
/// writer commits in order). The cursor reads from its floor (every number at or below it was
/// handed out, or given up on), hands out each event the first time it is seen, and gives up on
/// a missing number (a rolled-back insert) once it has been missing for `gap_wait`.
class EventCursor {
 public:
  explicit EventCursor(std::int64_t floor = 0,
                       std::chrono::milliseconds gap_wait = std::chrono::seconds(5))
      : floor_(floor), gap_wait_(gap_wait) {}
  /// Read the events with seq > floor().
  std::int64_t floor() const { return floor_; }
  /// Of a read's numbers (ascending), the positions of those not handed out before; moves the
  /// floor past each number handed out or given up on.
  std::vector<std::size_t> Take(std::vector<std::int64_t> const& seqs,
                                std::chrono::steady_clock::time_point now);

 private:
  std::int64_t floor_;
  std::chrono::milliseconds gap_wait_;
  std::set<std::int64_t> above_;  // handed out, above the floor
  std::map<std::int64_t, std::chrono::steady_clock::time_point> missing_since_;
};

/// The manager's background loop. It tails the `events` table (so events written by any manager
/// reach every stream), feeds Server-Sent Event streams with their filter, answers requests that
/// wait for a session to start, pings streams every 15 s, and runs periodic jobs (the scheduler's
/// safety pass). Wake() makes it look at once after a local change.
class EventHub {
 public:
  EventHub(SessionStore& sessions, BackgroundTaskStore& tasks);
  ~EventHub();
  EventHub(EventHub const&) = delete;
  EventHub& operator=(EventHub const&) = delete;

  void Start();
  void Stop();
  void Wake();

  /// Streams every later event that `filter` accepts as `event: NAME` / `data: JSON`.
  void Subscribe(std::shared_ptr<server::Exchange> exchange,
                 std::function<bool(EventRecord const&)> filter);

  /// Follows background task `task` on an event stream already started: `bgtask_updated` with
  /// every change, then `bgtask_<status>` and `server_close` when it ends (PROTOCOL.md §5.6).
  /// A task that has already finished gets those two at once.
  void FollowTask(std::shared_ptr<server::Exchange> exchange, BackgroundTask const& task);

  /// The SSE text of one background-task event.
  static std::string TaskEvent(BackgroundTask const& task);

  /// Calls `done` once with the session's status when it has left the start-up statuses
  /// (PENDING … PREPARING), or with "TIMEOUT" at `deadline`. Dropped if the client leaves.
  void WaitForStart(std::string session_id,
                    std::optional<std::chrono::steady_clock::time_point> deadline,
                    std::shared_ptr<server::Exchange> exchange,
                    std::function<void(std::string const& status)> done);

  /// Calls `watcher` on the hub's thread with every later event, whichever manager wrote it
  /// (the stream registry ends a session's streams when it ends). Register before Start().
  void Watch(std::function<void(EventRecord const&)> watcher);

  /// Open event streams (for tests and /manager/status).
  std::size_t StreamCount();

  /// Runs `job` every `interval` on the hub's thread.
  void Every(std::chrono::milliseconds interval, std::function<void()> job);

  /// The event's `data` object (PROTOCOL.md §5.6).
  static std::string EventData(EventRecord const& e);

 private:
  struct Stream {
    std::shared_ptr<server::Exchange> exchange;
    std::function<bool(EventRecord const&)> filter;
  };
  struct Waiter {
    std::string session_id;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::shared_ptr<server::Exchange> exchange;
    std::function<void(std::string const&)> done;
    std::shared_ptr<bool> gone;
  };
  struct TaskStream {
    std::shared_ptr<server::Exchange> exchange;
    std::string task_id;
    std::int64_t version;  ///< the last one sent
  };
  struct Job {
    std::chrono::milliseconds interval;
    std::function<void()> run;
    std::chrono::steady_clock::time_point next;
  };

  void Loop();
  void Tick();
  void TickTasks();

  SessionStore& sessions_;
  BackgroundTaskStore& tasks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  std::thread thread_;
  EventCursor cursor_;
  std::list<Stream> streams_;
  std::list<Waiter> waiters_;
  std::list<TaskStream> task_streams_;
  std::vector<Job> jobs_;
  std::vector<std::function<void(EventRecord const&)>> watchers_;
  std::chrono::steady_clock::time_point next_ping_;
};

}  // namespace bai::manager
