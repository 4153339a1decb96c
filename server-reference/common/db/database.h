// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace bai::server {

/// One SQL value. Booleans are stored as integers 0/1 (portable between SQLite and PostgreSQL
/// when columns are declared INTEGER).
using SqlValue = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

/// Whether a failed statement broke a UNIQUE constraint (SQLite's "UNIQUE constraint failed",
/// PostgreSQL's "violates unique constraint"): the caller answers "already exists".
bool IsUniqueViolation(Status const& status);

/// A boolean as SQL stores it (an integer 0/1).
inline SqlValue SqlBool(bool b) { return std::int64_t{b ? 1 : 0}; }

/// An optional value: NULL when absent.
template <typename T>
SqlValue SqlOptional(std::optional<T> const& v) {
  return v ? SqlValue(*v) : SqlValue(nullptr);
}

/// One result row; columns in SELECT order.
class SqlRow {
 public:
  explicit SqlRow(std::vector<SqlValue> values) : values_(std::move(values)) {}
  std::size_t size() const { return values_.size(); }
  bool IsNull(std::size_t i) const { return std::holds_alternative<std::nullptr_t>(values_[i]); }
  std::string Text(std::size_t i) const;  ///< "" for NULL; numbers as text
  std::int64_t Int(std::size_t i) const;  ///< 0 for NULL
  bool Bool(std::size_t i) const { return Int(i) != 0; }
  std::optional<std::string> OptText(std::size_t i) const;
  /// Text(i) and OptText(i) that move a text value out instead of copying it; for readers that
  /// turn each row into a record once.
  std::string TakeText(std::size_t i);
  std::optional<std::string> TakeOptText(std::size_t i);

 private:
  std::vector<SqlValue> values_;
};

/// Statements on one connection. SQL uses `?` placeholders and only syntax that SQLite and
/// PostgreSQL share (ON CONFLICT, standard types); the PostgreSQL backend rewrites `?` to `$n`.
class SqlExecutor {
 public:
  virtual ~SqlExecutor() = default;
  /// Runs a statement; returns the number of rows changed.
  virtual StatusOr<std::int64_t> Exec(std::string const& sql,
                                      std::vector<SqlValue> params = {}) = 0;
  virtual StatusOr<std::vector<SqlRow>> Query(std::string const& sql,
                                              std::vector<SqlValue> params = {}) = 0;
};

/// `missing` when `sql` (with `params`) returns no row: a store's check that what a change
/// refers to exists ("SELECT 1 FROM domains WHERE name = ?"). A failed query is its error.
Status ExpectRow(SqlExecutor& db, std::string const& sql, std::vector<SqlValue> params,
                 Status missing);

/// Named locks a transaction holds, exclusively and across every process on the database, from
/// its start to its end (docs/adr/0009-database-locking.md). A transaction that reads state and
/// then writes decisions based on it names the scope covering that state (the scheduling pass
/// of resource group G takes "scheduling:G"), so two of them never decide on one snapshot. Rows
/// a transaction only writes need no scope: conditional updates guard them.
using LockScopes = std::vector<std::string>;

/// A database: a pool of connections. Statements outside a transaction run on any connection;
/// Transaction() runs `body` on one connection inside BEGIN … COMMIT (ROLLBACK when `body`
/// returns an error). Thread-safe.
///
/// Locking contract: a transaction sees its own writes and holds `scopes` until it ends; it
/// may see other transactions' commits between its statements (PostgreSQL's READ COMMITTED),
/// so what it decides from several reads is only safe under a scope.
///  - SQLite: BEGIN IMMEDIATE takes the database's single write lock, which covers every scope.
///  - PostgreSQL: BEGIN (READ COMMITTED); then `SELECT pg_advisory_xact_lock(
///    hashtextextended(scope, 0))` per scope, in sorted order; released by COMMIT/ROLLBACK.
class Database : public SqlExecutor {
 public:
  virtual Status Transaction(LockScopes const& scopes,
                             std::function<Status(SqlExecutor&)> const& body) = 0;
  /// A transaction that holds no scope.
  Status Transaction(std::function<Status(SqlExecutor&)> const& body) {
    return Transaction(LockScopes{}, body);
  }
  /// "sqlite" or "postgresql".
  virtual std::string Backend() const = 0;
};

/// SQLite with WAL, foreign keys, a busy timeout and cached prepared statements; one connection
/// per concurrent user (up to `max_connections`). `path` ":memory:" is refused (state must
/// survive restarts and be shared by connections).
StatusOr<std::unique_ptr<Database>> OpenSqlite(std::string const& path, int max_connections = 8);

struct SqliteOptions {
  int max_connections = 8;
  enum class Isolation {
    /// BEGIN IMMEDIATE: transactions run one at a time (the production mode).
    kSerializable,
    /// For tests of the locking contract only: a transaction's statements run one by one, each
    /// seeing the latest commits, and nothing but its lock scopes (file locks beside the
    /// database) keeps two transactions apart, as under PostgreSQL's READ COMMITTED. Not
    /// atomic: a failing body leaves its earlier statements applied.
    kReadCommittedForTests,
  };
  Isolation isolation = Isolation::kSerializable;
};
StatusOr<std::unique_ptr<Database>> OpenSqlite(std::string const& path,
                                               SqliteOptions const& options);

/// PostgreSQL through libpq: `url` a connection URI (postgresql://USER@HOST:PORT/DB, with the
/// usual PG* environment and ~/.pgpass). Connections are opened as needed up to
/// `max_connections`; one found broken (the server restarted) is replaced, and a statement on a
/// connection lost meanwhile fails with kUnavailable (retry later). Refused at once when the
/// server cannot be reached.
struct PostgresOptions {
  int max_connections = 8;
};
StatusOr<std::unique_ptr<Database>> OpenPostgres(std::string const& url,
                                                 PostgresOptions const& options = {});

/// One schema step: applied once, in order, inside a transaction, recorded in schema_migrations.
struct Migration {
  int version;
  std::string description;
  std::vector<std::string> statements;
};

/// Applies the migrations that are not yet recorded. Refuses a database newer than `migrations`.
Status Migrate(Database& db, std::vector<Migration> const& migrations);

}  // namespace bai::server
