// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL backend (libpq): a pool of connections, `?` numbered `$n`, parameters sent as
// text with their types left to the statement, lock scopes as transaction-level advisory locks,
// and a lost connection dropped from the pool and reported as retryable (kUnavailable).
#include "server-reference/common/db/connection_pool.h"
#include "server-reference/common/db/database.h"
#include "server-reference/common/db/postgres_dialect.h"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace bai::server {

namespace {

// Type OIDs (pg_type.dat) of the results the stores read as numbers.
constexpr Oid kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23, kOid = 26, kFloat4 = 700,
              kFloat8 = 701, kNumeric = 1700;

// A statement's failure as the stores' codes: constraint → kAlreadyExists (as SQLite's), a full
// disk → kResourceExhausted, a connection or lock problem → kUnavailable (retry later).
Status PostgresError(PGconn* conn, PGresult const* result, std::string const& what) {
  char const* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state ? state : "";
  std::string message = result ? PQresultErrorMessage(result) : "";
  if (message.empty()) message = PQerrorMessage(conn);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  message = what + ": " + message;
  if (code.rfind("23", 0) == 0) return Status(StatusCode::kAlreadyExists, message);
  if (code.rfind("53", 0) == 0) return Status(StatusCode::kResourceExhausted, message);
  if (code.empty() || code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0 || code == "40001" ||
      code == "40P01" || code == "55P03" || PQstatus(conn) != CONNECTION_OK) {
    return Status(StatusCode::kUnavailable, message);
  }
  return Status(StatusCode::kInternal, message);
}

SqlValue ValueOf(PGresult const* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return nullptr;
  char const* text = PQgetvalue(r, row, col);
  std::size_t length = static_cast<std::size_t>(PQgetlength(r, row, col));
  switch (PQftype(r, col)) {
    case kBool:
      return std::int64_t{text[0] == 't' ? 1 : 0};
    case kInt2:
    case kInt4:
    case kInt8:
    case kOid: {
      std::int64_t n = 0;
      std::from_chars(text, text + length, n);
      return n;
    }
    case kFloat4:
    case kFloat8:
    case kNumeric:
      return std::strtod(text, nullptr);
    default:
      return std::string(text, length);
  }
}

class Connection : public SqlExecutor {
 public:
  explicit Connection(PGconn* conn) : conn_(conn) {}
  ~Connection() override { PQfinish(conn_); }
  Connection(Connection const&) = delete;
  Connection& operator=(Connection const&) = delete;

  bool healthy() const { return PQstatus(conn_) == CONNECTION_OK; }
  bool in_transaction() const { return PQtransactionStatus(conn_) != PQTRANS_IDLE; }
  /// A statement failed inside the transaction (one whose error the body ignored): PostgreSQL
  /// would answer COMMIT with a silent ROLLBACK.
  bool transaction_failed() const { return PQtransactionStatus(conn_) == PQTRANS_INERROR; }

  StatusOr<std::int64_t> Exec(std::string const& sql, std::vector<SqlValue> params) override {
    auto r = Run(sql, params);
    if (!r.ok()) return std::move(r).status();
    char const* changed = PQcmdTuples(r->get());
    std::int64_t n = 0;
    if (changed && *changed)
      std::from_chars(changed, changed + std::char_traits<char>::length(changed), n);
    return n;
  }

  StatusOr<std::vector<SqlRow>> Query(std::string const& sql,
                                      std::vector<SqlValue> params) override {
    auto r = Run(sql, params);
    if (!r.ok()) return std::move(r).status();
    PGresult const* result = r->get();
    int rows = PQntuples(result), columns = PQnfields(result);
    std::vector<SqlRow> out;
    out.reserve(static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) {
      std::vector<SqlValue> values;
      values.reserve(static_cast<std::size_t>(columns));
      for (int c = 0; c < columns; ++c) values.push_back(ValueOf(result, i, c));
      out.emplace_back(std::move(values));
    }
    return out;
  }

 private:
  using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

  StatusOr<Result> Run(std::string const& sql, std::vector<SqlValue> const& params) {
    std::string text = postgres::NumberPlaceholders(postgres::SchemaStatement(sql));
    std::vector<std::string> owned(params.size());
    std::vector<char const*> values(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto const& p = params[i];
      if (auto n = std::get_if<std::int64_t>(&p)) {
        owned[i] = std::to_string(*n);
      } else if (auto d = std::get_if<double>(&p)) {
        char buf[64];
        auto end = std::to_chars(buf, buf + sizeof buf, *d).ptr;
        owned[i].assign(buf, end);
      } else if (auto s = std::get_if<std::string>(&p)) {
        owned[i] = *s;
      } else {
        continue;  // NULL
      }
      values[i] = owned[i].c_str();
    }
    // Types left to the statement (0): "5" compares with an INTEGER column and a TEXT one alike.
    Result r(PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), nullptr, nullptr, 0),
             &PQclear);
    auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return PostgresError(conn_, r.get(), "statement failed (" + sql.substr(0, 80) + ")");
    }
    return r;
  }

  PGconn* conn_;
};

class PostgresDatabase : public Database {
 public:
  using Database::Transaction;

  PostgresDatabase(std::string url, PostgresOptions const& options)
      : url_(std::move(url)),
        // Every connection busy for 10 s (each stuck on a database that does not answer): the
        // request fails, retryably, instead of queueing behind them without end.
        pool_([this] { return Open(); }, std::max(1, options.max_connections),
              std::chrono::seconds(10)) {}

  StatusOr<std::unique_ptr<Connection>> Open() {
    // A database cut off (a partition, a host gone without a reset) must fail a request in
    // seconds, not hang it for TCP's minutes: a connect gives up after 5 s, and data unanswered
    // for 10 s (tcp_user_timeout) or an idle link silent through keepalives ends the
    // connection (kUnavailable: 503). Given first, so the URL's own settings win.
    static char const* const kKeys[] = {
        "connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "dbname",          nullptr};
    char const* values[] = {"5", "1", "5", "2", "3", "10000", url_.c_str(), nullptr};
    PGconn* conn = PQconnectdbParams(kKeys, values, /*expand_dbname=*/1);
    if (!conn || PQstatus(conn) != CONNECTION_OK) {
      std::string msg = conn ? PQerrorMessage(conn) : "out of memory";
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      PQfinish(conn);
      return Status(StatusCode::kUnavailable, "cannot connect to the database: " + msg);
    }
    auto c = std::make_unique<Connection>(conn);
    // The server's notices (CREATE TABLE IF NOT EXISTS on a table that exists) are not errors.
    PQsetNoticeProcessor(
        conn, [](void*, char const*) {}, nullptr);
    for (char const* setting : {"SET client_min_messages = warning", "SET TIME ZONE 'UTC'",
                                "SET default_transaction_isolation = 'read committed'"}) {
      if (auto r = c->Exec(setting, {}); !r.ok()) return std::move(r).status();
    }
    return c;
  }

  StatusOr<std::int64_t> Exec(std::string const& sql, std::vector<SqlValue> params) override {
    return pool_.With([&](Connection& c) { return c.Exec(sql, std::move(params)); });
  }

  StatusOr<std::vector<SqlRow>> Query(std::string const& sql,
                                      std::vector<SqlValue> params) override {
    return pool_.With([&](Connection& c) { return c.Query(sql, std::move(params)); });
  }

  Status Transaction(LockScopes const& scopes,
                     std::function<Status(SqlExecutor&)> const& body) override {
    auto lease = pool_.Acquire();
    if (!lease.ok()) return std::move(lease).status();
    auto& conn = **lease;
    LockScopes sorted = scopes;  // one order everywhere: no deadlock between two scopes
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    auto begun = conn.Exec("BEGIN", {});
    Status status = begun.ok() ? Status() : begun.status();
    for (auto const& scope : sorted) {
      if (!status.ok()) break;
      auto locked = conn.Query("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", {scope});
      if (!locked.ok()) status = locked.status();
    }
    if (status.ok()) status = body(conn);
    if (status.ok() && conn.transaction_failed()) {
      status = Status(StatusCode::kInternal,
                      "a statement failed inside the transaction; nothing of it was written");
    }
    if (begun.ok()) {
      auto end = conn.Exec(status.ok() ? "COMMIT" : "ROLLBACK", {});
      if (status.ok() && !end.ok()) status = end.status();
    }
    return status;
  }

  std::string Backend() const override { return "postgresql"; }

 private:
  std::string url_;
  ConnectionPool<Connection> pool_;
};

}  // namespace

StatusOr<std::unique_ptr<Database>> OpenPostgres(std::string const& url,
                                                 PostgresOptions const& options) {
  auto db = std::make_unique<PostgresDatabase>(url, options);
  auto first = db->Query("SELECT 1", {});  // fail now, not at the first request
  if (!first.ok()) return std::move(first).status();
  return std::unique_ptr<Database>(std::move(db));
}

}  // namespace bai::server
