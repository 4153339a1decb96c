// SPDX-License-Identifier: Apache-2.0
// The manager's handler parameters over libbai's one lenient reader: where they come from,
// aliases, lenient values, and every problem answered at once.
#include "server-reference/manager/api/params.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::manager {
namespace {

using nlohmann::json;

server::HttpRequest Request(std::string method, std::string query, std::string body) {
  server::HttpRequest r;
  r.method = std::move(method);
  r.query = std::move(query);
  r.body = std::move(body);
  return r;
}

json Data(Status const& s) {
  EXPECT_FALSE(s.ok());
  return json::parse(s.error_info().data_json.empty() ? "{}" : s.error_info().data_json, nullptr,
                     false);
}

TEST(ParamsTest, SourcesFollowTheMethodAndBothMergesWithTheBodyWinning) {
  auto get = Params::From(Request("GET", "name=q", R"({"name": "b"})"));
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->String({"name"}), "q") << "GET reads the query";
  auto post = Params::From(Request("POST", "name=q", R"({"name": "b"})"));
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->String({"name"}), "b") << "POST reads the body";
  auto empty = Params::From(Request("POST", "name=q", "  "));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->String({"name"}), "q") << "an empty body: the query";
  auto both = Params::From(Request("GET", "a=1&name=q", R"({"name": "b", "gone": null})"),
                           ParamSource::kBoth);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->String({"name"}), "b");
  EXPECT_EQ(both->Int({"a"}, 0, 9), 1) << "a query integer is read leniently";
  EXPECT_EQ(both->Raw({"gone"}), nullptr) << "a null is an absent key";
  auto bad = Params::From(Request("POST", "", "[1]"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Malformed body"), std::string::npos);
}

TEST(ParamsTest, EveryProblemIsReportedAtOnceUnderTheSpellingSent) {
  auto p = Params::From(
      Request("POST", "", R"({"groupId": 5, "enabled": "perhaps", "count": "12", "limit": 99})"));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->String({"group", "groupId"}));
  EXPECT_FALSE(p->Bool({"enabled"}));
  EXPECT_EQ(p->Int({"count"}, 0, 100), 12);
  EXPECT_FALSE(p->Int({"limit"}, 0, 10));
  EXPECT_FALSE(p->String({"name", "session_name"}, /*required=*/true));
  p->Fail("custom", "a rule of the handler's");
  auto data = Data(p->Check());
  EXPECT_EQ(data["groupId"], "must be a string") << data;
  EXPECT_EQ(data["enabled"], "must be a boolean");
  EXPECT_EQ(data["limit"], "must be between 0 and 10");
  EXPECT_EQ(data["name"], "required") << "a missing one: its first name";
  EXPECT_EQ(data["custom"], "a rule of the handler's");
  EXPECT_FALSE(data.contains("count"));
}

TEST(ParamsTest, ParamsMovedAroundKeepTheirValuesAndErrors) {
  auto p = Params::From(Request("POST", "", R"({"x": 1})"));
  ASSERT_TRUE(p.ok());
  p->Fail("x", "odd");
  Params moved = *std::move(p);
  EXPECT_EQ(moved.Int({"x"}, 0, 5), 1);
  EXPECT_EQ(Data(moved.Check())["x"], "odd");
}

}  // namespace
}  // namespace bai::manager
