// SPDX-License-Identifier: Apache-2.0
// The console's app ports (server-reference/webserver/app_ports.h), issue 43, 5d: one user held
// every app port (others got 503); a user now holds at most max_per_user, their least recently
// used closing when they open one more, and another user still gets one.
#include "server-reference/webserver/app_ports.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace bai::webserver {
namespace {

TEST(AppPortsTest, OneUserHoldsAtMostTheirShareAndOthersStillGetPorts) {
  AppPortsOptions o;
  o.first_port = 20000 + getpid() % 20000;
  o.last_port = o.first_port + 7;
  o.max_per_user = 3;
  AppPorts ports(
      o,
      [](std::string const&, std::string const&) -> StatusOr<std::unique_ptr<WebSocketConnection>> {
        return Status(StatusCode::kUnavailable, "no manager in this test");
      });
  for (int i = 0; i < 5; ++i) {
    auto link =
        ports.Open("login-a", "AKIA-A", "session-1", "app" + std::to_string(i), 0, "127.0.0.1");
    ASSERT_TRUE(link.ok()) << link.status().message();
    EXPECT_LE(ports.open_count(), 3u) << "after " << i + 1 << " apps";
  }
  EXPECT_EQ(ports.open_count(), 3u);
  // The same app again reuses its circuit (no eviction).
  ASSERT_TRUE(ports.Open("login-a", "AKIA-A", "session-1", "app4", 0, "127.0.0.1").ok());
  EXPECT_EQ(ports.open_count(), 3u);
  // Another user is not shut out.
  auto other = ports.Open("login-b", "AKIA-B", "session-2", "app0", 0, "127.0.0.1");
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(ports.open_count(), 4u);
  // Signing out gives a login's ports back.
  ports.EndLogin("login-a");
  EXPECT_EQ(ports.open_count(), 1u);
  ports.Stop();
}

}  // namespace
}  // namespace bai::webserver
