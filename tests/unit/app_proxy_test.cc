// SPDX-License-Identifier: Apache-2.0
// The app launcher's pure part: what an app receives, what comes back, which cookies never cross.
#include "server-reference/webserver/app_proxy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::webserver {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AppProxyTest, PortRangesAreCheckedAndExplained) {
  auto r = ParsePortRange("10200-10299");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 10200);
  EXPECT_EQ(r->last, 10299);
  EXPECT_EQ(r->size(), 100);
  auto one = ParsePortRange("12000");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1);
  for (char const* bad : {"", "80-90", "10299-10200", "10200-70000", "x-y", "10200-", "1e4"}) {
    auto b = ParsePortRange(bad);
    EXPECT_FALSE(b.ok()) << bad;
    if (!b.ok()) {
      EXPECT_THAT(b.status().message(), HasSubstr("10200-10299")) << bad;
    }
  }
}

TEST(AppProxyTest, TheAppNeverSeesTheLoginOrPermitCookies) {
  EXPECT_EQ(AppVisibleCookies("AIOHTTP_SESSION=abc; theme=dark; bai_app_permit_10200=p; _xsrf=2"),
            "theme=dark; _xsrf=2");
  EXPECT_EQ(AppVisibleCookies("AIOHTTP_SESSION=abc"), "");
  EXPECT_EQ(AppVisibleCookies(""), "");
  EXPECT_TRUE(IsWebserverCookie("bai_app_permit_1"));
  EXPECT_FALSE(IsWebserverCookie("session"));
}

TEST(AppProxyTest, RequestsGoAsHttp10WithoutHopByHopHeaders) {
  Headers h = {{"host", "127.0.0.1:10200"},
               {"connection", "keep-alive, upgrade"},
               {"keep-alive", "timeout=5"},
               {"transfer-encoding", "chunked"},
               {"content-length", "999"},
               {"cookie", "AIOHTTP_SESSION=secret; a=1"},
               {"cookie", "bai_app_permit_10200=p"},
               {"x-evil", "a\r\nInjected: yes"},
               {"accept", "text/html"}};
  auto bytes = AppRequestBytes("POST", "/api/contents?x=1", h, "hello");
  EXPECT_EQ(bytes.rfind("POST /api/contents?x=1 HTTP/1.0\r\n", 0), 0u) << bytes;
  EXPECT_THAT(bytes, HasSubstr("host: 127.0.0.1:10200\r\n"));
  EXPECT_THAT(bytes, HasSubstr("accept: text/html\r\n"));
  EXPECT_THAT(bytes, HasSubstr("cookie: a=1\r\n"));
  EXPECT_THAT(bytes, HasSubstr("content-length: 5\r\n"));
  EXPECT_THAT(bytes, HasSubstr("connection: close\r\n\r\nhello"));
  EXPECT_THAT(bytes, Not(HasSubstr("secret")));
  EXPECT_THAT(bytes, Not(HasSubstr("keep-alive")));
  EXPECT_THAT(bytes, Not(HasSubstr("chunked")));
  EXPECT_THAT(bytes, Not(HasSubstr("999")));
  EXPECT_THAT(bytes, Not(HasSubstr("Injected")));
  // A GET without a body says no length; one without cookies left sends no Cookie header.
  auto get = AppRequestBytes("GET", "/", {{"cookie", "AIOHTTP_SESSION=s"}}, "");
  EXPECT_EQ(get, "GET / HTTP/1.0\r\nconnection: close\r\n\r\n");
}

TEST(AppProxyTest, AnswersAreReadHeadFirstAndForeignHeadsRefused) {
  std::string answer =
      "HTTP/1.1 302 Found\r\nLocation: /tree\r\nContent-Type: text/html\r\n"
      "Content-Length: 3\r\n\r\nabc";
  auto partial = ParseAppResponseHead(answer.substr(0, 20));
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(partial->has_value());
  auto head = ParseAppResponseHead(answer);
  ASSERT_TRUE(head.ok());
  ASSERT_TRUE(head->has_value());
  EXPECT_EQ((*head)->status, 302);
  EXPECT_EQ(answer.substr((*head)->body_offset), "abc");
  EXPECT_EQ((*head)->headers[0], (std::pair<std::string, std::string>("location", "/tree")));
  // Bare LF line ends (some small servers) are read too.
  auto lf = ParseAppResponseHead("HTTP/1.0 200 OK\nX: 1\n\nbody");
  ASSERT_TRUE(lf.ok() && lf->has_value());
  EXPECT_EQ((*lf)->status, 200);
  EXPECT_EQ((*lf)->body_offset, 22u);
  EXPECT_FALSE(ParseAppResponseHead("SSH-2.0-OpenSSH_9.2\r\n\r\n").ok());
  EXPECT_FALSE(ParseAppResponseHead("HTTP/1.1 abc\r\n\r\n").ok());
  EXPECT_FALSE(ParseAppResponseHead("HTTP/1.1 200 OK\r\nno colon\r\n\r\n").ok());
  EXPECT_FALSE(ParseAppResponseHead("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a')).ok());
}

TEST(AppProxyTest, TheAppCannotSetTheWebserversCookies) {
  Headers h = {{"set-cookie", "AIOHTTP_SESSION=stolen; Path=/"},
               {"set-cookie", "bai_app_permit_10201=x"},
               {"set-cookie", "_xsrf=1; Path=/"},
               {"content-type", "text/html"},
               {"content-length", "3"},
               {"connection", "close"},
               {"location", "/tree"}};
  auto out = AppResponseHeaders(h);
  EXPECT_EQ(out, (Headers{{"set-cookie", "_xsrf=1; Path=/"}, {"location", "/tree"}}));
  EXPECT_EQ(PermitCookie(10200, "p", true),
            "bai_app_permit_10200=p; Path=/; HttpOnly; SameSite=Strict; Secure");
}

}  // namespace
}  // namespace bai::webserver
