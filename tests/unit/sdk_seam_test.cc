// SPDX-License-Identifier: Apache-2.0
// Client and SessionClient over the shipped mock transport: retries with an injected sleep,
// signing with an injected clock, and WaitForEnd, all without a server or a real wait.
#include "bai/client.h"
#include "bai/mocks/mock_transport.h"
#include "bai/session_client.h"
#include "bai/vfolder_client.h"

#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>

namespace bai {
namespace {

using mocks::JsonAnswer;
using mocks::MockTransport;
using mocks::StreamAnswer;
using ::testing::_;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Return;

class SdkSeamTest : public ::testing::Test {
 protected:
  Client MakeClient() {
    Options o;
    o.endpoints = {"http://manager.test:8081"};
    o.access_key = "AKIAIOSFODNN7EXAMPLE";
    o.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    o.api_version = "v8.20240915";
    o.transport = transport_;
    o.sleep = [this](std::chrono::milliseconds d) { slept_.push_back(d); };
    o.clock = [] {
      return std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
    };
    auto c = Client::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }
  static std::string HeaderOf(TransportRequest const& r, std::string const& name) {
    for (auto const& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  std::shared_ptr<MockTransport> transport_ = std::make_shared<MockTransport>();
  std::vector<std::chrono::milliseconds> slept_;
};

TEST_F(SdkSeamTest, RetriesBackOffThroughTheInjectedSleep) {
  auto busy = JsonAnswer(503, R"({"type":"https://api.backend.ai/probs/service-unavailable"})");
  auto limited = JsonAnswer(429, R"({"type":"https://api.backend.ai/probs/rate-limit-exceeded"})");
  limited.headers.emplace_back("retry-after", "2");
  EXPECT_CALL(*transport_, Send(Field(&TransportRequest::target, "/auth?echo=x")))
      .WillOnce(Return(busy))
      .WillOnce(Return(limited))
      .WillOnce(Return(JsonAnswer(200, R"({"authorized":"yes"})")));
  auto r = MakeClient().Send({"GET", "/auth?echo=x"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(slept_.size(), 2u);
  EXPECT_LE(slept_[0], std::chrono::milliseconds(200)) << "full jitter under the first ceiling";
  EXPECT_EQ(slept_[1], std::chrono::milliseconds(2000)) << "Retry-After wins when longer";
}

// A resumable transfer's retries wait as the client's own do (Client::WaitToRetry: the backoff
// policy, through Options::sleep): no private sleeping loop (issue 45, item 4).
TEST_F(SdkSeamTest, AnUploadsRetriesWaitThroughTheInjectedSleep) {
  std::mutex mu;
  int patches = 0;
  ON_CALL(*transport_, Send(::testing::_)).WillByDefault(Invoke([&](TransportRequest const& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r.target == "/") {
      return JsonAnswer(200, R"({"version": "v8.20240915", "manager": "bai-manager 0.1.0"})");
    }
    if (r.target == "/folders/f/request-upload") {
      return JsonAnswer(200, R"({"token": "t", "url": "http://storage.test:6021/upload"})");
    }
    if (r.method == "PATCH" && ++patches == 1) {
      return JsonAnswer(503, R"({"type":"https://api.backend.ai/probs/service-unavailable"})");
    }
    if (r.method == "PATCH") {
      ApiResponse done;
      done.status = 204;
      done.headers = {{"upload-offset", "5"}};
      return done;
    }
    ApiResponse head;  // HEAD: where the upload stands
    head.status = 200;
    head.headers = {{"upload-offset", "0"}};
    return head;
  }));
  EXPECT_CALL(*transport_, Send(::testing::_)).Times(::testing::AnyNumber());
  testing_util::TempDir dir;
  std::ofstream(dir.path() + "/a.txt") << "hello";
  TransferOptions options;
  options.journal_dir = dir.path() + "/journal";
  auto client = MakeClient();
  auto report = VFolderClient(client).Upload("f", {dir.path() + "/a.txt"}, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(patches, 2);
  ASSERT_EQ(slept_.size(), 1u) << "one wait, through Options::sleep";
  EXPECT_LE(slept_[0], Options{}.backoff.max_delay);
}

TEST_F(SdkSeamTest, NonIdempotentRequestsAreNotRetried) {
  EXPECT_CALL(*transport_, Send(_)).WillOnce(Return(JsonAnswer(503, "{}")));
  auto r = MakeClient().Send({"POST", "/session"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_TRUE(slept_.empty());
}

TEST_F(SdkSeamTest, TheTransportSeesSignedRequestsDatedByTheInjectedClock) {
  TransportRequest seen;
  EXPECT_CALL(*transport_, Send(_)).WillOnce(Invoke([&](TransportRequest const& r) {
    seen = r;
    return JsonAnswer(200, "{}");
  }));
  ASSERT_TRUE(MakeClient().Send({"GET", "/auth?echo=x"}).ok());
  EXPECT_EQ(seen.origin, "http://manager.test:8081");
  EXPECT_EQ(seen.host, "manager.test:8081");
  EXPECT_EQ(HeaderOf(seen, "Date"), "2023-11-14T22:13:20+00:00");
  EXPECT_THAT(HeaderOf(seen, "Authorization"),
              HasSubstr("BackendAI signMethod=HMAC-SHA256, credential=AKIAIOSFODNN7EXAMPLE:"));
}

TEST_F(SdkSeamTest, WaitForEndFollowsTheEvents) {
  EXPECT_CALL(*transport_,
              SendStreaming(Field(&TransportRequest::target, "/events/session?sessionId=s-1"), _))
      .WillOnce(Invoke(StreamAnswer({
          "event: session_started\ndata: {\"sessionId\":\"s-1\"}\n\n",
          "event: session_failure\ndata: {\"sessionId\":\"s-1\",\"exitCode\":3,"
          "\"reason\":\"task-failed\"}\n\n",
          "event: session_terminated\ndata: {\"sessionId\":\"s-1\",\"exitCode\":3}\n\n",
      })));
  // The first look, once subscribed, may see it still pending.
  ON_CALL(*transport_, Send(Field(&TransportRequest::target, "/session/s-1")))
      .WillByDefault(Return(JsonAnswer(200, R"({"sessionId":"s-1","status":"PENDING"})")));
  EXPECT_CALL(*transport_, Send(_)).Times(::testing::AtMost(5));
  int started = 0;
  WaitOptions wait;
  wait.on_started = [&] { ++started; };
  auto end = SessionClient(MakeClient()).WaitForEnd("s-1", wait);
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_EQ(end->status, "TERMINATED");
  EXPECT_EQ(end->exit_code, 3);
  EXPECT_EQ(end->reason, "task-failed");
  EXPECT_EQ(started, 1);
}

TEST_F(SdkSeamTest, WaitForEndSeesASessionThatEndedBeforeTheCall) {
  EXPECT_CALL(*transport_, SendStreaming(_, _)).WillOnce(Invoke(StreamAnswer({})));
  EXPECT_CALL(*transport_, Send(Field(&TransportRequest::target, "/session/s-2")))
      .WillOnce(Return(JsonAnswer(
          200, R"({"sessionId":"s-2","status":"TERMINATED","exitCode":0,"statusInfo":"done"})")));
  auto end = SessionClient(MakeClient()).WaitForEnd("s-2");
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_EQ(end->status, "TERMINATED");
  EXPECT_EQ(end->exit_code, 0);
  EXPECT_EQ(end->reason, "done");
}

TEST_F(SdkSeamTest, WaitForEndStopsWhenCancelledAndForUnknownSessions) {
  EXPECT_CALL(*transport_, SendStreaming(_, _)).Times(2).WillRepeatedly(Invoke(StreamAnswer({})));
  EXPECT_CALL(*transport_, Send(Field(&TransportRequest::target, "/session/s-3")))
      .WillRepeatedly(Return(JsonAnswer(200, R"({"sessionId":"s-3","status":"RUNNING"})")));
  std::atomic<int> checks{0};
  WaitOptions wait;
  wait.cancelled = [&] { return ++checks > 3; };
  auto cancelled = SessionClient(MakeClient()).WaitForEnd("s-3", wait);
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled);

  EXPECT_CALL(*transport_, Send(Field(&TransportRequest::target, "/session/nope")))
      .WillOnce(Return(JsonAnswer(
          404,
          R"({"type":"https://api.backend.ai/probs/session-not-found","title":"No such session."})")));
  auto unknown = SessionClient(MakeClient()).WaitForEnd("nope");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
}

// The WebSocket upgrade goes through the same signing layer as any request and is signed as
// PROTOCOL.md §2.2 says: path and query, no Content-Type sent, application/octet-stream signed
// (vector V3); a refused upgrade is asked again as a plain GET for the server's problem.
TEST(WebSocketSeamTest, TheUpgradeIsSignedAsVectorV3AndARefusalCarriesTheProblem) {
  auto transport = std::make_shared<MockTransport>();
  Options o;
  o.endpoints = {"https://api.example.com:8443"};
  o.access_key = "AKIAIOSFODNN7EXAMPLE";
  o.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  o.api_version = "v9.20250722";
  o.transport = transport;
  o.retry.max_attempts = 1;
  o.clock = [] {  // 2025-07-22T23:59:59+00:00
    return std::chrono::system_clock::time_point(std::chrono::seconds(1753228799));
  };
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  TransportRequest seen;
  ErrorInfo refused;
  refused.http_status = 404;
  EXPECT_CALL(*transport, OpenWebSocket(_))
      .WillOnce(
          Invoke([&](TransportRequest const& r) -> StatusOr<std::unique_ptr<WebSocketConnection>> {
            seen = r;
            return Status(StatusCode::kFailedPrecondition, "upgrade answered 404", refused);
          }));
  EXPECT_CALL(*transport, Send(Field(&TransportRequest::target,
                                     "/stream/session/3f2e1d0c-0b0a-4988-8776-655443322110/pty")))
      .WillOnce(Return(JsonAnswer(
          404,
          R"({"type":"https://api.backend.ai/probs/session-not-found","title":"No such session."})")));
  auto socket = client->OpenWebSocket(
      ApiRequest("GET", "/stream/session/3f2e1d0c-0b0a-4988-8776-655443322110/pty"));
  ASSERT_FALSE(socket.ok());
  EXPECT_EQ(socket.status().code(), StatusCode::kNotFound) << socket.status().message();
  EXPECT_EQ(socket.status().error_info().http_status, 404);
  EXPECT_EQ(seen.method, "GET");
  EXPECT_EQ(seen.host, "api.example.com:8443");
  EXPECT_EQ(seen.target, "/stream/session/3f2e1d0c-0b0a-4988-8776-655443322110/pty");
  std::string authorization, content_type, date;
  for (auto const& [k, v] : seen.headers) {
    if (k == "Authorization") authorization = v;
    if (k == "Content-Type") content_type = v;
    if (k == "Date") date = v;
  }
  EXPECT_EQ(date, "2025-07-22T23:59:59+00:00");
  EXPECT_EQ(content_type, "") << "a WebSocket upgrade sends no Content-Type";
  EXPECT_EQ(authorization,
            "BackendAI signMethod=HMAC-SHA256, credential=AKIAIOSFODNN7EXAMPLE:"
            "64a5e88c94eef1341d4b600e84e5b9e387756bf7a4513dbe4b9b8c615bfee65f");
}

TEST(WebSocketSeamTest, CloseCodesBecomeStatuses) {
  EXPECT_TRUE(WebSocketCloseStatus(1000, "").ok());
  EXPECT_EQ(WebSocketCloseStatus(1001, "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(WebSocketCloseStatus(1013, "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(WebSocketCloseStatus(1011, "boom").code(), StatusCode::kInternal);
  EXPECT_THAT(WebSocketCloseStatus(1011, "boom").message(), HasSubstr("1011 (boom)"));
  EXPECT_EQ(WebSocketCloseStatus(1006, "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(WebSocketCloseStatus(1009, "").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(WebSocketCloseStatus(1008, "").code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace bai
