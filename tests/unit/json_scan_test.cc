// SPDX-License-Identifier: Apache-2.0
// Finding values in JSON text without parsing it (libbai/util/json_scan.h): what `-o json`
// passes through must be exactly the server's text, and malformed text must never be passed.
#include "libbai/util/json_scan.h"

#include "libbai/util/json_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace bai::internal {
namespace {

TEST(JsonScan, FindsNestedValuesPastStringsThatLookLikeJson) {
  std::string doc = R"( {"a": "x\"}],{", "user_list" : { "total_count":3,
      "items": [ {"email":"a@x","groups":[{"id":"1","name":"g]"}]}, {"email":"b\\"}, {} ] } } )";
  auto count = FindJsonValue(doc, {"user_list", "total_count"});
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, "3");
  auto items = FindJsonValue(doc, {"user_list", "items"});
  ASSERT_TRUE(items);
  auto each = SplitJsonArray(*items);
  ASSERT_TRUE(each);
  ASSERT_EQ(each->size(), 3u);
  EXPECT_EQ((*each)[0], R"({"email":"a@x","groups":[{"id":"1","name":"g]"}]})");
  EXPECT_EQ((*each)[1], R"({"email":"b\\"})");
  EXPECT_EQ((*each)[2], "{}");
  // Each piece is valid JSON on its own, equal to what a parser reads there.
  auto whole = ParseJson(doc);
  ASSERT_TRUE(whole);
  for (std::size_t i = 0; i < each->size(); ++i) {
    EXPECT_EQ(*ParseJson((*each)[i]), (*whole)["user_list"]["items"][i]);
  }
  EXPECT_FALSE(FindJsonValue(doc, {"user_list", "missing"}));
  EXPECT_FALSE(FindJsonValue(doc, {"a", "b"}));  // a string is no object
  auto empty = SplitJsonArray(" [ ] ");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(JsonScan, MalformedTextIsRefused) {
  for (std::string bad : {R"({"user_list": {"items": [1, 2})", R"({"user_list" {"items": []}})",
                          R"({"user_list": {"items": ["unterminated]}})", R"({"a": 1,})"}) {
    EXPECT_FALSE(FindJsonValue(bad, {"user_list", "items"}) &&
                 SplitJsonArray(*FindJsonValue(bad, {"user_list", "items"})))
        << bad;
  }
  EXPECT_FALSE(SplitJsonArray("[1,,2]"));
  EXPECT_FALSE(SplitJsonArray("[1 2]"));
  EXPECT_FALSE(SplitJsonArray("[1] x"));
  EXPECT_FALSE(SplitJsonArray("{}"));
}

}  // namespace
}  // namespace bai::internal
