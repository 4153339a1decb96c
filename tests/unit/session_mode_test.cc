// SPDX-License-Identifier: Apache-2.0
// The webserver's pure session-mode rules (server-reference/webserver/session_mode.h).
#include "server-reference/webserver/session_mode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::webserver {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SessionModeTest, TheCookieIsFoundAmongOthersAndUnquoted) {
  EXPECT_EQ(CookieValue("a=1; AIOHTTP_SESSION=tok; b=2", kSessionCookie), "tok");
  EXPECT_EQ(CookieValue("AIOHTTP_SESSION=\"q\"", kSessionCookie), "q");
  EXPECT_EQ(CookieValue("XAIOHTTP_SESSION=no; junk", kSessionCookie), std::nullopt);
  EXPECT_EQ(CookieValue("", kSessionCookie), std::nullopt);
  // Two: one set for another Path by a page on another port of this host.
  EXPECT_EQ(CookieValues("AIOHTTP_SESSION=a; x=1; AIOHTTP_SESSION=b", kSessionCookie),
            (std::vector<std::string>{"a", "b"}));
}

TEST(SessionModeTest, TheLoginCookieIsHttpOnlyStrictAndSecureOnlyOverTls) {
  auto plain = LoginCookie("t", 60, false);
  EXPECT_EQ(plain, "AIOHTTP_SESSION=t; Path=/; Max-Age=60; HttpOnly; SameSite=Strict");
  EXPECT_THAT(LoginCookie("t", 60, true), HasSubstr("; Secure"));
  auto cleared = ClearedLoginCookie(false);
  EXPECT_THAT(cleared, HasSubstr("AIOHTTP_SESSION=;"));
  EXPECT_THAT(cleared, HasSubstr("Max-Age=0"));
}

RequestOrigin Req(std::string method) {
  RequestOrigin r;
  r.method = std::move(method);
  r.own_origin = "http://127.0.0.1:8090";
  return r;
}

TEST(SessionModeTest, AProgramNeedsNoTokenAndAPagesReadsDo) {
  // No Origin, no Sec-Fetch-Site: curl or the official client, not a page.
  EXPECT_EQ(CheckCsrf(Req("GET"), "s"), CsrfVerdict::kAllowed);
  EXPECT_EQ(CheckCsrf(Req("POST"), "s"), CsrfVerdict::kAllowed);
  // Issue 43, 5c: a page's reads carry the token too, so that a login cookie another port's
  // page tossed in cannot make the console read (and then act) as somebody else.
  auto get = Req("GET");
  get.fetch_site = "same-origin";
  EXPECT_EQ(CheckCsrf(get, "s"), CsrfVerdict::kMissingToken);
  get.csrf_token = "t";
  EXPECT_EQ(CheckCsrf(get, "s"), CsrfVerdict::kWrongToken);
  get.csrf_token = "s";
  EXPECT_EQ(CheckCsrf(get, "s"), CsrfVerdict::kAllowed);
}

TEST(SessionModeTest, AnotherSitesPostIsRefusedWithOrWithoutAToken) {
  auto r = Req("POST");
  r.origin = "http://evil.example";
  r.csrf_token = "s";
  EXPECT_EQ(CheckCsrf(r, "s"), CsrfVerdict::kCrossSite);
  auto site = Req("DELETE");
  site.fetch_site = "cross-site";
  EXPECT_EQ(CheckCsrf(site, "s"), CsrfVerdict::kCrossSite);
  auto sibling = Req("PATCH");
  sibling.fetch_site = "same-site";  // another port or subdomain is another origin
  EXPECT_EQ(CheckCsrf(sibling, "s"), CsrfVerdict::kCrossSite);
  auto ws = Req("GET");
  ws.websocket = true;
  ws.origin = "http://evil.example";
  EXPECT_EQ(CheckCsrf(ws, "s"), CsrfVerdict::kCrossSite);
}

TEST(SessionModeTest, TheConsolesOwnPostNeedsThisLoginsToken) {
  auto r = Req("POST");
  r.origin = "http://127.0.0.1:8090";
  r.fetch_site = "same-origin";
  EXPECT_EQ(CheckCsrf(r, "s3cret"), CsrfVerdict::kMissingToken);
  r.csrf_token = "other";
  EXPECT_EQ(CheckCsrf(r, "s3cret"), CsrfVerdict::kWrongToken);
  r.csrf_token = "s3cret";
  EXPECT_EQ(CheckCsrf(r, "s3cret"), CsrfVerdict::kAllowed);
  // A login with no token of its own never matches an empty header.
  r.csrf_token = "";
  EXPECT_EQ(CheckCsrf(r, ""), CsrfVerdict::kMissingToken);
  // Its WebSockets (and event streams) carry it in the query: a page cannot add headers there.
  auto ws = Req("GET");
  ws.websocket = true;
  ws.origin = "http://127.0.0.1:8090";
  EXPECT_EQ(CheckCsrf(ws, "s3cret"), CsrfVerdict::kMissingToken);
  ws.csrf_token = QueryCsrfToken("/func/stream/session/x/pty?bai_csrf=s3cret");
  EXPECT_EQ(CheckCsrf(ws, "s3cret"), CsrfVerdict::kAllowed);
  EXPECT_THAT(CsrfRefusal(CsrfVerdict::kMissingToken), HasSubstr("X-BAI-CSRF-Token"));
}

TEST(SessionModeTest, SecurityHeadersForbidFramingAndForeignScripts) {
  auto h = SecurityHeaders(false);
  std::string csp;
  bool hsts = false;
  for (auto const& [n, v] : h) {
    if (n == "Content-Security-Policy") csp = v;
    if (n == "Strict-Transport-Security") hsts = true;
  }
  EXPECT_THAT(csp, HasSubstr("script-src 'self'"));
  EXPECT_THAT(csp, HasSubstr("frame-ancestors 'none'"));
  EXPECT_THAT(csp, Not(HasSubstr("unsafe-inline")));
  EXPECT_FALSE(hsts);
  bool tls_hsts = false;
  for (auto const& [n, v] : SecurityHeaders(true)) tls_hsts |= n == "Strict-Transport-Security";
  // Storage proxies the page may upload to; nothing that could break out of the header.
  std::string with_storage;
  for (auto const& [n, v] :
       SecurityHeaders(false, "",
                       {"http://127.0.0.1:6021", "https://st.example.com", "javascript:alert(1)",
                        "http://a; script-src *", "http://x/path"})) {
    if (n == "Content-Security-Policy") with_storage = v;
  }
  EXPECT_THAT(with_storage,
              HasSubstr("connect-src 'self' http://127.0.0.1:6021 https://st.example.com;"));
  EXPECT_THAT(with_storage, Not(HasSubstr("javascript")));
  EXPECT_THAT(with_storage, Not(HasSubstr("script-src *")));
  EXPECT_THAT(with_storage, Not(HasSubstr("/path")));
  EXPECT_TRUE(tls_hsts);
  for (auto const& [n, v] : SecurityHeaders(false, "abc")) {
    if (n == "Content-Security-Policy") {
      EXPECT_THAT(v, HasSubstr("style-src 'self' 'nonce-abc';"));
    }
  }
}

TEST(SessionModeTest, FuncTargetsMapToTheManagersPaths) {
  EXPECT_EQ(UpstreamTarget("/func/session?x=1"), "/session?x=1");
  EXPECT_EQ(UpstreamTarget("/func/"), "/");
  EXPECT_EQ(UpstreamTarget("/func"), "/");
  EXPECT_EQ(UpstreamTarget("/func?q"), "/?q");
  // The page's token stays here.
  EXPECT_EQ(UpstreamTarget("/func/events/session?bai_csrf=t&sessionId=a"),
            "/events/session?sessionId=a");
  EXPECT_EQ(UpstreamTarget("/func/session/x/logs?follow=true&bai_csrf=t"),
            "/session/x/logs?follow=true");
  EXPECT_EQ(UpstreamTarget("/func/stream/session/x/pty?bai_csrf=t"), "/stream/session/x/pty");
  EXPECT_EQ(UpstreamTarget("/func/x?bai_csrfx=1"), "/x?bai_csrfx=1");
  EXPECT_EQ(QueryCsrfToken("/func/x?a=1&bai_csrf=tok"), "tok");
  EXPECT_EQ(QueryCsrfToken("/func/x?bai_csrfx=tok"), std::nullopt);
  EXPECT_EQ(QueryCsrfToken("/func/x"), std::nullopt);
  EXPECT_EQ(UpstreamTarget("/function"), std::nullopt);
  EXPECT_EQ(UpstreamTarget("/server/login"), std::nullopt);
}

TEST(SessionModeTest, OnlyTheRequestsOwnHeadersGoOnAndHopByHopOnesStay) {
  Headers in = {{"Cookie", "AIOHTTP_SESSION=x"},
                {"Authorization", "BackendAI forged"},
                {"Content-Type", "application/json"},
                {"X-BackendAI-Version", "v8.20240915"},
                {"X-BackendAI-Date", "x"},
                {"Host", "h"},
                {"Upload-Offset", "5"},
                {"Connection", "keep-alive"}};
  Headers want = {{"content-type", "application/json"},
                  {"x-backendai-version", "v8.20240915"},
                  {"upload-offset", "5"}};
  EXPECT_EQ(ForwardedRequestHeaders(in), want);
  Headers back = {{"Transfer-Encoding", "chunked"},
                  {"Set-Cookie", "x=1"},
                  {"Content-Length", "3"},
                  {"Location", "/x"},
                  {"X-RateLimit-Remaining", "9"}};
  Headers back_want = {{"location", "/x"}, {"x-ratelimit-remaining", "9"}};
  EXPECT_EQ(ForwardedResponseHeaders(back), back_want);
}

TEST(SessionModeTest, TheLoginBodyNeedsAUsernameAndPasswordAndKeepsTheRest) {
  auto ok = ParseLoginRequest(R"({"username":"u@x","password":"pw","otp":"123","domain":"d"})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->username, "u@x");
  EXPECT_EQ(ok->extra, nlohmann::json({{"otp", "123"}}));
  auto body = nlohmann::json::parse(AuthorizeBody(*ok, "default"));
  EXPECT_EQ(body["type"], "keypair");
  EXPECT_EQ(body["domain"], "default");  // the webserver's, not the caller's
  EXPECT_EQ(body["otp"], "123");
  for (auto bad : {"", "[]", R"({"username":"u"})", R"({"password":"p"})",
                   R"({"username":5,"password":"p"})", R"({"username":"","password":"p"})"}) {
    auto r = ParseLoginRequest(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().error_info().http_status, 400) << bad;
  }
}

TEST(SessionModeTest, ARefusedLoginIsAnsweredAs2409sWebserverDoes) {
  auto a = FailedLoginAnswer(
      R"({"type":"https://api.backend.ai/probs/auth-failed","title":"Authorization failed.","msg":"User credential mismatch."})",
      "fallback");
  EXPECT_EQ(a["authenticated"], false);
  EXPECT_EQ(a["data"]["details"], "User credential mismatch.");
  EXPECT_EQ(a["data"]["type"], "https://api.backend.ai/probs/auth-failed");
  EXPECT_EQ(FailedLoginAnswer("not json", "fallback")["data"]["details"], "fallback");
  auto d = LoginData({"AK", "user", "active"}, "c");
  EXPECT_EQ(d["access_key"], "AK");
  EXPECT_EQ(d["csrf_token"], "c");
}

TEST(SessionModeTest, AnEncodedLoginDecryptsWithPROTOCOLsVector) {
  // PROTOCOL.md 2.5's example, computed with `cryptography` by the reference's author.
  auto plain = DecryptPayload(
      "ABCDEFGHIJKLMNOP:0VTC/WpV5VChyvZzx4CuNDpXI9loMkI3t087RODtmIMppoOw0KG/"
      "m5WcliIywVtaNKq37BefL7rhnrubDezXTQ==",
      "http://127.0.0.1:8090");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(*plain, R"({"username": "user@example.com", "password": "pw"})");
  // Another endpoint derives another key: the padding check fails (or garbage is refused).
  auto wrong = DecryptPayload(
      "ABCDEFGHIJKLMNOP:0VTC/WpV5VChyvZzx4CuNDpXI9loMkI3t087RODtmIMppoOw0KG/"
      "m5WcliIywVtaNKq37BefL7rhnrubDezXTQ==",
      "http://127.0.0.1:9999");
  if (wrong.ok()) {
    EXPECT_NE(*wrong, *plain);
  }
  for (auto bad : {"", "short:abc", "ABCDEFGHIJKLMNOP:!!!", "ABCDEFGHIJKLMNOP:AAAA"}) {
    EXPECT_FALSE(DecryptPayload(bad, "http://127.0.0.1:8090").ok()) << bad;
  }
}

}  // namespace
}  // namespace bai::webserver
