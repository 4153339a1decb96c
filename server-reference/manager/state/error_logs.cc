// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/error_logs.h"

#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/store.h"

namespace bai::manager {

using server::SqlOptional;
using server::SqlValue;

namespace {

// The WHERE clause of a scope (after "WHERE "), with its parameters.
// `cleared_too`: a user's own cleared logs are out of their list but may be cleared again.
std::string Where(ErrorLogScope const& scope, std::vector<SqlValue>& params,
                  bool cleared_too = false) {
  switch (scope.kind) {
    case ErrorLogScope::Kind::kAll:
      return "1 = 1";
    case ErrorLogScope::Kind::kDomain:
      params.emplace_back(scope.value);
      return "user_uuid IN (SELECT uuid FROM users WHERE domain_name = ?)";
    case ErrorLogScope::Kind::kUser:
      params.emplace_back(scope.value);
      return cleared_too ? "user_uuid = ?" : "user_uuid = ? AND is_cleared = 0";
  }
  return "0 = 1";
}

}  // namespace

Status InsertErrorLog(server::SqlExecutor& db, ErrorLogEntry e) {
  if (e.id.empty()) e.id = GenerateUuid();
  if (e.created_at.empty()) e.created_at = NowIso();
  auto w = db.Exec(
      "INSERT INTO error_logs (id, created_at, severity, source, user_uuid, is_read, is_cleared, "
      "message, context_lang, context_env, request_url, request_status, traceback) "
      "VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?)",
      {e.id, e.created_at, e.severity, e.source, SqlOptional(e.user_uuid), e.message,
       e.context_lang, e.context_env, SqlOptional(e.request_url), SqlOptional(e.request_status),
       SqlOptional(e.traceback)});
  return w.status();
}

StatusOr<ErrorLogStore::Page> ErrorLogStore::List(ErrorLogScope const& scope, int page_size,
                                                  int page_no, bool mark_read) {
  Page page;
  Status status = db_.Transaction([&](server::SqlExecutor& tx) -> Status {
    std::vector<SqlValue> params;
    std::string where = Where(scope, params);
    auto count = tx.Query("SELECT COUNT(*) FROM error_logs WHERE " + where, params);
    if (!count.ok()) return count.status();
    page.count = (*count)[0].Int(0);
    params.emplace_back(static_cast<std::int64_t>(page_size));
    params.emplace_back(static_cast<std::int64_t>(page_size) * (page_no - 1));
    auto rows = tx.Query(
        "SELECT id, created_at, severity, source, user_uuid, is_read, is_cleared, message, "
        "context_lang, context_env, request_url, request_status, traceback FROM error_logs "
        "WHERE " +
            where + " ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
        params);
    if (!rows.ok()) return rows.status();
    for (auto& r : *rows) {
      ErrorLogEntry e;
      e.id = r.TakeText(0);
      e.created_at = r.TakeText(1);
      e.severity = r.TakeText(2);
      e.source = r.TakeText(3);
      e.user_uuid = r.TakeOptText(4);
      e.is_read = r.Bool(5);
      e.is_cleared = r.Bool(6);
      e.message = r.TakeText(7);
      e.context_lang = r.TakeText(8);
      e.context_env = r.TakeText(9);
      e.request_url = r.TakeOptText(10);
      if (!r.IsNull(11)) e.request_status = r.Int(11);
      e.traceback = r.TakeOptText(12);
      page.logs.push_back(std::move(e));
    }
    if (mark_read) {
      for (auto const& e : page.logs) {
        auto w = tx.Exec("UPDATE error_logs SET is_read = 1 WHERE id = ?", {e.id});
        if (!w.ok()) return w.status();
      }
    }
    return Status();
  });
  if (!status.ok()) return status;
  return page;
}

StatusOr<bool> ErrorLogStore::Clear(ErrorLogScope const& scope, std::string const& id) {
  std::vector<SqlValue> params;
  std::string where = Where(scope, params, /*cleared_too=*/true);
  params.insert(params.begin(), SqlValue(id));
  auto w = db_.Exec("UPDATE error_logs SET is_cleared = 1 WHERE id = ? AND " + where, params);
  if (!w.ok()) return std::move(w).status();
  return *w > 0;
}

}  // namespace bai::manager
