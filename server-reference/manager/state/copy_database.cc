// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/copy_database.h"

#include "server-reference/manager/state/schema.h"

#include <algorithm>
#include <regex>

namespace bai::manager {

using server::Database;
using server::SqlExecutor;
using server::SqlValue;

namespace {

// The schema's tables in the order the migrations create them: a table's foreign keys name
// only tables made before it.
std::vector<std::string> TablesInCreationOrder() {
  static std::regex const kCreate(R"(^\s*CREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?(\w+))",
                                  std::regex::icase);
  std::vector<std::string> out;
  for (auto const& m : Migrations()) {
    for (auto const& sql : m.statements) {
      std::smatch match;
      if (std::regex_search(sql, match, kCreate)) {
        std::string name = match[2].str();
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      }
    }
  }
  return out;
}

StatusOr<std::vector<std::string>> ExistingTables(SqlExecutor& db, std::string const& backend) {
  auto rows = backend == "postgresql"
                  ? db.Query(
                        "SELECT table_name FROM information_schema.tables WHERE "
                        "table_schema = current_schema() AND table_type = 'BASE TABLE'")
                  : db.Query(
                        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                        "LIKE 'sqlite_%'");
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (auto const& r : *rows) out.push_back(r.Text(0));
  return out;
}

StatusOr<std::vector<std::string>> Columns(SqlExecutor& db, std::string const& backend,
                                           std::string const& table) {
  auto rows = backend == "postgresql"
                  ? db.Query(
                        "SELECT column_name FROM information_schema.columns WHERE "
                        "table_schema = current_schema() AND table_name = ? "
                        "ORDER BY ordinal_position",
                        {table})
                  : db.Query("SELECT name FROM pragma_table_info(?) ORDER BY cid", {table});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (auto const& r : *rows) out.push_back(r.Text(0));
  return out;
}

}  // namespace

StatusOr<std::string> CopyDatabase(Database& from, Database& to) {
  if (auto s = server::Migrate(from, Migrations()); !s.ok()) return s;
  if (auto s = server::Migrate(to, Migrations()); !s.ok()) return s;
  std::int64_t copied = 0;
  std::size_t tables = 0;
  std::string const from_kind = from.Backend(), to_kind = to.Backend();
  Status status = from.Transaction({"copy-database"}, [&](SqlExecutor& src) -> Status {
    auto present = ExistingTables(src, from_kind);
    if (!present.ok()) return present.status();
    std::vector<std::string> order;
    for (auto const& t : TablesInCreationOrder()) {
      if (t != "schema_migrations" &&
          std::find(present->begin(), present->end(), t) != present->end()) {
        order.push_back(t);
      }
    }
    return to.Transaction({"copy-database"}, [&](SqlExecutor& dst) -> Status {
      for (auto const& table : order) {
        auto held = dst.Query("SELECT COUNT(*) FROM " + table);
        if (!held.ok()) return held.status();
        if ((*held)[0].Int(0) > 0) {
          return Status(StatusCode::kFailedPrecondition,
                        "the target already holds rows in " + table +
                            ": refusing to mix two installations (start from an empty database)");
        }
      }
      for (auto const& table : order) {
        auto columns = Columns(src, from_kind, table);
        if (!columns.ok()) return columns.status();
        std::string list, marks;
        for (auto const& c : *columns) {
          list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
          marks += marks.empty() ? "?" : ", ?";
        }
        auto rows = src.Query("SELECT " + list + " FROM " + table);
        if (!rows.ok()) return rows.status();
        std::string insert = "INSERT INTO " + table + " (" + list + ") VALUES (" + marks + ")";
        for (auto& row : *rows) {
          std::vector<SqlValue> values;
          values.reserve(columns->size());
          for (std::size_t i = 0; i < columns->size(); ++i) {
            if (row.IsNull(i)) {
              values.emplace_back(nullptr);
            } else {
              values.emplace_back(row.TakeText(i));  // text: each side reads it as its column
            }
          }
          auto w = dst.Exec(insert, std::move(values));
          if (!w.ok()) {
            return Status(w.status().code(), "copying " + table + ": " + w.status().message());
          }
        }
        copied += static_cast<std::int64_t>(rows->size());
        ++tables;
        if (to_kind == "postgresql") {
          // Identity columns (events.seq) go on after the highest copied value.
          auto identity = dst.Query(
              "SELECT column_name FROM information_schema.columns WHERE table_schema = "
              "current_schema() AND table_name = ? AND is_identity = 'YES'",
              {table});
          if (!identity.ok()) return identity.status();
          for (auto const& r : *identity) {
            std::string column = r.Text(0);
            auto moved = dst.Query("SELECT setval(pg_get_serial_sequence(?, ?), COALESCE(MAX(\"" +
                                       column + "\"), 0) + 1, false) FROM " + table,
                                   {table, column});
            if (!moved.ok()) return moved.status();
          }
        }
      }
      return Status();
    });
  });
  if (!status.ok()) return status;
  return "copied " + std::to_string(copied) + " rows of " + std::to_string(tables) + " tables";
}

}  // namespace bai::manager
