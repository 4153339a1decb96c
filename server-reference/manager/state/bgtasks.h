// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/session_status.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace bai::manager {

/// One long-running operation that clients follow with GET /events/background-task.
struct BackgroundTask {
  std::string id;
  std::string kind;        ///< e.g. "commit"
  std::string access_key;  ///< who started it
  std::string subject;     ///< what it works on (a session id for commits)
  protocol::TaskStatus status = protocol::TaskStatus::kOngoing;
  std::string message;
  std::int64_t current_progress = 0;
  std::int64_t total_progress = 0;
  std::int64_t version = 0;  ///< grows with every change
  std::string updated_at;

  bool Finished() const { return status != protocol::TaskStatus::kOngoing; }
  /// The event data object of PROTOCOL.md §5.6 (`status` only for finished tasks).
  std::string EventData() const;
};

/// Background tasks live in the database, so a stream on one manager follows a task that
/// another manager (or an agent reporting to it) advances.
class BackgroundTaskStore {
 public:
  /// Finished tasks are forgotten after this long (PROTOCOL.md: expired after 24 h).
  static constexpr std::chrono::hours kRetention{24};
  /// An ongoing task without a report for this long has failed (its worker is gone).
  static constexpr std::chrono::hours kStallTimeout{1};

  explicit BackgroundTaskStore(server::Database& db) : db_(db) {}

  StatusOr<BackgroundTask> Create(std::string const& kind, std::string const& access_key,
                                  std::string const& subject, std::int64_t total_progress);
  StatusOr<std::optional<BackgroundTask>> Get(std::string const& id);
  /// The newest ongoing task of `kind` on `subject`, if any.
  StatusOr<std::optional<BackgroundTask>> Ongoing(std::string const& kind,
                                                  std::string const& subject);
  /// Progress of an ongoing task; false when it is unknown or already finished.
  StatusOr<bool> Update(std::string const& id, std::int64_t current, std::int64_t total,
                        std::string const& message);
  /// Ends an ongoing task with `status` (done, failed or cancelled); false when it is unknown or
  /// already finished (a finished task never changes again).
  StatusOr<bool> Finish(std::string const& id, protocol::TaskStatus status,
                        std::string const& message);
  /// Fails tasks stalled for kStallTimeout; deletes tasks that finished kRetention ago.
  Status Expire(std::chrono::system_clock::time_point now);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
