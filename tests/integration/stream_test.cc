// SPDX-License-Identifier: Apache-2.0
// The WebSocket streams end to end: libbai's client (libwebsockets) against bai-manager's
// /stream/session/{id}/… with a simulated agent; and the client's own guarantees (close codes,
// cancellation, bounded buffering) against a bare server WebSocket.
#include "bai/client.h"
#include "bai/session_client.h"

#include "server-reference/common/http/http_server.h"
#include "server-reference/manager/state/bootstrap.h"
#include "tests/testing_util/local_cluster.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/roles_fixture.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

namespace bai {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class StreamTest : public testing_util::LocalCluster {
 protected:
  // A running interactive session's id.
  std::string Running(std::string const& name) {
    auto r = Bai({"session", "create", "--name", name, "python"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto info = root_->Send(ApiRequest("GET", "/session/" + name));
    EXPECT_TRUE(info.ok());
    return json::parse(info->body).value("sessionId", "");
  }

  static json Next(WebSocketConnection& ws) {
    auto e = ws.Receive(std::chrono::seconds(10));
    EXPECT_EQ(e.kind, WebSocketEvent::Kind::kMessage);
    return json::parse(e.message.data, nullptr, false);
  }

  static void ExpectClosed(WebSocketConnection& ws, int code) {
    auto e = ws.Receive(std::chrono::seconds(10));
    EXPECT_EQ(e.kind, WebSocketEvent::Kind::kClosed) << e.message.data;
    EXPECT_EQ(ws.close_code(), code);
  }
};

TEST_F(StreamTest, AQueryRunsOverTheExecuteStreamAndClosesNormally) {
  auto id = Running("ws-query");
  auto ws = root_->OpenWebSocket(ApiRequest("GET", "/stream/session/" + id + "/execute"));
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  ASSERT_TRUE(
      (*ws)->Send({R"j({"code": "print(6*7)", "mode": "query", "options": {}})j", false}).ok());
  auto frame = Next(**ws);
  EXPECT_EQ(frame["status"], "finished");
  EXPECT_EQ(frame["exitCode"], 0);
  EXPECT_EQ(frame["console"], json::parse(R"j([["stdout", "print(6*7)\n"]])j"));
  ExpectClosed(**ws, 1000);
  EXPECT_TRUE((*ws)->CloseStatus().ok());
}

TEST_F(StreamTest, WaitingInputIsAnsweredWithAPlainTextFrame) {
  Running("ws-input");
  // By name: the path takes a name or an id.
  auto ws = root_->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-input/execute"));
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  ASSERT_TRUE((*ws)->Send({R"j({"code": "x = input()", "mode": "query"})j", false}).ok());
  auto frame = Next(**ws);
  EXPECT_EQ(frame["status"], "waiting-input");
  EXPECT_EQ(frame["options"]["prompt"], "input? ");
  ASSERT_TRUE((*ws)->Send({"forty two", false}).ok());
  frame = Next(**ws);
  EXPECT_EQ(frame["status"], "finished");
  EXPECT_EQ(frame["console"][0][1], "forty two\n");
  ExpectClosed(**ws, 1000);
}

TEST_F(StreamTest, ABadFirstFrameGetsAnErrorFrame) {
  Running("ws-bad");
  auto ws = root_->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-bad/execute"));
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  ASSERT_TRUE((*ws)->Send({R"({"code": "1", "mode": "sideways"})", false}).ok());
  auto frame = Next(**ws);
  EXPECT_EQ(frame["status"], "error");
  EXPECT_THAT(frame["msg"].get<std::string>(), HasSubstr("Invalid API parameters"));
  ExpectClosed(**ws, 1000);
}

TEST_F(StreamTest, RefusalsComeBeforeTheUpgradeAsProblems) {
  Running("ws-mine");
  // Unknown session.
  auto ws = root_->OpenWebSocket(ApiRequest("GET", "/stream/session/no-such-session/execute"));
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().error_info().http_status, 404) << ws.status().message();
  EXPECT_EQ(ws.status().code(), StatusCode::kNotFound);
  // A stranger's keypair does not reach another user's session.
  auto stranger = manager_->store().SignUp("default", "eve@example.com", "eve", "x", "Eve");
  ASSERT_TRUE(stranger.ok());
  auto eve = ClientFor(stranger->first, stranger->second);
  ws = eve->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-mine/execute"));
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().error_info().http_status, 404) << ws.status().message();
  // A wrong secret.
  auto forger = ClientFor(env_["BACKEND_ACCESS_KEY"], "not-the-secret");
  ws = forger->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-mine/execute"));
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().error_info().http_status, 401) << ws.status().message();
  // A plain GET on a stream route.
  auto plain = root_->Send(ApiRequest("GET", "/stream/session/ws-mine/execute"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->status, 400) << plain->body;
}

TEST_F(StreamTest, EveryStreamEndsWith1001WhenItsSessionIsDestroyed) {
  Running("ws-end");
  std::vector<std::unique_ptr<WebSocketConnection>> sockets;
  for (int i = 0; i < 3; ++i) {
    auto ws = root_->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-end/execute"));
    ASSERT_TRUE(ws.ok()) << ws.status().message();
    sockets.push_back(std::move(*ws));
  }
  for (int i = 0; i < 100 && manager_->streams().Count() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(manager_->streams().Count(), 3u);
  auto r = root_->Send(ApiRequest("DELETE", "/session/ws-end"));
  ASSERT_TRUE(r.ok());
  for (auto& ws : sockets) {
    auto frame = Next(*ws);
    EXPECT_EQ(frame["status"], "error");
    EXPECT_THAT(frame["msg"].get<std::string>(), HasSubstr("session"));
    ExpectClosed(*ws, 1001);
    EXPECT_EQ(ws->CloseStatus().code(), StatusCode::kUnavailable);
  }
  for (int i = 0; i < 100 && manager_->streams().Count() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(manager_->streams().Count(), 0u);
}

TEST_F(StreamTest, CancelFromAnotherThreadWakesAWaitingReceive) {
  Running("ws-cancel");
  auto ws = root_->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-cancel/execute"));
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  auto* socket = ws->get();
  auto waiting = std::async(std::launch::async,
                            [socket] { return socket->Receive(std::chrono::seconds(30)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  socket->Cancel();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(waiting.get().kind, WebSocketEvent::Kind::kClosed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(socket->CloseStatus().code(), StatusCode::kCancelled);
  EXPECT_EQ(socket->Send({"late", false}).code(), StatusCode::kCancelled);
}

// The SDK's surfaces over the streams: ExecuteStream with input from a callback, ListApps.
TEST_F(StreamTest, ExecuteStreamRelaysOutputAndAnswersInputFromACallback) {
  Running("ws-sdk");
  SessionClient sessions(*root_);
  std::string out;
  SessionClient::StreamExecuteOptions o;
  o.on_output = [&](std::string const& stream, std::string const& text) {
    out += stream + ":" + text;
  };
  auto code = sessions.ExecuteStream("ws-sdk", "print(1)", o);
  ASSERT_TRUE(code.ok()) << code.status().message();
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(out, "stdout:print(1)\n");
  // input() without a callback is an error, not a hang.
  auto no_input = sessions.ExecuteStream("ws-sdk", "input()", o);
  EXPECT_EQ(no_input.status().code(), StatusCode::kFailedPrecondition);
  std::string asked;
  o.on_input = [&](std::string const& prompt, bool) -> StatusOr<std::string> {
    asked = prompt;
    return std::string("typed");
  };
  out.clear();
  code = sessions.ExecuteStream("ws-sdk", "input()", o);
  ASSERT_TRUE(code.ok()) << code.status().message();
  EXPECT_EQ(asked, "input? ");
  EXPECT_EQ(out, "stdout:typed\n");
  // Batch mode runs options.exec; a failing exit code passes through.
  o.mode = "batch";
  o.options = {{"exec", "make test; exit 3"}};
  code = sessions.ExecuteStream("ws-sdk", "", o);
  ASSERT_TRUE(code.ok()) << code.status().message();
  EXPECT_EQ(*code, 3);
  auto unknown = sessions.ExecuteStream("no-such-session", "1", {});
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound) << unknown.status().message();
}

// Reads the terminal until `needle` has been printed (or its exit, or 30 s: CI's sanitizer
// builds run next to other tests on two cores).
std::string ReadUntil(Terminal& t, std::string const& needle, std::optional<int>* exit = nullptr) {
  std::string seen;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && seen.find(needle) == std::string::npos) {
    auto out = t.Read(std::chrono::milliseconds(200));
    if (!out.ok()) break;
    seen += out->data;
    if (out->exit_code) {
      if (exit) *exit = out->exit_code;
      break;
    }
  }
  return seen;
}

// A terminal through manager, agent and the runner's stream code (the simulated agent serves it
// with a real shell on a real pseudo-terminal of this host).
TEST_F(StreamTest, ATerminalRunsAShellResizesAndPassesItsExitCode) {
  Running("ws-pty");
  SessionClient sessions(*root_);
  auto t = sessions.OpenTerminal("ws-pty", 30, 100);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_TRUE((*t)->Write("stty size; echo hi-$((6*7))\n").ok());
  auto seen = ReadUntil(**t, "hi-42");
  EXPECT_THAT(seen, HasSubstr("30 100"));
  EXPECT_THAT(seen, HasSubstr("hi-42"));
  ASSERT_TRUE((*t)->Resize(40, 120).ok());
  ASSERT_TRUE((*t)->Write("stty size\n").ok());
  EXPECT_THAT(ReadUntil(**t, "40 120"), HasSubstr("40 120"));
  // Ctrl-C reaches the remote program, not this process. It is sent once the program prints,
  // so that it holds the terminal: a Ctrl-C that came between the shell's fork and the child
  // taking the terminal would go to the shell alone and leave `sleep` running.
  ASSERT_TRUE((*t)->Write("sh -c 'echo started-$((2*3)); exec sleep 30'; echo after\n").ok());
  EXPECT_THAT(ReadUntil(**t, "started-6"), HasSubstr("started-6"));
  ASSERT_TRUE((*t)->Write("\x03").ok());
  ASSERT_TRUE((*t)->Write("echo interrupted-$?\n").ok());
  EXPECT_THAT(ReadUntil(**t, "interrupted-130"), HasSubstr("interrupted-130"));
  // Several terminals per session.
  auto second = sessions.OpenTerminal("ws-pty");
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_TRUE((*second)->Write("echo second-$((1+1))\n").ok());
  EXPECT_THAT(ReadUntil(**second, "second-2"), HasSubstr("second-2"));
  ASSERT_TRUE((*t)->Write("exit 7\n").ok());
  std::optional<int> code;
  ReadUntil(**t, "never printed", &code);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 7);
  // The second terminal ends with its session.
  ASSERT_TRUE(root_->Send(ApiRequest("DELETE", "/session/ws-pty")).ok());
  StatusOr<Terminal::Output> last = Terminal::Output{};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (last.ok() && std::chrono::steady_clock::now() < deadline) {
    last = (*second)->Read(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.status().code(), StatusCode::kUnavailable) << last.status().message();
}

TEST_F(StreamTest, ATerminalIsTheOwnersOnly) {
  Running("ws-pty-own");
  auto stranger = manager_->store().SignUp("default", "mallory@example.com", "mallory", "x", "M");
  ASSERT_TRUE(stranger.ok());
  SessionClient theirs(*ClientFor(stranger->first, stranger->second));
  auto t = theirs.OpenTerminal("ws-pty-own");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound) << t.status().message();
  // Nor can anyone pose as the agent's side of a stream.
  auto forged =
      root_->OpenWebSocket(ApiRequest("GET", "/agent/stream/0123456789abcdef0123456789abcdef"));
  ASSERT_FALSE(forged.ok());
  EXPECT_EQ(forged.status().error_info().http_status, 401);
}

// Streams follow the usual scoping of owner_access_key: the owner, admins of its domain and
// superadmins reach a user's session; another user (403), an admin of another domain (404) and
// anyone without the owner's key (404) do not.
TEST_F(StreamTest, AdminsReachAUsersTerminalUnderTheUsualScoping) {
  auto group = manager_->store().db().Query(
      "SELECT id FROM groups WHERE name = 'default' AND domain_name = 'default'");
  ASSERT_TRUE(group.ok() && group->size() == 1u);
  std::string fixture = testing_util::RolesFixture(group->front().Text(0), "s", '2');
  auto loaded = LoadFixture(manager_->store(), fixture);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto alice = ClientFor(testing_util::RoleKeys("s", "alice").first,
                         testing_util::RoleKeys("s", "alice").second);
  SessionClient theirs(*alice);
  SessionCreateRequest req;
  req.image = "python";
  req.name = "scoped-pty";
  ASSERT_TRUE(theirs.Create(req).ok());
  for (int i = 0; i < 100; ++i) {
    auto info = theirs.Info("scoped-pty");
    if (info.ok() && info->status.text == "RUNNING") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string path = "/stream/session/scoped-pty/pty?owner_access_key=" +
                     testing_util::RoleKeys("s", "alice").first;
  auto reaches = [&](Client& who, std::string const& p) -> StatusOr<bool> {
    auto ws = who.OpenWebSocket(ApiRequest("GET", p));
    if (!ws.ok()) return ws.status();
    Terminal t(std::move(*ws));
    if (!t.Write("echo scoped-$((6*7))\n").ok()) return false;
    return ReadUntil(t, "scoped-42").find("scoped-42") != std::string::npos;
  };
  auto own = reaches(*alice, "/stream/session/scoped-pty/pty");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_TRUE(*own);
  auto dadmin = ClientFor(testing_util::RoleKeys("s", "dadmin").first,
                          testing_util::RoleKeys("s", "dadmin").second);
  auto by_admin = reaches(*dadmin, path);
  ASSERT_TRUE(by_admin.ok()) << by_admin.status().message();
  EXPECT_TRUE(*by_admin);
  auto by_root = reaches(*root_, path);
  ASSERT_TRUE(by_root.ok()) << by_root.status().message();
  EXPECT_TRUE(*by_root);
  auto bob = ClientFor(testing_util::RoleKeys("s", "bob").first,
                       testing_util::RoleKeys("s", "bob").second);
  auto by_bob = reaches(*bob, path);
  ASSERT_FALSE(by_bob.ok());
  EXPECT_EQ(by_bob.status().error_info().http_status, 403) << by_bob.status().message();
  auto bob_plain = reaches(*bob, "/stream/session/scoped-pty/pty");
  ASSERT_FALSE(bob_plain.ok());
  EXPECT_EQ(bob_plain.status().error_info().http_status, 404);
  auto oadmin = ClientFor(testing_util::RoleKeys("s", "oadmin").first,
                          testing_util::RoleKeys("s", "oadmin").second);
  auto by_other = reaches(*oadmin, path);
  ASSERT_FALSE(by_other.ok());
  EXPECT_EQ(by_other.status().error_info().http_status, 404) << by_other.status().message();
  // The same for the app list and tunnels' start.
  auto apps = bob->Send(ApiRequest("GET", "/stream/session/scoped-pty/apps"));
  ASSERT_TRUE(apps.ok());
  EXPECT_EQ(apps->status, 404);
}

// A TCP echo server on this host (a simulated kernel's preopen ports are its host's).
void Echo(int c) {
  char buf[65536];
  ssize_t n;
  while ((n = read(c, buf, sizeof buf)) > 0) {
    if (write(c, buf, static_cast<std::size_t>(n)) != n) break;
  }
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Sends `data` through a new connection to `port` and reads as much back.
std::string RoundTrip(int port, std::string const& data) {
  int fd = Connect(port);
  std::thread writer([fd, &data] {
    std::string_view rest = data;
    while (!rest.empty()) {
      ssize_t n = write(fd, rest.data(), rest.size());
      if (n <= 0) return;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  });
  std::string got;
  char buf[65536];
  while (got.size() < data.size()) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  writer.join();
  close(fd);
  return got;
}

TEST_F(StreamTest, AppsAreListedAndTunnelsCarryEveryByteOfManyConnections) {
  testing_util::LoopbackServer echo(Echo);
  // A port nothing listens on: bound here and never listened on, so that no other test's
  // server takes it meanwhile (a port freed by closing a listener could be, under ctest -j).
  int held = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int dead = ntohs(addr.sin_port);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{held};
  auto r = Bai({"session", "create", "--name", "ws-apps", "--preopen", std::to_string(echo.port()),
                "--preopen", std::to_string(dead), "python"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SessionClient sessions(*root_);
  auto apps = sessions.ListApps("ws-apps");
  ASSERT_TRUE(apps.ok()) << apps.status().message();
  std::vector<std::string> names;
  for (auto const& a : *apps) names.push_back(a.name + ":" + a.protocol);
  EXPECT_EQ(names, (std::vector<std::string>{std::to_string(echo.port()) + ":preopen",
                                             std::to_string(dead) + ":preopen", "terminal:pty"}));

  AppTunnelOptions o;
  o.app = std::to_string(echo.port());
  o.bind_port = 0;
  auto tunnel = AppTunnel::Open(*root_, "ws-apps", o);
  ASSERT_TRUE(tunnel.ok()) << tunnel.status().message();
  std::string big(4 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) ^ (i >> 9));
  EXPECT_TRUE(RoundTrip((*tunnel)->port(), big) == big) << "4 MiB byte for byte";
  std::vector<std::future<bool>> many;
  for (int i = 0; i < 50; ++i) {
    many.push_back(std::async(std::launch::async, [port = (*tunnel)->port(), i] {
      std::string data(10000 + i, static_cast<char>('a' + i % 26));
      return RoundTrip(port, data) == data;
    }));
  }
  for (auto& f : many) EXPECT_TRUE(f.get());
  EXPECT_EQ((*tunnel)->served(), 51u);

  // Nothing listens: the connection is closed with 1013, which the local peer hears as a 503.
  std::vector<Status> errors;
  std::mutex mu;
  o.app = std::to_string(dead);
  o.on_error = [&](Status const& s) {
    std::lock_guard<std::mutex> lock(mu);
    errors.push_back(s);
  };
  auto refused = AppTunnel::Open(*root_, "ws-apps", o);
  ASSERT_TRUE(refused.ok());
  int fd = Connect((*refused)->port());
  std::string answer;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<std::size_t>(n));
  close(fd);
  EXPECT_THAT(answer, ::testing::StartsWith("HTTP/1.1 503"));
  (*refused)->Stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(errors.empty());
    EXPECT_EQ(errors[0].code(), StatusCode::kUnavailable);
    EXPECT_THAT(errors[0].message(), HasSubstr("1013"));
  }
  // Unknown apps and the terminal are refused before any upgrade.
  auto unknown =
      root_->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-apps/tcpproxy?app=nope"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().error_info().http_status, 404);
  auto terminal =
      root_->OpenWebSocket(ApiRequest("GET", "/stream/session/ws-apps/tcpproxy?app=terminal"));
  ASSERT_FALSE(terminal.ok());
  EXPECT_EQ(terminal.status().error_info().http_status, 400);
  // A stranger's keypair reaches no app of this session.
  auto stranger = manager_->store().SignUp("default", "trudy@example.com", "trudy", "x", "T");
  ASSERT_TRUE(stranger.ok());
  auto theirs = ClientFor(stranger->first, stranger->second);
  auto denied = theirs->OpenWebSocket(
      ApiRequest("GET", "/stream/session/ws-apps/tcpproxy?app=" + std::to_string(echo.port())));
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().error_info().http_status, 404);
}

// An unsigned client of a bare server on this host.
StatusOr<Client> LoopbackClient(int port) {
  Options o;
  o.endpoints = {"http://127.0.0.1:" + std::to_string(port)};
  o.api_version = "v8.20240915";
  return Client::Create(o);
}

// The client against a bare server WebSocket: a reader that does not read holds back the
// sender instead of buffering without bound, and every byte arrives in order after it resumes.
TEST(WebSocketClientTest, ASlowReaderPushesBackAndLosesNothing) {
  constexpr std::size_t kFrame = 64 << 10;
  constexpr int kFrames = 1024;  // 64 MiB
  std::atomic<int> queued{0};
  // The sender's pump, held here (not by itself: a function owning its own pointer leaks).
  std::function<void()> pump;
  server::HttpServerOptions options;
  options.port = 0;
  auto server = server::HttpServer::Start(options, [&](std::shared_ptr<server::Exchange> exchange) {
    server::WebSocketHandlers h;
    h.on_open = [&](std::shared_ptr<server::WebSocket> const& ws) {
      // Sends frame after frame, never more than 1 MiB ahead of what the socket took.
      std::weak_ptr<server::WebSocket> weak = ws;
      pump = [&, weak] {
        auto socket = weak.lock();
        if (!socket) return;
        while (queued < kFrames && socket->Backlog() < (1u << 20)) {
          std::string frame(kFrame, static_cast<char>('a' + queued % 26));
          ++queued;
          socket->SendBinary(std::move(frame));
        }
        if (queued < kFrames) socket->WhenDrained(1u << 20, [&] { pump(); });
      };
      pump();
    };
    exchange->AcceptWebSocket(std::move(h));
  });
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto client = LoopbackClient((*server)->port());
  ASSERT_TRUE(client.ok());
  auto ws = client->OpenWebSocket(ApiRequest("GET", "/flood"));
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  int stalled_at = queued.load();
  // The client's queue (4 MiB) plus both kernels' socket buffers: far from all 64 MiB.
  EXPECT_LT(stalled_at, kFrames / 2) << "the sender was not held back";
  for (int i = 0; i < kFrames; ++i) {
    auto e = (*ws)->Receive(std::chrono::seconds(10));
    ASSERT_EQ(e.kind, WebSocketEvent::Kind::kMessage) << "frame " << i;
    ASSERT_TRUE(e.message.binary);
    ASSERT_EQ(e.message.data.size(), kFrame);
    ASSERT_EQ(e.message.data[0], static_cast<char>('a' + i % 26)) << "frame " << i;
  }
  (*ws)->Close(1000, "done");
  auto end = (*ws)->Receive(std::chrono::seconds(5));
  EXPECT_EQ(end.kind, WebSocketEvent::Kind::kClosed);
  EXPECT_TRUE((*ws)->CloseStatus().ok()) << (*ws)->CloseStatus().message();
}

// A server that upgrades and at once says why and closes (as the manager refusing a tunnel):
// the open succeeds and the reader gets the message and the close code, however late the
// opening thread wakes (it once found the socket closed and called the upgrade failed).
TEST(WebSocketClientTest, AnUpgradeClosedAtOnceStillOpensAndSaysWhy) {
  server::HttpServerOptions options;
  options.port = 0;
  auto server = server::HttpServer::Start(options, [](std::shared_ptr<server::Exchange> exchange) {
    server::WebSocketHandlers h;
    h.on_open = [](std::shared_ptr<server::WebSocket> const& ws) {
      ws->Send("refused: nothing listens");
      ws->Close(1001, "going away");
    };
    exchange->AcceptWebSocket(std::move(h));
  });
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto client = LoopbackClient((*server)->port());
  ASSERT_TRUE(client.ok());
  // Several openers at once, so that one of them is late to wake now and then.
  std::vector<std::future<std::string>> openers;
  for (int t = 0; t < 4; ++t) {
    openers.push_back(std::async(std::launch::async, [&client]() -> std::string {
      for (int i = 0; i < 40; ++i) {
        auto ws = client->OpenWebSocket(ApiRequest("GET", "/refuse"));
        if (!ws.ok()) return "open " + std::to_string(i) + ": " + ws.status().message();
        auto said = (*ws)->Receive(std::chrono::seconds(5));
        if (said.kind != WebSocketEvent::Kind::kMessage ||
            said.message.data != "refused: nothing listens") {
          return "open " + std::to_string(i) + ": the message did not come";
        }
        auto end = (*ws)->Receive(std::chrono::seconds(5));
        if (end.kind != WebSocketEvent::Kind::kClosed || (*ws)->close_code() != 1001) {
          return "open " + std::to_string(i) + ": no close 1001";
        }
      }
      return "";
    }));
  }
  for (auto& f : openers) EXPECT_EQ(f.get(), "");
}

// Issue 43, 5b: one user opened 1,000 terminals into one session (2,022 descriptors on the
// manager, 3,013 threads on the agent); past the per-user cap a stream is refused before its
// upgrade, and one that closes gives its place back.
class StreamCapTest : public StreamTest {
 protected:
  void ConfigureManager(manager::ManagerConfig& c) override { c.max_streams_per_user = 2; }
  // Until the manager counts `n` streams open (each is counted once its WebSocket is open).
  bool WaitForStreams(std::size_t n) {
    for (int i = 0; i < 100; ++i) {
      if (manager_->streams().Count() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

TEST_F(StreamCapTest, AUserHoldsAtMostTheirShareOfStreams) {
  auto created = Bai({"session", "create", "--name", "capped", "python"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  SessionClient sessions(*root_);
  auto first = sessions.OpenTerminal("capped");
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = sessions.OpenTerminal("capped");
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_TRUE(WaitForStreams(2));
  auto third = sessions.OpenTerminal("capped");
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().error_info().http_status, 429) << third.status().message();
  EXPECT_NE(third.status().message().find("streams open"), std::string::npos)
      << third.status().message();
  first->reset();  // closes it: its place comes back
  ASSERT_TRUE(WaitForStreams(1));
  auto again = sessions.OpenTerminal("capped");
  EXPECT_TRUE(again.ok()) << again.status().message();
}

}  // namespace
}  // namespace bai
