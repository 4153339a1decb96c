// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/errors.h"

#include "bai/client.h"
#include "bai/protocol/session_status.h"

#include "libbai/internal/json_codec.h"

#include <gtest/gtest.h>

namespace bai::protocol {
namespace {

TEST(ErrorsTest, TableRoundTripsEveryType) {
  for (int i = 0; i <= static_cast<int>(ProblemType::kStorageProxyError); ++i) {
    auto type = static_cast<ProblemType>(i);
    auto const& info = GetProblemTypeInfo(type);
    EXPECT_EQ(info.type, type);
    auto url = ProblemTypeUrl(type);
    EXPECT_EQ(url.rfind("https://api.backend.ai/probs/", 0), 0u);
    EXPECT_EQ(FindProblemType(url), type) << url;
    EXPECT_EQ(FindProblemType(info.suffix), type);
  }
  EXPECT_FALSE(FindProblemType("https://api.backend.ai/probs/no-such-thing"));
}

TEST(ErrorsTest, StatusesMatchProtocol) {
  EXPECT_EQ(GetProblemTypeInfo(ProblemType::kInvalidAuthParams).http_status, 400);
  EXPECT_EQ(GetProblemTypeInfo(ProblemType::kAuthFailed).http_status, 401);
  EXPECT_EQ(GetProblemTypeInfo(ProblemType::kTooManySessionsMatched).http_status, 404);
  EXPECT_EQ(GetProblemTypeInfo(ProblemType::kQuotaExceeded).http_status, 412);
  EXPECT_EQ(GetProblemTypeInfo(ProblemType::kRateLimitExceeded).http_status, 429);
  EXPECT_EQ(GetProblemTypeInfo(ProblemType::kServerFrozen).http_status, 503);
}

// Emitting a problem and reading it back through the SDK's mapping gives the same code: the one
// table serves both directions.
TEST(ErrorsTest, EmitThenMapGivesTheSameStatus) {
  for (int i = 0; i <= static_cast<int>(ProblemType::kStorageProxyError); ++i) {
    auto type = static_cast<ProblemType>(i);
    Status emitted = MakeProblemStatus(type, "detail text", R"({"k":1})");
    ApiResponse response;
    response.status = emitted.error_info().http_status;
    response.body = internal::ProblemJson(emitted.error_info());
    Status mapped = CheckResponse(response);
    EXPECT_EQ(mapped.code(), emitted.code()) << ProblemTypeUrl(type);
    EXPECT_EQ(mapped.error_info().type, ProblemTypeUrl(type));
    EXPECT_EQ(mapped.error_info().detail, "detail text");
    EXPECT_EQ(mapped.error_info().data_json, R"({"k":1})");
    EXPECT_EQ(mapped.error_info().http_status, response.status);
  }
}

TEST(ErrorsTest, NonProblemBodiesFallBackToHttpStatus) {
  ApiResponse r;
  r.status = 502;
  r.body = "<html>Bad gateway</html>";
  Status s = CheckResponse(r);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("HTTP 502"), std::string::npos);
  r.status = 404;
  r.body = "";
  EXPECT_EQ(CheckResponse(r).code(), StatusCode::kNotFound);
  r.status = 204;
  EXPECT_TRUE(CheckResponse(r).ok());
  EXPECT_EQ(StatusCodeFromHttpStatus(418), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeFromHttpStatus(599), StatusCode::kInternal);
}

TEST(SessionStatusTest, ParsesKnownAndKeepsUnknown) {
  auto running = ParseSessionStatus("RUNNING_DEGRADED");
  EXPECT_EQ(running.status, SessionStatus::kRunningDegraded);
  EXPECT_EQ(ToString(running.status), "RUNNING_DEGRADED");
  auto future = ParseSessionStatus("HIBERNATING");
  EXPECT_EQ(future.status, SessionStatus::kUnknown);
  EXPECT_EQ(future.text, "HIBERNATING");
  EXPECT_EQ(ParseSessionStatus("PREEMPTED").status, SessionStatus::kPreempted);
  EXPECT_FALSE(IsEmittedStatus(SessionStatus::kPreempted));
  EXPECT_TRUE(IsEmittedStatus(SessionStatus::kCancelled));
  EXPECT_EQ(ParseKernelStatus("BUILDING").status, KernelStatus::kBuilding);
  EXPECT_EQ(ParseKernelStatus("nope").status, KernelStatus::kUnknown);
  // The whole vocabulary filters accept (PROTOCOL.md §6), session and kernel statuses alike.
  for (auto name : {"PENDING", "SCHEDULED", "PREPARING", "BUILDING", "PULLING", "PREPARED",
                    "CREATING", "RUNNING", "RESTARTING", "RESIZING", "SUSPENDED", "TERMINATING",
                    "TERMINATED", "ERROR", "CANCELLED", "RUNNING_DEGRADED"}) {
    EXPECT_TRUE(IsKnownStatusName(name)) << name;
  }
  EXPECT_FALSE(IsKnownStatusName("SLEEPING"));
  EXPECT_FALSE(IsKnownStatusName("running"));
}

TEST(SessionStatusTest, TransitionsFollowTheLifecycle) {
  using S = SessionStatus;
  EXPECT_TRUE(CanTransition(S::kPending, S::kScheduled));
  EXPECT_TRUE(CanTransition(S::kPending, S::kCancelled));
  EXPECT_FALSE(CanTransition(S::kPending, S::kRunning));
  EXPECT_TRUE(CanTransition(S::kScheduled, S::kPreparing));
  EXPECT_FALSE(CanTransition(S::kPulling, S::kTerminating));  // users cannot destroy PULLING
  EXPECT_TRUE(CanTransition(S::kPreparing, S::kRunning));
  EXPECT_TRUE(CanTransition(S::kRunning, S::kTerminating));
  EXPECT_FALSE(CanTransition(S::kRunning, S::kPending));
  EXPECT_TRUE(CanTransition(S::kTerminating, S::kTerminated));
  EXPECT_TRUE(CanTransition(S::kError, S::kTerminated));
  for (int to = 0; to <= static_cast<int>(S::kRescheduling); ++to) {
    EXPECT_FALSE(CanTransition(S::kTerminated, static_cast<S>(to)));
    EXPECT_FALSE(CanTransition(S::kCancelled, static_cast<S>(to)));
  }
  EXPECT_TRUE(IsTerminal(S::kTerminated));
  EXPECT_TRUE(IsTerminal(S::kCancelled));
  EXPECT_FALSE(IsTerminal(S::kError));
  EXPECT_EQ(ToSessionStatus(KernelStatus::kBuilding), S::kPreparing);
  EXPECT_EQ(ToSessionStatus(KernelStatus::kResizing), S::kRunning);
  EXPECT_EQ(ToSessionStatus(KernelStatus::kSuspended), S::kError);
}

}  // namespace
}  // namespace bai::protocol
