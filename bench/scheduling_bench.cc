// SPDX-License-Identifier: Apache-2.0
// What policy checks cost a scheduling pass (issue 24): a resource group with 10,000 pending
// sessions of 1,000 keypairs, scheduled by RunSchedulingPass over a real SQLite database, once
// with every keypair under a policy without limits and no domain or project limits (the
// baseline), once with each keypair under its own policy (concurrency and total slots) and the
// domain and the projects limited too. Same rows, same agents; passes after the first (which
// places what fits and writes every waiting session's reason) are timed, alternating the two
// databases; the figure is the ratio of the medians.
//
//   scheduling_bench [--sessions N] [--keypairs K] [--passes P]
//
// With --scale (issue 25, `make bench-scale`): the full pass, database included, over 10,000
// pending sessions and 1,000 agents (cpu=4 each) on SQLite and on PostgreSQL (--postgres URL, a
// new empty database), the same rows in each: the first pass (placing 4,000) and the median of
// the steady passes after it, alternating the databases; target: PostgreSQL < 1 s.
//
//   scheduling_bench --scale --postgres URL [--sessions N] [--agents A] [--passes P]
#include "server-reference/common/db/database.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/schema.h"
#include "server-reference/manager/state/store.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

using bai::Status;
using bai::server::SqlExecutor;
using bai::server::SqlValue;
using Clock = std::chrono::steady_clock;

struct Setup {
  int sessions = 10000;
  int keypairs = 1000;
  int agents = 10;
  int passes = 7;
};

bool Check(Status const& s, char const* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
  return false;
}

// A manager database with `k` users/keypairs, `n` pending sessions spread over them, and
// `s.agents` agents of cpu=4 (ten: 40 one-CPU sessions fit and the rest wait). `limited`:
// per-keypair policies and domain/project limits.
std::unique_ptr<bai::server::Database> Build(
    bai::StatusOr<std::unique_ptr<bai::server::Database>> db, std::string const& dir,
    Setup const& s, bool limited) {
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().message().c_str());
    return nullptr;
  }
  if (!Check(bai::server::Migrate(**db, bai::manager::Migrations()), "migrate")) return nullptr;
  bai::manager::Store store(**db);
  if (!bai::manager::Bootstrap(store, dir).ok()) return nullptr;
  auto ok = (*db)->Transaction([&](SqlExecutor& tx) -> Status {
    auto exec = [&](std::string const& sql, std::vector<SqlValue> p = {}) {
      auto r = tx.Exec(sql, std::move(p));
      return r.ok() ? Status() : r.status();
    };
    std::string now = "2026-01-01T00:00:00+00:00";
    std::vector<std::string> projects;
    for (int g = 0; g < 10; ++g) {
      std::string id = "g-" + std::to_string(g);
      projects.push_back(id);
      if (auto st = exec("INSERT INTO groups (id, name, domain_name, created_at, "
                         "total_resource_slots) VALUES (?, ?, 'default', ?, ?)",
                         {id, "p" + std::to_string(g), now,
                          limited ? std::string(R"({"cpu": "1000"})") : std::string("{}")});
          !st.ok()) {
        return st;
      }
    }
    if (limited) {
      if (auto st = exec("UPDATE domains SET total_resource_slots = '{\"cpu\": \"5000\"}'");
          !st.ok()) {
        return st;
      }
    }
    if (auto st = exec("UPDATE keypair_resource_policies SET max_concurrent_sessions = 0");
        !st.ok()) {
      return st;
    }
    for (int k = 0; k < s.keypairs; ++k) {
      std::string n = std::to_string(k);
      std::string policy = limited ? "kp-" + n : "default";
      if (limited) {
        if (auto st = exec("INSERT INTO keypair_resource_policies (name, total_resource_slots, "
                           "max_concurrent_sessions, created_at) VALUES (?, ?, 3, ?)",
                           {policy, std::string(R"({"cpu": "8", "mem": "68719476736"})"), now});
            !st.ok()) {
          return st;
        }
      }
      if (auto st = exec("INSERT INTO users (uuid, username, email, password_hash, domain_name, "
                         "created_at) VALUES (?, ?, ?, 'x', 'default', ?)",
                         {"u-" + n, "user" + n, "user" + n + "@bench", now});
          !st.ok()) {
        return st;
      }
      if (auto st = exec("INSERT INTO keypairs (access_key, secret_key, user_id, "
                         "resource_policy, created_at) VALUES (?, 's', ?, ?, ?)",
                         {"AK" + n, "u-" + n, policy, now});
          !st.ok()) {
        return st;
      }
    }
    for (int a = 0; a < s.agents; ++a) {
      if (auto st = exec("INSERT INTO agents (id, scaling_group, status, available_slots, "
                         "first_contact, last_heartbeat) VALUES (?, 'default', 'ALIVE', "
                         "'{\"cpu\": \"4\", \"mem\": \"68719476736\"}', ?, ?)",
                         {"agent-" + std::to_string(a), now, now});
          !st.ok()) {
        return st;
      }
    }
    for (int i = 0; i < s.sessions; ++i) {
      int k = i % s.keypairs;
      if (auto st = exec("INSERT INTO sessions (id, seq, name, access_key, user_id, domain_name, "
                         "group_id, scaling_group, type, image, architecture, status, "
                         "requested_slots, created_at) VALUES (?, ?, ?, ?, ?, 'default', ?, "
                         "'default', 'batch', 'python', 'x86_64', 'PENDING', "
                         "'{\"cpu\": \"1\", \"mem\": \"1073741824\"}', ?)",
                         {"s-" + std::to_string(i), std::int64_t{i + 1}, "job" + std::to_string(i),
                          "AK" + std::to_string(k), "u-" + std::to_string(k),
                          projects[static_cast<std::size_t>(k) % projects.size()], now});
          !st.ok()) {
        return st;
      }
    }
    return Status();
  });
  if (!Check(ok, "rows")) return nullptr;
  return std::move(*db);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times `passes` scheduling passes on each of two databases, alternating, after a first pass
// on each (it places what fits and writes every waiting session's reason: not the steady
// state, printed apart). The medians in `median[0]` and `median[1]`; false when a pass failed.
bool TimePasses(std::array<bai::server::Database*, 2> dbs, std::array<char const*, 2> names,
                int passes, std::array<double, 2>& median) {
  auto now = std::chrono::system_clock::now();
  std::array<std::vector<double>, 2> times;
  for (int pass = 0; pass <= passes; ++pass) {
    for (std::size_t which : {0u, 1u}) {
      auto start = Clock::now();
      auto placed = bai::manager::RunSchedulingPass(*dbs[which], "default", now);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!placed.ok()) {
        std::fprintf(stderr, "pass: %s\n", placed.status().message().c_str());
        return false;
      }
      if (pass == 0) {
        std::printf("first pass  %-10s placed %d in %8.1f ms\n", names[which], *placed, ms);
      } else {
        times[which].push_back(ms);
      }
    }
  }
  for (std::size_t which : {0u, 1u}) median[which] = Median(times[which]);
  return true;
}

// --scale: the same queue and agents on SQLite and PostgreSQL, full passes timed on each.
int Scale(Setup s, std::string const& postgres, std::filesystem::path const& root) {
  if (postgres.empty()) {
    std::fprintf(stderr, "--scale needs --postgres URL (bench/scale.sh starts a cluster)\n");
    return 2;
  }
  auto build_start = Clock::now();
  std::filesystem::create_directories(root / "sqlite");
  auto lite = Build(bai::server::OpenSqlite((root / "sqlite" / "manager.db").string()),
                    (root / "sqlite").string(), s, false);
  std::filesystem::create_directories(root / "pg");
  auto pg = Build(bai::server::OpenPostgres(postgres), (root / "pg").string(), s, false);
  if (!lite || !pg) return 1;
  std::printf("built %d pending sessions, %d agents, %d keypairs on each (%.1f s)\n", s.sessions,
              s.agents, s.keypairs,
              std::chrono::duration<double>(Clock::now() - build_start).count());
  std::array<double, 2> median{};
  if (!TimePasses({lite.get(), pg.get()}, {"sqlite", "postgresql"}, s.passes, median)) return 1;
  double a = median[0];
  double b = median[1];
  std::printf("full scheduling pass, %d pending x %d agents, database included (median of %d)\n",
              s.sessions, s.agents, s.passes);
  std::printf("  sqlite      %8.1f ms\n  postgresql  %8.1f ms  (target < 1000 ms: %s)\n", a, b,
              b < 1000 ? "met" : "NOT met");
  std::printf("  ratio postgresql / sqlite %.2fx\n", b / a);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  bool scale = false;
  std::string postgres;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--scale") {
      scale = true;
      s.agents = 1000;
      s.passes = 5;
      continue;
    }
    if (i + 1 >= argc) break;
    std::string text = argv[++i];
    int value = std::atoi(text.c_str());
    if (flag == "--sessions") s.sessions = value;
    if (flag == "--keypairs") s.keypairs = value;
    if (flag == "--agents") s.agents = value;
    if (flag == "--passes") s.passes = value;
    if (flag == "--postgres") postgres = text;
  }
  auto root =
      std::filesystem::temp_directory_path() / ("bai-sched-bench-" + std::to_string(::getpid()));
  if (scale) {
    int rc = Scale(s, postgres, root);
    std::filesystem::remove_all(root);
    return rc;
  }
  std::filesystem::create_directories(root / "plain");
  std::filesystem::create_directories(root / "limited");
  auto plain = Build(bai::server::OpenSqlite((root / "plain" / "manager.db").string()),
                     (root / "plain").string(), s, false);
  auto limited = Build(bai::server::OpenSqlite((root / "limited" / "manager.db").string()),
                       (root / "limited").string(), s, true);
  if (!plain || !limited) return 1;
  std::array<double, 2> median{};
  if (!TimePasses({plain.get(), limited.get()}, {"plain", "limited"}, s.passes, median)) {
    return 1;
  }
  double a = median[0];
  double b = median[1];
  std::printf("scheduling pass, %d pending sessions, %d keypairs (median of %d passes)\n",
              s.sessions, s.keypairs, s.passes);
  std::printf("  no limits (baseline)        %8.1f ms\n", a);
  std::printf("  keypair, domain and project %8.1f ms\n", b);
  std::printf("  ratio %.2fx (policy checks cost %+.0f%%; target <= +20%%)\n", b / a,
              (b / a - 1) * 100);
  std::filesystem::remove_all(root);
  return 0;
}
