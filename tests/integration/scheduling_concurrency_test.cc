// SPDX-License-Identifier: Apache-2.0
// Two managers on one database: each has its own Database handle on the same file (as two
// processes do) and runs scheduling passes over one resource group while a burst of sessions
// arrives through both. No agent may ever be booked beyond its capacity.
//
// Run in both SQLite modes: the production one (BEGIN IMMEDIATE), and the one that behaves like
// PostgreSQL's READ COMMITTED, where only the passes' lock scope keeps them apart. Removing the
// scope from RunSchedulingPass makes the second case over-book agents (docs/adr/0009).
#include "bai/protocol/resource.h"

#include "libbai/protocol/wire_json.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/sessions.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace bai::manager {
namespace {

using Isolation = server::SqliteOptions::Isolation;

class TwoManagersTest : public ::testing::TestWithParam<Isolation> {};

// A session of `owner` in the default group and resource group, to be created.
SessionRecord QueuedSession(KeypairRecord const& owner, std::string const& group_id,
                            std::string name, std::string const& slots) {
  SessionRecord s;
  s.id = GenerateUuid();
  s.name = std::move(name);
  s.access_key = owner.identity.access_key;
  s.user_id = owner.identity.user_id;
  s.domain_name = "default";
  s.group_id = group_id;
  s.scaling_group = "default";
  s.type = "interactive";
  s.image = "python";
  s.architecture = "x86_64";
  EXPECT_TRUE(protocol::ParseSlotAssignment(slots, s.requested).ok());
  return s;
}

// One burst on a fresh database.
void Burst(Isolation isolation) {
  testing_util::TempDir dir;
  ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = testing_util::TestDatabase();
  auto state = OpenState(config);  // schema and the default domain, group and superadmin
  ASSERT_TRUE(state.ok()) << state.status().message();
  auto creds = testing_util::ReadEnvFile(state->bootstrap.credentials_file);
  auto admin = state->store->FindKeypair(creds["BACKEND_ACCESS_KEY"]);
  ASSERT_TRUE(admin.ok() && *admin);
  auto group = state->store->FindGroup("default", "default");
  ASSERT_TRUE(group.ok() && *group);
  // No keypair limit in the way: the agents' room is what is contended.
  ASSERT_TRUE(
      state->db->Exec("UPDATE keypair_resource_policies SET max_concurrent_sessions = 0").ok());
  // Room for forty one-CPU sessions in all.
  constexpr int kAgents = 10;
  for (int a = 0; a < kAgents; ++a) {
    std::string id = "agent-" + std::to_string(a);
    ASSERT_TRUE(state->db
                    ->Exec("INSERT INTO agents (id, scaling_group, status, available_slots, "
                           "first_contact, last_heartbeat) VALUES (?, 'default', 'ALIVE', "
                           "'{\"cpu\":\"4\",\"mem\":\"68719476736\"}', 'now', 'now')",
                           {id})
                    .ok());
  }

  server::SqliteOptions o;
  o.isolation = isolation;
  o.max_connections = 4;
  std::vector<std::unique_ptr<server::Database>> managers;
  for (int i = 0; i < 2; ++i) {
    // On PostgreSQL (the pg. run) the isolation is the server's READ COMMITTED either way.
    auto db = config.UsesPostgres() ? server::OpenPostgres(config.database, {4})
                                    : server::OpenSqlite(config.DatabasePath(), o);
    ASSERT_TRUE(db.ok()) << db.status().message();
    managers.push_back(std::move(*db));
  }

  constexpr int kPerManager = 100;
  std::atomic<int> failures{0};
  std::atomic<int> creating{2};
  std::vector<std::thread> threads;
  for (int m = 0; m < 2; ++m) {
    // Manager m: each create asks for a scheduling pass at once, as the API does; both managers
    // at the same time. Under READ COMMITTED two more pass loops per manager (other events
    // asking for passes) make the race likely. Under BEGIN IMMEDIATE every transaction queues
    // for SQLite's one write lock, and extra loops starved the creates past their 10 s busy
    // timeout in CI's ASan run, which is not what this test is about: there, none.
    int loops = isolation == Isolation::kReadCommittedForTests ? 2 : 0;
    for (int loop = 0; loop < loops; ++loop) {
      threads.emplace_back([&, m] {
        while (creating > 0) {
          if (!RunSchedulingPass(*managers[m], "default", std::chrono::system_clock::now()).ok()) {
            ++failures;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      });
    }
    threads.emplace_back([&, m] {
      SessionStore sessions(*managers[m]);
      auto pass = [&] {
        if (!RunSchedulingPass(*managers[m], "default", std::chrono::system_clock::now()).ok()) {
          ++failures;
        }
      };
      for (int i = 0; i < kPerManager; ++i) {
        auto s =
            QueuedSession(**admin, **group, "burst-" + std::to_string(m) + "-" + std::to_string(i),
                          "cpu=1,mem=1g");
        if (!sessions.Create(s).ok()) ++failures;
        pass();
      }
      --creating;
      pass();  // the periodic safety pass
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);

  auto booked = state->db->Query(
      std::string("SELECT agent_id, requested_slots FROM sessions WHERE status IN ") +
      kHoldingStatuses);
  ASSERT_TRUE(booked.ok());
  std::map<std::string, protocol::Decimal> cpu;
  for (auto const& r : *booked) {
    auto slots = internal::SlotsFromJson(*internal::ParseJson(r.Text(1)));
    ASSERT_TRUE(slots.ok());
    cpu[r.Text(0)] = *cpu[r.Text(0)].Add(slots->at("cpu"));
  }
  EXPECT_EQ(booked->size(), 4u * kAgents) << "every free CPU is used, and no more";
  for (auto const& [agent, used] : cpu) {
    EXPECT_LE(used, protocol::Decimal::FromInteger(4)) << agent << " is over-booked";
  }
}

TEST_P(TwoManagersTest, ABurstOfCreatesNeverOverBooksAnAgent) {
  // Without the scope this test failed in five runs out of six (five bursts each).
  for (int round = 0; round < 5 && !HasFailure(); ++round) Burst(GetParam());
}

// Hardening (hostile, 7): the pass over the database tells the scheduler when each placed
// session started, so an agent held for a starving session takes backfill that leaves it its
// room, and counts that backfill in the next pass.
TEST(SchedulingPassTest, AHeldAgentTakesOnlyBackfillThatLeavesTheHeadItsRoom) {
  testing_util::TempDir dir;
  ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = testing_util::TestDatabase();
  auto state = OpenState(config);
  ASSERT_TRUE(state.ok()) << state.status().message();
  auto creds = testing_util::ReadEnvFile(state->bootstrap.credentials_file);
  auto admin = state->store->FindKeypair(creds["BACKEND_ACCESS_KEY"]);
  ASSERT_TRUE(admin.ok() && *admin);
  auto group = state->store->FindGroup("default", "default");
  ASSERT_TRUE(group.ok() && *group);
  auto& db = *state->db;
  ASSERT_TRUE(db.Exec("UPDATE keypair_resource_policies SET max_concurrent_sessions = 0").ok());
  ASSERT_TRUE(db.Exec("INSERT INTO agents (id, scaling_group, status, available_slots, "
                      "first_contact, last_heartbeat) VALUES ('a1', 'default', 'ALIVE', "
                      "'{\"cpu\":\"8\",\"mem\":\"68719476736\"}', 'now', 'now')")
                  .ok());
  SessionStore sessions(db);
  auto create = [&](std::string const& name, std::string const& slots) {
    auto s = QueuedSession(**admin, **group, name, slots);
    EXPECT_TRUE(sessions.Create(s).ok());
    return s.id;
  };
  auto now = std::chrono::system_clock::now();
  auto pass = [&] { ASSERT_TRUE(RunSchedulingPass(db, "default", now).ok()); };
  auto status_of = [&](std::string const& id) {
    auto r = db.Query("SELECT status || ' ' || status_info FROM sessions WHERE id = ?", {id});
    return r.ok() && !r->empty() ? (*r)[0].Text(0) : std::string("?");
  };
  // An interactive session placed an hour ago holds 6 of the agent's 8 CPUs.
  auto old = create("old-one", "cpu=6,mem=1g");
  pass();
  ASSERT_EQ(status_of(old).substr(0, 9), "SCHEDULED");
  ASSERT_TRUE(db.Exec("UPDATE sessions SET status_history = ? WHERE id = ?",
                      {"{\"SCHEDULED\":\"" + IsoTime(now - std::chrono::hours(1)) + "\"}", old})
                  .ok());
  // A session for 7 CPUs has waited 30 minutes: past the 10-minute guarantee.
  auto head = create("head-one", "cpu=7,mem=1g");
  ASSERT_TRUE(db.Exec("UPDATE sessions SET created_at = ? WHERE id = ?",
                      {IsoTime(now - std::chrono::minutes(30)), head})
                  .ok());
  auto small0 = create("small-0", "cpu=1,mem=1g");
  auto small1 = create("small-1", "cpu=1,mem=1g");
  pass();
  EXPECT_THAT(status_of(head), ::testing::HasSubstr("agent a1 is held for it"));
  EXPECT_EQ(status_of(small0).substr(0, 9), "SCHEDULED") << "1 + 7 CPUs fit once old-one ends";
  EXPECT_THAT(status_of(small1), ::testing::HasSubstr("agent a1 (held for " + head + ")"));
  pass();  // small-0 now counts as backfill, read from its status history
  EXPECT_EQ(status_of(small1).substr(0, 7), "PENDING");
}

INSTANTIATE_TEST_SUITE_P(SqliteModes, TwoManagersTest,
                         ::testing::Values(Isolation::kSerializable,
                                           Isolation::kReadCommittedForTests),
                         [](auto const& param_info) {
                           return param_info.param == Isolation::kSerializable ? "Serializable"
                                                                               : "ReadCommitted";
                         });

}  // namespace
}  // namespace bai::manager
