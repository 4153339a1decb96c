// SPDX-License-Identifier: Apache-2.0
// Resource policies that hold, on a whole in-process cluster (manager and a dummy agent): each
// limit is filled, and the next request is refused or waits with the limit named (keypair
// concurrency and slots, pending count, containers per session, domain and project slots),
// and sessions past their idle_timeout or max_session_lifetime end saying why.
#include "bai/client.h"

#include "tests/testing_util/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class PolicyTest : public testing_util::LocalCluster {
 protected:
  json Mutate(std::string const& text) {
    auto r = Send("POST", "/admin/gql", {{"query", "mutation { " + text + " }"}});
    auto j = json::parse(r.body, nullptr, false);
    return j["data"].begin().value();
  }

  // Puts the superadmin's keypair under a new policy with `props` (GraphQL input text).
  void UsePolicy(std::string const& props) {
    ASSERT_EQ(Mutate("create_keypair_resource_policy(name: \"p\", props: {" + props +
                     "}) { ok msg }")["ok"],
              true);
    ASSERT_EQ(Mutate("modify_keypair(access_key: \"" + env_["BACKEND_ACCESS_KEY"] +
                     "\", props: {resource_policy: \"p\"}) { ok msg }")["ok"],
              true);
  }

  ApiResponse Create(std::string const& name, json extra = json::object()) {
    json body = {{"name", name},
                 {"image", "python"},
                 {"enqueueOnly", true},
                 {"type", "interactive"},
                 {"config", {{"resources", {{"cpu", 1}, {"mem", "1g"}}}}}};
    body.update(extra);
    return Send("POST", "/session", body);
  }

  // A waiting session once the scheduler has said why it waits (its status_info), or its last
  // answer after 10 s.
  json WaitForReason(std::string const& name) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    json s = Session(name);
    while (s.value("statusInfo", "").empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      s = Session(name);
    }
    return s;
  }

  std::unique_ptr<Client> root_;
};

TEST_F(PolicyTest, ConcurrencyPendingCountAndContainersAreHeld) {
  UsePolicy("max_concurrent_sessions: 1, max_pending_session_count: 1");
  ASSERT_EQ(Create("first").status, 201);
  WaitFor("first", "RUNNING");
  ASSERT_EQ(Create("second").status, 201);
  auto second = Session("second");
  EXPECT_EQ(second["status"], "PENDING");
  WaitFor("second", "PENDING");
  // "why pending" names the limit.
  auto info = WaitForReason("second");
  EXPECT_EQ(info.value("statusInfo", ""), "waiting: the keypair already runs 1 sessions (limit 1)")
      << info.dump();
  // One waits: the next is refused at once, naming the limit.
  auto third = Create("third");
  EXPECT_EQ(third.status, 412) << third.body;
  EXPECT_THAT(third.body, HasSubstr("max_pending_session_count"));
  // More containers than the policy allows (1 by default).
  Mutate(R"(modify_keypair_resource_policy(name: "p", props: {max_pending_session_count: 5}) {
              ok })");
  auto cluster = Create("cluster", {{"clusterSize", 2}});
  EXPECT_EQ(cluster.status, 412) << cluster.body;
  EXPECT_THAT(cluster.body, HasSubstr("max_containers_per_session"));
  // The first ends: the second starts.
  EXPECT_EQ(Send("DELETE", "/session/first").status / 100, 2);
  WaitFor("second", "RUNNING");
}

TEST_F(PolicyTest, KeypairDomainAndProjectSlotsAreHeld) {
  UsePolicy(R"(total_resource_slots: "{\"cpu\": 2}", max_concurrent_sessions: 10)");
  auto k1 = Create("kp-one", {{"config", {{"resources", {{"cpu", 2}, {"mem", "1g"}}}}}});
  ASSERT_EQ(k1.status, 201) << k1.body;
  WaitFor("kp-one", "RUNNING");
  ASSERT_EQ(Create("kp-two").status, 201);
  auto k2 = WaitForReason("kp-two");
  EXPECT_EQ(k2["status"], "PENDING");
  EXPECT_EQ(k2.value("statusInfo", ""),
            "waiting: keypair limit cpu=2 (using cpu=2, needs cpu=1 more)");
  EXPECT_EQ(Send("DELETE", "/session/kp-two").status / 100, 2);
  EXPECT_EQ(Send("DELETE", "/session/kp-one").status / 100, 2);
  WaitFor("kp-one", "TERMINATED");

  // The domain's limit, then the project's.
  ASSERT_EQ(
      Mutate(R"(modify_domain(name: "default", props: {total_resource_slots: "{\"mem\": \"2g\"}"}) {
                        ok })")["ok"],
      true);
  ASSERT_EQ(Create("dom-one", {{"config", {{"resources", {{"cpu", 1}, {"mem", "2g"}}}}}}).status,
            201);
  WaitFor("dom-one", "RUNNING");
  ASSERT_EQ(Create("dom-two").status, 201);
  auto d2 = WaitForReason("dom-two");
  EXPECT_EQ(d2.value("statusInfo", ""),
            "waiting: domain default limit mem=2g (using mem=2g, needs mem=1g more)");
  EXPECT_EQ(Send("DELETE", "/session/dom-two").status / 100, 2);
  EXPECT_EQ(Send("DELETE", "/session/dom-one").status / 100, 2);
  WaitFor("dom-one", "TERMINATED");
  Mutate(R"(modify_domain(name: "default", props: {total_resource_slots: "{}"}) { ok })");
  auto& db = manager_->store().db();
  ASSERT_TRUE(db.Exec("UPDATE groups SET total_resource_slots = '{\"cpu\": \"1\"}' WHERE "
                      "domain_name = 'default' AND name = 'default'")
                  .ok());
  ASSERT_EQ(Create("proj-one").status, 201);
  WaitFor("proj-one", "RUNNING");
  ASSERT_EQ(Create("proj-two").status, 201);
  auto g2 = WaitForReason("proj-two");
  EXPECT_EQ(g2.value("statusInfo", ""),
            "waiting: project limit cpu=1 (using cpu=1, needs cpu=1 more)");
}

TEST_F(PolicyTest, IdleSessionsEndAndActiveOnesRunOn) {
  UsePolicy("idle_timeout: 4, max_concurrent_sessions: 10");
  ASSERT_EQ(Create("idle").status, 201);
  ASSERT_EQ(Create("busy").status, 201);
  WaitFor("idle", "RUNNING");
  WaitFor("busy", "RUNNING");
  // "busy" executes code every half second (well inside the timeout, even on a slow
  // sanitizer build); "idle" does nothing.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(7);
  while (std::chrono::steady_clock::now() < until) {
    Send("POST", "/session/busy",
         {{"mode", "query"}, {"runId", "r1"}, {"code", "print(1)"}, {"options", json::object()}});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  auto idle = WaitFor("idle", "TERMINATED", std::chrono::seconds(10));
  EXPECT_EQ(idle.value("statusInfo", ""), "idle-timeout") << idle.dump();
  EXPECT_EQ(Session("busy")["status"], "RUNNING");
}

TEST_F(PolicyTest, SessionsEndAtTheirMaximumLifetime) {
  UsePolicy("max_session_lifetime: 2, max_concurrent_sessions: 10");
  ASSERT_EQ(Create("short").status, 201);
  WaitFor("short", "RUNNING");
  auto ended = WaitFor("short", "TERMINATED", std::chrono::seconds(10));
  EXPECT_EQ(ended.value("statusInfo", ""), "max-session-lifetime") << ended.dump();
}

}  // namespace
}  // namespace bai::manager

namespace bai::manager {
namespace {

TEST_F(PolicyTest, AnImageAliasStandsForItsImage) {
  EXPECT_EQ(Mutate(R"(alias_image(alias: "py3", target: "python") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  ASSERT_EQ(Create("aliased", {{"image", "py3"}}).status, 201);
  EXPECT_EQ(Session("aliased")["image"], "python");
  EXPECT_EQ(Mutate(R"(dealias_image(alias: "py3") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Mutate(R"(dealias_image(alias: "py3") { ok msg })")["msg"], "no matching dealiasimage");
}

}  // namespace
}  // namespace bai::manager
