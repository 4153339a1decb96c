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

#include <csignal>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

// bai app's receive: binary bytes straight to the local connection (spliced with block
// frames, written by the default otherwise), text frames as messages, in their order.
TEST_F(BlockWebSocketTest, ReceiveIntoMovesBinaryBytesToADescriptorAndTextAsMessages) {
  for (bool block : {true, false}) {
    auto ws = Open(block ? "/agree" : "/plain", true);
    ASSERT_TRUE(ws.ok()) << ws.status().message();
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    std::string data = RandomBytes(5 << 20);
    std::string got;
    std::thread reader([&] {
      char buf[65536];
      ssize_t n;
      while ((n = read(pair[1], buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
    });
    std::thread sender([&] {
      for (std::size_t at = 0; at < data.size(); at += 100000) {
        EXPECT_TRUE((*ws)->Send({data.substr(at, 100000), true}).ok());
      }
      EXPECT_TRUE((*ws)->Send({"after the bytes", false}).ok());
    });
    std::string text;
    std::size_t messages = 0;
    while (text.empty()) {
      bool out_failed = false;
      auto e = (*ws)->ReceiveInto(pair[0], std::chrono::seconds(10), out_failed);
      ASSERT_FALSE(out_failed);
      ASSERT_EQ(e.kind, WebSocketEvent::Kind::kMessage);
      if (e.message.binary) {
        EXPECT_TRUE(e.message.data.empty());
        ++messages;
      } else {
        text = e.message.data;
      }
    }
    sender.join();
    close(pair[0]);
    reader.join();
    close(pair[1]);
    EXPECT_EQ(text, "after the bytes");
    EXPECT_GT(messages, 0u);
    EXPECT_EQ(got.size(), data.size()) << (block ? "block" : "libwebsockets");
    EXPECT_TRUE(got == data) << (block ? "block" : "libwebsockets");
    // A local end that has gone is said as such (no SIGPIPE kills the process: splice has no
    // MSG_NOSIGNAL); the WebSocket itself is still open.
    auto old_handler = signal(SIGPIPE, SIG_DFL);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    close(pair[1]);
    ASSERT_TRUE((*ws)->Send({std::string(300000, 'x'), true}).ok());
    bool out_failed = false;
    while (!out_failed) {
      auto e = (*ws)->ReceiveInto(pair[0], std::chrono::seconds(10), out_failed);
      ASSERT_EQ(e.kind, WebSocketEvent::Kind::kMessage);
    }
    close(pair[0]);
    signal(SIGPIPE, old_handler);
    EXPECT_TRUE((*ws)->CloseStatus().ok());
  }
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

// A hand-made client on a plain socket: offers the subprotocol and reads the 101 answer (whole,
// and nothing after it) into `answer`. -1 when it could not connect.
int HandMadeClient(int port, std::string& answer) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  std::string upgrade =
      "GET /agree HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Protocol: bai-block\r\n\r\n";
  if (write(fd, upgrade.data(), upgrade.size()) != static_cast<ssize_t>(upgrade.size())) {
    close(fd);
    return -1;
  }
  char buf[4096];
  while (answer.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  return fd;
}

void WriteString(int fd, std::string const& s) {
  ASSERT_EQ(write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

// Reads server frames (never masked) until `count` have come or the connection ends; `in`
// keeps what was read past them for the next call.
std::vector<std::pair<std::uint8_t, std::string>> ReadFrames(int fd, std::size_t count,
                                                             std::string& in) {
  std::vector<std::pair<std::uint8_t, std::string>> frames;
  char buf[65536];
  while (frames.size() < count) {
    internal::ws::FrameHeader h;
    std::size_t size = 0;
    auto r = internal::ws::ParseHeader(reinterpret_cast<std::uint8_t const*>(in.data()), in.size(),
                                       /*from_server=*/true, h, size);
    if (r == internal::ws::ParseResult::kMalformed) break;
    if (r == internal::ws::ParseResult::kOk && in.size() >= size + h.length) {
      frames.emplace_back(h.opcode, in.substr(size, h.length));
      in.erase(0, size + h.length);
      continue;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
  }
  return frames;
}

std::string Frame(std::uint8_t opcode, std::string const& payload, bool fin = true) {
  std::array<std::uint8_t, 4> mask{0x37, 0xfa, 0x21, 0x3d};
  std::string f = internal::ws::EncodeFrame(opcode, payload, &mask);
  if (!fin) f[0] = static_cast<char>(f[0] & 0x7F);
  return f;
}

int CloseCode(std::string const& payload) {
  return payload.size() < 2
             ? 0
             : (static_cast<std::uint8_t>(payload[0]) << 8) | static_cast<std::uint8_t>(payload[1]);
}

TEST_F(BlockWebSocketTest, AnAgreedSocketIsSilentUntilTheGoAndRefusesAnyOtherFirstFrame) {
  std::string answer;
  int fd = HandMadeClient(server_->port(), answer);
  ASSERT_GE(fd, 0);
  EXPECT_NE(answer.find("101"), std::string::npos) << answer;
  EXPECT_NE(answer.find("bai-block"), std::string::npos) << answer;
  // Nothing follows the answer until the client's go.
  EXPECT_EQ(answer.size(), answer.find("\r\n\r\n") + 4) << "the server wrote before the go";
  WriteString(fd, Frame(internal::ws::kBinary, "data first"));
  std::string in;
  auto back = ReadFrames(fd, 1, in);
  close(fd);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].first, internal::ws::kClose);
  EXPECT_EQ(CloseCode(back[0].second), 1002);
}

// The server's own block-frame reader: pings, fragments, frames cut anywhere, the client's
// close; and what breaks the protocol.
TEST_F(BlockWebSocketTest, TheServersBlockFramesAnswerPingsJoinFragmentsAndEchoTheClose) {
  std::string answer;
  int fd = HandMadeClient(server_->port(), answer);
  ASSERT_GE(fd, 0);
  WriteString(fd, Frame(internal::ws::kText, server::kBlockTunnelGo));
  WriteString(fd, Frame(internal::ws::kPing, "are you there"));
  // A text message in two fragments with a ping between them; then a binary frame written a
  // byte, then the rest (the mask's offset carried across the pieces).
  WriteString(fd, Frame(internal::ws::kText, "hello, ", /*fin=*/false));
  WriteString(fd, Frame(internal::ws::kPing, ""));
  WriteString(fd, Frame(internal::ws::kContinuation, "world"));
  std::string bytes = RandomBytes(200000);
  std::string binary = Frame(internal::ws::kBinary, bytes);
  for (std::size_t at : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{9}}) {
    std::size_t next = at == 9 ? binary.size() : (at == 0 ? 1 : at == 1 ? 3 : 9);
    WriteString(fd, binary.substr(at, next - at));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Pong, pong, the text whole, then the binary echo in as many pieces as it came in.
  std::string in;
  auto frames = ReadFrames(fd, 3, in);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0],
            std::make_pair(std::uint8_t{internal::ws::kPong}, std::string("are you there")));
  EXPECT_EQ(frames[1], std::make_pair(std::uint8_t{internal::ws::kPong}, std::string()));
  EXPECT_EQ(frames[2],
            std::make_pair(std::uint8_t{internal::ws::kText}, std::string("hello, world")));
  std::string echoed;
  while (echoed.size() < bytes.size()) {
    auto f = ReadFrames(fd, 1, in);
    ASSERT_EQ(f.size(), 1u);
    ASSERT_EQ(f[0].first, internal::ws::kBinary);
    echoed += f[0].second;
  }
  EXPECT_EQ(echoed, bytes);
  // The client closes: the server answers with the same code and ends the connection.
  std::string code = {static_cast<char>(4000 >> 8), static_cast<char>(4000 & 0xFF)};
  WriteString(fd, Frame(internal::ws::kClose, code + "done"));
  auto end = ReadFrames(fd, 2, in);
  close(fd);
  ASSERT_EQ(end.size(), 1u) << "one close, then the end of the connection";
  EXPECT_EQ(end[0].first, internal::ws::kClose);
  EXPECT_EQ(CloseCode(end[0].second), 4000);

  // Broken frames: unmasked, a continuation with nothing to continue, a new message inside a
  // fragmented one, a reserved bit: each closes with 1002.
  std::string unmasked = internal::ws::EncodeFrame(internal::ws::kBinary, "x", nullptr);
  std::string reserved = Frame(internal::ws::kBinary, "x");
  reserved[0] = static_cast<char>(reserved[0] | 0x40);
  for (std::string const& broken :
       {unmasked, Frame(internal::ws::kContinuation, "x"),
        Frame(internal::ws::kText, "a", false) + Frame(internal::ws::kText, "b"), reserved}) {
    answer.clear();
    int f = HandMadeClient(server_->port(), answer);
    ASSERT_GE(f, 0);
    WriteString(f, Frame(internal::ws::kText, server::kBlockTunnelGo) + broken);
    std::string rest;
    auto got = ReadFrames(f, 2, rest);
    close(f);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.back().first, internal::ws::kClose);
    EXPECT_EQ(CloseCode(got.back().second), 1002);
  }
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
