// SPDX-License-Identifier: Apache-2.0
// Faults of the control plane (issue "Beyond one machine"): PostgreSQL restarted under a load of
// session creates. While it is away requests fail with a retryable 503 (never a 500), they
// succeed again once it is back, and no create that was acknowledged is lost.
#include "bai/client.h"

#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace bai::manager {
namespace {

using std::chrono::milliseconds;

// A throwaway PostgreSQL cluster of its own per test (one is restarted) and a manager
// configuration on a new database there.
class PostgresFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pg_.error().empty()) << pg_.error();
    ASSERT_TRUE(pg_.CreateDatabase("fault")) << pg_.error();
    config_.data_dir = dir_.path() + "/data";
    config_.database = pg_.Url("fault");
    config_.listen_port = 0;
  }

  // The superadmin's client of the manager on `port`, one attempt per request (every answer
  // as the server gave it).
  static Client SuperadminAt(std::string const& port, std::map<std::string, std::string>& creds) {
    Options o;
    o.endpoints = {"http://127.0.0.1:" + port};
    o.access_key = creds["BACKEND_ACCESS_KEY"];
    o.secret_key = creds["BACKEND_SECRET_KEY"];
    o.retry.max_attempts = 1;
    return *Client::Create(o);
  }

  testing_util::ThrowawayPostgres pg_;
  testing_util::TempDir dir_;
  ManagerConfig config_;
};

TEST_F(PostgresFaultTest, ARestartUnderLoadFailsRetryablyAndLosesNoAcknowledgedCreate) {
  auto manager = Manager::Start(config_);
  ASSERT_TRUE(manager.ok()) << manager.status().message();
  auto creds = testing_util::ReadEnvFile((*manager)->bootstrap().credentials_file);
  auto client = SuperadminAt(std::to_string((*manager)->port()), creds);

  std::mutex mu;
  std::map<int, int> answers;  // HTTP status → how many
  std::vector<std::string> acknowledged;
  std::atomic<bool> stop{false};
  std::thread load([&] {
    for (int i = 0; !stop; ++i) {
      std::string name = "load-" + std::to_string(i);
      ApiRequest r("POST", "/session");
      r.body = nlohmann::json{{"image", "python"}, {"name", name}, {"enqueueOnly", true}}.dump();
      auto res = client.Send(r);
      int status = res.ok() ? res->status : 0;
      std::lock_guard<std::mutex> lock(mu);
      ++answers[status];
      if (status == 201) acknowledged.push_back(name);
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_TRUE(pg_.Restart()) << pg_.error();
  std::this_thread::sleep_for(milliseconds(2000));
  stop = true;
  load.join();

  std::string seen;
  for (auto const& [status, n] : answers)
    seen += " " + std::to_string(status) + "×" + std::to_string(n);
  EXPECT_EQ(answers.count(500), 0u) << "answers:" << seen;
  for (auto const& [status, n] : answers) {
    EXPECT_TRUE(status == 201 || status == 503) << "answers:" << seen;
  }
  // Creates succeed again once the database is back (asked until one does, for up to 30 s:
  // how long the restart takes is the machine's business, not this test's).
  bool again = false;
  for (int i = 0; i < 300 && !again; ++i) {
    ApiRequest r("POST", "/session");
    r.body = nlohmann::json{
        {"image", "python"},
        {"name", "after-" + std::to_string(i)},
        {"enqueueOnly",
         true}}.dump();
    auto res = client.Send(r);
    again = res.ok() && res->status == 201;
    if (res.ok() && res->status != 201) {
      EXPECT_EQ(res->status, 503) << "after the restart: " << res->body;
    }
    if (!again) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(again) << "no create succeeded within 30 s of the restart; answers:" << seen;
  // Every acknowledged create is in the database.
  auto& db = (*manager)->store().db();
  for (auto const& name : acknowledged) {
    auto row = db.Query("SELECT id FROM sessions WHERE name = ?", {name});
    ASSERT_TRUE(row.ok()) << row.status().message();
    EXPECT_EQ(row->size(), 1u) << name << " was acknowledged and is missing";
  }
  RecordProperty("answers", seen);
}

}  // namespace
}  // namespace bai::manager

namespace bai::manager {
namespace {

// kill -9 of a manager while it runs a scheduling pass over 1,000 pending sessions (a create
// asks for the pass; the kill lands once the pass holds its scope's advisory lock; three
// times), then another manager takes over: its passes place what fits, no agent is booked past
// its capacity, no session is lost or half-placed.
// The scheduling scope's advisory lock is held (a pass runs) somewhere now.
bool PassRuns(server::Database& db) {
  auto held = db.Query(
      "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
      "((classid::bigint << 32) | objid::bigint) = hashtextextended('scheduling:default', 0)");
  return held.ok() && (*held)[0].Int(0) > 0;
}

// 1,000 one-CPU sessions PENDING and 100 agents of 4 CPUs (room for 400), written straight to
// the database (no event tells a manager), with the superadmin's keys.
class KilledPassTest : public PostgresFaultTest {
 protected:
  static constexpr int kAgents = 100, kPending = 1000;

  void SetUp() override {
    PostgresFaultTest::SetUp();
    auto state = OpenState(config_);  // schema, bootstrap
    ASSERT_TRUE(state.ok()) << state.status().message();
    state_ = std::move(*state);
    creds_ = testing_util::ReadEnvFile(state_.bootstrap.credentials_file);
    ASSERT_TRUE(db().Exec("UPDATE keypair_resource_policies SET max_concurrent_sessions = 0").ok());
    std::string now = IsoTime(std::chrono::system_clock::now());
    auto rows = db().Transaction([&](server::SqlExecutor& tx) -> Status {
      for (int a = 0; a < kAgents; ++a) {
        auto r = tx.Exec(
            "INSERT INTO agents (id, scaling_group, status, available_slots, "
            "first_contact, last_heartbeat) VALUES (?, 'default', 'ALIVE', "
            "'{\"cpu\": \"4\", \"mem\": \"68719476736\"}', ?, ?)",
            {"agent-" + std::to_string(a), now, now});
        if (!r.ok()) return r.status();
      }
      return Status();
    });
    ASSERT_TRUE(rows.ok()) << rows.message();
    Queue();
  }

  server::Database& db() { return *state_.db; }

  // (Again) 1,000 PENDING sessions and nothing placed.
  void Queue() {
    std::string ak = creds_["BACKEND_ACCESS_KEY"];
    auto owner = db().Query(
        "SELECT k.user_id, g.id FROM keypairs k, groups g WHERE k.access_key = ? "
        "AND g.name = 'default'",
        {ak});
    ASSERT_TRUE(owner.ok() && owner->size() == 1);
    std::string user = (*owner)[0].Text(0), group = (*owner)[0].Text(1);
    std::string now = IsoTime(std::chrono::system_clock::now());
    auto rows = db().Transaction([&](server::SqlExecutor& tx) -> Status {
      if (auto r = tx.Exec("DELETE FROM sessions", {}); !r.ok()) return r.status();
      for (int i = 0; i < kPending; ++i) {
        auto r = tx.Exec(
            "INSERT INTO sessions (id, seq, name, access_key, user_id, domain_name, group_id, "
            "scaling_group, type, image, architecture, status, requested_slots, created_at) "
            "VALUES (?, ?, ?, ?, ?, 'default', ?, 'default', 'batch', 'python', 'x86_64', "
            "'PENDING', '{\"cpu\": \"1\", \"mem\": \"1073741824\"}', ?)",
            {"s-" + std::to_string(i), std::int64_t{i + 1}, "job" + std::to_string(i), ak, user,
             group, now});
        if (!r.ok()) return r.status();
      }
      return Status();
    });
    ASSERT_TRUE(rows.ok()) << rows.message();
    KeepAgentsAlive();
  }

  // The agents are rows only: a running manager takes them for LOST once they have been silent
  // past its heartbeat timeout (15 s), so each round and takeover starts with them fresh.
  void KeepAgentsAlive() {
    auto r = db().Exec("UPDATE agents SET status = 'ALIVE', lost_at = NULL, last_heartbeat = ?",
                       {IsoTime(std::chrono::system_clock::now())});
    ASSERT_TRUE(r.ok()) << r.status().message();
  }

  std::int64_t Scheduled() {
    auto n = db().Query("SELECT COUNT(*) FROM sessions WHERE status = 'SCHEDULED'");
    return n.ok() ? (*n)[0].Int(0) : -1;
  }

  // No agent holds more than its 4 CPUs; every session is PENDING or SCHEDULED on one agent.
  void Check(char const* when) {
    auto over = db().Query(
        "SELECT agent_id, COUNT(*) FROM sessions WHERE status = 'SCHEDULED' "
        "GROUP BY agent_id HAVING COUNT(*) > 4");
    ASSERT_TRUE(over.ok()) << over.status().message();
    EXPECT_TRUE(over->empty()) << when << ": agent " << (*over)[0].Text(0) << " holds "
                               << (*over)[0].Int(1) << " one-CPU sessions";
    auto odd = db().Query(
        "SELECT COUNT(*) FROM sessions WHERE NOT ((status = 'PENDING' AND "
        "agent_id IS NULL) OR (status = 'SCHEDULED' AND agent_id IS NOT NULL))");
    ASSERT_TRUE(odd.ok());
    EXPECT_EQ((*odd)[0].Int(0), 0) << when << ": sessions half-placed";
  }

  // A manager process asked for a pass by a create, killed (SIGKILL) once the pass holds its
  // resource group's scope (ADR 9: an advisory lock), that is while it runs. Whether the
  // pass was seen running before the kill.
  bool KillDuringAPass(int round) {
    testing_util::BackgroundProcess a({testing_util::BinPath("bai-manager"), "--data-dir",
                                       config_.data_dir, "--database", config_.database, "--listen",
                                       "127.0.0.1:0"});
    auto line = a.WaitForLine("listening");
    EXPECT_FALSE(line.empty());
    auto colon = line.rfind(':');
    std::string port =
        line.substr(colon + 1, line.find_first_not_of("0123456789", colon + 1) - colon - 1);
    auto client = SuperadminAt(port, creds_);
    std::thread create([&client, round] {
      ApiRequest r("POST", "/session");
      r.body = nlohmann::json{{"image", "python"},
                              {"name", "trigger-" + std::to_string(round)},
                              {"enqueueOnly", true},
                              {"resources", {{"cpu", "1"}}}}
                   .dump();
      (void)client.Send(r);
    });
    bool in_pass = false;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!in_pass && std::chrono::steady_clock::now() < until) {
      in_pass = PassRuns(db());
      if (!in_pass) std::this_thread::sleep_for(milliseconds(1));
    }
    a.Stop(SIGKILL);
    create.join();
    return in_pass;
  }

  OpenedState state_;
  std::map<std::string, std::string> creds_;
};

TEST_F(KilledPassTest, AManagerKilledDuringAPassLeavesNothingHalfDone) {
  std::string after_kills;
  for (int round = 0; round < 3; ++round) {
    EXPECT_TRUE(KillDuringAPass(round)) << "no pass was seen running (round " << round << ")";
    Check("after a kill");
    // 0 (the pass died with its transaction) or 400 (it committed first): never in between.
    auto placed = Scheduled();
    after_kills += " " + std::to_string(placed);
    EXPECT_TRUE(placed == 0 || placed == 4 * kAgents) << "a pass committed in part: " << placed;
  }
  RecordProperty("scheduled_after_each_kill", after_kills);

  // Another manager takes over: its passes place what fits (400 of them).
  KeepAgentsAlive();
  auto b = Manager::Start(config_);
  ASSERT_TRUE(b.ok()) << b.status().message();
  for (int i = 0; i < 200 && Scheduled() < 4 * kAgents; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(Scheduled(), 4 * kAgents);
  Check("after the takeover");
  auto total = db().Query("SELECT COUNT(*) FROM sessions WHERE name LIKE 'job%'");
  ASSERT_TRUE(total.ok());
  EXPECT_EQ((*total)[0].Int(0), kPending) << "no session lost";
}

// The failover target, measured (not asserted beyond a generous bound): a manager that
// runs all along resumes scheduling when the one whose pass holds the scope dies. Its next pass
// (the 5 s safety pass, or one already waiting on the lock) places the queue. A round where the
// survivor placed the queue before the kill measures nothing and is run again.
TEST_F(KilledPassTest, AManagerRunningAlongResumesSchedulingWhenTheSchedulingOneDies) {
  auto survivor = Manager::Start(config_);
  ASSERT_TRUE(survivor.ok()) << survivor.status().message();
  std::string began, placed;  // seconds after each kill
  int measured = 0;
  for (int round = 0; round < 8 && measured < 3; ++round) {
    Queue();
    bool in_pass = KillDuringAPass(round);
    auto killed = std::chrono::steady_clock::now();
    if (!in_pass || Scheduled() != 0) continue;  // not a pass of the killed one's, or done
    auto since = [&killed] {
      return std::to_string(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
    };
    // The killed pass's lock goes with its connection; the survivor's pass takes it next.
    bool freed = false, taken = false;
    for (int i = 0; i < 3000 && Scheduled() < 4 * kAgents; ++i) {
      bool held = PassRuns(db());
      freed = freed || !held;
      if (freed && held && !taken) {
        taken = true;
        began += " " + since();
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_EQ(Scheduled(), 4 * kAgents)
        << "the survivor did not place the queue within 30 s (round " << round << ")";
    placed += " " + since();
    ++measured;
    Check("after the survivor's pass");
  }
  ASSERT_GT(measured, 0) << "no round killed a pass before the survivor's ran";
  std::cout << "after a kill, the survivor's pass began at (s):" << began
            << "; the queue was placed at (s):" << placed << "\n";
  RecordProperty("survivor_pass_began_seconds", began);
  RecordProperty("queue_placed_seconds", placed);
}

}  // namespace
}  // namespace bai::manager
