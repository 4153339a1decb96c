// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/db/connection_pool.h"
#include "server-reference/common/db/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>

namespace bai::server {

bool IsUniqueViolation(Status const& status) {
  return status.message().find("UNIQUE") != std::string::npos ||
         status.message().find("unique") != std::string::npos;
}

Status ExpectRow(SqlExecutor& db, std::string const& sql, std::vector<SqlValue> params,
                 Status missing) {
  auto rows = db.Query(sql, std::move(params));
  if (!rows.ok()) return rows.status();
  return rows->empty() ? missing : Status();
}

std::string SqlRow::Text(std::size_t i) const {
  auto const& v = values_[i];
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto n = std::get_if<std::int64_t>(&v)) return std::to_string(*n);
  if (auto d = std::get_if<double>(&v)) return std::to_string(*d);
  return "";
}

std::int64_t SqlRow::Int(std::size_t i) const {
  auto const& v = values_[i];
  if (auto n = std::get_if<std::int64_t>(&v)) return *n;
  if (auto d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (auto s = std::get_if<std::string>(&v)) return std::strtoll(s->c_str(), nullptr, 10);
  return 0;
}

std::optional<std::string> SqlRow::OptText(std::size_t i) const {
  if (IsNull(i)) return std::nullopt;
  return Text(i);
}

std::string SqlRow::TakeText(std::size_t i) {
  if (auto s = std::get_if<std::string>(&values_[i])) return std::move(*s);
  return Text(i);
}

std::optional<std::string> SqlRow::TakeOptText(std::size_t i) {
  if (IsNull(i)) return std::nullopt;
  return TakeText(i);
}

namespace {

Status SqliteError(sqlite3* db, std::string const& what) {
  int code = sqlite3_extended_errcode(db);
  std::string message = what + ": " + sqlite3_errmsg(db);
  if ((code & 0xff) == SQLITE_CONSTRAINT) return Status(StatusCode::kAlreadyExists, message);
  if ((code & 0xff) == SQLITE_FULL) return Status(StatusCode::kResourceExhausted, message);
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED) {
    return Status(StatusCode::kUnavailable, message);
  }
  return Status(StatusCode::kInternal, message);
}

class Connection : public SqlExecutor {
 public:
  explicit Connection(sqlite3* db) : db_(db) {}
  ~Connection() override {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }
  Connection(Connection const&) = delete;
  Connection& operator=(Connection const&) = delete;

  sqlite3* handle() const { return db_; }

  StatusOr<std::int64_t> Exec(std::string const& sql, std::vector<SqlValue> params) override {
    auto stmt = Prepare(sql, params);
    if (!stmt.ok()) return std::move(stmt).status();
    int rc;
    while ((rc = sqlite3_step(*stmt)) == SQLITE_ROW) {
    }
    Status status = rc == SQLITE_DONE ? Status() : SqliteError(db_, "statement failed");
    sqlite3_reset(*stmt);
    if (!status.ok()) return status;
    return static_cast<std::int64_t>(sqlite3_changes(db_));
  }

  StatusOr<std::vector<SqlRow>> Query(std::string const& sql,
                                      std::vector<SqlValue> params) override {
    auto stmt = Prepare(sql, params);
    if (!stmt.ok()) return std::move(stmt).status();
    std::vector<SqlRow> rows;
    int rc;
    int columns = sqlite3_column_count(*stmt);
    while ((rc = sqlite3_step(*stmt)) == SQLITE_ROW) {
      std::vector<SqlValue> values;
      values.reserve(static_cast<std::size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        switch (sqlite3_column_type(*stmt, c)) {
          case SQLITE_INTEGER:
            values.emplace_back(static_cast<std::int64_t>(sqlite3_column_int64(*stmt, c)));
            break;
          case SQLITE_FLOAT:
            values.emplace_back(sqlite3_column_double(*stmt, c));
            break;
          case SQLITE_NULL:
            values.emplace_back(nullptr);
            break;
          default: {
            auto const* text = reinterpret_cast<char const*>(sqlite3_column_text(*stmt, c));
            values.emplace_back(std::string(
                text ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(*stmt, c))));
          }
        }
      }
      rows.emplace_back(std::move(values));
    }
    Status status = rc == SQLITE_DONE ? Status() : SqliteError(db_, "query failed");
    sqlite3_reset(*stmt);
    if (!status.ok()) return status;
    return rows;
  }

 private:
  StatusOr<sqlite3_stmt*> Prepare(std::string const& sql, std::vector<SqlValue> const& params) {
    sqlite3_stmt* stmt = nullptr;
    auto it = cache_.find(sql);
    if (it != cache_.end()) {
      stmt = it->second;
      sqlite3_clear_bindings(stmt);
    } else {
      if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                             SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
        return SqliteError(db_, "cannot prepare \"" + sql.substr(0, 80) + "\"");
      }
      cache_.emplace(sql, stmt);
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      int idx = static_cast<int>(i + 1);
      auto const& p = params[i];
      if (std::holds_alternative<std::nullptr_t>(p)) {
        sqlite3_bind_null(stmt, idx);
      } else if (auto n = std::get_if<std::int64_t>(&p)) {
        sqlite3_bind_int64(stmt, idx, *n);
      } else if (auto d = std::get_if<double>(&p)) {
        sqlite3_bind_double(stmt, idx, *d);
      } else {
        auto const& s = std::get<std::string>(p);
        sqlite3_bind_text64(stmt, idx, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
    }
    return stmt;
  }

  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*> cache_;
};

// The read-lock anchor. In WAL mode every read transaction takes a shared lock on one of the
// WAL index's read marks, and SQLite asks the kernel for it (fcntl, then fcntl again to drop it)
// unless another connection of this process already holds the same lock. On a signed session
// read those two system calls were the largest single cost. The anchor's connection therefore
// keeps a read transaction open at the newest commit, so the pool's readers find their read
// mark already held in this process and lock it without a system call.
//
// It moves to the newest commit right after every commit of this process (the WAL hook) and,
// for other processes' commits, on the first read after it is 100 ms old. A held read mark
// would stop checkpoints and the rewinding of the WAL, so a commit that finds 1000 frames in
// the WAL ends the anchor's transaction, checkpoints as SQLite would by itself, and only then
// begins it again. None of this changes what a reader sees: each read transaction still takes
// its own snapshot, and other processes lock, read and write as before.
class ReadLockAnchor {
 public:
  static constexpr int kCheckpointFrames = 1000;  // SQLite's own auto-checkpoint default
  static constexpr auto kMaxAge = std::chrono::milliseconds(100);

  explicit ReadLockAnchor(std::unique_ptr<Connection> conn) : conn_(std::move(conn)) { Renew(); }
  ~ReadLockAnchor() {
    std::lock_guard<std::mutex> lock(mu_);
    End();
  }
  ReadLockAnchor(ReadLockAnchor const&) = delete;
  ReadLockAnchor& operator=(ReadLockAnchor const&) = delete;

  /// Moves the held read transaction to the newest commit.
  void Renew() {
    std::lock_guard<std::mutex> lock(mu_);
    End();
    Begin();
  }

  /// Renew(), when the last renewal is older than kMaxAge and no other thread is at it.
  void RenewIfOld() {
    if (Now() - renewed_.load(std::memory_order_relaxed) < kMaxAge.count()) return;
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock) return;
    End();
    Begin();
  }

  /// Runs `fn` with no read transaction held, then holds one again.
  template <typename F>
  void Without(F&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    End();
    fn();
    Begin();
  }

 private:
  static std::int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void End() {
    if (held_) (void)conn_->Exec("COMMIT", {});
    held_ = false;
  }
  void Begin() {
    held_ = conn_->Exec("BEGIN", {}).ok();
    if (held_ && !conn_->Query("SELECT 1 FROM sqlite_schema LIMIT 1", {}).ok()) End();
    renewed_.store(Now(), std::memory_order_relaxed);
  }

  std::mutex mu_;
  std::unique_ptr<Connection> conn_;  ///< used under mu_ only
  bool held_ = false;
  std::atomic<std::int64_t> renewed_{0};  ///< steady clock, ms
};

// Holds one lock scope in the kReadCommittedForTests mode: an exclusive flock on a file beside
// the database, which excludes other connections of this process and other processes alike.
class ScopeFileLock {
 public:
  ScopeFileLock(std::string const& db_path, std::string const& scope) {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: a file name for any scope text
    for (unsigned char c : scope) h = (h ^ c) * 1099511628211ULL;
    char name[32];
    std::snprintf(name, sizeof name, ".scope-%016llx", static_cast<unsigned long long>(h));
    fd_ = ::open((db_path + name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~ScopeFileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  ScopeFileLock(ScopeFileLock const&) = delete;
  ScopeFileLock& operator=(ScopeFileLock const&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

class SqliteDatabase : public Database {
 public:
  using Database::Transaction;

  SqliteDatabase(std::string path, SqliteOptions const& options)
      : path_(std::move(path)),
        isolation_(options.isolation),
        pool_([this] { return Open(); }, std::max(1, options.max_connections)) {}

  StatusOr<std::unique_ptr<Connection>> Open() {
    sqlite3* db = nullptr;
    int rc =
        sqlite3_open_v2(path_.c_str(), &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close_v2(db);
      return Status(StatusCode::kUnavailable, "cannot open database " + path_ + ": " + msg);
    }
    sqlite3_busy_timeout(db, 10000);
    auto conn = std::make_unique<Connection>(db);
    for (char const* pragma :
         {"PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON", "PRAGMA synchronous=NORMAL",
          // LIKE as PostgreSQL has it (ILIKE is written LOWER(x) LIKE LOWER(y)).
          "PRAGMA case_sensitive_like=ON"}) {
      auto r = conn->Query(pragma, {});
      if (!r.ok()) return std::move(r).status();
    }
    // Replaces SQLite's checkpoint-on-commit hook with one that knows the anchor.
    sqlite3_wal_hook(db, &SqliteDatabase::OnWalCommit, this);
    return conn;
  }

  /// Opens the read-lock anchor on a connection of its own. Without one (it could not open),
  /// reads simply lock for themselves.
  void StartAnchor() {
    auto conn = Open();
    if (!conn.ok()) return;
    sqlite3_wal_hook((*conn)->handle(), nullptr, nullptr);  // it never writes
    anchor_ = std::make_unique<ReadLockAnchor>(std::move(*conn));
  }

  ~SqliteDatabase() override { anchor_.reset(); }  // before the pool's connections close

  StatusOr<std::int64_t> Exec(std::string const& sql, std::vector<SqlValue> params) override {
    return pool_.With([&](Connection& c) { return c.Exec(sql, std::move(params)); });
  }

  StatusOr<std::vector<SqlRow>> Query(std::string const& sql,
                                      std::vector<SqlValue> params) override {
    if (anchor_) anchor_->RenewIfOld();
    return pool_.With([&](Connection& c) { return c.Query(sql, std::move(params)); });
  }

  Status Transaction(LockScopes const& scopes,
                     std::function<Status(SqlExecutor&)> const& body) override {
    if (isolation_ == SqliteOptions::Isolation::kReadCommittedForTests) {
      return UnisolatedTransaction(scopes, body);
    }
    auto lease = pool_.Acquire();
    if (!lease.ok()) return std::move(lease).status();
    auto& conn = **lease;
    // IMMEDIATE takes the write lock up front, so two writers never deadlock on an upgrade;
    // that lock is the database's only one, so it holds every scope too.
    auto begun = conn.Exec("BEGIN IMMEDIATE", {});
    Status status = begun.ok() ? body(conn) : begun.status();
    if (begun.ok()) {
      auto end = conn.Exec(status.ok() ? "COMMIT" : "ROLLBACK", {});
      if (status.ok() && !end.ok()) {
        status = end.status();
        (void)conn.Exec("ROLLBACK", {});
      }
    }
    return status;
  }

  std::string Backend() const override { return "sqlite"; }

 private:
  Status UnisolatedTransaction(LockScopes const& scopes,
                               std::function<Status(SqlExecutor&)> const& body) {
    LockScopes sorted = scopes;  // one order everywhere: no deadlock between two scopes
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::vector<std::unique_ptr<ScopeFileLock>> held;
    for (auto const& scope : sorted) {
      held.push_back(std::make_unique<ScopeFileLock>(path_, scope));
      if (!held.back()->held()) {
        return Status(StatusCode::kUnavailable, "cannot take lock scope " + scope);
      }
    }
    auto lease = pool_.Acquire();
    if (!lease.ok()) return std::move(lease).status();
    return body(**lease);  // autocommit: each statement commits on its own
  }

  // After each commit that wrote WAL frames, on the committing thread.
  static int OnWalCommit(void* self, sqlite3* db, char const* name, int frames) {
    auto* me = static_cast<SqliteDatabase*>(self);
    if (frames >= ReadLockAnchor::kCheckpointFrames) {
      auto checkpoint = [&] {
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      };
      if (me->anchor_) {
        me->anchor_->Without(checkpoint);
      } else {
        checkpoint();
      }
    } else if (me->anchor_) {
      me->anchor_->Renew();
    }
    return SQLITE_OK;
  }

  std::string path_;
  SqliteOptions::Isolation isolation_;
  ConnectionPool<Connection> pool_;
  std::unique_ptr<ReadLockAnchor> anchor_;  ///< set once, before the pool is shared
};

}  // namespace

StatusOr<std::unique_ptr<Database>> OpenSqlite(std::string const& path, int max_connections) {
  SqliteOptions options;
  options.max_connections = max_connections;
  return OpenSqlite(path, options);
}

StatusOr<std::unique_ptr<Database>> OpenSqlite(std::string const& path,
                                               SqliteOptions const& options) {
  // Memory statistics take a process-wide mutex on every SQLite allocation; we never read them.
  static bool const kConfigured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return true;
  }();
  (void)kConfigured;
  if (path.empty() || path == ":memory:") {
    return Status(StatusCode::kInvalidArgument, "the database needs a file path");
  }
  auto db = std::make_unique<SqliteDatabase>(path, options);
  // Open one connection now so that a bad path fails at start-up, not at the first request.
  auto probe = db->Query("SELECT 1", {});
  if (!probe.ok()) return std::move(probe).status();
  db->StartAnchor();
  return std::unique_ptr<Database>(std::move(db));
}

Status Migrate(Database& db, std::vector<Migration> const& migrations) {
  // Under the scope: two PostgreSQL sessions creating the same table at once collide.
  auto created = db.Transaction({"schema-migrations"}, [](SqlExecutor& tx) -> Status {
    return tx
        .Exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "description TEXT NOT NULL, applied_at TEXT NOT NULL)")
        .status();
  });
  if (!created.ok()) return created;
  auto rows = db.Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!rows.ok()) return rows.status();
  std::int64_t current = (*rows)[0].Int(0);
  int newest = migrations.empty() ? 0 : migrations.back().version;
  if (current > newest) {
    return Status(StatusCode::kFailedPrecondition,
                  "the database has schema version " + std::to_string(current) +
                      ", newer than this manager knows (" + std::to_string(newest) +
                      "); run a newer bai-manager");
  }
  for (auto const& m : migrations) {
    if (m.version <= current) continue;
    // Under a scope, checked again: managers that start together apply each step once.
    auto status = db.Transaction({"schema-migrations"}, [&](SqlExecutor& tx) -> Status {
      auto done = tx.Query("SELECT 1 FROM schema_migrations WHERE version = ?",
                           {static_cast<std::int64_t>(m.version)});
      if (!done.ok()) return done.status();
      if (!done->empty()) return Status();
      for (auto const& sql : m.statements) {
        auto r = tx.Exec(sql);
        if (!r.ok()) {
          return Status(r.status().code(), "migration " + std::to_string(m.version) + " (" +
                                               m.description + "): " + r.status().message());
        }
      }
      auto r = tx.Exec(
          "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, "
          "CURRENT_TIMESTAMP)",
          {static_cast<std::int64_t>(m.version), m.description});
      return r.ok() ? Status() : r.status();
    });
    if (!status.ok()) return status;
  }
  return {};
}

}  // namespace bai::server
