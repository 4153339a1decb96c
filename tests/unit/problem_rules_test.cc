// SPDX-License-Identifier: Apache-2.0
// ProblemFor: an area's table from status codes to the API's problems (common/http/problem.h).
#include "server-reference/common/http/problem.h"

#include <gtest/gtest.h>

namespace bai::server {
namespace {

using protocol::ProblemType;

Status Map(Status const& s) {
  return ProblemFor(s,
                    {{{StatusCode::kNotFound}, ProblemType::kObjectNotFound, "", "No such thing."},
                     {{StatusCode::kInvalidArgument, StatusCode::kAlreadyExists},
                      ProblemType::kInvalidApiParams,
                      "refused: "}},
                    ProblemRule{{}, ProblemType::kInternalServerError, "failed: "});
}

TEST(ProblemRulesTest, EachCodeGetsItsRowsProblemAndDetail) {
  auto missing = Map(Status(StatusCode::kNotFound, "row 7"));
  EXPECT_EQ(missing.error_info().type, "https://api.backend.ai/probs/object-not-found");
  EXPECT_EQ(missing.error_info().http_status, 404);
  EXPECT_NE(missing.message().find("No such thing."), std::string::npos);
  EXPECT_EQ(missing.message().find("row 7"), std::string::npos);  // a fixed detail replaces it
  auto taken = Map(Status(StatusCode::kAlreadyExists, "name x"));
  EXPECT_EQ(taken.error_info().type, "https://api.backend.ai/probs/invalid-api-params");
  EXPECT_NE(taken.message().find("refused: name x"), std::string::npos);
  auto other = Map(Status(StatusCode::kInternal, "disk"));
  EXPECT_EQ(other.error_info().http_status, 500);
  EXPECT_NE(other.message().find("failed: disk"), std::string::npos);
}

TEST(ProblemRulesTest, WithoutAFallbackAnUnlistedStatusIsLeftAsItIs) {
  Status s(StatusCode::kUnavailable, "agent gone");
  auto out = ProblemFor(s, {{{StatusCode::kNotFound}, ProblemType::kObjectNotFound}});
  EXPECT_EQ(out.code(), StatusCode::kUnavailable);
  EXPECT_EQ(out.message(), "agent gone");
  EXPECT_TRUE(out.error_info().type.empty());
}

}  // namespace
}  // namespace bai::server
