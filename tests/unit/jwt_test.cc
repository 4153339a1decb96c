// SPDX-License-Identifier: Apache-2.0
// HS256 tokens (server-reference/common/wire/jwt.h): what the storage proxy signs it accepts, and
// nothing else.
#include "server-reference/common/wire/jwt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(JwtTest, RoundTripsClaimsUntilTheyExpire) {
  json claims = {{"op", "upload"}, {"relpath", "a/b.bin"}, {"size", 1 << 30}, {"exp", 2000}};
  std::string token = SignJwt(claims, "s3cret");
  auto back = VerifyJwt(token, "s3cret", 1999);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, claims);
  EXPECT_THAT(VerifyJwt(token, "s3cret", 2000).status().message(), HasSubstr("expired"));
  EXPECT_THAT(VerifyJwt(token, "other", 1000).status().message(), HasSubstr("bad signature"));
}

TEST(JwtTest, VerifiesAStandardTokenAndRefusesForgeries) {
  // The RFC 7519-style example token everyone uses (jwt.io), signed "your-256-bit-secret": its
  // signature checks out; it is refused only for having no expiry.
  std::string example =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
      "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
      "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
  EXPECT_THAT(VerifyJwt(example, "your-256-bit-secret", 0).status().message(),
              HasSubstr("no expiry"));
  EXPECT_THAT(VerifyJwt(example, "another-secret", 0).status().message(),
              HasSubstr("bad signature"));

  std::string token = SignJwt({{"relpath", "mine"}, {"exp", 2000}}, "k");
  // Claims changed after signing.
  auto dot1 = token.find('.'), dot2 = token.rfind('.');
  std::string forged_claims = SignJwt({{"relpath", "../../etc"}, {"exp", 2000}}, "guess");
  std::string swapped = token.substr(0, dot1) +
                        forged_claims.substr(forged_claims.find('.'),
                                             forged_claims.rfind('.') - forged_claims.find('.')) +
                        token.substr(dot2);
  EXPECT_THAT(VerifyJwt(swapped, "k", 1).status().message(), HasSubstr("bad signature"));
  // alg "none" with an empty signature.
  std::string none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + token.substr(dot1 + 1, dot2 - dot1);
  EXPECT_THAT(VerifyJwt(none, "k", 1).status().message(), HasSubstr("HS256"));
  for (std::string junk : std::vector<std::string>{"", "a.b", "a.b.c.d", "!!.@@.##", token + "x"}) {
    auto r = VerifyJwt(junk, "k", 1);
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << junk;
  }
}

// Hardening: a header whose alg is a number, an object or null is refused as any forgery is
// (401), never an exception (it was a 500 with the JSON library's text).
TEST(JwtTest, AHeaderWithANonStringAlgIsRefusedNotThrown) {
  std::string token = SignJwt({{"relpath", "mine"}, {"exp", 2000}}, "k");
  auto tail = token.substr(token.find('.'));
  // {"alg":256} {"alg":{}} {"alg":null} [1]
  for (std::string header : {"eyJhbGciOjI1Nn0", "eyJhbGciOnt9fQ", "eyJhbGciOm51bGx9", "WzFd"}) {
    auto r = VerifyJwt(header + tail, "k", 1);
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << header;
    EXPECT_THAT(r.status().message(), HasSubstr("HS256")) << header;
  }
}

}  // namespace
}  // namespace bai::server
