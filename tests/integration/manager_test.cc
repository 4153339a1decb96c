// SPDX-License-Identifier: Apache-2.0
// bai-manager in-process on port 0 with a fresh data directory, driven by libbai's client, by
// raw sockets for what no client would send, and as a process for start-up and SIGTERM.
#include "server-reference/manager/manager.h"

#include "bai/client.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "server-reference/manager/metrics.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <fstream>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::RawHttp;
using testing_util::ReadEnvFile;
using testing_util::TempDir;

std::string TypeOf(std::string const& body) {
  auto j = json::parse(body, nullptr, false);
  return j.is_object() && j.contains("type") ? j["type"].get<std::string>() : "";
}

std::string Probs(char const* suffix) {
  return std::string("https://api.backend.ai/probs/") + suffix;
}

class ManagerTest : public testing_util::ManagerFixture {
 protected:
  Client MakeClient(std::string access, std::string secret) {
    Options o;
    o.endpoints = {Url()};
    o.access_key = std::move(access);
    o.secret_key = std::move(secret);
    o.retry.max_attempts = 1;
    return *Client::Create(o);
  }
  Client Admin() { return MakeClient(access_key_, secret_key_); }

  // A signed request, built by hand so any line can be bent.
  struct Raw {
    std::string method = "GET";
    std::string target = "/auth?echo=x";
    std::string date = protocol::FormatRequestDate(std::chrono::system_clock::now());
    std::string version = "v8.20240915";
    std::string content_type = "text/plain";
    std::string body;
    std::string authorization;  // "" = sign properly
    std::string extra_headers;
  };
  testing_util::RawResponse Send(Raw r, std::string const& secret = {}) {
    std::string host = "127.0.0.1:" + std::to_string(manager_->port());
    if (r.authorization.empty()) {
      protocol::SigningInput in;
      in.method = r.method;
      in.request_target = r.target;
      in.date = r.date;
      in.host = host;
      in.content_type = r.content_type;
      in.api_version = r.version;
      auto sig = protocol::Sign(in, secret.empty() ? secret_key_ : secret);
      r.authorization = protocol::AuthorizationHeaderValue(access_key_, sig.ok() ? *sig : "",
                                                           protocol::HashAlgorithm::kSha256);
    }
    std::string req = r.method + " " + r.target + " HTTP/1.1\r\nHost: " + host +
                      "\r\nDate: " + r.date + "\r\nX-BackendAI-Version: " + r.version +
                      "\r\nContent-Type: " + r.content_type +
                      "\r\nAuthorization: " + r.authorization +
                      "\r\nContent-Length: " + std::to_string(r.body.size()) +
                      "\r\nConnection: close\r\n" + r.extra_headers + "\r\n" + r.body;
    return RawHttp(manager_->port(), req);
  }
};

TEST_F(ManagerTest, BootstrapWritesCredentialsOnceWithMode0600) {
  auto const boot = manager_->bootstrap();
  EXPECT_TRUE(boot.created);
  struct stat st {};
  ASSERT_EQ(::stat(boot.credentials_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(access_key_, ::testing::MatchesRegex("AKIA[A-Z2-7]{16}"));
  EXPECT_THAT(secret_key_, ::testing::MatchesRegex("[A-Za-z0-9_-]{40}"));
  EXPECT_FALSE(password_.empty());

  // A restart keeps the state and does not bootstrap again.
  manager_->Stop();
  manager_.reset();
  auto again = Manager::Start(config_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE((*again)->bootstrap().created);
  EXPECT_EQ(ReadEnvFile(boot.credentials_file)["BACKEND_ACCESS_KEY"], access_key_);
  manager_ = std::move(*again);
  auto r = Admin().Send({"GET", "/auth?echo=after-restart"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
}

// Issue 21 (item 3): where 24.09 answers by the caller's API version, so do we, decided in one
// place (manager/api/dialect.*). A v6 client's `config` may not carry clusterSize (a top-level
// parameter since v6); a v5 client's may, but not mount_options (v6); `GET /manager/status`
// shows each caller its own version as the pair 24.09 writes.
TEST_F(ManagerTest, AnswersFollowTheCallersApiVersionAs2409s) {
  auto status_as = [&](std::string version) {
    Raw r;
    r.target = "/manager/status";
    r.version = std::move(version);
    auto answer = Send(r);
    EXPECT_EQ(answer.status, 200) << answer.body;
    return json::parse(answer.body)["nodes"][0]["api_version"];
  };
  EXPECT_EQ(status_as("v6.20220315"), json::array({6, "20220315"}));
  EXPECT_EQ(status_as("v8.20240915"), json::array({8, "20240915"}));
  EXPECT_EQ(status_as("v4.20190615"), json::array({4, "20190615"}));

  auto create_as = [&](std::string version, json config) {
    Raw r;
    r.method = "POST";
    r.target = "/session";
    r.version = std::move(version);
    r.content_type = "application/json";
    static int n = 0;
    r.body = json{{"name", "dialect-" + std::to_string(++n)},
                  {"image", "python"},
                  {"config", std::move(config)}}
                 .dump();
    return Send(r);
  };
  auto v6_cluster = create_as("v6.20220315", {{"clusterSize", 1}});
  EXPECT_EQ(v6_cluster.status, 400) << v6_cluster.body;
  EXPECT_THAT(v6_cluster.body, HasSubstr("config.clusterSize"));
  EXPECT_THAT(v6_cluster.body, HasSubstr("top-level"));
  auto v5_options = create_as("v5.20191215", {{"mount_options", json::object()}});
  EXPECT_EQ(v5_options.status, 400) << v5_options.body;
  EXPECT_THAT(v5_options.body, HasSubstr("config.mount_options"));
  auto v42_resources = create_as("v4.20190115", {{"resources", {{"cpu", "1"}}}});
  EXPECT_EQ(v42_resources.status, 400) << "v4 before 20190315 had no config.resources";
  // What each version does take is not refused for it.
  for (auto const& [version, config] : std::vector<std::pair<std::string, json>>{
           {"v5.20191215", {{"clusterSize", 1}, {"preopen_ports", json::array()}}},
           {"v6.20220315", {{"mount_options", json::object()}, {"agent_list", nullptr}}},
           {"v8.20240915", {{"resources", {{"cpu", "1"}}}, {"scaling_group", "default"}}}}) {
    auto r = create_as(version, config);
    EXPECT_THAT(r.body, Not(HasSubstr("is not allowed key"))) << version << ": " << r.body;
    EXPECT_NE(r.status, 400) << version << ": " << r.body;
  }
}

TEST_F(ManagerTest, VersionProbeAndHealth) {
  auto client = MakeClient("", "");
  auto info = client.GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->version, "v8.20240915");
  EXPECT_THAT(info->manager, HasSubstr("bai-manager"));
  auto health = client.Send({"GET", "/health"});
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
}

TEST_F(ManagerTest, SignedRequestsWorkAndCarryRateLimitHeaders) {
  auto r = Admin().Send({"GET", "/auth?echo=hello"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body), json({{"authorized", "yes"}, {"echo", "hello"}}));
  EXPECT_EQ(r->Header("x-ratelimit-limit"), "100000");
  EXPECT_EQ(r->Header("x-ratelimit-window"), "900");
  EXPECT_TRUE(r->Header("x-ratelimit-remaining"));
  EXPECT_EQ(r->Header("server"), "BackendAI");
  ApiRequest post{"POST", "/auth"};
  post.body = R"({"echo":"posted","unknown_key":1})";  // unknown keys are ignored
  auto p = Admin().Send(post);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(json::parse(p->body)["echo"], "posted");
}

TEST_F(ManagerTest, EveryAuthFailureHasItsStatusAndType) {
  struct Case {
    char const* what;
    Raw raw;
    std::string secret;
    int status;
    char const* type;
  };
  auto now = std::chrono::system_clock::now();
  Raw skewed;
  skewed.date = protocol::FormatRequestDate(now - std::chrono::minutes(16));
  Raw future;
  future.date = protocol::FormatRequestDate(now + std::chrono::minutes(16));
  Raw bad_date;
  bad_date.date = "yesterday";
  Raw malformed;
  malformed.authorization = "BackendAI signMethod=HMAC-SHA256, credential";
  Raw bad_scheme;
  bad_scheme.authorization = "Bearer abc";
  Raw bad_method;
  bad_method.authorization = "BackendAI signMethod=HMAC-MD5, credential=AK:" + std::string(64, 'a');
  Raw unknown_key;
  unknown_key.authorization =
      "BackendAI signMethod=HMAC-SHA256, credential=AKIAAAAAAAAAAAAAAAAA:" + std::string(64, 'a');
  Raw bad_version;
  bad_version.version = "v99.20990101";
  Raw altered_path;
  std::vector<Case> cases = {
      {"wrong secret", Raw{}, "not-the-secret-key-at-all-0000000000000", 401, "auth-failed"},
      {"date 16 min old", skewed, "", 400, "invalid-auth-params"},
      {"date 16 min ahead", future, "", 400, "invalid-auth-params"},
      {"unparseable date", bad_date, "", 400, "invalid-auth-params"},
      {"malformed Authorization", malformed, "", 400, "invalid-auth-params"},
      {"wrong scheme", bad_scheme, "", 400, "invalid-auth-params"},
      {"unsupported hash", bad_method, "", 400, "invalid-auth-params"},
      {"unknown access key", unknown_key, "", 401, "auth-failed"},
      {"unsupported API version", bad_version, "", 400, "generic-bad-request"},
  };
  for (auto const& c : cases) {
    auto r = Send(c.raw, c.secret);
    EXPECT_EQ(r.status, c.status) << c.what << ": " << r.body;
    EXPECT_EQ(TypeOf(r.body), Probs(c.type)) << c.what;
    EXPECT_EQ(r.headers["content-type"], "application/problem+json") << c.what;
  }
  // Signed for one path, sent to another.
  Raw signed_for_other;
  {
    protocol::SigningInput in;
    in.method = "GET";
    in.request_target = "/auth?echo=other";
    in.date = signed_for_other.date;
    in.host = "127.0.0.1:" + std::to_string(manager_->port());
    in.content_type = "text/plain";
    in.api_version = "v8.20240915";
    signed_for_other.authorization = protocol::AuthorizationHeaderValue(
        access_key_, *protocol::Sign(in, secret_key_), protocol::HashAlgorithm::kSha256);
  }
  auto r = Send(signed_for_other);
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, HasSubstr("Signature mismatch"));
  // No Authorization at all on a protected endpoint.
  auto anonymous = MakeClient("", "").Send({"GET", "/auth?echo=x"});
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(TypeOf(anonymous->body), Probs("auth-failed"));
}

TEST_F(ManagerTest, PrivilegesAndInactiveKeypairs) {
  auto fixture = R"({
    "keypair_resource_policies": [{"name": "tiny", "max_concurrent_sessions": 1}],
    "users": [{"uuid": "00000000-0000-4000-8000-000000000001", "username": "alice",
               "email": "alice@example.com", "password": "alice-password", "role": "user",
               "domain_name": "default"},
              {"uuid": "00000000-0000-4000-8000-000000000002", "username": "bob",
               "email": "bob@example.com", "password": "bob-password", "role": "user",
               "domain_name": "default", "allowed_client_ip": ["10.0.0.0/8"]}],
    "keypairs": [{"access_key": "AKIAALICE00000000000", "secret_key": "alice-secret-0000000000000000000000000000",
                  "user_id": "00000000-0000-4000-8000-000000000001", "resource_policy": "tiny",
                  "rate_limit": 3},
                 {"access_key": "AKIAALICEOLD00000000", "secret_key": "alice-old-secret-00000000000000000000000",
                  "user_id": "00000000-0000-4000-8000-000000000001", "resource_policy": "tiny",
                  "is_active": false},
                 {"access_key": "AKIABOB0000000000000", "secret_key": "bob-secret-000000000000000000000000000000",
                  "user_id": "00000000-0000-4000-8000-000000000002", "resource_policy": "tiny"}]
  })";
  auto loaded = LoadFixture(manager_->store(), fixture);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_THAT(*loaded, HasSubstr("6 rows inserted"));

  auto alice = MakeClient("AKIAALICE00000000000", "alice-secret-0000000000000000000000000000");
  auto put = ApiRequest{"PUT", "/manager/status"};
  put.body = R"({"status":"frozen"})";
  auto r = alice.Send(put);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401) << "a user may not freeze the manager";
  EXPECT_THAT(r->body, HasSubstr("Unauthorized access"));

  // Rate limit 3: the fourth request in the window is refused, with the headers. (The refused
  // PUT above failed authorization and does not count.)
  for (int i = 0; i < 3; ++i) ASSERT_EQ(alice.Send({"GET", "/auth?echo=1"})->status, 200);
  auto limited = alice.Send({"GET", "/auth?echo=1"});
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(TypeOf(limited->body), Probs("rate-limit-exceeded"));
  EXPECT_EQ(limited->Header("x-ratelimit-limit"), "3");
  EXPECT_EQ(limited->Header("x-ratelimit-remaining"), "0");

  auto old = MakeClient("AKIAALICEOLD00000000", "alice-old-secret-00000000000000000000000");
  EXPECT_EQ(old.Send({"GET", "/auth?echo=1"})->status, 401);
  auto bob = MakeClient("AKIABOB0000000000000", "bob-secret-000000000000000000000000000000");
  auto from_wrong_ip = bob.Send({"GET", "/auth?echo=1"});
  EXPECT_EQ(from_wrong_ip->status, 401);
  EXPECT_THAT(from_wrong_ip->body, HasSubstr("is not allowed IP address"));

  // Loading the same fixture again changes nothing.
  auto again = LoadFixture(manager_->store(), fixture);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again, HasSubstr("0 rows inserted, 6 already present"));
}

TEST_F(ManagerTest, TwoManagersOnOneDatabaseEnforceOneRateLimit) {
  ASSERT_TRUE(LoadFixture(manager_->store(), R"({
    "users": [{"uuid": "00000000-0000-4000-8000-000000000007", "username": "carol",
               "email": "carol@example.com", "password": "carol-password", "role": "user",
               "domain_name": "default"}],
    "keypairs": [{"access_key": "AKIACAROL00000000000", "secret_key": "carol-secret-0000000000000000000000000000",
                  "user_id": "00000000-0000-4000-8000-000000000007", "resource_policy": "default",
                  "rate_limit": 6}]})")
                  .ok());
  ManagerConfig second = config_;
  second.listen_port = 0;
  auto other = Manager::Start(second);
  ASSERT_TRUE(other.ok()) << other.status().message();
  auto at = [](std::uint16_t port) {
    Options o;
    o.endpoints = {"http://127.0.0.1:" + std::to_string(port)};
    o.access_key = "AKIACAROL00000000000";
    o.secret_key = "carol-secret-0000000000000000000000000000";
    o.retry.max_attempts = 1;
    return *Client::Create(o);
  };
  auto a = at(manager_->port());
  auto b = at((*other)->port());
  for (int i = 0; i < 4; ++i) ASSERT_EQ(a.Send({"GET", "/auth?echo=1"})->status, 200);
  // After a flush (every 200 ms) the second manager knows about the first one's four.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(b.Send({"GET", "/auth?echo=1"})->status, 200);
  EXPECT_EQ(b.Send({"GET", "/auth?echo=1"})->status, 200);
  auto limited = b.Send({"GET", "/auth?echo=1"});
  EXPECT_EQ(limited->status, 429) << "the limit is per keypair across managers";
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(a.Send({"GET", "/auth?echo=1"})->status, 429);
}

TEST_F(ManagerTest, FixtureErrorsLeaveNothingBehind) {
  for (char const* bad : {"[]", "{not json", R"({"nonsense": []})", R"({"domains": {}})",
                          R"({"domains": [{"name": "d1"}, {"name": "d2", "evil; DROP": 1}]})",
                          R"({"users": [{"uuid": "u", "email": "e"}]})"}) {
    auto r = LoadFixture(manager_->store(), bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto rows = manager_->store().db().Query("SELECT COUNT(*) FROM domains");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].Int(0), 1) << "d1 must have been rolled back";
}

TEST_F(ManagerTest, SignupIsOffUnlessConfiguredAndThenCreatesAWorkingUser) {
  auto anon = MakeClient("", "");
  ApiRequest signup{"POST", "/auth/signup"};
  signup.body = json({{"domain", "default"},
                      {"email", "new@example.com"},
                      {"password", "long-enough-1"},
                      {"full_name", "New User"}})
                    .dump();
  auto off = anon.Send(signup);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->status, 403) << off->body;
  EXPECT_EQ(json::parse(off->body)["type"], Probs("generic-forbidden"));

  manager_.reset();
  config_.allow_signup = true;
  auto m = Manager::Start(config_);
  ASSERT_TRUE(m.ok()) << m.status().message();
  manager_ = std::move(*m);
  anon = MakeClient("", "");
  auto made = anon.Send(signup);
  ASSERT_EQ(made->status, 201) << made->body;
  auto keys = json::parse(made->body);
  std::string access = keys["access_key"], secret = keys["secret_key"];
  EXPECT_EQ(access.size(), 20u);
  EXPECT_EQ(secret.size(), 40u);
  // The keypair works, as a plain user, and the password logs in to the same keypair.
  auto test = MakeClient(access, secret).Send({"GET", "/auth/role"});
  ASSERT_EQ(test->status, 200) << test->body;
  EXPECT_EQ(json::parse(test->body)["global_role"], "user");
  ApiRequest login{"POST", "/auth/authorize"};
  login.body = json({{"type", "keypair"},
                     {"domain", "default"},
                     {"username", "new@example.com"},
                     {"password", "long-enough-1"}})
                   .dump();
  auto logged = anon.Send(login);
  ASSERT_EQ(logged->status, 200) << logged->body;
  EXPECT_EQ(json::parse(logged->body)["data"]["access_key"], access);
  EXPECT_EQ(json::parse(logged->body)["data"]["role"], "user");

  // Hardening (hostile, 15): a taken email and a taken username were told apart ("Email already
  // exists"), so signup enumerated accounts; one answer for both now.
  auto again = anon.Send(signup);
  EXPECT_EQ(again->status, 400);
  EXPECT_THAT(again->body, HasSubstr("Cannot sign up with this email and username"));
  EXPECT_THAT(again->body, Not(HasSubstr("Email")));
  ApiRequest by_name{"POST", "/auth/signup"};
  by_name.body = json({{"domain", "default"},
                       {"email", "other@example.com"},
                       {"username", "new@example.com"},
                       {"password", "long-enough-1"}})
                     .dump();
  auto taken_name = anon.Send(by_name);
  EXPECT_EQ(taken_name->status, 400);
  EXPECT_EQ(json::parse(taken_name->body)["msg"], json::parse(again->body)["msg"]);
  signup.body =
      json({{"domain", "nowhere"}, {"email", "b@example.com"}, {"password", "12345678"}}).dump();
  EXPECT_EQ(anon.Send(signup)->status, 400);
  signup.body =
      json({{"domain", "default"}, {"email", "not-an-email"}, {"password", "short"}}).dump();
  auto bad = anon.Send(signup);
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(bad->body, HasSubstr("email"));
  EXPECT_THAT(bad->body, HasSubstr("password"));
  // Hardening (hostile, 15): signup was unthrottled. Five calls an hour per address (four so
  // far passed the parameter check), then 429 with Retry-After, also for a new email.
  signup.body =
      json({{"domain", "default"}, {"email", "fifth@example.com"}, {"password", "long-enough-5"}})
          .dump();
  EXPECT_EQ(anon.Send(signup)->status, 201);
  signup.body =
      json({{"domain", "default"}, {"email", "sixth@example.com"}, {"password", "long-enough-6"}})
          .dump();
  auto flood = anon.Send(signup);
  EXPECT_EQ(flood->status, 429) << flood->body;
  EXPECT_FALSE(flood->Header("retry-after").value_or("").empty());
}

TEST_F(ManagerTest, BackgroundTasksFinishOnceStallAndExpire) {
  auto& tasks = manager_->tasks();
  auto t = tasks.Create("commit", access_key_, "subject-1", 4);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(*tasks.Update(t->id, 2, 4, "half"));
  auto mid = *tasks.Get(t->id);
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid->current_progress, 2);
  EXPECT_GT(mid->version, t->version);
  EXPECT_EQ((*tasks.Ongoing("commit", "subject-1"))->id, t->id);
  EXPECT_TRUE(*tasks.Finish(t->id, protocol::TaskStatus::kDone, "all of it"));
  EXPECT_FALSE(*tasks.Finish(t->id, protocol::TaskStatus::kFailed, "too late"))
      << "a finished task never changes";
  EXPECT_FALSE(*tasks.Update(t->id, 3, 4, "too late"));
  auto done = *tasks.Get(t->id);
  EXPECT_EQ(done->status, protocol::TaskStatus::kDone);
  EXPECT_EQ(done->current_progress, 4) << "done means complete";
  EXPECT_FALSE(*tasks.Ongoing("commit", "subject-1"));
  EXPECT_FALSE(tasks.Finish(t->id, protocol::TaskStatus::kOngoing, "").ok())
      << "a task ends done, failed or cancelled";

  // One that nobody reports on any more fails after an hour; finished ones go after a day.
  auto stalled = *tasks.Create("commit", access_key_, "subject-2", 1);
  auto now = std::chrono::system_clock::now();
  ASSERT_TRUE(tasks.Expire(now).ok());
  EXPECT_EQ((*tasks.Get(stalled.id))->status, protocol::TaskStatus::kOngoing);
  ASSERT_TRUE(tasks.Expire(now + std::chrono::minutes(61)).ok());
  EXPECT_EQ((*tasks.Get(stalled.id))->status, protocol::TaskStatus::kFailed);
  EXPECT_TRUE(*tasks.Get(t->id)) << "kept for a day";
  ASSERT_TRUE(tasks.Expire(now + std::chrono::hours(25)).ok());
  EXPECT_FALSE(*tasks.Get(t->id));
}

TEST_F(ManagerTest, PasswordLoginReturnsTheKeypair) {
  auto anon = MakeClient("", "");
  ApiRequest login{"POST", "/auth/authorize"};
  login.body = json({{"type", "keypair"},
                     {"domain", "default"},
                     {"username", "admin"},
                     {"password", password_}})
                   .dump();
  auto ok = anon.Send(login);
  ASSERT_TRUE(ok.ok());
  ASSERT_EQ(ok->status, 200) << ok->body;
  auto data = json::parse(ok->body)["data"];
  EXPECT_EQ(data["access_key"], access_key_);
  EXPECT_EQ(data["secret_key"], secret_key_);
  EXPECT_EQ(data["role"], "superadmin");
  login.body = json({{"type", "keypair"},
                     {"domain", "default"},
                     {"username", "admin"},
                     {"password", "wrong"}})
                   .dump();
  auto bad = anon.Send(login);
  EXPECT_EQ(bad->status, 401);
  EXPECT_THAT(bad->body, HasSubstr("User credential mismatch."));
  login.body = R"({"type":"keypair","domain":"default"})";
  auto missing = anon.Send(login);
  EXPECT_EQ(missing->status, 400);
  auto problem = json::parse(missing->body);
  EXPECT_EQ(problem["type"], Probs("invalid-api-params"));
  EXPECT_TRUE(problem["data"].contains("username"));
  EXPECT_TRUE(problem["data"].contains("password"));
}

TEST_F(ManagerTest, HostileInputGetsClearErrors) {
  auto admin = Admin();
  ApiRequest bad_json{"POST", "/auth"};
  bad_json.body = "{\"echo\": ";
  auto r = admin.Send(bad_json);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("Malformed body"));

  ApiRequest deep{"POST", "/auth"};
  deep.body = std::string(100000, '[') + std::string(100000, ']');
  r = admin.Send(deep);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("nested deeper"));

  ApiRequest not_object{"POST", "/auth"};
  not_object.body = "[1,2,3]";
  EXPECT_EQ(admin.Send(not_object)->status, 400);

  ApiRequest wrong_type{"POST", "/auth"};
  wrong_type.body = R"({"echo": {"nested": true}})";
  r = admin.Send(wrong_type);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["data"]["echo"], "must be a string");

  ApiRequest huge{"POST", "/auth"};
  huge.body = "{\"echo\":\"" + std::string(2 << 20, 'x') + "\"}";
  r = admin.Send(huge);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(TypeOf(r->body), Probs("request-entity-too-large"));

  auto long_name = admin.Send({"GET", "/auth?echo=" + std::string(100000, 'n')});
  ASSERT_TRUE(long_name.ok());
  EXPECT_EQ(long_name->status, 431);

  auto garbage = RawHttp(manager_->port(), "GARBAGE\r\n\r\n");
  EXPECT_EQ(garbage.status, 400);
  auto binary = RawHttp(manager_->port(), std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc", 9));
  EXPECT_TRUE(binary.status == 400 || binary.status == 0);

  // The server is still fine.
  EXPECT_EQ(admin.Send({"GET", "/auth?echo=still-up"})->status, 200);
}

TEST_F(ManagerTest, RoutingErrorsAreProblems) {
  auto admin = Admin();
  auto missing = admin.Send({"GET", "/no/such/path"});
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(TypeOf(missing->body), Probs("url-not-found"));
  auto trailing = admin.Send({"GET", "/auth/"});
  EXPECT_EQ(trailing->status, 404) << "trailing slashes matter";
  auto method = admin.Send({"DELETE", "/auth"});
  EXPECT_EQ(method->status, 405);
  EXPECT_EQ(TypeOf(method->body), Probs("method-not-allowed"));
}

TEST_F(ManagerTest, ResourceGroupsPresetsRolesAndSettings) {
  auto admin = Admin();
  auto groups = admin.Send({"GET", "/scaling-groups"});
  EXPECT_EQ(json::parse(groups->body)["scaling_groups"], json::parse(R"([{"name":"default"}])"));
  auto unknown = admin.Send({"GET", "/scaling-groups?group=nope"});
  EXPECT_EQ(unknown->status, 404);
  auto role = admin.Send({"GET", "/auth/role?group=default"});
  auto j = json::parse(role->body);
  EXPECT_EQ(j["global_role"], "superadmin");
  EXPECT_EQ(j["group_role"], "user");

  auto slots = MakeClient("", "").Send({"GET", "/config/resource-slots"});
  EXPECT_EQ(json::parse(slots->body)["mem"], "bytes");

  ASSERT_TRUE(LoadFixture(manager_->store(),
                          R"({"resource_presets": [{"name": "small",
                              "resource_slots": {"cpu": "1", "mem": "1073741824"}}]})")
                  .ok());
  auto presets = json::parse(admin.Send({"GET", "/resource/presets"})->body)["presets"];
  ASSERT_EQ(presets.size(), 1u);
  EXPECT_EQ(presets[0]["resource_slots"]["mem"], "1073741824");

  ApiRequest announce{"POST", "/manager/announcement"};
  announce.body = R"({"enabled": true, "message": "maintenance at 18:00"})";
  EXPECT_EQ(admin.Send(announce)->status, 204);
  auto a = json::parse(admin.Send({"GET", "/manager/announcement"})->body);
  EXPECT_EQ(a["message"], "maintenance at 18:00");
  EXPECT_EQ(a["enabled"], true);

  ApiRequest script{"POST", "/user-config/bootstrap-script"};
  script.body = R"({"script": "pip install numpy"})";
  EXPECT_EQ(admin.Send(script)->status, 204);
  EXPECT_EQ(json::parse(admin.Send({"GET", "/user-config/bootstrap-script"})->body),
            "pip install numpy");
}

TEST(ManagerProcessTest, StartsServesAndStopsOnSigterm) {
  TempDir dir;
  testing_util::BackgroundProcess proc({testing_util::BinPath("bai-manager"), "--data-dir",
                                        dir.path() + "/d", "--listen", "127.0.0.1:0"});
  auto line = proc.WaitForLine("listening on");
  ASSERT_FALSE(line.empty());
  int port = std::stoi(line.substr(line.rfind(':') + 1));
  auto creds = ReadEnvFile(dir.path() + "/d/admin-credentials.env");
  // The real `bai` against the real manager.
  auto r =
      testing_util::RunProcess({testing_util::BinPath("bai"), "api", "GET", "/auth?echo=from-cli"},
                               {{"BACKEND_ENDPOINT", "http://127.0.0.1:" + std::to_string(port)},
                                {"BACKEND_ACCESS_KEY", creds["BACKEND_ACCESS_KEY"]},
                                {"BACKEND_SECRET_KEY", creds["BACKEND_SECRET_KEY"]},
                                {"BAI_CONFIG_DIR", dir.path() + "/cfg"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("from-cli"));
  EXPECT_EQ(proc.Stop(SIGTERM), 0);
}

TEST(ManagerProcessTest, BadConfigurationIsAClearError) {
  TempDir dir;
  std::ofstream(dir.path() + "/m.toml") << "[server]\nlisten = \"nope\"\n";
  auto r = testing_util::RunProcess(
      {testing_util::BinPath("bai-manager"), "--config", dir.path() + "/m.toml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("HOST:PORT"));
  std::ofstream(dir.path() + "/typo.toml") << "[server]\nthread = 2\n";
  r = testing_util::RunProcess(
      {testing_util::BinPath("bai-manager"), "--config", dir.path() + "/typo.toml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown setting server.thread"));
}

}  // namespace
}  // namespace bai::manager

namespace bai::manager {
namespace {

// GET /metrics (docs/operations.md): Prometheus text without a signature; requests counted by
// their route pattern (not their path), gauges read from the database at the scrape.
TEST_F(ManagerTest, MetricsCountRequestsByRouteAndReadTheStateAtEachScrape) {
  auto get = [&](std::string const& target) {
    return testing_util::RawHttp(manager_->port(), "GET " + target +
                                                       " HTTP/1.1\r\nHost: x\r\n"
                                                       "Connection: close\r\n\r\n");
  };
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(get("/no/such/path").status, 404);
  Raw unknown;
  unknown.target = "/session/not-a-session";
  EXPECT_EQ(Send(unknown).status, 404);
  auto m = get("/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_THAT(m.headers["content-type"], HasSubstr("text/plain; version=0.0.4"));
  auto const& text = m.body;
  EXPECT_THAT(text, HasSubstr("# TYPE bai_http_requests_total counter\n"));
  EXPECT_THAT(
      text,
      HasSubstr("bai_http_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 2"));
  EXPECT_THAT(text, HasSubstr("bai_http_requests_total{method=\"GET\",route=\"/session/{id}\","
                              "status=\"404\"} 1"))
      << "labelled by the pattern, never the session's name";
  EXPECT_THAT(text, HasSubstr("bai_http_requests_total{method=\"other\",route=\"unmatched\","
                              "status=\"404\"} 1"));
  EXPECT_THAT(text, HasSubstr("bai_http_request_duration_seconds_bucket{method=\"GET\","
                              "route=\"/health\",le=\"+Inf\"} 2"));
  EXPECT_THAT(text, HasSubstr("bai_metrics_database_up 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("bai_sessions{")));  // no session yet
  // A queued session (no agent) shows in the gauges at the next scrape.
  Raw create;
  create.method = "POST";
  create.target = "/session";
  create.content_type = "application/json";
  create.body = R"({"image": "python", "name": "queued-one", "enqueueOnly": true})";
  auto made = Send(create);
  ASSERT_EQ(made.status, 201) << made.body;
  auto again = get("/metrics").body;
  EXPECT_THAT(again, HasSubstr("bai_sessions{status=\"PENDING\"} 1\n"));
  EXPECT_THAT(again, HasSubstr("bai_queue_sessions{scaling_group=\"default\",reason=\""));
  EXPECT_THAT(again, HasSubstr("bai_scheduler_pass_seconds_count{scaling_group=\"default\"}"));
}

TEST(ManagerMetricsTest, QueueReasonsAreKindsNotIds) {
  EXPECT_EQ(QueueReason(""), "new");
  EXPECT_EQ(QueueReason("waiting: needs cpu=4 mem=1g; largest free agent has cpu=2"), "capacity");
  EXPECT_EQ(QueueReason("waiting: needs cpu=64, more than any agent offers"), "too-large");
  EXPECT_EQ(QueueReason("waiting: keypair limit cpu=4 (using cpu=4)"), "keypair-slots");
  EXPECT_EQ(QueueReason("waiting: the keypair already runs 3 sessions"), "keypair-sessions");
  EXPECT_EQ(QueueReason("waiting: no agent in the resource group offers image foo"), "image");
  EXPECT_EQ(QueueReason("waiting for 2b5e0f3c-aaaa to succeed"), "waiting for");
}

}  // namespace
}  // namespace bai::manager
