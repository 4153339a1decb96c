// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/auth/login_throttle.h"

#include <gtest/gtest.h>

namespace bai::server {
namespace {

using std::chrono::seconds;

class LoginThrottleTest : public ::testing::Test {
 protected:
  LoginThrottle::TimePoint t0_ = LoginThrottle::TimePoint(seconds(1'800'000'000));
};

TEST_F(LoginThrottleTest, AnAddressGetsItsAttemptsPerWindowRightOrWrong) {
  LoginThrottle t({.per_address = 3, .failures_per_user = 100, .window = seconds(60)});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(t.Admit("a", "u" + std::to_string(i), t0_).allowed);
  auto refused = t.Admit("a", "other", t0_ + seconds(10));
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after_seconds, 50);
  EXPECT_TRUE(t.Admit("b", "other", t0_ + seconds(10)).allowed) << "other addresses are not hit";
  // A refused attempt is not counted: the window frees up when the first attempts leave it.
  EXPECT_TRUE(t.Admit("a", "other", t0_ + seconds(60)).allowed);
}

// Hardening (hostile testing): ten wrong passwords from any address locked any account,
// superadmin included, renewably; a right password from another address was refused. Failures
// now count per (account, address).
TEST_F(LoginThrottleTest, FailuresLockAnAccountOnlyFromTheGuessingAddress) {
  LoginThrottle t({.per_address = 100, .failures_per_user = 2, .window = seconds(300)});
  ASSERT_TRUE(t.Admit("a", "admin", t0_).allowed);
  t.Failed("a", "admin", t0_);
  ASSERT_TRUE(t.Admit("a", "admin", t0_ + seconds(1)).allowed);
  t.Failed("a", "admin", t0_ + seconds(1));
  auto refused = t.Admit("a", "admin", t0_ + seconds(2));
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after_seconds, 298);
  EXPECT_TRUE(t.Admit("b", "admin", t0_ + seconds(2)).allowed) << "the owner elsewhere passes";
  EXPECT_TRUE(t.Admit("a", "alice", t0_ + seconds(2)).allowed) << "other accounts pass";
  EXPECT_TRUE(t.Admit("a", "admin", t0_ + seconds(300)).allowed) << "one failure left the window";
}

TEST_F(LoginThrottleTest, ASuccessForgetsTheAccountsFailuresFromThatAddress) {
  LoginThrottle t({.per_address = 100, .failures_per_user = 2, .window = seconds(300)});
  t.Failed("a", "admin", t0_);
  t.Failed("b", "admin", t0_);
  t.Succeeded("a", "admin");
  t.Failed("a", "admin", t0_);
  EXPECT_TRUE(t.Admit("a", "admin", t0_).allowed);
  t.Failed("b", "admin", t0_);
  EXPECT_FALSE(t.Admit("b", "admin", t0_).allowed) << "b's failures were not forgotten";
}

TEST_F(LoginThrottleTest, MemoryStaysBoundedUnderManyAddresses) {
  LoginThrottle t(
      {.per_address = 5, .failures_per_user = 5, .window = seconds(60), .max_tracked = 1000});
  for (int i = 0; i < 20000; ++i) {
    auto who = "10." + std::to_string(i);
    ASSERT_TRUE(t.Admit(who, who, t0_ + seconds(i % 30)).allowed);
    t.Failed(who, who, t0_ + seconds(i % 30));
  }
  EXPECT_LE(t.tracked(), 1000u);
  // The newest are still limited.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.Admit("10.19999", "x", t0_ + seconds(29)).allowed);
  EXPECT_FALSE(t.Admit("10.19999", "x", t0_ + seconds(29)).allowed);
}

// Behind a webserver every sign-in comes from its address: a trusted one names the client in
// X-Forwarded-For (the last entry: the address it saw); anyone else's header is ignored.
TEST(ThrottledAddressTest, OnlyATrustedProxyNamesTheClient) {
  std::vector<std::string> trusted = {"10.0.0.5", "::1"};
  EXPECT_EQ(ThrottledAddress("10.0.0.5", "198.51.100.7", trusted), "198.51.100.7");
  EXPECT_EQ(ThrottledAddress("::1", "2001:db8::9", trusted), "2001:db8::9");
  // The last hop is the one the trusted proxy saw; earlier ones are the client's own words.
  EXPECT_EQ(ThrottledAddress("10.0.0.5", "1.2.3.4, 198.51.100.7 ", trusted), "198.51.100.7");
  // Not trusted: the header changes nothing (a guesser cannot pick a fresh address per try).
  EXPECT_EQ(ThrottledAddress("203.0.113.9", "198.51.100.7", trusted), "203.0.113.9");
  EXPECT_EQ(ThrottledAddress("10.0.0.5", std::nullopt, trusted), "10.0.0.5");
  // Not an address: the proxy's own.
  for (char const* junk : {"", "unknown", "198.51.100.7:443", "1.2.3.4,", "x\r\ny"}) {
    EXPECT_EQ(ThrottledAddress("10.0.0.5", junk, trusted), "10.0.0.5") << junk;
  }
  EXPECT_TRUE(IsIpAddress("192.0.2.1"));
  EXPECT_TRUE(IsIpAddress("2001:db8::1"));
  EXPECT_FALSE(IsIpAddress("localhost"));
}

}  // namespace
}  // namespace bai::server
