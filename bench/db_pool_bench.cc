// SPDX-License-Identifier: Apache-2.0
// SQLite's hot path through the manager's Database (the shared ConnectionPool, a cached
// statement, rows copied out): one primary-key read, from 1 and 2 threads, against the same
// read on a bare sqlite3 connection with its statement prepared once (the floor), in alternating
// rounds of the same run. Prints medians and the ratio.
// Usage: bai_db_pool_bench [--queries N] [--rounds R]
#include "server-reference/common/db/database.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per query over `threads` threads each doing `n` reads.
template <class Read>
double Timed(int threads, int n, Read read) {
  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < n; ++i) read(t, i);
    });
  }
  for (auto& t : ts) t.join();
  auto ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  return ns / (static_cast<double>(n) * threads);
}

}  // namespace

int main(int argc, char** argv) {
  int queries = 200000;
  int rounds = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--queries")) queries = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  char dir[] = "/tmp/bai-db-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  std::string path = std::string(dir) + "/bench.db";
  auto db = bai::server::OpenSqlite(path, 4);
  if (!db.ok()) {
    std::fprintf(stderr, "%s\n", db.status().message().c_str());
    return 1;
  }
  (void)(*db)->Exec("CREATE TABLE kv (id TEXT PRIMARY KEY, value TEXT NOT NULL)", {});
  for (int i = 0; i < 1000; ++i) {
    (void)(*db)->Exec("INSERT INTO kv VALUES (?, ?)",
                      {"key-" + std::to_string(i), std::string(200, 'v')});
  }
  std::string const sql = "SELECT id, value FROM kv WHERE id = ?";

  // The floor: one bare connection per thread, the statement prepared once.
  struct Bare {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
  };
  std::vector<Bare> bare(2);
  for (auto& b : bare) {
    sqlite3_open_v2(path.c_str(), &b.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    sqlite3_prepare_v3(b.db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &b.stmt, nullptr);
  }
  auto bare_read = [&](int t, int i) {
    auto& b = bare[t];
    std::string key = "key-" + std::to_string(i % 1000);
    sqlite3_bind_text(b.stmt, 1, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    while (sqlite3_step(b.stmt) == SQLITE_ROW) {
      std::string id(reinterpret_cast<char const*>(sqlite3_column_text(b.stmt, 0)));
      std::string value(reinterpret_cast<char const*>(sqlite3_column_text(b.stmt, 1)));
    }
    sqlite3_reset(b.stmt);
  };
  auto pooled_read = [&](int, int i) {
    auto rows = (*db)->Query(sql, {"key-" + std::to_string(i % 1000)});
    if (!rows.ok() || rows->size() != 1) std::abort();
  };

  std::printf("SQLite primary-key read, %d queries a thread, %d alternating rounds (medians)\n",
              queries, rounds);
  std::printf("  %-8s %14s %14s %8s\n", "threads", "Database ns", "bare ns", "ratio");
  for (int threads : {1, 2}) {
    std::vector<double> pooled, floor;
    for (int r = 0; r < rounds; ++r) {
      floor.push_back(Timed(threads, queries, bare_read));
      pooled.push_back(Timed(threads, queries, pooled_read));
    }
    double p = Median(pooled), f = Median(floor);
    std::printf("  %-8d %14.0f %14.0f %7.2fx\n", threads, p, f, p / f);
  }
  for (auto& b : bare) {
    sqlite3_finalize(b.stmt);
    sqlite3_close_v2(b.db);
  }
  db->reset();
  std::string cleanup = std::string("rm -rf ") + dir;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
