// SPDX-License-Identifier: Apache-2.0
// Client and SessionClient over the shipped mock transport: retries with an injected sleep,
// signing with an injected clock, and WaitForEnd, all without a server or a real wait.
#include "bai/client.h"
#include "bai/mocks/mock_transport.h"
#include "bai/session_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

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

}  // namespace
}  // namespace bai
