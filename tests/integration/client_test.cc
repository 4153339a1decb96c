// SPDX-License-Identifier: Apache-2.0
// The SDK's transport against a real HTTP server on loopback that verifies signatures with the
// protocol verifier.
#include "bai/client.h"

#include "bai/protocol/errors.h"

#include "tests/testing_util/subprocess.h"
#include "tests/testing_util/test_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>

namespace bai {
namespace {

using testing_util::kTestAccessKey;
using testing_util::kTestSecretKey;
using testing_util::TestHttpServer;
using testing_util::TestRequest;
using testing_util::TestResponse;
using testing_util::VerifyingHandler;

Options OptionsFor(std::vector<std::string> endpoints) {
  Options o;
  o.endpoints = std::move(endpoints);
  o.access_key = kTestAccessKey;
  o.secret_key = kTestSecretKey;
  o.backoff.initial_delay = std::chrono::milliseconds(1);
  o.backoff.max_delay = std::chrono::milliseconds(5);
  return o;
}

// A port nothing listens on: bind, read the port, close.
std::string DeadEndpoint() {
  TestHttpServer s([](TestRequest const&) { return TestResponse{}; });
  return s.url();
}

TEST(ClientTest, SignedGetAndPostAreAccepted) {
  TestHttpServer server(VerifyingHandler());
  auto client = Client::Create(OptionsFor({server.url()}));
  ASSERT_TRUE(client.ok());
  auto get = client->Send({"GET", "/session/my-session/logs?owner_access_key=AKIAX&x=a b"});
  ASSERT_TRUE(get.ok()) << get.status().message();
  ASSERT_EQ(get->status, 200) << get->body;
  auto j = nlohmann::json::parse(get->body);
  EXPECT_EQ(j["target"], "/session/my-session/logs?owner_access_key=AKIAX&x=a%20b");
  EXPECT_EQ(j["api_version"], "v8.20240915");

  ApiRequest post{"POST", "/session"};
  post.body = R"({"name":"s1","image":"python"})";
  auto created = client->Send(post);
  ASSERT_TRUE(created.ok());
  ASSERT_EQ(created->status, 200) << created->body;
  EXPECT_EQ(nlohmann::json::parse(created->body)["body"], post.body);

  ApiRequest empty_post{"POST", "/session/x/interrupt"};
  auto interrupted = client->Send(empty_post);
  ASSERT_TRUE(interrupted.ok());
  EXPECT_EQ(interrupted->status, 200) << interrupted->body;
}

TEST(ClientTest, BasePathIsPartOfTheSignedTarget) {
  TestHttpServer server(VerifyingHandler());
  auto client = Client::Create(OptionsFor({server.url() + "/backend"}));
  auto r = client->Send({"GET", "/folders"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["target"], "/backend/folders");
}

TEST(ClientTest, WrongSecretIsRejectedWithProblemDetails) {
  TestHttpServer server(VerifyingHandler());
  auto options = OptionsFor({server.url()});
  options.secret_key = "not-the-secret";
  auto client = Client::Create(options);
  auto r = client->Send({"GET", "/auth?echo=x"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  auto status = CheckResponse(*r);
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(status.error_info().type, protocol::ProblemTypeUrl(protocol::ProblemType::kAuthFailed));
  EXPECT_EQ(status.error_info().detail, "Signature mismatch");
}

TEST(ClientTest, HundredSequentialRequestsUseOneConnection) {
  TestHttpServer server(VerifyingHandler());
  auto client = Client::Create(OptionsFor({server.url()}));
  ASSERT_TRUE(client.ok());
  for (int i = 0; i < 100; ++i) {
    auto r = client->Send({"GET", "/session/s" + std::to_string(i)});
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->status, 200) << r->body;
  }
  // 101 requests: the version probe `GET /` plus the 100, all on one TCP connection.
  EXPECT_EQ(server.requests(), 101);
  EXPECT_EQ(server.connections(), 1);
}

TEST(ClientTest, NegotiatesDownToAnOlderServer) {
  TestHttpServer server(VerifyingHandler("v8.20240315"));
  auto client = Client::Create(OptionsFor({server.url()}));
  auto r = client->Send({"GET", "/folders"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["api_version"], "v8.20240315");
  EXPECT_EQ(client->ApiVersion(), "v8.20240315");
  auto info = client->GetServerInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->manager, "test-server");
  EXPECT_TRUE(info->is_backend_ai);
}

// Issue 21, one request per command: with Options::server_info_cache a second process (here a
// second Client) sends no GET /; an entry older than the maximum age is asked again.
TEST(ClientTest, RemembersTheServersVersionBetweenClients) {
  testing_util::TempDir dir;
  TestHttpServer server(VerifyingHandler("v8.20240315"));
  auto options = OptionsFor({server.url()});
  options.server_info_cache = dir.path() + "/cache/servers.json";
  auto now = std::chrono::system_clock::now();
  options.clock = [&now] { return now; };
  for (int round = 0; round < 2; ++round) {
    auto client = Client::Create(options);
    auto r = client->Send({"GET", "/folders"});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(nlohmann::json::parse(r->body)["api_version"], "v8.20240315");
  }
  EXPECT_EQ(server.requests(), 3) << "GET / once, then one request per client";
  now += std::chrono::hours(24) + std::chrono::seconds(1);
  auto client = Client::Create(options);
  ASSERT_TRUE(client->Send({"GET", "/folders"}).ok());
  EXPECT_EQ(server.requests(), 5) << "a day later the server is asked again";
  auto info = client->GetServerInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->manager, "test-server");
}

// A remembered version the server refuses (it was downgraded): the client asks again and
// resends the request once; the cache then holds the new answer.
TEST(ClientTest, ARefusedRememberedVersionIsRenegotiated) {
  testing_util::TempDir dir;
  std::atomic<int> refused{0};
  TestHttpServer server([&](TestRequest const& req) {
    TestResponse r;
    if (req.target == "/") {
      r.body = R"({"version": "v6.20220615", "manager": "22.03.0"})";
      return r;
    }
    auto const* v = req.Header("x-backendai-version");
    if (v && *v != "v6.20220615") {
      ++refused;
      r.status = 400;
      r.content_type = "application/problem+json";
      r.body = R"({"type": "https://api.backend.ai/probs/generic-bad-request",)"
               R"( "title": "Bad request", "msg": "Unsupported API version."})";
      return r;
    }
    r.body = R"({"ok": true})";
    return r;
  });
  auto options = OptionsFor({server.url()});
  options.server_info_cache = dir.path() + "/servers.json";
  // What a newer manager on the same address answered yesterday.
  {
    std::ofstream out(options.server_info_cache);
    out << nlohmann::json{{server.url(),
                           {{"version", "v8.20240915"},
                            {"manager", "24.09.0"},
                            {"checked_at", std::chrono::duration_cast<std::chrono::seconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count()}}}}
               .dump();
  }
  auto client = Client::Create(options);
  auto r = client->Send({"GET", "/folders"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(refused.load(), 1);
  EXPECT_EQ(client->ApiVersion(), "v6.20220615");
  auto second = Client::Create(options);
  ASSERT_TRUE(second->Send({"GET", "/folders"}).ok());
  EXPECT_EQ(refused.load(), 1) << "the cache was corrected";
  // A refusal that did not come from the cache is the server's last word: no loop.
  options.server_info_cache.clear();
  options.api_version = "v8.20240915";
  auto pinned = Client::Create(options);
  auto refused_again = pinned->Send({"GET", "/folders"});
  ASSERT_TRUE(refused_again.ok());
  EXPECT_EQ(refused_again->status, 400);
}

TEST(ClientTest, NonBackendAiServerFallsBackWithAWarning) {
  TestHttpServer server([](TestRequest const& req) {
    TestResponse r;
    if (req.target == "/") {
      r.content_type = "text/html";
      r.body = "<html>hello</html>";
    } else {
      r.body = R"({"ok":true})";
    }
    return r;
  });
  auto options = OptionsFor({server.url()});
  std::vector<std::string> warnings;
  options.warning_log = [&](std::string_view w) { warnings.emplace_back(w); };
  auto client = Client::Create(options);
  EXPECT_EQ(client->ApiVersion(), "v8.20240915");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("did not answer GET / like a Backend.AI manager"));
}

TEST(ClientTest, PinnedVersionSkipsNegotiation) {
  TestHttpServer server(VerifyingHandler());
  auto options = OptionsFor({server.url()});
  options.api_version = "v6.20220615";
  auto client = Client::Create(options);
  auto r = client->Send({"GET", "/x"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(nlohmann::json::parse(r->body)["api_version"], "v6.20220615");
  EXPECT_EQ(server.requests(), 1);  // no GET /
}

TEST(ClientTest, FailsOverToTheNextEndpointOnConnectionErrors) {
  TestHttpServer server(VerifyingHandler());
  auto options = OptionsFor({DeadEndpoint(), server.url()});
  options.api_version = "v8.20240915";
  std::vector<std::string> warnings;
  options.warning_log = [&](std::string_view w) { warnings.emplace_back(w); };
  auto client = Client::Create(options);
  ApiRequest post{"POST", "/session"};
  post.body = "{}";
  // Even a non-idempotent request may move on: a refused connection sent nothing.
  auto r = client->Send(post);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(warnings.size(), 1u);
  // The client stays on the endpoint that works.
  ASSERT_TRUE(client->Send({"GET", "/a"}).ok());
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(ClientTest, UnreachableServerIsUnavailableWithNoHttpStatus) {
  auto options = OptionsFor({DeadEndpoint()});
  options.api_version = "v8.20240915";
  options.retry.max_attempts = 2;
  auto client = Client::Create(options);
  auto r = client->Send({"GET", "/session/x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().error_info().http_status, 0);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("cannot connect"));
}

TEST(ClientTest, RetriesIdempotentRequestsOnlyAndHonoursRetryAfter) {
  std::atomic<int> calls{0};
  TestHttpServer server([&](TestRequest const& req) {
    TestResponse r;
    if (req.target == "/") {
      r.body = R"({"version":"v8.20240915","manager":"t"})";
      return r;
    }
    if (++calls % 3 != 0) {
      r.status = 503;
      r.content_type = "application/problem+json";
      r.body = R"({"type":"https://api.backend.ai/probs/service-unavailable","title":"busy"})";
      r.headers.emplace_back("Retry-After", "0");
      return r;
    }
    r.body = "{}";
    return r;
  });
  auto client = Client::Create(OptionsFor({server.url()}));
  auto get = client->Send({"GET", "/x"});
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(calls.load(), 3);

  calls = 0;
  ApiRequest post{"POST", "/session"};
  post.body = "{}";
  auto created = client->Send(post);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->status, 503) << "a POST must not be retried after it reached the server";
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(CheckResponse(*created).code(), StatusCode::kUnavailable);
}

TEST(ClientTest, DebugLogRedactsTheSignature) {
  TestHttpServer server(VerifyingHandler());
  auto options = OptionsFor({server.url()});
  std::vector<std::string> lines;
  options.debug_log = [&](std::string_view l) { lines.emplace_back(l); };
  auto client = Client::Create(options);
  ASSERT_TRUE(client->Send({"GET", "/x"}).ok());
  bool saw_auth = false;
  for (auto const& l : lines) {
    EXPECT_EQ(l.find(kTestSecretKey), std::string::npos) << l;
    if (l.find("Authorization") != std::string::npos) {
      saw_auth = true;
      EXPECT_THAT(l, ::testing::HasSubstr("credential=AKIAIOSFODNN7EXAMPLE:<redacted>"));
    }
  }
  EXPECT_TRUE(saw_auth);
}

TEST(ClientTest, DebugLogRedactsSecretsInBodies) {
  TestHttpServer server([](TestRequest const& req) {
    TestResponse r;
    r.body = req.target == "/" ? R"({"version":"v8.20240915","manager":"t"})"
                               : R"({"data":{"access_key":"AKIAX","secret_key":"TOPSECRET1"}})";
    return r;
  });
  auto options = OptionsFor({server.url()});
  std::vector<std::string> lines;
  options.debug_log = [&](std::string_view l) { lines.emplace_back(l); };
  auto client = Client::Create(options);
  ApiRequest login{"POST", "/auth/authorize"};
  login.body = R"({"type":"keypair","username":"u","password":"hunter2hunter2"})";
  auto r = client->Send(login);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->body, ::testing::HasSubstr("TOPSECRET1"));  // the caller still gets it
  std::string all;
  for (auto const& l : lines) all += l + "\n";
  EXPECT_EQ(all.find("TOPSECRET1"), std::string::npos) << all;
  EXPECT_EQ(all.find("hunter2hunter2"), std::string::npos) << all;
  EXPECT_THAT(all, ::testing::HasSubstr("AKIAX"));
}

TEST(ClientTest, CreateValidatesOptions) {
  Options o;
  o.endpoints = {};
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);
  o.endpoints = {"nope"};
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);
  o.endpoints = {"http://h"};
  o.access_key = "AK";
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);
  o.secret_key = "SK";
  o.api_version = "8";
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bai
