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

TEST(AppProxyTest, AppLinksUseTheHostNameTheBrowserReachedTheConsoleAt) {
  EXPECT_EQ(HostName("console.example.com:8090"), "console.example.com");
  EXPECT_EQ(HostName("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(HostName("[::1]:8090"), "[::1]");
  EXPECT_EQ(HostName("evil.com/x:80"), "");
  EXPECT_EQ(HostName("a b:80"), "");
  EXPECT_EQ(HostName("[::1"), "");
  EXPECT_EQ(HostName(""), "");
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

// Small answers of known length are kept whole (their Content-Length reaches the browser);
// large ones and those without a length (downloads, Server-Sent Events) stream.
TEST(AppProxyTest, LargeOrOpenEndedAnswersStreamAndSmallOnesAreKeptWhole) {
  auto plan = [](std::string_view head_text, bool head_request = false) {
    auto head = ParseAppResponseHead(head_text);
    EXPECT_TRUE(head.ok() && *head) << head_text;
    return PlanAppAnswer(**head, head_request, 1u << 20);
  };
  auto small = plan("HTTP/1.0 200 OK\r\nContent-Length: 1048576\r\n\r\n");
  EXPECT_FALSE(small.stream);
  EXPECT_EQ(small.length, std::optional<std::size_t>(1u << 20));
  auto large = plan("HTTP/1.0 200 OK\r\nContent-Length: 1048577\r\n\r\n");
  EXPECT_TRUE(large.stream);
  EXPECT_EQ(large.length, std::optional<std::size_t>((1u << 20) + 1));
  auto events = plan("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
  EXPECT_TRUE(events.stream);
  EXPECT_FALSE(events.length);
  // A length that is not a number is no length: the answer ends when the app closes.
  EXPECT_TRUE(plan("HTTP/1.0 200 OK\r\nContent-Length: 12x\r\n\r\n").stream);
  // No body, whatever the length says.
  for (auto const& bodiless : {plan("HTTP/1.0 200 OK\r\nContent-Length: 5000000000\r\n\r\n", true),
                               plan("HTTP/1.0 304 Not Modified\r\nContent-Length: 900\r\n\r\n"),
                               plan("HTTP/1.0 204 No Content\r\n\r\n")}) {
    EXPECT_FALSE(bodiless.stream);
    EXPECT_EQ(bodiless.length, std::optional<std::size_t>(0));
  }
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

TEST(AppProxyTest, WebSocketUpgradesGoWithoutSubprotocolsExtensionsOrTheLogin) {
  Headers h = {{"host", "127.0.0.1:10200"},
               {"origin", "http://127.0.0.1:10200"},
               {"sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="},
               {"sec-websocket-version", "13"},
               {"sec-websocket-protocol", "v1.kernel.websocket.jupyter.org"},
               {"sec-websocket-extensions", "permessage-deflate"},
               {"cookie", "AIOHTTP_SESSION=s; _xsrf=1"}};
  auto bytes = AppUpgradeRequestBytes("/api/kernels/k/channels?session_id=1", h);
  EXPECT_EQ(bytes.rfind("GET /api/kernels/k/channels?session_id=1 HTTP/1.1\r\n", 0), 0u);
  EXPECT_THAT(bytes, HasSubstr("sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"));
  EXPECT_THAT(bytes, HasSubstr("cookie: _xsrf=1\r\n"));
  EXPECT_THAT(bytes, HasSubstr("upgrade: websocket\r\nconnection: Upgrade\r\n\r\n"));
  EXPECT_THAT(bytes, Not(HasSubstr("AIOHTTP_SESSION")));
  EXPECT_THAT(bytes, Not(HasSubstr("jupyter.org")));
  EXPECT_THAT(bytes, Not(HasSubstr("deflate")));
}

TEST(AppProxyTest, WebSocketFramesRoundTripAtEverySizeAndArriveInPieces) {
  for (std::size_t n : {0u, 5u, 125u, 126u, 65535u, 65536u, 200000u}) {
    std::string payload(n, 'a');
    for (std::size_t i = 0; i < n; ++i) payload[i] = static_cast<char>(i * 7);
    auto wire = EncodeClientFrame({true, 2, payload}, 0x12345678u);
    EXPECT_EQ(static_cast<unsigned char>(wire[1]) & 0x80, 0x80) << "clients mask";
    // Byte by byte at first: nothing until the frame is whole.
    std::string buffer = wire.substr(0, wire.size() - 1);
    auto partial = TakeFrames(buffer, 1 << 20);
    ASSERT_TRUE(partial.ok());
    EXPECT_TRUE(partial->empty());
    buffer += wire.back();
    buffer += EncodeClientFrame({true, 9, "hb"}, 7);
    auto frames = TakeFrames(buffer, 1 << 20);
    ASSERT_TRUE(frames.ok()) << frames.status().message();
    ASSERT_EQ(frames->size(), 2u);
    EXPECT_EQ((*frames)[0].opcode, 2);
    EXPECT_EQ((*frames)[0].payload, payload) << n;
    EXPECT_EQ((*frames)[1].opcode, 9);
    EXPECT_EQ((*frames)[1].payload, "hb");
    EXPECT_TRUE(buffer.empty());
  }
  // A server's unmasked frame: "Hello" (RFC 6455 §5.7).
  std::string hello = "\x81\x05Hello";
  auto f = TakeFrames(hello, 100);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].payload, "Hello");
}

TEST(AppProxyTest, BrokenOrOversizedWebSocketFramesAreRefused) {
  std::string reserved = "\xc1\x01x";  // RSV1: a compressed frame nobody agreed to
  EXPECT_FALSE(TakeFrames(reserved, 100).ok());
  std::string opcode = "\x83\x01x";
  EXPECT_FALSE(TakeFrames(opcode, 100).ok());
  std::string long_ping = "\x89\x7e\x00\x80" + std::string(128, 'p');
  EXPECT_FALSE(TakeFrames(long_ping, 1000).ok());
  std::string big = EncodeClientFrame({true, 2, std::string(2000, 'x')}, 1);
  EXPECT_FALSE(TakeFrames(big, 1000).ok());
}

}  // namespace
}  // namespace bai::webserver
