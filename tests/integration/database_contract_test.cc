// SPDX-License-Identifier: Apache-2.0
// The Database contract (server-reference/common/db/database.h) on both backends: values and
// NULLs round-trip with their types, constraint failures are kAlreadyExists, a failed
// transaction leaves nothing, lock scopes keep read-modify-write transactions apart across
// connections, and the manager's migrations apply. PostgreSQL runs as a throwaway cluster.
#include "server-reference/common/db/database.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/state/copy_database.h"
#include "server-reference/manager/state/schema.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

namespace bai::server {
namespace {

// One PostgreSQL cluster per test process, stopped at its exit; each test gets a database of
// its own.
testing_util::ThrowawayPostgres& Cluster() {
  static testing_util::ThrowawayPostgres cluster;
  return cluster;
}

class DatabaseContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int next = 0;
    if (GetParam() == "sqlite") {
      auto db = OpenSqlite(dir_.path() + "/t.db", 4);
      ASSERT_TRUE(db.ok()) << db.status().message();
      db_ = std::move(*db);
      return;
    }
    ASSERT_TRUE(Cluster().error().empty()) << Cluster().error();
    std::string name = "contract" + std::to_string(++next);
    ASSERT_TRUE(Cluster().CreateDatabase(name)) << Cluster().error();
    auto db = OpenPostgres(Cluster().Url(name), {4});
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::move(*db);
  }

  testing_util::TempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_P(DatabaseContractTest, ValuesRoundTripWithTheirTypes) {
  EXPECT_EQ(db_->Backend(), GetParam());
  ASSERT_TRUE(db_->Exec("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, x REAL, s TEXT, "
                        "flag INTEGER NOT NULL DEFAULT 0)")
                  .ok());
  std::int64_t big = 5'000'000'000;  // INTEGER is 64-bit on both
  auto added = db_->Exec("INSERT INTO t (id, n, x, s, flag) VALUES (?, ?, ?, ?, ?)",
                         {std::string("a"), big, 2.5, std::string("it's ? \"q\""), SqlBool(true)});
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, 1);
  ASSERT_TRUE(db_->Exec("INSERT INTO t (id, n, x, s) VALUES (?, ?, ?, ?)",
                        {std::string("b"), nullptr, nullptr, nullptr})
                  .ok());
  auto rows = db_->Query("SELECT id, n, x, s, flag FROM t WHERE n = ? OR ? = '' ORDER BY id",
                         {big, std::string("")});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  auto& a = (*rows)[0];
  EXPECT_EQ(a.Text(0), "a");
  EXPECT_EQ(a.Int(1), big);
  EXPECT_EQ(a.Text(3), "it's ? \"q\"");
  EXPECT_TRUE(a.Bool(4));
  auto& b = (*rows)[1];
  EXPECT_TRUE(b.IsNull(1));
  EXPECT_TRUE(b.IsNull(3));
  EXPECT_FALSE(b.OptText(3).has_value());
  EXPECT_FALSE(b.Bool(4));
  auto sum = db_->Query("SELECT COUNT(*), COALESCE(MAX(n), 0) + ? FROM t", {std::int64_t{1}});
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_EQ((*sum)[0].Int(0), 2);
  EXPECT_EQ((*sum)[0].Int(1), big + 1);
  // Rows changed, as Exec counts them.
  auto changed = db_->Exec("UPDATE t SET s = ? WHERE flag = ?", {std::string("z"), SqlBool(false)});
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(*changed, 1);
}

TEST_P(DatabaseContractTest, ConstraintsAndFailedTransactionsLoseNothing) {
  ASSERT_TRUE(db_->Exec("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)").ok());
  ASSERT_TRUE(db_->Exec("INSERT INTO t (id, n) VALUES ('a', 1)").ok());
  auto dup = db_->Exec("INSERT INTO t (id, n) VALUES ('a', 2)");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status().message();
  EXPECT_TRUE(IsUniqueViolation(dup.status())) << dup.status().message();
  // A body that fails rolls back what it wrote; a statement that fails inside does too.
  auto failed = db_->Transaction([](SqlExecutor& tx) -> Status {
    if (auto r = tx.Exec("INSERT INTO t (id, n) VALUES ('b', 2)"); !r.ok()) return r.status();
    return Status(StatusCode::kFailedPrecondition, "changed my mind");
  });
  EXPECT_EQ(failed.code(), StatusCode::kFailedPrecondition);
  auto broken = db_->Transaction([](SqlExecutor& tx) -> Status {
    (void)tx.Exec("INSERT INTO t (id, n) VALUES ('c', 3)");
    auto r = tx.Exec("INSERT INTO t (id, n) VALUES ('a', 4)");
    return r.ok() ? Status() : r.status();
  });
  EXPECT_EQ(broken.code(), StatusCode::kAlreadyExists);
  // A body that ignores a failed statement and returns success: SQLite keeps what succeeded;
  // PostgreSQL has aborted the transaction, so the commit is refused, not silently rolled back.
  auto ignored = db_->Transaction([](SqlExecutor& tx) -> Status {
    (void)tx.Exec("INSERT INTO t (id, n) VALUES ('a', 5)");  // a duplicate, ignored
    (void)tx.Exec("INSERT INTO t (id, n) VALUES ('d', 6)");
    return Status();
  });
  if (GetParam() == "postgresql") {
    EXPECT_FALSE(ignored.ok());
  } else {
    EXPECT_TRUE(ignored.ok()) << ignored.message();
    ASSERT_TRUE(db_->Exec("DELETE FROM t WHERE id = 'd'").ok());
  }
  auto rows = db_->Query("SELECT id FROM t ORDER BY id");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].Text(0), "a");
  // The pool is still good after those: a SQL error is an answer, not a broken connection.
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(db_->Query("SELECT n FROM t").ok());
  auto wrong = db_->Query("SELECT no_such_column FROM t");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInternal);
}

// Four threads increment one counter 50 times each, reading it and writing it back in two
// statements: only the lock scope keeps two of them from reading the same value.
TEST_P(DatabaseContractTest, LockScopesKeepReadModifyWriteTransactionsApart) {
  ASSERT_TRUE(db_->Exec("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)").ok());
  ASSERT_TRUE(db_->Exec("INSERT INTO counter (id, n) VALUES (1, 0)").ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto s = db_->Transaction({"counter"}, [](SqlExecutor& tx) -> Status {
          auto rows = tx.Query("SELECT n FROM counter WHERE id = 1");
          if (!rows.ok()) return rows.status();
          auto w = tx.Exec("UPDATE counter SET n = ? WHERE id = 1", {(*rows)[0].Int(0) + 1});
          return w.ok() ? Status() : w.status();
        });
        if (!s.ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto rows = db_->Query("SELECT n FROM counter");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].Int(0), 200);
  // An identity column numbers rows an insert leaves it out of, as SQLite's rowid does.
  ASSERT_TRUE(db_->Exec("CREATE TABLE log (seq INTEGER PRIMARY KEY, what TEXT NOT NULL)").ok());
  ASSERT_TRUE(db_->Exec("INSERT INTO log (what) VALUES ('a')").ok());
  ASSERT_TRUE(db_->Exec("INSERT INTO log (what) VALUES ('b')").ok());
  rows = db_->Query("SELECT seq FROM log ORDER BY seq");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_LT((*rows)[0].Int(0), (*rows)[1].Int(0));
}

TEST_P(DatabaseContractTest, TheManagersMigrationsApplyOnceEvenFromTwoManagersAtOnce) {
  Status first, second;
  std::thread other([&] { second = Migrate(*db_, manager::Migrations()); });
  first = Migrate(*db_, manager::Migrations());
  other.join();
  ASSERT_TRUE(first.ok()) << first.message();
  ASSERT_TRUE(second.ok()) << second.message();
  auto rows = db_->Query("SELECT COUNT(*), MAX(version) FROM schema_migrations");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].Int(0), static_cast<std::int64_t>(manager::Migrations().size()));
  EXPECT_EQ((*rows)[0].Int(1), manager::Migrations().back().version);
  EXPECT_TRUE(Migrate(*db_, manager::Migrations()).ok());  // again: nothing to do
}

INSTANTIATE_TEST_SUITE_P(Backends, DatabaseContractTest, ::testing::Values("sqlite", "postgresql"),
                         [](::testing::TestParamInfo<std::string> const& p) { return p.param; });

// PostgreSQL restarted under the pool: the statement on a lost connection fails as retryable
// (kUnavailable), and the next one gets a new connection and succeeds; nothing committed is lost.
TEST(PostgresDatabaseTest, ARestartedServerCostsOneRetryableFailureAndNoData) {
  ASSERT_TRUE(Cluster().error().empty()) << Cluster().error();
  ASSERT_TRUE(Cluster().CreateDatabase("restart")) << Cluster().error();
  auto db = OpenPostgres(Cluster().Url("restart"), {2});
  ASSERT_TRUE(db.ok()) << db.status().message();
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (n INTEGER)").ok());
  ASSERT_TRUE((*db)->Exec("INSERT INTO t (n) VALUES (1)").ok());
  ASSERT_TRUE(Cluster().Restart()) << Cluster().error();
  int unavailable = 0;
  for (int i = 0; i < 3; ++i) {
    auto r = (*db)->Query("SELECT n FROM t");
    if (r.ok()) {
      EXPECT_EQ((*r)[0].Int(0), 1);
      break;
    }
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
    ++unavailable;
  }
  EXPECT_LE(unavailable, 1);
  EXPECT_TRUE((*db)->Query("SELECT n FROM t").ok());
  // A server that cannot be reached is refused at once, naming the problem.
  auto nowhere = OpenPostgres("postgresql:///nothing?host=/nonexistent&user=bai");
  ASSERT_FALSE(nowhere.ok());
  EXPECT_EQ(nowhere.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(nowhere.status().message().find("cannot connect to the database"), std::string::npos)
      << nowhere.status().message();
}

// bai-manager migrate: an installation made on SQLite (bootstrapped: domain, project, admin,
// keypair, policies; an event) moves to PostgreSQL with every row, events go on numbering
// after the copied ones, and a second copy into the same target is refused.
TEST(PostgresDatabaseTest, AnInstallationMovesFromSqliteWithNothingLost) {
  ASSERT_TRUE(Cluster().error().empty()) << Cluster().error();
  testing_util::TempDir dir;
  manager::ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  auto state = manager::OpenState(config);
  ASSERT_TRUE(state.ok()) << state.status().message();
  auto& src = *state->db;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(src.Exec("INSERT INTO events (name, session_id, session_name, access_key, "
                         "domain_name, group_id, created_at) VALUES ('session_started', 's', "
                         "'n', 'k', 'default', 'g', '2026-11-26T00:00:00Z')")
                    .ok());
  }
  ASSERT_TRUE(Cluster().CreateDatabase("moved")) << Cluster().error();
  auto dst = OpenPostgres(Cluster().Url("moved"));
  ASSERT_TRUE(dst.ok()) << dst.status().message();
  auto summary = manager::CopyDatabase(src, **dst);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_NE(summary->find("copied"), std::string::npos);
  for (char const* table : {"domains", "groups", "users", "keypairs", "keypair_resource_policies",
                            "scaling_groups", "events", "association_groups_users"}) {
    std::string count = std::string("SELECT COUNT(*) FROM ") + table;
    auto a = src.Query(count);
    auto b = (*dst)->Query(count);
    ASSERT_TRUE(a.ok() && b.ok()) << table;
    EXPECT_EQ((*a)[0].Int(0), (*b)[0].Int(0)) << table;
    if (std::string(table) != "events") {
      EXPECT_GT((*a)[0].Int(0), 0) << table;
    }
  }
  auto keys = (*dst)->Query("SELECT access_key, secret_key FROM keypairs ORDER BY access_key");
  auto keys_before = src.Query("SELECT access_key, secret_key FROM keypairs ORDER BY access_key");
  ASSERT_TRUE(keys.ok() && keys_before.ok());
  ASSERT_EQ(keys->size(), keys_before->size());
  EXPECT_EQ((*keys)[0].Text(1), (*keys_before)[0].Text(1));
  // Events go on after the copied ones.
  ASSERT_TRUE((*dst)
                  ->Exec("INSERT INTO events (name, session_id, session_name, access_key, "
                         "domain_name, group_id, created_at) VALUES ('session_started', 's', "
                         "'n', 'k', 'default', 'g', '2026-11-26T00:00:01Z')")
                  .ok());
  auto seqs = (*dst)->Query("SELECT COUNT(DISTINCT seq), MAX(seq) FROM events");
  ASSERT_TRUE(seqs.ok());
  EXPECT_EQ((*seqs)[0].Int(0), 4);
  EXPECT_EQ((*seqs)[0].Int(1), 4);
  auto again = manager::CopyDatabase(src, **dst);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("already holds rows"), std::string::npos);
}

}  // namespace
}  // namespace bai::server
