// SPDX-License-Identifier: Apache-2.0
// A tunnel's block frames (libbai/internal/block_websocket.h) against the server's Boost.Beast
// WebSocket (server-reference/common/http): offered as a subprotocol, agreed by a server that
// knows it, and carried by libwebsockets when the server does not; the server writes nothing
// before the client's go, and refuses a first frame that is not one.
#include "libbai/internal/block_websocket.h"

#include "libbai/internal/lws_websocket.h"
#include "libbai/internal/ws_frames.h"
#include "server-reference/common/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <string>

namespace bai {
namespace {

class BlockWebSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::HttpServerOptions o;
    o.port = 0;
    auto s = server::HttpServer::Start(o, [](std::shared_ptr<server::Exchange> ex) {
      auto const& target = ex->request().target;
      server::WebSocketHandlers h;
      // An echo; "close" ends it from the server's side.
      h.on_binary = [](std::shared_ptr<server::WebSocket> const& ws, std::string const& b) {
        ws->SendBinary(b);
      };
      h.on_message = [](std::shared_ptr<server::WebSocket> const& ws, std::string const& t) {
        if (t == "close") return ws->Close(1001, "bye");
        ws->Send(t);
      };
      // /agree: as the manager, agree when offered; /plain: never.
      auto offered = ex->request().Header("sec-websocket-protocol");
      h.block_tunnel =
          target == "/agree" && offered && offered->find("bai-block") != std::string_view::npos;
      ex->AcceptWebSocket(std::move(h));
    });
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(*s);
  }

  StatusOr<std::unique_ptr<WebSocketConnection>> Open(std::string const& path, bool block) {
    TransportRequest r;
    r.method = "GET";
    r.origin = "http://127.0.0.1:" + std::to_string(server_->port());
    r.host = "127.0.0.1:" + std::to_string(server_->port());
    r.target = path;
    r.sign = false;
    if (block) r.headers.emplace_back(internal::kBlockTunnelHeader, internal::kBlockTunnelValue);
    return internal::OpenLwsWebSocket(r, {});
  }

  // Sends `data` in 64 KiB binary messages and reads the echo back whole (pieces joined).
  static std::string EchoBytes(WebSocketConnection& ws, std::string const& data) {
    for (std::size_t at = 0; at < data.size(); at += 65536) {
      EXPECT_TRUE(ws.Send({data.substr(at, 65536), true}).ok());
    }
    std::string back;
    while (back.size() < data.size()) {
      auto e = ws.Receive(std::chrono::seconds(10));
      if (e.kind != WebSocketEvent::Kind::kMessage) break;
      EXPECT_TRUE(e.message.binary);
      back += e.message.data;
    }
    return back;
  }

  std::unique_ptr<server::HttpServer> server_;
};

std::string RandomBytes(std::size_t n) {
  std::mt19937_64 gen(42);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen());
  return s;
}

TEST_F(BlockWebSocketTest, AnAgreedTunnelCarriesBytesTextAndTheServersClose) {
  auto ws = Open("/agree", true);
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  std::string data = RandomBytes(3 << 20);
  EXPECT_EQ(EchoBytes(**ws, data), data);
  ASSERT_TRUE((*ws)->Send({"a text message", false}).ok());
  auto text = (*ws)->Receive(std::chrono::seconds(10));
  ASSERT_EQ(text.kind, WebSocketEvent::Kind::kMessage);
  EXPECT_FALSE(text.message.binary);
  EXPECT_EQ(text.message.data, "a text message");
  ASSERT_TRUE((*ws)->Send({"close", false}).ok());
  auto end = (*ws)->Receive(std::chrono::seconds(10));
  EXPECT_EQ(end.kind, WebSocketEvent::Kind::kClosed);
  EXPECT_EQ((*ws)->close_code(), 1001);
  EXPECT_FALSE((*ws)->CloseStatus().ok());
  EXPECT_FALSE((*ws)->Send({"late", true}).ok());
}

TEST_F(BlockWebSocketTest, AServerThatDoesNotAgreeIsServedByLibwebsockets) {
  auto ws = Open("/plain", true);
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  std::string data = RandomBytes(1 << 20);
  EXPECT_EQ(EchoBytes(**ws, data), data);
  (*ws)->Close(1000, "");
  auto end = (*ws)->Receive(std::chrono::seconds(10));
  EXPECT_EQ(end.kind, WebSocketEvent::Kind::kClosed);
  EXPECT_TRUE((*ws)->CloseStatus().ok());
}

TEST_F(BlockWebSocketTest, AnAgreedSocketIsSilentUntilTheGoAndRefusesAnyOtherFirstFrame) {
  // A hand-made client: offers the subprotocol, gets it, and sends data first.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string upgrade =
      "GET /agree HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Protocol: bai-block\r\n\r\n";
  ASSERT_EQ(write(fd, upgrade.data(), upgrade.size()), static_cast<ssize_t>(upgrade.size()));
  std::string answer;
  char buf[4096];
  while (answer.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof buf);
    ASSERT_GT(n, 0);
    answer.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_NE(answer.find("101"), std::string::npos) << answer;
  EXPECT_NE(answer.find("bai-block"), std::string::npos) << answer;
  // Nothing follows the answer until the client's go.
  EXPECT_EQ(answer.size(), answer.find("\r\n\r\n") + 4) << "the server wrote before the go";
  std::array<std::uint8_t, 4> mask{9, 8, 7, 6};
  std::string data = internal::ws::EncodeFrame(internal::ws::kBinary, "data first", &mask);
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  std::string back;
  while (back.size() < 4) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    back.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  ASSERT_GE(back.size(), 4u);
  EXPECT_EQ(static_cast<std::uint8_t>(back[0]), 0x88) << "a close frame";
  EXPECT_EQ((static_cast<std::uint8_t>(back[2]) << 8) | static_cast<std::uint8_t>(back[3]), 1002);
}

TEST_F(BlockWebSocketTest, CancelEndsAWaitingReceiveAtOnce) {
  auto ws = Open("/agree", true);
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*ws)->Cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto e = (*ws)->Receive(std::chrono::seconds(20));
  cancel.join();
  EXPECT_EQ(e.kind, WebSocketEvent::Kind::kClosed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ((*ws)->CloseStatus().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace bai
