// SPDX-License-Identifier: Apache-2.0
// Manager and dummy agent speaking the real control protocol over WebSocket on loopback: the
// whole session lifecycle, batch results, agent loss, grace expiry and reconnection.
#include "server-reference/agent/agent.h"

#include "bai/client.h"

#include "libbai/util/json_parse.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/state/bootstrap.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/roles_fixture.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::TempDir;

class AgentTest : public testing_util::ManagerFixture {
 protected:
  void SetUp() override {
    config_.agent_heartbeat_timeout = 1;
    config_.agent_lost_grace = 2;
    ManagerFixture::SetUp();
  }

  std::unique_ptr<agent::Agent> StartAgent(std::string const& id, std::string const& slots) {
    agent::AgentOptions o;
    o.manager_url = Url();
    o.agent_id = id;
    o.cluster_secret = manager_->cluster_secret();
    EXPECT_TRUE(protocol::ParseSlotAssignment(slots, o.slots).ok());
    agent::DummyOptions d;
    d.prepare_delay = std::chrono::milliseconds(50);
    d.run_time = std::chrono::milliseconds(100);
    d.commit_dir = dir_.path() + "/commits-" + id;
    d.home_dir = dir_.path() + "/homes-" + id;
    auto a = std::make_unique<agent::Agent>(o, std::make_unique<agent::DummyBackend>(d));
    a->Start();
    EXPECT_TRUE(a->WaitRegistered(std::chrono::seconds(5)));
    return a;
  }

  json Info(std::string const& ref) { return json::parse(Call("GET", "/session/" + ref).body); }

  // The stored row (also for sessions that ended).
  SessionRecord Row(std::string const& id) {
    auto s = manager_->sessions().Get(id);
    EXPECT_TRUE(s.ok() && *s);
    return s.ok() && *s ? **s : SessionRecord{};
  }

  // Polls until `done` holds (or 10 s).
  template <typename F>
  bool Eventually(F done) {
    for (int i = 0; i < 200; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

TEST_F(AgentTest, UnknownImagesAre404OnceAgentsReportTheirImages) {
  // No agent yet: nothing is known, the session queues.
  auto early =
      Call("POST", "/session", {{"name", "early"}, {"image", "tensorflow"}, {"enqueueOnly", true}});
  EXPECT_EQ(early.status, 201) << early.body;
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");  // offers python and shell
  auto r =
      Call("POST", "/session", {{"name", "tf-nb"}, {"image", "tensorflow"}, {"enqueueOnly", true}});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(json::parse(r.body)["type"], "https://api.backend.ai/probs/object-not-found");
  EXPECT_THAT(std::string(json::parse(r.body)["msg"]), ::testing::HasSubstr("tensorflow"));
  // A local name's tag must be offered (3.11 with a platform suffix is; 3.9 is not); a
  // registry reference is never the host's image of the same last component (issue 46).
  auto ref = Call("POST", "/session",
                  {{"name", "byref"}, {"image", "python:3.11-ubuntu22.04"}, {"enqueueOnly", true}});
  EXPECT_EQ(ref.status, 201) << ref.body;
  auto other =
      Call("POST", "/session",
           {{"name", "oldpy"}, {"image", "python:3.9-ubuntu20.04"}, {"enqueueOnly", true}});
  EXPECT_EQ(other.status, 404) << other.body;
  EXPECT_THAT(std::string(json::parse(other.body)["msg"]), ::testing::HasSubstr("python:3.9"));
  auto registry = Call("POST", "/session",
                       {{"name", "from-cr"},
                        {"image", "cr.backend.ai/stable/python:3.11-ubuntu22.04"},
                        {"enqueueOnly", true}});
  EXPECT_EQ(registry.status, 404) << registry.body;
  // Hardening (new user): GPUs on a cluster without them waited for ever, also enqueued.
  for (bool enqueue : {false, true}) {
    auto gpu = Call("POST", "/session",
                    {{"name", enqueue ? "gpu-q" : "gpu-w"},
                     {"image", "python"},
                     {"enqueueOnly", enqueue},
                     {"config", {{"resources", {{"cpu", 1}, {"cuda.shares", "0.5"}}}}}});
    EXPECT_EQ(gpu.status, 400) << gpu.body;
    EXPECT_THAT(gpu.body,
                ::testing::HasSubstr("No agent of the resource group offers cuda.shares"));
  }
  // Issue 43, 7: the console's fit check is POST /session/_/check, the start's own rules
  // answered without making anything: GPUs here, an unknown image, a project the user is not
  // in are refused as the start refuses them; what would start answers where it would go.
  auto check = [&](json body) {
    body["name"] = "checked";
    return Call("POST", "/session/_/check", body);
  };
  auto gpu = check({{"image", "python"}, {"config", {{"resources", {{"cuda.shares", "0.5"}}}}}});
  EXPECT_EQ(gpu.status, 400) << gpu.body;
  EXPECT_THAT(gpu.body, ::testing::HasSubstr("offers cuda.shares"));
  EXPECT_EQ(check({{"image", "tensorflow"}}).status, 404);
  auto stranger = check({{"image", "python"}, {"group", "no-such-project"}});
  EXPECT_EQ(stranger.status, 404) << stranger.body;
  EXPECT_THAT(stranger.body, ::testing::HasSubstr("project"));
  auto fits = check({{"image", "python"}, {"config", {{"resources", {{"cpu", 1}}}}}});
  ASSERT_EQ(fits.status, 200) << fits.body;
  EXPECT_EQ(json::parse(fits.body)["scaling_group"], "default");
  EXPECT_EQ(Call("GET", "/session/checked").status, 404) << "a check makes no session";
}

TEST_F(AgentTest, CommitRunsAsABackgroundTaskFollowedToItsEnd) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  ASSERT_EQ(Call("POST", "/session", {{"name", "cm-nb"}, {"image", "python"}}).status, 201);
  auto before = json::parse(Call("GET", "/session/cm-nb/commit").body);
  EXPECT_EQ(before["status"], "ready");

  auto r = Call("POST", "/session/cm-nb/commit", {{"filename", "snap-1.tar"}});
  ASSERT_EQ(r.status, 201) << r.body;
  auto started = json::parse(r.body);
  std::string task = started["bgtask_id"];
  EXPECT_EQ(started["kernel"], before["kernel"]);
  std::string path = started["path"];
  EXPECT_EQ(path, dir_.path() + "/commits-agent-1/" +
                      Info("cm-nb")["sessionId"].get<std::string>() + "/snap-1.tar");

  // Followed live: it ends with bgtask_done and server_close, and the stream closes.
  std::string stream;
  auto follow = root_->SendStreaming({"GET", "/events/background-task?taskId=" + task},
                                     [&](std::string_view d) {
                                       stream += d;
                                       return true;
                                     });
  ASSERT_TRUE(follow.ok()) << follow.status().message();
  EXPECT_THAT(stream, HasSubstr("event: bgtask_done\r\ndata: "));
  EXPECT_THAT(stream, HasSubstr("\"status\":\"done\""));
  EXPECT_THAT(stream, HasSubstr("\"task_id\":\"" + task + "\""));
  EXPECT_THAT(stream, HasSubstr("\"current_progress\":1"));
  EXPECT_THAT(stream, HasSubstr("event: server_close\r\ndata: {}"));
  std::ifstream tar(path, std::ios::binary | std::ios::ate);
  ASSERT_TRUE(tar.good()) << path;
  EXPECT_EQ(tar.tellg(), 1024) << "an empty tar archive from the dummy backend";
  EXPECT_EQ(json::parse(Call("GET", "/session/cm-nb/commit").body)["status"], "ready");

  // Followed after it finished: the final event at once, then server_close.
  std::string again;
  ASSERT_TRUE(root_
                  ->SendStreaming({"GET", "/events/background-task?task_id=" + task},
                                  [&](std::string_view d) {
                                    again += d;
                                    return true;
                                  })
                  .ok());
  EXPECT_THAT(again, HasSubstr("event: bgtask_done"));
  EXPECT_THAT(again, HasSubstr("event: server_close"));

  // The same file name again: refused by the agent (a commit never overwrites), task failed.
  auto dup = Call("POST", "/session/cm-nb/commit", {{"filename", "snap-1.tar"}});
  EXPECT_EQ(dup.status, 400) << dup.body;
  EXPECT_THAT(dup.body, HasSubstr("exists"));
  // Bad names, unknown and missing task ids.
  EXPECT_EQ(Call("POST", "/session/cm-nb/commit", {{"filename", "../escape.tar"}}).status, 400);
  EXPECT_EQ(Call("POST", "/session/cm-nb/commit", {{"filename", ".hidden"}}).status, 400);
  EXPECT_EQ(
      Call("GET", "/events/background-task?taskId=00000000-0000-4000-8000-000000000000").status,
      404);
  EXPECT_EQ(Call("GET", "/events/background-task").status, 400);
  // A default name: the session's name and a UTC time stamp.
  auto named = Call("POST", "/session/cm-nb/commit");
  ASSERT_EQ(named.status, 201) << named.body;
  EXPECT_THAT(json::parse(named.body)["path"].get<std::string>(), HasSubstr("/cm-nb-20"));
}

TEST_F(AgentTest, RestartGoesThroughRestartingAndInterruptReachesTheAgent) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  ASSERT_EQ(Call("POST", "/session", {{"name", "rs-nb"}, {"image", "python"}}).status, 201);
  EXPECT_EQ(Call("PATCH", "/session/rs-nb").status, 204);
  auto info = Info("rs-nb");
  EXPECT_EQ(info["status"], "RUNNING");
  EXPECT_TRUE(info["statusHistory"].contains("RESTARTING"));
  EXPECT_EQ(Call("POST", "/session/rs-nb/interrupt").status, 204);
  // Not running: refused.
  ASSERT_EQ(Call("POST", "/session",
                 {{"name", "rs-q"},
                  {"image", "python"},
                  {"type", "batch"},
                  {"startupCommand", "true"},
                  {"startsAt", "1h"},
                  {"enqueueOnly", true}})
                .status,
            201);
  EXPECT_EQ(Call("PATCH", "/session/rs-q").status, 400);
  EXPECT_EQ(Call("POST", "/session/rs-q/interrupt").status, 400);
}

TEST_F(AgentTest, CheckPresetsReportsLimitsUsageAndWhatFits) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  ASSERT_TRUE(manager_->store()
                  .db()
                  .Exec("INSERT INTO resource_presets (name, resource_slots) VALUES "
                        "('small', '{\"cpu\": \"1\", \"mem\": \"1073741824\"}'), "
                        "('huge', '{\"cpu\": \"16\", \"mem\": \"1073741824\"}')")
                  .ok());
  auto r = Call(
      "POST", "/session",
      {{"name", "holder"}, {"image", "python"}, {"config", {{"resources", {{"cpu", "1.5"}}}}}});
  ASSERT_EQ(r.status, 201) << r.body;
  auto c = Call("POST", "/resource/check-presets", {{"group", "default"}});
  ASSERT_EQ(c.status, 200) << c.body;
  auto j = json::parse(c.body);
  EXPECT_EQ(j["keypair_limits"]["cpu"], "Infinity");
  EXPECT_EQ(j["keypair_using"]["cpu"], "1.5");
  EXPECT_EQ(j["keypair_remaining"]["cpu"], "Infinity");
  EXPECT_EQ(j["scaling_groups"]["default"]["using"]["cpu"], "1.5");
  EXPECT_EQ(j["scaling_groups"]["default"]["remaining"]["cpu"], "2.5");
  EXPECT_EQ(j["scaling_group_remaining"]["cpu"], "2.5");
  EXPECT_EQ(j["group_limits"]["cpu"], "NaN");
  std::map<std::string, bool> fits;
  for (auto const& p : j["presets"]) fits[p["name"]] = p["allocatable"];
  EXPECT_TRUE(fits["small"]);
  EXPECT_FALSE(fits["huge"]);
  // Unknown project or resource group: 400.
  EXPECT_EQ(Call("POST", "/resource/check-presets", {{"group", "nope"}}).status, 400);
  EXPECT_EQ(Call("POST", "/resource/check-presets", {{"scaling_group", "nope"}}).status, 400);
}

TEST_F(AgentTest, InteractiveSessionGoesThroughEveryStartStatus) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  auto r = Call("POST", "/session", {{"name", "notebook"}, {"image", "python"}});
  ASSERT_EQ(r.status, 201) << r.body;
  auto created = json::parse(r.body);
  EXPECT_EQ(created["status"], "RUNNING");
  auto info = Info("notebook");
  EXPECT_EQ(info["agentId"], "agent-1");
  EXPECT_EQ(info["occupiedSlots"]["cpu"], "1");
  for (char const* s : {"PENDING", "SCHEDULED", "PREPARING", "RUNNING"}) {
    EXPECT_TRUE(info["statusHistory"].contains(s)) << s;
  }
  ASSERT_EQ(Call("DELETE", "/session/notebook").status, 200);
  std::string id = created["sessionId"];
  ASSERT_TRUE(Eventually([&] { return Row(id).status == protocol::SessionStatus::kTerminated; }));
  auto row = Row(id);
  EXPECT_EQ(row.status_info, "user-requested");
  EXPECT_TRUE(row.status_history.count("TERMINATING"));
  EXPECT_TRUE(row.status_history.count("TERMINATED"));
}

// Regression: a domain admin could destroy (and learn of) sessions in another domain, since
// only is_admin was checked. Every session endpoint now scopes owner_access_key by role.
TEST_F(AgentTest, OwnerAccessKeyIsScopedByRoleOnEverySessionEndpoint) {
  auto group = manager_->store().db().Query(
      "SELECT id FROM groups WHERE name = 'default' AND domain_name = 'default'");
  ASSERT_TRUE(group.ok() && group->size() == 1u);
  std::string fixture = testing_util::RolesFixture(group->front().Text(0), "", '1');
  auto loaded = LoadFixture(manager_->store(), fixture);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  // The agent only now: loading five password hashes (Argon2) on a busy machine once held the
  // database past the 1 s heartbeat timeout, and the agent was taken for lost mid-test.
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  auto client_for = [&](std::string const& name) {
    auto [access, secret] = testing_util::RoleKeys("", name);
    return *ClientFor(access, secret);
  };
  auto alice = client_for("alice");
  ApiRequest create{"POST", "/session"};
  create.body = R"({"name": "alices", "image": "python"})";
  auto created = alice.Send(create);
  ASSERT_TRUE(created.ok());
  ASSERT_EQ(created->status, 201) << created->body;
  std::string id = json::parse(created->body)["sessionId"];

  std::string owner = "owner_access_key=AKIAALICE00000000000";
  std::vector<std::pair<std::string, std::string>> endpoints = {
      {"GET", "/session/alices?" + owner},
      {"GET", "/session/alices/logs?" + owner},
      {"GET", "/session/alices/status-history?" + owner},
      {"GET", "/session/alices/commit?" + owner},
      {"POST", "/session/alices/interrupt?" + owner},
      {"GET", "/session/_/match?id=alices&" + owner},
  };
  struct Caller {
    std::string name;
    Client client;
    int expected;
  };
  std::vector<Caller> callers = {
      {"user of the same domain", client_for("bob"), 403},
      {"admin of another domain", client_for("oadmin"), 404},
      {"admin of the same domain", client_for("dadmin"), 0},
      {"admin by role, without the keypair flag", client_for("radmin"), 0},
      {"superadmin", *root_, 0}};
  for (auto const& c : callers) {
    for (auto const& [method, path] : endpoints) {
      auto r = c.client.Send({method, path});
      ASSERT_TRUE(r.ok());
      if (c.expected == 0) {
        EXPECT_LT(r->status, 300) << c.name << " " << method << " " << path << ": " << r->body;
        if (path.find("_/match") != std::string::npos) {
          EXPECT_EQ(json::parse(r->body)["matches"].size(), 1u) << c.name;
        }
      } else {
        EXPECT_EQ(r->status, c.expected) << c.name << " " << method << " " << path;
      }
    }
  }
  // The session event stream follows the same rule. It checked only the keypair's flag: an
  // admin by role was refused, and another domain's admin got an open (empty) stream.
  auto watch = [](Client const& c) {
    auto r = c.SendStreaming({"GET", "/events/session?ownerAccessKey=AKIAALICE00000000000"},
                             [](std::string_view) { return false; });
    return r.ok() ? r->status : -1;
  };
  EXPECT_EQ(watch(client_for("bob")), 403);
  EXPECT_EQ(watch(client_for("oadmin")), 404);
  EXPECT_EQ(watch(client_for("radmin")), 200);
  EXPECT_EQ(watch(client_for("dadmin")), 200);
  EXPECT_EQ(watch(*root_), 200);
  // Another domain's admin cannot end it, and cannot tell it from a session that never was.
  auto oadmin = client_for("oadmin");
  auto denied = oadmin.Send({"DELETE", "/session/alices?" + owner});
  auto missing = oadmin.Send({"DELETE", "/session/no-such-session?" + owner});
  ASSERT_TRUE(denied.ok() && missing.ok());
  EXPECT_EQ(denied->status, 404);
  EXPECT_EQ(denied->body, missing->body);
  EXPECT_EQ(Row(id).status, protocol::SessionStatus::kRunning);
  auto bob = client_for("bob");
  EXPECT_EQ(bob.Send({"DELETE", "/session/alices?" + owner})->status, 403);
  EXPECT_EQ(bob.Send({"DELETE", "/session/alices"})->status, 404);  // not bob's
  EXPECT_EQ(Row(id).status, protocol::SessionStatus::kRunning);
  // Its own domain's admin can.
  EXPECT_EQ(client_for("dadmin").Send({"DELETE", "/session/alices?" + owner})->status, 200);
  ASSERT_TRUE(Eventually([&] { return Row(id).status == protocol::SessionStatus::kTerminated; }));
}

// Regression: with no agent registered, a blocking create waited forever.
TEST_F(AgentTest, BlockingCreateWithNoAgentAnswersPendingAndStartsOnceOneComes) {
  Options o = root_->options();
  o.read_timeout = std::chrono::seconds(30);  // a hang fails the test instead of blocking it
  auto client = *Client::Create(o);
  ApiRequest create{"POST", "/session"};
  create.body = R"({"name": "waits", "image": "python"})";
  auto r = client.Send(create);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 201) << r->body;
  auto body = json::parse(r->body);
  EXPECT_EQ(body["status"], "PENDING");
  std::string id = body["sessionId"];
  EXPECT_THAT(Row(id).status_info, HasSubstr("waiting"));
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  EXPECT_TRUE(Eventually([&] { return Row(id).status == protocol::SessionStatus::kRunning; }));
}

TEST_F(AgentTest, ASuperadminsAgentListPinsTheSession) {
  auto first = StartAgent("agent-1", "cpu=4,mem=8g");
  auto second = StartAgent("agent-2", "cpu=4,mem=8g");
  auto pinned =
      Call("POST", "/session",
           {{"name", "pinned"}, {"image", "python"}, {"config", {{"agent_list", {"agent-2"}}}}});
  ASSERT_EQ(pinned.status, 201) << pinned.body;
  std::string id = json::parse(pinned.body)["sessionId"];
  EXPECT_EQ(Row(id).agent_list, std::vector<std::string>{"agent-2"});
  EXPECT_TRUE(Eventually([&] { return Row(id).status == protocol::SessionStatus::kRunning; }));
  EXPECT_EQ(Row(id).agent_id, "agent-2") << "first fit alone picks agent-1";
  // Unpinned sessions still go first-fit.
  auto free = Call("POST", "/session", {{"name", "free"}, {"image", "python"}});
  ASSERT_EQ(free.status, 201) << free.body;
  EXPECT_EQ(Row(json::parse(free.body)["sessionId"]).agent_id, "agent-1");
  // An agent the resource group does not know is a clear error, not a session waiting forever.
  auto unknown =
      Call("POST", "/session",
           {{"name", "typo"}, {"image", "python"}, {"config", {{"agentList", {"agent-9"}}}}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_THAT(unknown.body, HasSubstr("no agent agent-9 in resource group default"));
  auto malformed =
      Call("POST", "/session",
           {{"name", "bad"}, {"image", "python"}, {"config", {{"agent_list", "agent-2"}}}});
  EXPECT_EQ(malformed.status, 400);
  EXPECT_THAT(malformed.body, HasSubstr("config.agent_list"));
}

TEST_F(AgentTest, BatchJobsEndWithTheirExitCode) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  auto ok = json::parse(Call("POST", "/session",
                             {{"name", "job-ok"},
                              {"image", "python"},
                              {"type", "batch"},
                              {"startupCommand", "python3 x.py"},
                              {"enqueueOnly", true}})
                            .body);
  auto bad = json::parse(Call("POST", "/session",
                              {{"name", "job-bad"},
                               {"image", "python"},
                               {"type", "batch"},
                               {"startupCommand", "false; exit 3"},
                               {"enqueueOnly", true}})
                             .body);
  ASSERT_TRUE(Eventually([&] {
    return Row(ok["sessionId"]).status == protocol::SessionStatus::kTerminated &&
           Row(bad["sessionId"]).status == protocol::SessionStatus::kTerminated;
  }));
  auto good = Row(ok["sessionId"]);
  EXPECT_EQ(good.result, "success");
  EXPECT_EQ(good.exit_code, 0);
  auto failed = Row(bad["sessionId"]);
  EXPECT_EQ(failed.result, "failure");
  EXPECT_EQ(failed.exit_code, 3);
  auto logs = json::parse(Call("GET", "/session/job-bad/logs").body);
  EXPECT_THAT(logs["result"]["logs"].get<std::string>(), HasSubstr("exit 3"));
  auto events = manager_->sessions().EventsAfter(0, 1000);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> names;
  for (auto const& e : *events) {
    if (e.session_id == bad["sessionId"])
      names.push_back(e.name + (e.exit_code ? ":" + std::to_string(*e.exit_code) : ""));
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"session_enqueued", "session_scheduled", "session_started",
                                      "session_failure:3", "session_terminated:3"}));
}

TEST_F(AgentTest, TwentySmallSessionsRunTogetherOnOneAgent) {
  auto agent = StartAgent("agent-1", "cpu=2,mem=8g");
  for (int i = 0; i < 20; ++i) {
    auto r = Call("POST", "/session",
                  {{"name", "small-" + std::to_string(i)},
                   {"image", "python"},
                   {"enqueueOnly", true},
                   {"config", {{"resources", {{"cpu", "0.1"}, {"mem", "128m"}}}}}});
    ASSERT_EQ(r.status, 201);
  }
  ASSERT_TRUE(Eventually([&] {
    auto rows =
        manager_->store().db().Query("SELECT COUNT(*) FROM sessions WHERE status = 'RUNNING'");
    return rows.ok() && (*rows)[0].Int(0) == 20;
  }));
  // The agent is exactly full: one more cpu=0.1 waits.
  auto extra = json::parse(Call("POST", "/session",
                                {{"name", "one-more"},
                                 {"image", "python"},
                                 {"enqueueOnly", true},
                                 {"config", {{"resources", {{"cpu", "0.1"}}}}}})
                               .body);
  manager_->Schedule("default");
  EXPECT_EQ(Info("one-more")["status"], "PENDING");
}

TEST_F(AgentTest, ManagerRestartKeepsKernelsAndTheAgentReconnects) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  auto created =
      json::parse(Call("POST", "/session", {{"name", "survivor"}, {"image", "python"}}).body);
  ASSERT_EQ(created["status"], "RUNNING");
  manager_->Stop();
  manager_.reset();
  EXPECT_TRUE(Eventually([&] { return !agent->Registered(); }));
  StartManager();
  ASSERT_TRUE(agent->WaitRegistered(std::chrono::seconds(10)));
  auto info = Info("survivor");
  EXPECT_EQ(info["status"], "RUNNING") << "re-adopted, not lost";
  // Still under control: destroy reaches the kernel.
  ASSERT_EQ(Call("DELETE", "/session/survivor").status, 200);
  EXPECT_TRUE(Eventually(
      [&] { return Row(created["sessionId"]).status == protocol::SessionStatus::kTerminated; }));
}

TEST_F(AgentTest, LostAgentSessionsWaitThenEndAsErrorAndFreeSlots) {
  auto agent = StartAgent("agent-1", "cpu=1,mem=8g");
  auto created =
      json::parse(Call("POST", "/session", {{"name", "orphan"}, {"image", "python"}}).body);
  ASSERT_EQ(created["status"], "RUNNING");
  std::string id = created["sessionId"];
  agent->Stop();  // silence: no heartbeat, no goodbye
  ASSERT_TRUE(Eventually([&] { return Row(id).status_info == "agent-lost"; }));
  EXPECT_EQ(Row(id).status, protocol::SessionStatus::kRunning) << "kept through the grace period";
  auto status = manager_->store().db().Query("SELECT status FROM agents WHERE id = 'agent-1'");
  EXPECT_EQ((*status)[0].Text(0), "LOST");
  ASSERT_TRUE(Eventually([&] { return Row(id).status == protocol::SessionStatus::kError; }));
  EXPECT_EQ(Row(id).status_info, "agent-lost");
  // Filed for its owner's error logs, with the transition.
  auto logs = json::parse(Call("GET", "/logs/error").body);
  ASSERT_EQ(logs["count"], 1) << logs.dump();
  EXPECT_EQ(logs["logs"][0]["source"], "kernel");
  EXPECT_EQ(logs["logs"][0]["message"], "Session orphan (" + id + ") failed: agent-lost");
  EXPECT_EQ(json::parse(logs["logs"][0]["context_env"].get<std::string>())["session_id"], id);
  // A new agent gets the freed capacity.
  auto other = StartAgent("agent-2", "cpu=1,mem=8g");
  auto next =
      json::parse(Call("POST", "/session", {{"name", "next-one"}, {"image", "python"}}).body);
  EXPECT_EQ(next["status"], "RUNNING");
  EXPECT_EQ(Info("next-one")["agentId"], "agent-2");
}

TEST_F(AgentTest, ExecuteIsRelayedToTheKernel) {
  auto agent = StartAgent("agent-1", "cpu=4,mem=8g");
  ASSERT_EQ(
      json::parse(Call("POST", "/session", {{"name", "repl"}, {"image", "python"}}).body)["status"],
      "RUNNING");
  auto r =
      Call("POST", "/session/repl", {{"mode", "query"}, {"runId", nullptr}, {"code", "print(42)"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto result = json::parse(r.body)["result"];
  EXPECT_EQ(result["status"], "finished");
  EXPECT_EQ(result["exitCode"], 0);
  EXPECT_THAT(result["runId"].get<std::string>(), ::testing::MatchesRegex("[0-9a-f]{32}"));
  // The dummy kernel echoes the code (it simulates; it does not run Python).
  EXPECT_EQ(result["console"], json::parse(R"([["stdout", "print(42)\n"]])"));
  auto failing =
      json::parse(Call("POST", "/session/repl", {{"mode", "query"}, {"code", "exit 4"}}).body);
  EXPECT_EQ(failing["result"]["exitCode"], 4);
  EXPECT_EQ(Info("repl")["numQueriesExecuted"], 2);  // was always 0
  auto no_run = Call("POST", "/session/repl", {{"mode", "continue"}, {"code", ""}});
  EXPECT_EQ(no_run.status, 400);
  EXPECT_EQ(Call("POST", "/session/repl", {{"mode", "dance"}}).status, 400);
  // A queued session cannot execute yet; one that could never start is refused at once.
  auto never = Call("POST", "/session",
                    {{"name", "never"},
                     {"image", "python"},
                     {"enqueueOnly", true},
                     {"config", {{"resources", {{"cpu", 64}}}}}});
  EXPECT_EQ(never.status, 400) << never.body;
  EXPECT_THAT(never.body, ::testing::HasSubstr("larger than any agent"));
  Call("POST", "/session",
       {{"name", "queued"},
        {"image", "python"},
        {"type", "batch"},
        {"startupCommand", "true"},
        {"startsAt", "1h"},
        {"enqueueOnly", true}});
  EXPECT_EQ(Call("POST", "/session/queued", {{"mode", "query"}, {"code", "1"}}).status, 400);
  // Without its agent the manager says so instead of hanging.
  agent->Stop();
  ASSERT_TRUE(Eventually([&] { return manager_->agents().Connected().empty(); }));
  auto gone = Call("POST", "/session/repl", {{"mode", "query"}, {"code", "1"}});
  EXPECT_EQ(gone.status, 503) << gone.body;
  EXPECT_EQ(json::parse(gone.body)["type"], "https://api.backend.ai/probs/instance-not-available");
}

TEST_F(AgentTest, AgentsNeedTheClusterSecret) {
  std::string host = "127.0.0.1:" + std::to_string(manager_->port());
  auto upgrade = [&](std::string const& auth) {
    return testing_util::RawHttp(
        manager_->port(),
        "GET /agent/ws HTTP/1.1\r\nHost: " + host +
            "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
            auth + "\r\n");
  };
  EXPECT_EQ(upgrade("").status, 401);
  auto wrong = server::agent_protocol::MakeAuth("agent-x", std::string(43, 'w'),
                                                std::chrono::system_clock::now());
  auto r = upgrade("X-BAI-Agent-Auth: " + wrong + "\r\n");
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, HasSubstr("wrong cluster secret"));
  auto stale =
      server::agent_protocol::MakeAuth("agent-x", manager_->cluster_secret(),
                                       std::chrono::system_clock::now() - std::chrono::hours(1));
  EXPECT_EQ(upgrade("X-BAI-Agent-Auth: " + stale + "\r\n").status, 401);
  auto good = server::agent_protocol::MakeAuth("agent-x", manager_->cluster_secret(),
                                               std::chrono::system_clock::now());
  EXPECT_EQ(upgrade("X-BAI-Agent-Auth: " + good + "\r\n").status, 101);
}

// bai-agent as a process against an in-process manager.
class AgentProcessTest : public testing_util::ManagerFixture {
 protected:
  void SetUp() override {
    ManagerFixture::SetUp();
    url_ = Url();
  }

  // The agent process says it connects, registers as `id`, and stops cleanly on SIGTERM.
  void ExpectRegisters(testing_util::BackgroundProcess& agent, std::string const& id) {
    ASSERT_FALSE(agent.WaitForLine("connecting").empty());
    for (int i = 0; i < 100 && manager_->agents().Connected().empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(manager_->agents().Connected().count(id), 1u);
    EXPECT_EQ(agent.Stop(SIGTERM), 0);
  }

  std::string url_;
};

TEST_F(AgentProcessTest, DummyAgentBinaryRegistersAndStopsOnSigterm) {
  testing_util::BackgroundProcess agent(
      {testing_util::BinPath("bai-agent"), "--manager", url_, "--id", "proc-agent", "--backend",
       "dummy", "--cluster-secret-file", config_.ClusterSecretPath(), "--slots", "cpu=2,mem=2g"});
  ExpectRegisters(agent, "proc-agent");
}

// /etc/bai/agent.toml as docs/operations.md writes it: the options by their long names, a
// manager list whose second manager is not there (the agent registers with the first and keeps
// trying the other).
TEST_F(AgentProcessTest, AnAgentConfiguredByATomlFileRegistersWithTheManagersListed) {
  std::string toml = dir_.path() + "/agent.toml";
  {
    std::ofstream out(toml);
    out << "manager = \"" << url_ << ",http://127.0.0.1:1\"\nid = \"toml-agent\"\n"
        << "cluster-secret-file = \"" << config_.ClusterSecretPath() << "\"\n"
        << "backend = \"dummy\"\nslots = \"cpu=2,mem=2g\"\n";
  }
  testing_util::BackgroundProcess agent({testing_util::BinPath("bai-agent"), "--config", toml});
  ExpectRegisters(agent, "toml-agent");
}

// --log-format json --log-file (docs/operations.md, "Logs"): one JSON object a line, the
// agent's start, its registration with each manager (the one that is down: at debug level,
// left out at info), and its stop.
TEST_F(AgentProcessTest, AnAgentLogsJsonLinesToAFile) {
  std::string file = dir_.path() + "/agent.log";
  testing_util::BackgroundProcess agent(
      {testing_util::BinPath("bai-agent"), "--manager", url_ + ",http://127.0.0.1:1", "--id",
       "log-agent", "--backend", "dummy", "--cluster-secret-file", config_.ClusterSecretPath(),
       "--slots", "cpu=2,mem=2g", "--log-format", "json", "--log-file", file});
  ExpectRegisters(agent, "log-agent");
  std::ifstream in(file);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    EXPECT_EQ(j["daemon"], "bai-agent");
    EXPECT_TRUE(j["time"].is_string());
    lines.push_back(j);
  }
  auto has = [&](std::string const& msg) {
    for (auto const& j : lines) {
      if (j["msg"] == msg) return j;
    }
    return nlohmann::json();
  };
  ASSERT_FALSE(has("started").is_null());
  EXPECT_EQ(has("started")["agent"], "log-agent");
  auto registered = has("registered with a manager");
  ASSERT_FALSE(registered.is_null());
  EXPECT_EQ(registered["manager"], url_);
  EXPECT_EQ(registered["primary"], true);
  EXPECT_EQ(has("shutting down")["signal"], "SIGTERM");
  EXPECT_TRUE(has("manager link attempt failed").is_null()) << "debug lines at info level";
  // A bad value is refused before anything starts.
  auto bad = testing_util::RunProcess({testing_util::BinPath("bai-agent"), "--id", "x",
                                       "--cluster-secret-file", config_.ClusterSecretPath(),
                                       "--log-max-size", "12"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("--log-max-size"));
}

}  // namespace
}  // namespace bai::manager
