// SPDX-License-Identifier: Apache-2.0
#pragma once
// The managers table: each manager on the database beats every few seconds while it runs and
// removes itself when it stops; `GET /manager/status` lists those seen lately as its nodes.

#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <chrono>
#include <string>
#include <vector>

namespace bai::manager {

struct ManagerRow {
  std::string id;  ///< HOST:PORT it listens on
  std::string url;
  std::string version;
  std::string started_at;
  std::string last_seen;
};

class ManagerTable {
 public:
  explicit ManagerTable(server::Database& db) : db_(db) {}
  /// Records `row` with last_seen now (its started_at kept from the first beat).
  Status Beat(ManagerRow const& row);
  /// The manager stopped.
  Status Remove(std::string const& id);
  /// Those seen since `since`, by id.
  StatusOr<std::vector<ManagerRow>> SeenSince(std::chrono::system_clock::time_point since);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
