// SPDX-License-Identifier: Apache-2.0
#pragma once
// Error logs (migration 19's error_logs): what `GET /logs/error` lists. The manager files one
// for each session that ends in ERROR (in the transition's own transaction) and for each
// request it fails with a 5xx; clients file their own with `POST /logs/error` (24.09's web UI
// does). A user sees their own until they clear them; an admin their domain's users'; a
// superadmin all.

#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

struct ErrorLogEntry {
  std::string id;                  ///< a uuid; InsertErrorLog makes one when empty
  std::string created_at;          ///< ISO 8601; InsertErrorLog uses now when empty
  std::string severity = "error";  ///< critical, error, warning, info, debug
  std::string source;              ///< "manager", "kernel", or what a client says
  std::optional<std::string> user_uuid;
  std::string message;
  std::string context_lang;
  std::string context_env = "{}";  ///< JSON text
  std::optional<std::string> request_url;
  std::optional<std::int64_t> request_status;
  std::optional<std::string> traceback;
  bool is_read = false;
  bool is_cleared = false;
};

/// Files `entry` (in the caller's transaction, when it is one).
Status InsertErrorLog(server::SqlExecutor& db, ErrorLogEntry entry);

/// Whose logs a caller reaches.
struct ErrorLogScope {
  enum class Kind { kAll, kDomain, kUser } kind = Kind::kUser;
  std::string value;  ///< the domain, or the user's uuid
};

class ErrorLogStore {
 public:
  explicit ErrorLogStore(server::Database& db) : db_(db) {}

  struct Page {
    std::vector<ErrorLogEntry> logs;  ///< newest first
    std::int64_t count = 0;           ///< all the scope holds
  };
  /// One page (1-based); with `mark_read`, the page's logs are marked read. A user's scope
  /// leaves out what they cleared.
  StatusOr<Page> List(ErrorLogScope const& scope, int page_size, int page_no, bool mark_read);
  /// Marks one cleared; false when the scope holds no log of that id.
  StatusOr<bool> Clear(ErrorLogScope const& scope, std::string const& id);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
