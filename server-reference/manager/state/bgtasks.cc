// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/bgtasks.h"

#include "bai/protocol/session_wire.h"

#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/store.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using nlohmann::json;
using server::SqlRow;

namespace {

constexpr char kColumns[] =
    "id, kind, access_key, subject, status, message, current_progress, total_progress, version, "
    "updated_at";

BackgroundTask FromRow(SqlRow&& r) {
  BackgroundTask t;
  t.id = r.TakeText(0);
  t.kind = r.TakeText(1);
  t.access_key = r.TakeText(2);
  t.subject = r.TakeText(3);
  t.status = protocol::ParseTaskStatus(r.Text(4));
  t.message = r.TakeText(5);
  t.current_progress = r.Int(6);
  t.total_progress = r.Int(7);
  t.version = r.Int(8);
  t.updated_at = r.TakeText(9);
  return t;
}

StatusOr<std::optional<BackgroundTask>> One(StatusOr<std::vector<SqlRow>> rows) {
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<BackgroundTask>();
  return std::optional<BackgroundTask>(FromRow(std::move((*rows)[0])));
}

}  // namespace

std::string BackgroundTask::EventData() const {
  protocol::TaskEventData data;
  data.task_id = id;
  data.message = message;
  data.current_progress = current_progress;
  data.total_progress = total_progress;
  if (Finished()) data.status = std::string(protocol::ToString(status));
  return protocol::EncodeTaskEventData(data);
}

StatusOr<BackgroundTask> BackgroundTaskStore::Create(std::string const& kind,
                                                     std::string const& access_key,
                                                     std::string const& subject,
                                                     std::int64_t total_progress) {
  BackgroundTask t;
  t.id = GenerateUuid();
  t.kind = kind;
  t.access_key = access_key;
  t.subject = subject;
  t.status = protocol::TaskStatus::kOngoing;
  t.total_progress = total_progress;
  t.updated_at = NowIso();
  auto r = db_.Exec(
      "INSERT INTO background_tasks (id, kind, access_key, subject, status, total_progress, "
      "created_at, updated_at) VALUES (?, ?, ?, ?, 'ongoing', ?, ?, ?)",
      {t.id, kind, access_key, subject, total_progress, t.updated_at, t.updated_at});
  if (!r.ok()) return std::move(r).status();
  return t;
}

StatusOr<std::optional<BackgroundTask>> BackgroundTaskStore::Get(std::string const& id) {
  return One(
      db_.Query(std::string("SELECT ") + kColumns + " FROM background_tasks WHERE id = ?", {id}));
}

StatusOr<std::optional<BackgroundTask>> BackgroundTaskStore::Ongoing(std::string const& kind,
                                                                     std::string const& subject) {
  return One(db_.Query(std::string("SELECT ") + kColumns +
                           " FROM background_tasks WHERE kind = ? AND subject = ? AND "
                           "status = 'ongoing' ORDER BY created_at DESC LIMIT 1",
                       {kind, subject}));
}

StatusOr<bool> BackgroundTaskStore::Update(std::string const& id, std::int64_t current,
                                           std::int64_t total, std::string const& message) {
  auto n = db_.Exec(
      "UPDATE background_tasks SET current_progress = ?, total_progress = ?, message = ?, "
      "version = version + 1, updated_at = ? WHERE id = ? AND status = 'ongoing'",
      {current, total, message, NowIso(), id});
  if (!n.ok()) return std::move(n).status();
  return *n > 0;
}

StatusOr<bool> BackgroundTaskStore::Finish(std::string const& id, protocol::TaskStatus status,
                                           std::string const& message) {
  if (status == protocol::TaskStatus::kOngoing || status == protocol::TaskStatus::kUnknown) {
    return Status(StatusCode::kInvalidArgument, "a task ends done, failed or cancelled");
  }
  std::string text(protocol::ToString(status));
  // A finished task shows full progress when it succeeded.
  auto n = db_.Exec(
      "UPDATE background_tasks SET status = ?, message = ?, version = version + 1, "
      "current_progress = CASE WHEN ? = 'done' THEN total_progress ELSE current_progress END, "
      "updated_at = ? WHERE id = ? AND status = 'ongoing'",
      {text, message, text, NowIso(), id});
  if (!n.ok()) return std::move(n).status();
  return *n > 0;
}

Status BackgroundTaskStore::Expire(std::chrono::system_clock::time_point now) {
  // A task whose worker vanished (an agent that died mid-commit) would stay ongoing forever.
  auto stalled = db_.Exec(
      "UPDATE background_tasks SET status = 'failed', version = version + 1, updated_at = ?, "
      "message = 'no progress report for an hour: the worker is gone' "
      "WHERE status = 'ongoing' AND updated_at < ?",
      {IsoTime(now), IsoTime(now - kStallTimeout)});
  if (!stalled.ok()) return stalled.status();
  return db_
      .Exec("DELETE FROM background_tasks WHERE status <> 'ongoing' AND updated_at < ?",
            {IsoTime(now - kRetention)})
      .status();
}

}  // namespace bai::manager
