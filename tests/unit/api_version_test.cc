// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/api_version.h"

#include <gtest/gtest.h>

namespace bai::protocol {
namespace {

TEST(ApiVersionTest, ParsesAndPrints) {
  auto v = ApiVersion::Parse("v8.20240915");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 8);
  EXPECT_EQ(v->date, 20240915);
  EXPECT_EQ(v->ToString(), "v8.20240915");
  auto big = ApiVersion::Parse("v10.20300101");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->major, 10);
}

TEST(ApiVersionTest, RejectsMalformed) {
  for (char const* text : {"", "v", "8.20240915", "v8", "v8.", "v8.2024091", "v8.202409150",
                           "v8.2024o915", "V8.20240915", " v8.20240915", "v8.20240915 ",
                           "vx.20240915", "v.20240915", "v12345.20240915"}) {
    EXPECT_FALSE(ApiVersion::Parse(text)) << text;
  }
}

TEST(ApiVersionTest, ComparesAsTuplesNotStrings) {
  auto v9 = *ApiVersion::Parse("v9.20250722");
  auto v10 = *ApiVersion::Parse("v10.20200101");
  EXPECT_LT(v9, v10);  // as strings "v10" < "v9": the bug PROTOCOL.md §1.3 warns about
  EXPECT_LT(*ApiVersion::Parse("v8.20240315"), *ApiVersion::Parse("v8.20240915"));
  EXPECT_GT(*ApiVersion::Parse("v8.20240315"), *ApiVersion::Parse("v7.20250101"));
  EXPECT_EQ(*ApiVersion::Parse("v8.20240915"), kCurrentApiVersion);
  auto const& all = AcceptedApiVersions();
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1], all[i]);
}

TEST(ApiVersionTest, AcceptedListMatchesDecisions) {
  auto const& all = AcceptedApiVersions();
  EXPECT_EQ(all.front().ToString(), "v4.20181215");
  EXPECT_EQ(all.back().ToString(), "v9.20250722");
  EXPECT_EQ(all.size(), 15u);
  EXPECT_TRUE(IsAcceptedApiVersion("v8.20240915"));
  EXPECT_TRUE(IsAcceptedApiVersion("v6.20221201"));
  EXPECT_FALSE(IsAcceptedApiVersion("v3.20170615"));
  EXPECT_FALSE(IsAcceptedApiVersion("v8.20240916"));
  EXPECT_FALSE(IsAcceptedApiVersion("v08.20240915"));
  EXPECT_FALSE(IsAcceptedApiVersion("v10.20300101"));
}

TEST(ApiVersionTest, NegotiationTakesTheMinimum) {
  auto client = kCurrentApiVersion;
  EXPECT_EQ(NegotiateApiVersion(*ApiVersion::Parse("v9.20250722"), client), client);
  EXPECT_EQ(NegotiateApiVersion(*ApiVersion::Parse("v8.20240315"), client).ToString(),
            "v8.20240315");
  EXPECT_EQ(NegotiateApiVersion(client, client), client);
}

}  // namespace
}  // namespace bai::protocol
