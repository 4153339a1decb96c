// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/managers.h"

#include "server-reference/manager/state/store.h"

namespace bai::manager {

Status ManagerTable::Beat(ManagerRow const& row) {
  std::string now = NowIso();
  return db_
      .Exec(
          "INSERT INTO managers (id, url, version, started_at, last_seen) VALUES (?, ?, ?, ?, ?) "
          "ON CONFLICT (id) DO UPDATE SET url = excluded.url, version = excluded.version, "
          "last_seen = excluded.last_seen",
          {row.id, row.url, row.version, row.started_at.empty() ? now : row.started_at, now})
      .status();
}

Status ManagerTable::Remove(std::string const& id) {
  return db_.Exec("DELETE FROM managers WHERE id = ?", {id}).status();
}

StatusOr<std::vector<ManagerRow>> ManagerTable::SeenSince(
    std::chrono::system_clock::time_point since) {
  // ISO times of one format compare as text.
  auto rows = db_.Query(
      "SELECT id, url, version, started_at, last_seen FROM managers WHERE last_seen >= ? "
      "ORDER BY id",
      {IsoTime(since)});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<ManagerRow> out;
  for (auto& r : *rows) {
    out.push_back({r.TakeText(0), r.TakeText(1), r.TakeText(2), r.TakeText(3), r.TakeText(4)});
  }
  return out;
}

}  // namespace bai::manager
