// SPDX-License-Identifier: Apache-2.0
// Handlers called directly through ManagerApi::Handle with FakeExchanges: no socket. The auth
// handlers with a clock the test moves; the session handlers with signed requests, no agent, and
// a scheduling hook that only records what it was asked.
#include "bai/protocol/api_version.h"
#include "bai/protocol/session_wire.h"
#include "bai/protocol/signing.h"

#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/config.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/state/bgtasks.h"
#include "server-reference/manager/state/sessions.h"
#include "server-reference/manager/streams/stream_broker.h"
#include "server-reference/manager/streams/stream_registry.h"
#include "server-reference/manager/vfolders/storage_links.h"
#include "tests/testing_util/fake_exchange.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::FakeExchange;

// Opens a manager's state (schema, bootstrap) in a fresh directory and reads its superadmin's
// credentials; handlers are then called directly through ManagerApi::Handle with FakeExchanges.
class HandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ManagerConfig config;
    config.data_dir = dir_.path() + "/data";
    config.database = testing_util::TestDatabase();
    auto state = OpenState(config);
    ASSERT_TRUE(state.ok()) << state.status().message();
    state_ = std::move(*state);
    creds_ = testing_util::ReadEnvFile(state_.bootstrap.credentials_file);
  }

  testing_util::TempDir dir_;
  OpenedState state_;
  std::map<std::string, std::string> creds_;
};

class AuthHandlerTest : public HandlerTest {
 protected:
  void SetUp() override {
    HandlerTest::SetUp();
    password_ = creds_["BAI_ADMIN_PASSWORD"];
    ASSERT_FALSE(password_.empty());
  }

  std::unique_ptr<ManagerApi> MakeApi(ApiOptions options) {
    options.clock = [this] { return now_.load(); };
    auto api = std::make_unique<ManagerApi>(*state_.store, std::move(options));
    RegisterAuthRoutes(*api);
    return api;
  }

  static std::shared_ptr<FakeExchange> Login(std::string const& user, std::string const& password,
                                             std::string const& peer) {
    return FakeExchange::Make("POST", "/auth/authorize",
                              json({{"type", "keypair"},
                                    {"domain", "default"},
                                    {"username", user},
                                    {"password", password}})
                                  .dump(),
                              peer);
  }
  /// Sends a login (from `peer`, naming `forwarded_for` in X-Forwarded-For when given) and waits
  /// for its answer.
  static server::HttpResponse Try(ManagerApi& api, std::string const& user,
                                  std::string const& password, std::string const& peer,
                                  std::string const& forwarded_for = "") {
    auto x = Login(user, password, peer);
    if (!forwarded_for.empty()) {
      x->mutable_request().headers.emplace_back("x-forwarded-for", forwarded_for);
    }
    api.Handle(x);
    auto r = x->Wait();
    EXPECT_TRUE(r.has_value()) << "no answer";
    return r.value_or(server::HttpResponse{});
  }
  static std::string HeaderOf(server::HttpResponse const& r, std::string const& name) {
    for (auto const& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  std::string password_;
  std::atomic<std::chrono::system_clock::time_point> now_{std::chrono::system_clock::now()};
};

TEST_F(AuthHandlerTest, PasswordGuessingIsThrottledPerAccountAndPerAddress) {
  ApiOptions o;
  o.login_limits = {.per_address = 6, .failures_per_user = 3, .window = std::chrono::seconds(300)};
  auto api = MakeApi(o);
  for (int i = 0; i < 3; ++i) {
    auto wrong = Try(*api, "admin", "guess-" + std::to_string(i), "198.51.100.1");
    EXPECT_EQ(wrong.status, 401) << wrong.body;
  }
  // The account is now refused from the guessing address, even with the right password...
  auto locked = Try(*api, "admin", password_, "198.51.100.1");
  EXPECT_EQ(locked.status, 429) << locked.body;
  EXPECT_EQ(json::parse(locked.body)["type"], "https://api.backend.ai/probs/rate-limit-exceeded");
  EXPECT_EQ(HeaderOf(locked, "Retry-After"), "300");
  // ...but not from another: a guesser cannot lock the owner out (hostile testing found every
  // account, the superadmin's too, lockable from anywhere).
  auto owner = Try(*api, "admin", password_, "198.51.100.2");
  EXPECT_EQ(owner.status, 200) << owner.body;
  // One address cannot spread its guesses over many accounts either: 3 attempts are counted
  // for 198.51.100.1 already.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Try(*api, "user" + std::to_string(i), "x", "198.51.100.1").status, 401);
  }
  auto spread = Try(*api, "user9", "x", "198.51.100.1");
  EXPECT_EQ(spread.status, 429);
  EXPECT_THAT(spread.body, HasSubstr("Too many login attempts"));
  // Once the failures leave the window the right password works, and resets the account.
  now_ = now_.load() + std::chrono::seconds(301);
  auto ok = Try(*api, "admin", password_, "198.51.100.1");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_TRUE(json::parse(ok.body)["data"].contains("secret_key"));
}

// Console sign-ins all come from the webserver's address: with it trusted, each user's
// attempts count against their own address (X-Forwarded-For); without, the webserver's budget
// is everyone's.
TEST_F(AuthHandlerTest, ATrustedWebserverNamesTheClientTheThrottleCounts) {
  ApiOptions o;
  o.login_limits = {.per_address = 3, .failures_per_user = 3, .window = std::chrono::seconds(300)};
  o.trusted_proxies = {"10.0.0.5"};
  auto api = MakeApi(o);
  for (int i = 0; i < 6; ++i) {  // six users behind the webserver, more than 3 from one address
    auto r = Try(*api, "admin", password_, "10.0.0.5", "198.51.100." + std::to_string(i));
    EXPECT_EQ(r.status, 200) << i << ": " << r.body;
  }
  // One client through it is still held to its own budget...
  for (int i = 0; i < 3; ++i) Try(*api, "admin", password_, "10.0.0.5", "198.51.100.99");
  EXPECT_EQ(Try(*api, "admin", password_, "10.0.0.5", "198.51.100.99").status, 429);
  // ...and a peer that is not trusted cannot escape its own by naming others.
  for (int i = 0; i < 3; ++i) {
    Try(*api, "admin", password_, "203.0.113.9", "198.51.100." + std::to_string(10 + i));
  }
  EXPECT_EQ(Try(*api, "admin", password_, "203.0.113.9", "198.51.100.20").status, 429);
}

// The settings this hardening added: the head guarantee and the signup throttle, with their
// ranges checked.
TEST(ManagerConfigTest, HeadWaitAndSignupLimitAreSettings) {
  testing_util::TempDir dir;
  std::string path = dir.path() + "/manager.toml";
  std::ofstream(path) << "[scheduler]\nhead_wait = 120\n[auth]\nsignups_per_address = 2\n";
  ManagerConfig config;
  ASSERT_TRUE(LoadManagerConfig(path, config).ok());
  EXPECT_EQ(config.scheduler_head_wait, 120);
  EXPECT_EQ(config.signups_per_address, 2);
  std::ofstream(path) << "[scheduler]\nhead_wait = -1\n";
  auto bad = LoadManagerConfig(path, config);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("scheduler.head_wait"));
  std::ofstream(path) << "[auth]\nsignups_per_address = 0\n";
  EXPECT_FALSE(LoadManagerConfig(path, config).ok());
  std::ofstream(path) << "[auth]\ntrusted_proxies = [\"10.0.0.5\", \"::1\"]\n";
  ManagerConfig proxies;
  ASSERT_TRUE(LoadManagerConfig(path, proxies).ok());
  EXPECT_EQ(proxies.trusted_proxies, (std::vector<std::string>{"10.0.0.5", "::1"}));
  std::ofstream(path) << "[auth]\ntrusted_proxies = [\"webserver.local\"]\n";
  bad = LoadManagerConfig(path, config);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("auth.trusted_proxies must be an array of IP addresses"));
}

// Hardening (hostile, 6): a folder's usage (a walk of its whole tree) ran on the I/O thread, and
// two requests for a folder of 200k files stalled GET / for 20 s. Such routes (GraphQL, folder
// info and usage) run on the slow-work pool: while one is busy the rest of the API answers.
TEST_F(HandlerTest, PooledRoutesLeaveTheIoThreadFree) {
  ApiOptions o;
  o.slow_workers = 1;
  o.slow_queue = 1;
  ManagerApi api(*state_.store, o);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> entered{0};
  api.AddPooled("GET", "/slow/{name}", AuthLevel::kAnonymous, [&](RequestContext& ctx) {
    ++entered;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return server::HttpResponse::Json(200, json{{"name", ctx.params.at("name")}}.dump());
  });
  api.Add("GET", "/quick", AuthLevel::kAnonymous,
          [](RequestContext&) { return server::HttpResponse::Json(200, "{}"); });
  auto slow = FakeExchange::Make("GET", "/slow/walk");
  api.Handle(slow);
  EXPECT_FALSE(slow->Answered()) << "answered on the calling thread";
  for (int i = 0; i < 200 && entered == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(entered, 1);
  // The worker is busy: a quick route still answers at once on the calling thread.
  auto quick = FakeExchange::Make("GET", "/quick");
  api.Handle(quick);
  ASSERT_TRUE(quick->Answered());
  EXPECT_EQ(quick->Answered()->status, 200);
  // One may wait in the queue; the next is told to come back.
  auto queued = FakeExchange::Make("GET", "/slow/second");
  api.Handle(queued);
  auto refused = FakeExchange::Make("GET", "/slow/third");
  api.Handle(refused);
  ASSERT_TRUE(refused->Answered());
  EXPECT_EQ(refused->Answered()->status, 429);
  EXPECT_EQ(json::parse(refused->Answered()->body)["type"],
            "https://api.backend.ai/probs/rate-limit-exceeded");
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  // The path parameters outlive the call that routed them.
  auto a = slow->Wait();
  auto b = queued->Wait();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(json::parse(a->body)["name"], "walk");
  EXPECT_EQ(json::parse(b->body)["name"], "second");
  EXPECT_NE(slow->responder(), std::this_thread::get_id());
}

TEST_F(AuthHandlerTest, PasswordChecksRunOnABoundedPoolNotOnTheCallingThread) {
  ApiOptions o;
  o.password_workers = 1;
  o.password_queue = 1;
  auto api = MakeApi(o);
  // Each wrong guess costs one Argon2 check (tens of milliseconds); twenty arrive at once.
  std::vector<std::shared_ptr<FakeExchange>> logins;
  for (int i = 0; i < 20; ++i) {
    logins.push_back(Login("admin", "guess", "203.0.113." + std::to_string(i)));
    api->Handle(logins.back());
  }
  int deferred = 0, busy = 0;
  for (auto& x : logins) {
    auto now = x->Answered();
    if (!now) {
      ++deferred;
      auto later = x->Wait();
      ASSERT_TRUE(later.has_value());
      EXPECT_EQ(later->status, 401) << later->body;
      EXPECT_NE(x->responder(), std::this_thread::get_id()) << "hashed on the calling thread";
    } else {
      ++busy;
      EXPECT_EQ(now->status, 429) << now->body;
      EXPECT_THAT(now->body, HasSubstr("in progress"));
      EXPECT_EQ(HeaderOf(*now, "Retry-After"), "1");
    }
  }
  EXPECT_GE(deferred, 1);
  EXPECT_GE(busy, 1) << "a queue of one must refuse some of twenty simultaneous checks";
  // An unknown user costs a check too (the answer time does not reveal who exists).
  auto unknown = Login("nobody", "guess", "203.0.113.99");
  api->Handle(unknown);
  auto r = unknown->Wait();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->status == 401 || r->status == 429) << r->body;
}

class SessionHandlerTest : public HandlerTest {
 protected:
  void SetUp() override {
    HandlerTest::SetUp();
    access_key_ = creds_["BACKEND_ACCESS_KEY"];
    secret_key_ = creds_["BACKEND_SECRET_KEY"];
    sessions_ = std::make_unique<SessionStore>(*state_.db);
    tasks_ = std::make_unique<BackgroundTaskStore>(*state_.db);
    hub_ = std::make_unique<EventHub>(*sessions_, *tasks_);
    api_ = std::make_unique<ManagerApi>(*state_.store, ApiOptions{});
    RegisterSessionRoutes(
        *api_, *sessions_, *hub_, [this](std::string const& group) { scheduled_.push_back(group); },
        links_);
  }
  void TearDown() override {
    api_.reset();
    hub_.reset();
  }

  // A request signed with the superadmin's keypair (or unsigned), answered synchronously or
  // waited for.
  server::HttpResponse Call(std::string method, std::string target, json body = nullptr,
                            bool sign = true) {
    auto x = FakeExchange::Make(method, target, body.is_null() ? "" : body.dump());
    auto& r = x->mutable_request();
    std::string version = protocol::kCurrentApiVersion.ToString();
    r.headers.emplace_back("host", "manager.test");
    r.headers.emplace_back("x-backendai-version", version);
    if (body.is_null()) r.headers.emplace_back("content-type", "text/plain");
    if (sign) {
      protocol::SigningInput in;
      in.method = method;
      in.request_target = target;
      in.date = protocol::FormatRequestDate(std::chrono::system_clock::now());
      in.host = "manager.test";
      in.content_type = body.is_null() ? "text/plain" : "application/json";
      in.api_version = version;
      auto signature = protocol::Sign(in, secret_key_);
      EXPECT_TRUE(signature.ok());
      r.headers.emplace_back("date", in.date);
      r.headers.emplace_back("authorization",
                             protocol::AuthorizationHeaderValue(access_key_, *signature, in.hash));
    }
    api_->Handle(x);
    auto response = x->Wait(std::chrono::seconds(10));
    EXPECT_TRUE(response.has_value()) << method << " " << target << " was never answered";
    return response.value_or(server::HttpResponse{});
  }

  std::string access_key_, secret_key_;
  std::unique_ptr<SessionStore> sessions_;
  std::unique_ptr<BackgroundTaskStore> tasks_;
  std::unique_ptr<EventHub> hub_;
  vfolders::StorageLinks links_;  // no proxies: sessions here mount nothing
  std::unique_ptr<ManagerApi> api_;
  std::vector<std::string> scheduled_;
};

TEST_F(SessionHandlerTest, CreateInfoAndDestroyWithoutASocket) {
  auto created = Call("POST", "/session",
                      {{"name", "direct"},
                       {"image", "python"},
                       {"enqueueOnly", true},
                       {"config", {{"resources", {{"cpu", "2"}, {"mem", "1g"}}}}}});
  ASSERT_EQ(created.status, 201) << created.body;
  auto body = json::parse(created.body);
  EXPECT_EQ(body["status"], "PENDING");
  EXPECT_EQ(body["created"], true);
  std::string id = body["sessionId"];
  EXPECT_EQ(scheduled_, std::vector<std::string>{"default"}) << "a create asks for a pass";

  auto info = Call("GET", "/session/direct");
  ASSERT_EQ(info.status, 200) << info.body;
  auto j = json::parse(info.body);
  EXPECT_EQ(j["sessionId"], id);
  EXPECT_EQ(j["status"], "PENDING");
  EXPECT_EQ(j["requestedSlots"]["cpu"], "2");

  auto again = Call("POST", "/session", {{"name", "direct"}, {"image", "python"}});
  EXPECT_EQ(again.status, 201) << "an active session of that name and image is reused";
  EXPECT_EQ(json::parse(again.body)["created"], false);

  auto destroyed = Call("DELETE", "/session/direct");
  EXPECT_EQ(destroyed.status, 200) << destroyed.body;
  auto record = sessions_->Get(id);
  ASSERT_TRUE(record.ok() && *record);
  EXPECT_EQ((*record)->status, protocol::SessionStatus::kCancelled)
      << "a pending session is cancelled, not run";
  EXPECT_EQ(Call("GET", "/session/direct").status, 200) << "ended sessions read by name";
  EXPECT_EQ(Call("DELETE", "/session/" + id).status, 404) << "ended sessions cannot end again";
}

// Cross-acceptance: what the SDK encodes, the handler stores whole, and the info it answers is
// what the SDK decodes.
TEST_F(SessionHandlerTest, TheSdksCreateRequestIsStoredWholeAndItsInfoReadsBack) {
  ASSERT_EQ(Call("POST", "/session", {{"name", "prep"}, {"image", "python"}, {"enqueueOnly", true}})
                .status,
            201);
  protocol::SessionCreateRequest r;
  r.name = "train-1";
  r.image = "python";
  r.type = "batch";
  r.startup_command = "python train.py";
  r.resources = {{"cpu", protocol::Decimal::FromInteger(2)},
                 {"mem", protocol::Decimal::FromInteger(4LL * 1024 * 1024 * 1024)}};
  r.environ = {{"EPOCHS", "3"}};
  r.mounts = {"data"};
  r.group = "default";
  r.domain = "default";
  r.scaling_group = "default";
  r.enqueue_only = true;
  r.tag = "nightly";
  r.bootstrap_script = "true";
  r.batch_timeout_seconds = 3600;
  r.starts_at = "30m";
  r.dependencies = {"prep"};
  r.priority = 42;
  r.architecture = "aarch64";
  r.mount_map = {{"data", "/home/work/input"}};
  r.resource_opts = {{"shmem", "1g"}};
  r.callback_url = "https://ci.example/hook";
  // A folder nobody has is refused before anything is queued (vfolder_mounts_test.cc and the
  // vfolder tests mount real ones).
  auto missing = Call("POST", "/session", json::parse(protocol::EncodeSessionCreateRequest(r)));
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_THAT(missing.body, ::testing::HasSubstr("No such virtual folder: data"));
  r.mounts.clear();
  r.mount_map.clear();
  auto created = Call("POST", "/session", json::parse(protocol::EncodeSessionCreateRequest(r)));
  ASSERT_EQ(created.status, 201) << created.body;
  auto answer = protocol::DecodeSessionCreateResult(created.body);
  ASSERT_TRUE(answer.ok()) << created.body;
  EXPECT_EQ(answer->name, "train-1");
  EXPECT_EQ(answer->status, "PENDING");

  auto record = sessions_->Get(answer->id);
  ASSERT_TRUE(record.ok() && *record);
  auto const& s = **record;
  EXPECT_EQ(s.type, "batch");
  EXPECT_EQ(s.architecture, "aarch64");
  EXPECT_EQ(s.environ, r.environ);
  EXPECT_EQ(s.mounts, r.mounts);
  EXPECT_EQ(s.mount_map, r.mount_map);
  EXPECT_EQ(s.resource_opts, r.resource_opts);
  EXPECT_EQ(s.requested, r.resources);
  EXPECT_EQ(s.batch_timeout, 3600);
  EXPECT_EQ(s.priority, 42);
  EXPECT_EQ(s.callback_url, r.callback_url);
  EXPECT_EQ(s.bootstrap_script, r.bootstrap_script);
  ASSERT_EQ(s.dependencies.size(), 1u);
  EXPECT_NE(s.dependencies[0], "prep") << "dependencies are stored as session ids";
  ASSERT_TRUE(s.starts_at.has_value());
  EXPECT_TRUE(protocol::ParseHttpDate(*s.starts_at)) << "a delay is stored as a time";

  auto info = Call("GET", "/session/train-1");
  ASSERT_EQ(info.status, 200) << info.body;
  auto decoded = protocol::DecodeSessionInfo(info.body);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->id, answer->id);
  EXPECT_EQ(decoded->status.status, protocol::SessionStatus::kPending);
  EXPECT_EQ(decoded->requested, r.resources);
  EXPECT_TRUE(decoded->occupied.empty()) << "nothing is held before placement";
  EXPECT_EQ(decoded->environ, r.environ);
  EXPECT_EQ(decoded->resource_opts, r.resource_opts);
  EXPECT_EQ(decoded->tag, r.tag);
  EXPECT_EQ(decoded->startup_command, r.startup_command);
  EXPECT_EQ(decoded->priority, 42);
  EXPECT_EQ(decoded->architecture, "aarch64");
  EXPECT_EQ(decoded->status_history.count("PENDING"), 1u);
}

TEST_F(SessionHandlerTest, BadCreatesNameTheirFieldsAndUnsignedCallsAreRefused) {
  auto bad = Call("POST", "/session",
                  {{"name", "x"},
                   {"type", "batch"},
                   {"startupCommand", {"ls"}},
                   {"config", {{"resources", {{"cpu", "-1"}}}}}});
  ASSERT_EQ(bad.status, 400) << bad.body;
  auto data = json::parse(bad.body)["data"];
  EXPECT_TRUE(data.contains("name")) << data;
  EXPECT_TRUE(data.contains("image")) << data;
  EXPECT_TRUE(data.contains("startupCommand")) << data;
  EXPECT_TRUE(data.contains("config.resources")) << data;
  EXPECT_TRUE(scheduled_.empty());

  // Regression: mounts were stored as given and passed to the agent, so an object naming a
  // host_path bind-mounted any host directory into the container. Mounts are vfolder names.
  auto host_path = Call(
      "POST", "/session",
      {{"name", "escape"},
       {"image", "python"},
       {"config",
        {{"mounts",
          {{{"name", "x"}, {"host_path", "/"}, {"kernel_path", "/mnt"}, {"permission", "rw"}}}}}}});
  ASSERT_EQ(host_path.status, 400) << host_path.body;
  EXPECT_TRUE(json::parse(host_path.body)["data"].contains("config.mounts")) << host_path.body;
  EXPECT_TRUE(scheduled_.empty());

  auto unsigned_call = Call("GET", "/session/anything", nullptr, /*sign=*/false);
  EXPECT_EQ(unsigned_call.status, 401) << unsigned_call.body;
  EXPECT_EQ(Call("GET", "/session/no-such-session").status, 404);
}

// The asynchronous routes of a session's kernel (files, streams, tasks, logs, restart), with an
// agent registry and no agent connected: what they refuse before anything is relayed.
class KernelRoutesTest : public SessionHandlerTest {
 protected:
  void SetUp() override {
    SessionHandlerTest::SetUp();
    agents_ = std::make_unique<AgentRegistry>(
        *state_.db, *sessions_, *tasks_, AgentOptions{}, [](std::string const&) {}, [] {},
        "cluster-secret");
    RegisterSessionFileRoutes(*api_, *sessions_, *agents_);
    RegisterStreamRoutes(*api_, *sessions_, *agents_, registry_, broker_, "cluster-secret");
    RegisterTaskRoutes(*api_, *sessions_, *agents_, *tasks_, *hub_, links_);
    RegisterLogRoutes(*api_, *sessions_, *agents_);
    RegisterExecuteRoutes(*api_, *sessions_, *agents_);
    auto created =
        Call("POST", "/session", {{"name", "waiting"}, {"image", "python"}, {"enqueueOnly", true}});
    ASSERT_EQ(created.status, 201) << created.body;
  }
  void TearDown() override {
    api_.reset();
    agents_.reset();
    SessionHandlerTest::TearDown();
  }

  std::unique_ptr<AgentRegistry> agents_;
  streams::StreamRegistry registry_;
  streams::AgentStreamBroker broker_;
};

TEST_F(KernelRoutesTest, FileRequestsAreCheckedBeforeTheSessionOrTheAgent) {
  auto escape = Call("POST", "/session/waiting/download_single", {{"file", "../../etc/passwd"}});
  EXPECT_EQ(escape.status, 400) << escape.body;
  auto none = Call("POST", "/session/waiting/download", {{"files", json::array()}});
  EXPECT_EQ(none.status, 400) << none.body;
  EXPECT_TRUE(json::parse(none.body)["data"].contains("files")) << none.body;
  auto pending = Call("POST", "/session/waiting/files", {{"path", "."}});
  EXPECT_EQ(pending.status, 400) << pending.body;
  EXPECT_THAT(pending.body, HasSubstr("not RUNNING"));
  EXPECT_EQ(Call("POST", "/session/no-such/files", {{"path", "."}}).status, 404);
}

TEST_F(KernelRoutesTest, StreamsTasksLogsAndRestartsRefuseWhatCannotBeServed) {
  EXPECT_EQ(Call("GET", "/stream/session/waiting/pty").status, 400) << "the session is not running";
  auto apps = Call("GET", "/stream/session/waiting/apps");
  EXPECT_EQ(apps.status, 200) << apps.body;
  auto agent_side = Call("GET", "/agent/stream/abc", nullptr, /*sign=*/false);
  EXPECT_EQ(agent_side.status, 401) << "an agent's stream needs the cluster's credentials";
  auto task = Call("GET", "/events/background-task?taskId=no-such-task");
  EXPECT_EQ(task.status, 404) << task.body;
  auto commit = Call("POST", "/session/waiting/commit", {{"filename", "../x.tar"}});
  EXPECT_EQ(commit.status, 400) << commit.body;
  EXPECT_TRUE(json::parse(commit.body)["data"].contains("filename")) << commit.body;
  auto follow = Call("GET", "/session/waiting/logs?follow=true");
  EXPECT_EQ(follow.status, 400) << follow.body;
  EXPECT_THAT(follow.body, HasSubstr("has not started yet"));
  auto whole = Call("GET", "/session/waiting/logs");
  EXPECT_EQ(whole.status, 200) << "an unplaced session's log is the (empty) stored one";
  EXPECT_EQ(json::parse(whole.body)["result"]["logs"], "");
  EXPECT_EQ(Call("PATCH", "/session/waiting").status, 400) << "only a running session restarts";
  EXPECT_EQ(Call("POST", "/session/waiting", {{"mode", "query"}, {"code", "1"}}).status, 400);
}

}  // namespace
}  // namespace bai::manager
