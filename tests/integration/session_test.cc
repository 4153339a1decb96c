// SPDX-License-Identifier: Apache-2.0
// Session REST, scheduling and events against an in-process bai-manager. Agents arrive with the
// agent issue; here an agent row is registered directly in the database where a placement is
// needed.
#include "bai/client.h"
#include "bai/protocol/signing.h"

#include "server-reference/manager/manager.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::TempDir;

class SessionTest : public testing_util::ManagerFixture {
 protected:
  json Create(json body) {
    body["enqueueOnly"] = body.value("enqueueOnly", true);
    auto r = Call("POST", "/session", body);
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body, nullptr, false);
  }

  void AddAgent(std::string const& id, std::string const& slots) {
    auto r = manager_->store().db().Exec(
        "INSERT INTO agents (id, scaling_group, status, available_slots, first_contact, "
        "last_heartbeat) VALUES (?, 'default', 'ALIVE', ?, ?, ?)",
        {id, slots, NowIso(), NowIso()});
    ASSERT_TRUE(r.ok()) << r.status().message();
  }

  std::string Signed(std::string const& target) {
    std::string host = "127.0.0.1:" + std::to_string(manager_->port());
    protocol::SigningInput in;
    in.method = "GET";
    in.request_target = target;
    in.date = protocol::FormatRequestDate(std::chrono::system_clock::now());
    in.host = host;
    in.api_version = "v8.20240915";
    auto auth = protocol::AuthorizationHeaderValue(access_key_, *protocol::Sign(in, secret_key_),
                                                   protocol::HashAlgorithm::kSha256);
    return "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nDate: " + in.date +
           "\r\nX-BackendAI-Version: v8.20240915\r\nAuthorization: " + auth + "\r\n\r\n";
  }

  // Waits until exactly `n` event streams are subscribed.
  void WaitForStreams(std::size_t n) {
    for (int i = 0; i < 500 && manager_->events().StreamCount() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(manager_->events().StreamCount(), n);
  }
};

TEST_F(SessionTest, EnqueueGetMatchAndHistory) {
  auto created = Create({{"name", "train-job"},
                         {"image", "python"},
                         {"config", {{"resources", {{"cpu", 2}, {"mem", "2g"}}}}}});
  EXPECT_EQ(created["status"], "PENDING");
  EXPECT_EQ(created["created"], true);
  std::string id = created["sessionId"];

  for (std::string ref : {id, std::string("train-job"), std::string("train"), id.substr(0, 6)}) {
    auto info = Call("GET", "/session/" + ref);
    ASSERT_EQ(info.status, 200) << ref << ": " << info.body;
    auto j = json::parse(info.body);
    EXPECT_EQ(j["sessionId"], id);
    EXPECT_EQ(j["status"], "PENDING");
    EXPECT_EQ(j["requestedSlots"], json({{"cpu", "2"}, {"mem", "2147483648"}}));
    EXPECT_THAT(j["statusInfo"].get<std::string>(), HasSubstr("no schedulable x86_64 agent"));
  }
  auto history = json::parse(Call("GET", "/session/train-job/status-history").body);
  EXPECT_TRUE(history["result"].contains("PENDING"));
  auto match = json::parse(Call("GET", "/session/_/match?id=train-job").body);
  ASSERT_EQ(match["matches"].size(), 1u);
  EXPECT_EQ(match["matches"][0]["id"], id);
}

TEST_F(SessionTest, AmbiguousPrefixesAndUnknownSessions) {
  Create({{"name", "exp-alpha"}, {"image", "python"}});
  Create({{"name", "exp-beta"}, {"image", "python"}});
  auto r = Call("GET", "/session/exp");
  EXPECT_EQ(r.status, 404);
  auto j = json::parse(r.body);
  EXPECT_EQ(j["type"], "https://api.backend.ai/probs/too-many-sessions-matched");
  EXPECT_EQ(j["data"]["matches"].size(), 2u);
  EXPECT_EQ(Call("GET", "/session/nothing-like-it").status, 404);
  EXPECT_EQ(Call("GET", "/session/exp%").status, 404) << "LIKE wildcards are literal";
}

// Hardening (new user): `bai rm p` destroyed `proj-a` through a one-letter prefix. Destroying
// takes an exact name or id, or an id prefix of at least 8 characters; reading keeps the
// friendly prefix match.
TEST_F(SessionTest, DestroyingTakesAnExactNameOrALongIdPrefix) {
  auto created = Create({{"name", "proj-a"}, {"image", "python"}});
  std::string id = created["sessionId"];
  EXPECT_EQ(Call("GET", "/session/p").status, 200) << "reading still matches a prefix";
  for (std::string ref : {std::string("p"), std::string("proj"), id.substr(0, 7)}) {
    auto r = Call("DELETE", "/session/" + ref);
    EXPECT_EQ(r.status, 404) << ref << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr("full name")) << ref;
  }
  EXPECT_EQ(json::parse(Call("GET", "/session/" + id).body)["status"], "PENDING");
  EXPECT_EQ(Call("DELETE", "/session/" + id.substr(0, 8)).status, 200);
  EXPECT_EQ(json::parse(Call("GET", "/session/" + id).body)["status"], "CANCELLED");
  Create({{"name", "proj-b"}, {"image", "python"}});
  EXPECT_EQ(Call("DELETE", "/session/proj-b").status, 200);
}

TEST_F(SessionTest, ReuseRulesByName) {
  auto first = Create({{"name", "notebook"}, {"image", "python"}});
  auto again =
      Call("POST", "/session", {{"name", "notebook"}, {"image", "python"}, {"enqueueOnly", true}});
  ASSERT_EQ(again.status, 201);
  auto j = json::parse(again.body);
  EXPECT_EQ(j["created"], false);
  EXPECT_EQ(j["sessionId"], first["sessionId"]);
  EXPECT_TRUE(j.contains("service_ports"));
  auto refuse = Call(
      "POST", "/session",
      {{"name", "notebook"}, {"image", "python"}, {"reuseIfExists", false}, {"enqueueOnly", true}});
  EXPECT_EQ(refuse.status, 400);
  EXPECT_EQ(json::parse(refuse.body)["data"]["existingSessionId"], first["sessionId"]);
  auto other_image =
      Call("POST", "/session", {{"name", "notebook"}, {"image", "shell"}, {"enqueueOnly", true}});
  EXPECT_EQ(other_image.status, 400);
}

TEST_F(SessionTest, ValidationErrorsNameTheField) {
  struct Case {
    json body;
    char const* field;
  };
  std::vector<Case> cases = {
      {{{"name", "ab"}, {"image", "python"}}, "name"},
      {{{"name", "bad name!"}, {"image", "python"}}, "name"},
      {{{"name", std::string(65, 'x')}, {"image", "python"}}, "name"},
      {{{"name", "from-template"}, {"image", "python"}}, "name"},
      {{{"name", "no-image"}}, "image"},
      {{{"name", "typed"}, {"image", "python"}, {"type", "weird"}}, "type"},
      {{{"name", "later"}, {"image", "python"}, {"starts_at", "1h"}}, "starts_at"},
      {{{"name", "slots"}, {"image", "python"}, {"config", {{"resources", {{"gpu", 1}}}}}},
       "config.resources.gpu"},
      {{{"name", "amount"}, {"image", "python"}, {"config", {{"resources", {{"mem", "lots"}}}}}},
       "config.resources"},
      {{{"name", "prio"}, {"image", "python"}, {"priority", 101}}, "priority"},
      // Hardening (new user): requests that cannot run are refused, not queued or run free.
      {{{"name", "no-cpu"}, {"image", "python"}, {"config", {{"resources", {{"cpu", 0}}}}}},
       "resources.cpu"},
      {{{"name", "tiny-mem"}, {"image", "python"}, {"config", {{"resources", {{"mem", "1"}}}}}},
       "resources.mem"},
      {{{"name", "tiny-mem2"}, {"image", "python"}, {"config", {{"resources", {{"mem", "63m"}}}}}},
       "resources.mem"},
      {{{"name", "envs"}, {"image", "python"}, {"config", {{"environ", {{"A", 1}}}}}},
       "config.environ"},
      {{{"name", "wait"}, {"image", "python"}, {"maxWaitSeconds", -1}}, "maxWaitSeconds"},
      {{{"name", "timeout"},
        {"image", "python"},
        {"type", "batch"},
        {"startupCommand", "true"},
        {"batch_timeout", "soon"}},
       "batch_timeout"},
  };
  for (auto const& c : cases) {
    auto r = Call("POST", "/session", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << " → " << r.body;
    auto j = json::parse(r.body, nullptr, false);
    EXPECT_EQ(j.value("type", ""), "https://api.backend.ai/probs/invalid-api-params") << r.body;
    EXPECT_TRUE(j.contains("data") && j["data"].contains(c.field)) << c.field << ": " << r.body;
  }
  auto sg = Call("POST", "/session",
                 {{"name", "where"}, {"image", "python"}, {"config", {{"scaling_group", "nope"}}}});
  EXPECT_EQ(sg.status, 404);
  EXPECT_THAT(sg.body, HasSubstr("No such scaling group."));
  auto grp = Call("POST", "/session", {{"name", "which"}, {"image", "python"}, {"group", "nope"}});
  EXPECT_EQ(grp.status, 404);
  // More containers than the keypair's policy allows (1 by default) is refused naming the
  // limit; within a policy that allows them, multi-container sessions are not served yet.
  auto multi =
      Call("POST", "/session", {{"name", "multi"}, {"image", "python"}, {"cluster_size", 2}});
  EXPECT_EQ(multi.status, 412);
  EXPECT_THAT(multi.body, HasSubstr("max_containers_per_session"));
  ASSERT_TRUE(manager_->store()
                  .db()
                  .Exec("UPDATE keypair_resource_policies SET max_containers_per_session = 4")
                  .ok());
  multi = Call("POST", "/session", {{"name", "multi"}, {"image", "python"}, {"cluster_size", 2}});
  EXPECT_EQ(multi.status, 400);
  EXPECT_THAT(multi.body, HasSubstr("Multi-container"));
}

TEST_F(SessionTest, MaxWaitSecondsAnswersTimeoutAndTheSessionStays) {
  auto start = std::chrono::steady_clock::now();
  auto r =
      Call("POST", "/session", {{"name", "waiter"}, {"image", "python"}, {"maxWaitSeconds", 1}});
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["status"], "TIMEOUT");
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_TRUE(r.Header("x-ratelimit-limit"));
  EXPECT_EQ(json::parse(Call("GET", "/session/waiter").body)["status"], "PENDING");
}

TEST_F(SessionTest, SchedulerPlacesOnAnAgentWithExactAccounting) {
  AddAgent("agent-1", R"({"cpu": "1", "mem": "4294967296"})");
  std::vector<std::string> ids;
  for (int i = 0; i < 11; ++i) {
    auto c = Create({{"name", "tiny-" + std::to_string(i)},
                     {"image", "python"},
                     {"config", {{"resources", {{"cpu", "0.1"}, {"mem", "256m"}}}}}});
    ids.push_back(c["sessionId"]);
  }
  manager_->Schedule("default");
  int scheduled = 0;
  for (int i = 0; i < 11; ++i) {
    auto j = json::parse(Call("GET", "/session/" + ids[i]).body);
    if (j["status"] == "SCHEDULED") {
      ++scheduled;
      EXPECT_EQ(j["agentId"], "agent-1");
    } else {
      EXPECT_EQ(j["status"], "PENDING");
      EXPECT_THAT(j["statusInfo"].get<std::string>(), HasSubstr("largest free agent has cpu=0"));
    }
  }
  EXPECT_EQ(scheduled, 10) << "ten of cpu=0.1 fill cpu=1 exactly, the eleventh waits";
  // Destroying a placed session frees its slot for the waiting one.
  ASSERT_EQ(Call("DELETE", "/session/" + ids[0]).status, 200);
  EXPECT_EQ((*manager_->sessions().Get(ids[0]))->status, protocol::SessionStatus::kCancelled);
  manager_->Schedule("default");
  EXPECT_EQ(json::parse(Call("GET", "/session/" + ids[10]).body)["status"], "SCHEDULED");
}

TEST_F(SessionTest, DestroyPendingCancelsIt) {
  auto c = Create({{"name", "doomed"}, {"image", "python"}});
  auto r = Call("DELETE", "/session/doomed");
  ASSERT_EQ(r.status, 200) << r.body;
  // An ended session still reads by its name (its result stays visible), but cannot end again.
  auto ended = Call("GET", "/session/doomed");
  ASSERT_EQ(ended.status, 200) << ended.body;
  EXPECT_EQ(json::parse(ended.body)["status"], "CANCELLED");
  auto history = json::parse(Call("GET", "/session/doomed/status-history").body)["result"];
  EXPECT_TRUE(history.contains("CANCELLED"));
  EXPECT_EQ(Call("DELETE", "/session/doomed").status, 404);
  // The name is free again.
  Create({{"name", "doomed"}, {"image", "python"}});
}

TEST_F(SessionTest, EventStreamDeliversLifecycleEvents) {
  std::string stream;
  std::thread reader([&] {
    stream = testing_util::RawHttpStream(manager_->port(), Signed("/events/session"), 3000);
  });
  WaitForStreams(1);
  Create({{"name", "watched"}, {"image", "python"}});
  Call("DELETE", "/session/watched");
  reader.join();
  EXPECT_THAT(stream, HasSubstr("Content-Type: text/event-stream"));
  EXPECT_THAT(stream, HasSubstr("event: session_enqueued\r\ndata: "));
  EXPECT_THAT(stream, HasSubstr("event: session_cancelled\r\ndata: "));
  EXPECT_THAT(stream, HasSubstr("\"sessionName\":\"watched\""));
  EXPECT_THAT(stream, HasSubstr("\"reason\":\"user-requested\""));

  // A filter on another name sees nothing.
  std::string filtered;
  WaitForStreams(0);  // the first stream has left
  std::thread other([&] {
    filtered = testing_util::RawHttpStream(
        manager_->port(), Signed("/events/session?sessionName=someone-else"), 1500);
  });
  WaitForStreams(1);
  Create({{"name", "unwatched"}, {"image", "python"}});
  other.join();
  EXPECT_THAT(filtered, HasSubstr("200 OK"));
  EXPECT_THAT(filtered, ::testing::Not(HasSubstr("event: session_enqueued")));
}

TEST_F(SessionTest, RestartKeepsQueueAndHistory) {
  AddAgent("agent-1", R"({"cpu": "2", "mem": "4294967296"})");
  auto placed =
      Create({{"name", "placed"}, {"image", "python"}, {"config", {{"resources", {{"cpu", 2}}}}}});
  manager_->Schedule("default");
  auto queued =
      Create({{"name", "queued"}, {"image", "python"}, {"config", {{"resources", {{"cpu", 1}}}}}});
  manager_->Stop();
  manager_.reset();
  StartManager();
  auto p = json::parse(Call("GET", "/session/placed").body);
  EXPECT_EQ(p["status"], "SCHEDULED");
  EXPECT_EQ(p["agentId"], "agent-1");
  manager_->Schedule("default");
  auto q = json::parse(Call("GET", "/session/queued").body);
  EXPECT_EQ(q["status"], "PENDING") << "the slots held before the restart are still held";
  EXPECT_THAT(q["statusInfo"].get<std::string>(), HasSubstr("largest free agent has cpu=0"));
}

TEST_F(SessionTest, DependenciesAreAfterOk) {
  AddAgent("agent-1", R"({"cpu": "8", "mem": "8589934592"})");
  auto first = Create(
      {{"name", "step-one"}, {"image", "python"}, {"type", "batch"}, {"startupCommand", "true"}});
  auto second = Create({{"name", "step-two"},
                        {"image", "python"},
                        {"type", "batch"},
                        {"startupCommand", "true"},
                        {"dependencies", {"step-one"}}});
  manager_->Schedule("default");
  auto j = json::parse(Call("GET", "/session/step-two").body);
  EXPECT_EQ(j["status"], "PENDING");
  EXPECT_THAT(j["statusInfo"].get<std::string>(), HasSubstr("dependency"));
  // step-one is cancelled → step-two is cancelled too.
  ASSERT_EQ(Call("DELETE", "/session/step-one").status, 200);
  EXPECT_EQ((*manager_->sessions().Get(first["sessionId"]))->status,
            protocol::SessionStatus::kCancelled);
  manager_->Schedule("default");
  auto dependent = *manager_->sessions().Get(second["sessionId"]);
  EXPECT_EQ(dependent->status, protocol::SessionStatus::kCancelled);
  EXPECT_EQ(dependent->status_info, "dependency-failed");
}

}  // namespace
}  // namespace bai::manager
