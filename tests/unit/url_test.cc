// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/url.h"

#include <gtest/gtest.h>

namespace bai::internal {
namespace {

TEST(UrlTest, SplitsEndpoints) {
  auto e = ParseEndpoint("https://gw.example.com/backend/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->origin, "https://gw.example.com");
  EXPECT_EQ(e->host, "gw.example.com");
  EXPECT_EQ(e->base_path, "/backend");
  auto p = ParseEndpoint("http://127.0.0.1:8081");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host, "127.0.0.1:8081");
  EXPECT_EQ(p->base_path, "");
  // The port stays exactly as written: it is what the Host header carries and what is signed.
  EXPECT_EQ(ParseEndpoint("https://h:443")->host, "h:443");
  EXPECT_EQ(ParseEndpoint("http://[::1]:8081")->host, "[::1]:8081");
}

TEST(UrlTest, RejectsBadEndpoints) {
  for (char const* bad : {"", "127.0.0.1:8081", "ftp://x", "http://", "http://u:p@host",
                          "http://host/path?q=1", "http://host/#frag", "http://ho st"}) {
    auto e = ParseEndpoint(bad);
    EXPECT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(UrlTest, EncodesOnlyWhatMustBeEncoded) {
  EXPECT_EQ(EncodeTarget("/folders/my-data/files?path=sub dir"),
            "/folders/my-data/files?path=sub%20dir");
  EXPECT_EQ(EncodeTarget("/folders/x?path=sub%20dir"), "/folders/x?path=sub%20dir");
  EXPECT_EQ(EncodeTarget("session"), "/session");
  EXPECT_EQ(EncodeTarget("/a%zz"), "/a%25zz");
  EXPECT_EQ(EncodeTarget("/caf\xc3\xa9"), "/caf%C3%A9");
  EXPECT_EQ(EncodeTarget("/x#y\"<>"), "/x%23y%22%3C%3E");
}

}  // namespace
}  // namespace bai::internal
