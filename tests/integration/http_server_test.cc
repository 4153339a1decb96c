// SPDX-License-Identifier: Apache-2.0
// The HTTP server's connection handling, against raw sockets.
#include "server-reference/common/http/http_server.h"

#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace bai::server {
namespace {

using testing_util::RawConnect;

// Answers /now at once; keeps /wait unanswered, counting hang-ups.
class HoldingServer {
 public:
  explicit HoldingServer(HttpServerOptions o = {}) {
    o.port = 0;
    auto s = HttpServer::Start(o, [this](std::shared_ptr<Exchange> ex) {
      if (ex->request().path == "/now") return ex->Respond(HttpResponse::Json(200, "{}"));
      ex->OnClose([this] {
        std::lock_guard<std::mutex> lock(mu_);
        ++hang_ups_;
        cv_.notify_all();
      });
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(std::move(ex));
      cv_.notify_all();
    });
    EXPECT_TRUE(s.ok());
    server_ = std::move(*s);
  }
  ~HoldingServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.clear();
    }
    server_->Stop();
  }
  int port() const { return server_->port(); }
  bool WaitHeld(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_.size() >= n; });
  }
  bool WaitHangUps(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return hang_ups_ >= n; });
  }
  /// Lets go of every held exchange unanswered (their requests end).
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
  }
  void AnswerAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& ex : held_) ex->Respond(HttpResponse::Json(200, R"({"late":true})"));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Exchange>> held_;
  int hang_ups_ = 0;
  std::unique_ptr<HttpServer> server_;
};

std::string ReadAll(int fd) {
  std::string data;
  char buf[4096];
  while (true) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  return data;
}

// Reads until `end` has arrived (an answer's last bytes) or the peer closed.
std::string ReadUntilClosedOr(int fd, std::string_view end) {
  std::string data;
  char buf[4096];
  while (data.find(end) == std::string::npos) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  return data;
}

// Hardening (hostile testing): log followers that never read grew the manager without bound
// (10 of them: 34 → 846 MiB). An event stream whose reader falls 8 MiB behind is dropped.
TEST(HttpServerTest, AStreamReaderThatNeverReadsIsDroppedNotBuffered) {
  std::shared_ptr<Exchange> stream;
  std::mutex mu;
  std::condition_variable cv;
  HttpServerOptions options;
  options.port = 0;
  auto s = HttpServer::Start(options, [&](std::shared_ptr<Exchange> ex) {
    ex->StartEventStream({});
    std::lock_guard<std::mutex> lock(mu);
    stream = std::move(ex);
    cv.notify_all();
  });
  ASSERT_TRUE(s.ok());
  int fd = RawConnect((*s)->port());
  ASSERT_GE(fd, 0);
  int small = 4096;  // a small receive window, and nothing read
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::string req = "GET /follow HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return stream != nullptr; }));
  }
  std::string chunk(64 * 1024, 'x');
  std::size_t accepted = 0;
  for (int i = 0; i < 4096 && stream->WriteEvent(chunk); ++i) accepted += chunk.size();
  EXPECT_LT(accepted, 64u << 20) << "256 MiB offered: the stream was dropped long before";
  EXPECT_GE(accepted, 4u << 20) << "a reader a little behind is not dropped at once";
  // The connection is closed: the client reads what was sent, then the end.
  ReadAll(fd);
  ::close(fd);
  stream.reset();
  (*s)->Stop();
}

TEST(HttpServerTest, AClientHangingUpWhileItsAnswerIsDueIsNoticedAtOnce) {
  HoldingServer server;
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) {
    int fd = RawConnect(server.port());
    ASSERT_GE(fd, 0);
    std::string req = "POST /wait HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    fds.push_back(fd);
  }
  ASSERT_TRUE(server.WaitHeld(5));
  for (int fd : fds) ::close(fd);
  // Each connection closes (and tells whoever waits to answer it) now, not when the answer
  // would have come.
  EXPECT_TRUE(server.WaitHangUps(5, std::chrono::seconds(10)));
}

TEST(HttpServerTest, APipelinedRequestIsNotMistakenForAHangUp) {
  HoldingServer server;
  int fd = RawConnect(server.port());
  ASSERT_GE(fd, 0);
  std::string two =
      "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, two.data(), two.size(), MSG_NOSIGNAL), static_cast<ssize_t>(two.size()));
  ASSERT_TRUE(server.WaitHeld(1));
  EXPECT_FALSE(server.WaitHangUps(1, std::chrono::milliseconds(300)))
      << "the unread next request was taken for the client hanging up";
  server.AnswerAll();
  auto data = ReadAll(fd);
  ::close(fd);
  // Both answers, in order.
  auto late = data.find(R"({"late":true})");
  ASSERT_NE(late, std::string::npos) << data;
  EXPECT_NE(data.find("HTTP/1.1 200", late), std::string::npos) << data;
}

// Regression: readiness can be reported with nothing to read (another read took the bytes, or
// a spurious wake-up); the watch took that for a hang-up and closed the connection of a client
// still waiting, and curl then sent its POST again on a new connection (a commit ran twice).
TEST(HttpServerTest, AKeepAliveClientWaitingForLateAnswersIsNeverTakenForGone) {
  std::atomic<int> hang_ups{0};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<Exchange>> due;
  bool stop = false;
  // Answers every request from another thread, a moment after it arrived.
  std::thread answerer([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !due.empty(); });
      if (stop) return;
      auto batch = std::move(due);
      due.clear();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      for (auto& ex : batch) ex->Respond(HttpResponse::Json(200, "{}"));
      lock.lock();
    }
  });
  HttpServerOptions o;
  o.port = 0;
  o.threads = 2;
  auto server = HttpServer::Start(o, [&](std::shared_ptr<Exchange> ex) {
    ex->OnClose([&] { ++hang_ups; });
    std::lock_guard<std::mutex> lock(mu);
    due.push_back(std::move(ex));
    cv.notify_all();
  });
  ASSERT_TRUE(server.ok());
  int fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // As curl sends a POST: the head, then the body in a second segment.
  std::string const head =
      "POST /later HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\n\r\n";
  std::string const body = "{}";
  std::string pending;
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    ASSERT_EQ(::send(fd, body.data(), body.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(body.size()));
    // One whole answer: headers, then a body of "{}".
    while (pending.find("\r\n\r\n{}") == std::string::npos) {
      char buf[1024];
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
    }
    auto end = pending.find("\r\n\r\n{}");
    if (end == std::string::npos) break;  // the server closed the connection
    pending.erase(0, end + 6);
    ++answered;
  }
  ::close(fd);
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  }
  answerer.join();
  (*server)->Stop();
  EXPECT_EQ(answered, 1000) << "the connection was closed under a waiting client";
  EXPECT_EQ(hang_ups.load(), 0);
}

TEST(HttpServerTest, AnOversizedBodyIsDrainedSoTheClientReadsThe413) {
  HttpServerOptions o;
  o.max_body_bytes = 1 << 20;
  HoldingServer server(o);
  // A client that writes its whole 32 MiB body before reading (no Expect: 100-continue).
  std::string body(32u << 20, 'x');
  std::string req =
      "POST /now HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  auto r = testing_util::RawHttp(server.port(), req);
  EXPECT_EQ(r.sent, req.size()) << "the server stopped reading and reset the connection";
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("request-entity-too-large"), std::string::npos) << r.body;
}

// The read timeout counts from the last bytes of a large body, not from its start: a body that
// keeps flowing for longer than the timeout (a 16 MiB tus chunk over a slow uplink took 41 s
// and was cut off at 30 s) arrives whole; one that stops flowing is dropped after the timeout.
TEST(HttpServerTest, ALargeBodyThatKeepsFlowingOutlastsTheReadTimeout) {
  HttpServerOptions o;
  o.port = 0;
  o.read_timeout = std::chrono::seconds(1);
  o.body_limit_for = [](std::string_view, std::string_view) -> std::size_t { return 8u << 20; };
  auto server = HttpServer::Start(o, [](std::shared_ptr<Exchange> ex) {
    ex->Respond(
        HttpResponse::Json(200, "{\"size\":" + std::to_string(ex->request().body.size()) + "}"));
  });
  ASSERT_TRUE(server.ok());
  std::size_t const size = 2u << 20;
  std::string head =
      "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
  std::string piece(size / 16, 'x');

  int fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  for (int i = 0; i < 16; ++i) {  // 16 pieces 200 ms apart: 3.2 s in all
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(piece.size()))
        << "the server closed the connection after piece " << i;
  }
  std::string answer = ReadUntilClosedOr(fd, "}");
  ::close(fd);
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find("{\"size\":" + std::to_string(size) + "}"), std::string::npos) << answer;

  // Half the body, then silence: the connection is closed about a second later.
  fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string half(size / 2, 'y');
  ASSERT_EQ(::send(fd, half.data(), half.size(), MSG_NOSIGNAL), static_cast<ssize_t>(half.size()));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ReadAll(fd), "");  // closed without an answer
  auto waited = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_GE(waited, std::chrono::milliseconds(800));
  EXPECT_LT(waited, std::chrono::seconds(10));
  (*server)->Stop();
}

// Issue 43, 5e: a sender that trickles a large body, each piece inside the read timeout, held
// its connection (and what it had sent) for as long as it liked. With min_body_bytes_per_second
// the body must come at that rate on average once the read timeout has passed: a trickle is cut,
// a body that flows at the rate arrives whole.
TEST(HttpServerTest, ASlowSenderIsCutOnceItsAverageFallsBelowTheMinimumRate) {
  HttpServerOptions o;
  o.port = 0;
  o.read_timeout = std::chrono::seconds(1);
  o.min_body_bytes_per_second = 1u << 20;
  o.body_limit_for = [](std::string_view, std::string_view) -> std::size_t { return 8u << 20; };
  std::atomic<int> handled{0};
  auto server = HttpServer::Start(o, [&handled](std::shared_ptr<Exchange> ex) {
    ++handled;
    ex->Respond(
        HttpResponse::Json(200, "{\"size\":" + std::to_string(ex->request().body.size()) + "}"));
  });
  ASSERT_TRUE(server.ok());
  std::size_t const size = 4u << 20;
  std::string head =
      "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
  // 16 KiB every 300 ms (~53 KiB/s): every piece well inside the 1 s read timeout.
  int fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string piece(16 << 10, 't');
  auto start = std::chrono::steady_clock::now();
  int sent = 0;
  for (; sent < 100; ++sent) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) < 0) break;
  }
  auto lasted = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(ReadAll(fd), "");  // closed without an answer
  ::close(fd);
  EXPECT_LT(sent, 100) << "the trickle was never cut";
  EXPECT_LT(lasted, std::chrono::seconds(20));
  EXPECT_EQ(handled.load(), 0);
  // At 2 MiB/s (above the minimum) with pauses, the same body arrives whole.
  fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string fast(size / 8, 'f');
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    ASSERT_EQ(::send(fd, fast.data(), fast.size(), MSG_NOSIGNAL), static_cast<ssize_t>(fast.size()))
        << "cut at piece " << i;
  }
  std::string answer = ReadUntilClosedOr(fd, "}");
  ::close(fd);
  EXPECT_NE(answer.find("{\"size\":" + std::to_string(size) + "}"), std::string::npos) << answer;
  (*server)->Stop();
}

// Issue 43, 5e: large bodies read into memory hold at most max_buffered_body_bytes together; a
// request past it is answered 503 before its body is read, and the bound is given back when a
// request ends (answered, or its client gone mid-body).
TEST(HttpServerTest, LargeBodiesInMemoryStayWithinTheirBoundTogether) {
  HttpServerOptions o;
  o.max_buffered_body_bytes = 5u << 20;
  o.body_limit_for = [](std::string_view, std::string_view) -> std::size_t { return 8u << 20; };
  HoldingServer server(o);
  std::string const body(3u << 20, 'b');
  auto head = [&](std::string const& path) {
    return "PUT " + path +
           " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  };
  // One 3 MiB body, read and held by the handler (its exchange kept): 3 of 5 MiB lent.
  int held = RawConnect(server.port());
  ASSERT_GE(held, 0);
  std::string first = head("/wait") + body;
  ASSERT_EQ(::send(held, first.data(), first.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(first.size()));
  ASSERT_TRUE(server.WaitHeld(1));
  // A second, mid-body: refused before its body is read.
  auto second = testing_util::RawHttp(server.port(), head("/now") + body);
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_NE(second.body.find("too many large requests"), std::string::npos) << second.body;
  // A client that sends half its body and goes: its share comes back too.
  ::close(held);
  ASSERT_TRUE(server.WaitHangUps(1, std::chrono::seconds(10)));
  int cut = RawConnect(server.port());
  ASSERT_GE(cut, 0);
  std::string half = head("/now") + body.substr(0, body.size() / 2);
  ASSERT_EQ(::send(cut, half.data(), half.size(), MSG_NOSIGNAL), static_cast<ssize_t>(half.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::close(cut);
  // Once the held exchange is let go and the cut one is gone, a 3 MiB body is read again.
  server.Release();
  int status = 0;
  for (int i = 0; i < 50 && status != 200; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = testing_util::RawHttp(server.port(), head("/now") + body).status;
  }
  EXPECT_EQ(status, 200);
}

// Large bodies reuse the memory of earlier ones (the server's body pool): each handler still
// sees exactly its own bytes, whether the buffer it gets was larger, smaller or in use by a
// handler that still holds its exchange.
TEST(HttpServerTest, LargeBodiesThatReuseMemoryAreEachExactlyTheirOwn) {
  HttpServerOptions o;
  o.port = 0;
  o.body_limit_for = [](std::string_view, std::string_view) -> std::size_t { return 16u << 20; };
  std::mutex mu;
  std::vector<std::shared_ptr<Exchange>> held;  // answered later: their bodies stay in use
  auto server = HttpServer::Start(o, [&](std::shared_ptr<Exchange> ex) {
    auto const& body = ex->request().body;
    bool same = body.find_first_not_of(body.empty() ? 'x' : body[0]) == std::string::npos;
    std::string answer = "{\"size\":" + std::to_string(body.size()) + ",\"first\":\"" +
                         std::string(1, body.empty() ? '-' : body[0]) +
                         "\",\"same\":" + (same ? "true" : "false") + "}";
    if (ex->request().path == "/hold") {
      std::lock_guard<std::mutex> lock(mu);
      held.push_back(ex);
      return;
    }
    ex->Respond(HttpResponse::Json(200, answer));
  });
  ASSERT_TRUE(server.ok());
  auto send = [&](std::string const& path, std::size_t size, char c) {
    int fd = RawConnect((*server)->port());
    std::string head = "PUT " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                       "Content-Length: " + std::to_string(size) + "\r\n\r\n";
    std::string body(size, c);
    (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    (void)!::send(fd, body.data(), body.size(), MSG_NOSIGNAL);
    return fd;
  };
  auto expect = [&](int fd, std::size_t size, char c) {
    std::string answer = ReadUntilClosedOr(fd, "}");
    ::close(fd);
    EXPECT_NE(answer.find("{\"size\":" + std::to_string(size) + ",\"first\":\"" +
                          std::string(1, c) + "\",\"same\":true}"),
              std::string::npos)
        << answer;
  };
  // Larger, smaller, larger again: each reuses what the one before gave back.
  std::vector<std::pair<std::size_t, char>> sizes = {
      {3u << 20, 'a'}, {2u << 20, 'b'}, {5u << 20, 'c'}, {(1u << 20) + 7, 'd'}, {5u << 20, 'e'}};
  for (auto [size, c] : sizes) expect(send("/echo", size, c), size, c);
  // One held by its handler while others come and go.
  int holding = send("/hold", 4u << 20, 'h');
  for (int i = 0; i < 50; ++i) {
    std::lock_guard<std::mutex> lock(mu);
    if (!held.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  expect(send("/echo", 4u << 20, 'i'), 4u << 20, 'i');
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(held.size(), 1u);
    auto const& body = held[0]->request().body;
    EXPECT_EQ(body.size(), 4u << 20);
    EXPECT_EQ(body.find_first_not_of('h'), std::string::npos) << "another request wrote into it";
    held[0]->Respond(HttpResponse::Json(200, "{}"));
    held.clear();
  }
  ::close(holding);
  (*server)->Stop();
}

// A file body goes out piece by piece with its Content-Length; the connection stays usable;
// HEAD gets the length without the bytes; a file shorter than said ends the connection.
// What a BodySink was given: the bytes, in how many pieces, and how it ended.
struct SinkRecord {
  std::mutex mu;
  std::condition_variable cv;
  std::string bytes;
  int pieces = 0;
  int finishes = 0;
  bool whole = false;
  std::vector<std::thread> helpers;  // a deferring sink's callers, joined by SinkServer
  bool WaitFinished(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return finishes >= n; });
  }
};

// Takes up to `room` bytes (refusing more), or refuses the request outright (`accepts` false);
// `defer`: takes more and answers later, from other threads (as a relay waits for its upstream).
class RecordingSink : public BodySink {
 public:
  RecordingSink(SinkRecord& record, bool accepts, std::size_t room, bool defer = false)
      : record_(record), accepts_(accepts), room_(room), defer_(defer) {}
  void WhenWritable(std::function<void()> go) override {
    if (!defer_) return go();
    std::lock_guard<std::mutex> lock(record_.mu);
    record_.helpers.emplace_back([go = std::move(go)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      go();
    });
  }
  bool Accepts() const override { return accepts_; }
  bool Write(std::string_view bytes) override {
    std::lock_guard<std::mutex> lock(record_.mu);
    if (record_.bytes.size() + bytes.size() > room_) return false;
    record_.bytes.append(bytes);
    ++record_.pieces;
    return true;
  }
  void Finish(bool whole, std::function<void(HttpResponse)> answer) override {
    std::unique_lock<std::mutex> lock(record_.mu);
    record_.whole = whole;
    ++record_.finishes;
    record_.cv.notify_all();
    HttpResponse r = !accepts_ ? HttpResponse::Json(409, R"({"refused":true})")
                     : !whole  ? HttpResponse::Json(507, R"({"full":true})")
                               : HttpResponse::Json(
                                     200, "{\"sunk\":" + std::to_string(record_.bytes.size()) + "}");
    if (defer_) {
      record_.helpers.emplace_back([answer = std::move(answer), r = std::move(r)]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        answer(std::move(r));
      });
      return;
    }
    lock.unlock();
    answer(std::move(r));
  }

 private:
  SinkRecord& record_;
  bool accepts_;
  std::size_t room_;
  bool defer_;
};

// A server whose /sink, /refuse and /full (2 MiB of room) bodies go to a RecordingSink; the
// handler answers everything else with the size of the body it was given.
struct SinkServer {
  SinkRecord record;
  std::atomic<int> handled{0};
  std::unique_ptr<HttpServer> server;
  SinkServer() {
    HttpServerOptions o;
    o.port = 0;
    o.body_limit_for = [](std::string_view, std::string_view) -> std::size_t { return 64u << 20; };
    o.body_sink_for = [this](HttpRequest const& head, std::uint64_t) -> std::unique_ptr<BodySink> {
      if (head.path == "/sink") return std::make_unique<RecordingSink>(record, true, 64u << 20);
      if (head.path == "/refuse") return std::make_unique<RecordingSink>(record, false, 0);
      if (head.path == "/full") return std::make_unique<RecordingSink>(record, true, 2u << 20);
      if (head.path == "/later") {
        return std::make_unique<RecordingSink>(record, true, 64u << 20, true);
      }
      return nullptr;
    };
    auto s = HttpServer::Start(o, [this](std::shared_ptr<Exchange> ex) {
      ++handled;
      ex->Respond(HttpResponse::Json(
          200, "{\"handled\":" + std::to_string(ex->request().body.size()) + "}"));
    });
    EXPECT_TRUE(s.ok());
    server = std::move(*s);
  }
  ~SinkServer() {
    server->Stop();
    std::lock_guard<std::mutex> lock(record.mu);
    for (auto& t : record.helpers) t.join();
  }
};

std::string Pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % 251);
  return s;
}

// Sends `request` from another thread while reading the answer (up to its closing brace): a
// server that answers only after the body would otherwise deadlock a single thread.
std::string SendWhileReading(int fd, std::string const& request) {
  std::thread sender([&] { (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL); });
  std::string answer = ReadUntilClosedOr(fd, "}");
  sender.join();
  return answer;
}

TEST(HttpServerTest, ABodyForASinkArrivesInPiecesWholeAndTheConnectionGoesOn) {
  SinkServer srv;
  int fd = RawConnect(srv.server->port());
  std::string body = Pattern((5u << 20) + 3);
  std::string head =
      "PUT /sink?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n";
  std::string all = head + body;
  std::string answer = SendWhileReading(fd, all);
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  EXPECT_NE(answer.find("{\"sunk\":" + std::to_string(body.size()) + "}"), std::string::npos)
      << answer;
  // The same connection takes the next request, which goes to the handler.
  std::string next = "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  (void)!::send(fd, next.data(), next.size(), MSG_NOSIGNAL);
  answer = ReadUntilClosedOr(fd, "}");
  EXPECT_NE(answer.find("{\"handled\":3}"), std::string::npos) << answer;
  ::close(fd);
  std::lock_guard<std::mutex> lock(srv.record.mu);
  EXPECT_EQ(srv.record.bytes, body);
  EXPECT_GT(srv.record.pieces, 5) << "the body came in one piece: it was held in memory";
  EXPECT_TRUE(srv.record.whole);
  EXPECT_EQ(srv.record.finishes, 1);
  EXPECT_EQ(srv.handled.load(), 1) << "the handler was called for the sunk request";
}

// A sink that takes more only later and answers from another thread (the webserver's relay):
// nothing is read meanwhile, and the answer still reaches the client, whose connection goes on.
TEST(HttpServerTest, ASinkThatTakesMoreLaterAndAnswersLaterGetsTheWholeBody) {
  SinkServer srv;
  int fd = RawConnect(srv.server->port());
  std::string body = Pattern((4u << 20) + 11);
  std::string all =
      "PUT /later HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  std::string answer = SendWhileReading(fd, all);
  EXPECT_NE(answer.find("{\"sunk\":" + std::to_string(body.size()) + "}"), std::string::npos)
      << answer;
  std::string next = "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok";
  (void)!::send(fd, next.data(), next.size(), MSG_NOSIGNAL);
  EXPECT_NE(ReadUntilClosedOr(fd, "}").find("{\"handled\":2}"), std::string::npos);
  ::close(fd);
  std::lock_guard<std::mutex> lock(srv.record.mu);
  EXPECT_EQ(srv.record.bytes, body);
  EXPECT_TRUE(srv.record.whole);
}

TEST(HttpServerTest, ASinkThatRefusesIsAnsweredBeforeTheBodyWithout100Continue) {
  SinkServer srv;
  int fd = RawConnect(srv.server->port());
  std::string head = "PUT /refuse HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(8u << 20) + "\r\n\r\n";
  (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string answer = ReadUntilClosedOr(fd, "}");
  EXPECT_EQ(answer.rfind("HTTP/1.1 409", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  ::close(fd);
  EXPECT_TRUE(srv.record.WaitFinished(1));
  std::lock_guard<std::mutex> lock(srv.record.mu);
  EXPECT_TRUE(srv.record.bytes.empty());
  EXPECT_EQ(srv.handled.load(), 0);
}

TEST(HttpServerTest, ASinkThatStopsTakingIsAnsweredAndTheRestOfTheBodyDrained) {
  SinkServer srv;
  int fd = RawConnect(srv.server->port());
  std::string body = Pattern(8u << 20);
  std::string all =
      "PUT /full HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  // The client sends all of it and still reads the answer (no reset).
  std::string answer = SendWhileReading(fd, all);
  EXPECT_EQ(answer.rfind("HTTP/1.1 507", 0), 0u) << answer;
  EXPECT_NE(answer.find(R"({"full":true})"), std::string::npos) << answer;
  ::close(fd);
  std::lock_guard<std::mutex> lock(srv.record.mu);
  EXPECT_LE(srv.record.bytes.size(), 2u << 20);
  EXPECT_EQ(srv.record.bytes, body.substr(0, srv.record.bytes.size()));
  EXPECT_FALSE(srv.record.whole);
}

TEST(HttpServerTest, ASinkWhoseClientGoesAwayMidBodyIsToldWhatCame) {
  SinkServer srv;
  int fd = RawConnect(srv.server->port());
  std::string body = Pattern(3u << 20);
  std::string all = "PUT /sink HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(8u << 20) +
                    "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, all.data(), all.size(), MSG_NOSIGNAL), static_cast<ssize_t>(all.size()));
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(srv.record.WaitFinished(1));
  ::close(fd);
  std::lock_guard<std::mutex> lock(srv.record.mu);
  EXPECT_FALSE(srv.record.whole);
  EXPECT_EQ(srv.record.bytes, body) << "every byte sent before the hang-up is given to the sink";
  EXPECT_EQ(srv.handled.load(), 0);
}

TEST(HttpServerFileBodyTest, ServesPartOfAFileAndKeepsTheConnection) {
  testing_util::TempDir dir;
  std::string path = dir.path() + "/blob";
  std::string data(3 * 1024 * 1024 + 17, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + (i >> 11));
  testing_util::WriteFileBytes(path, data);
  HttpServerOptions o;
  o.port = 0;
  auto server = HttpServer::Start(o, [&](std::shared_ptr<Exchange> ex) {
    HttpResponse r;
    r.content_type = "application/octet-stream";
    bool shorter = ex->request().path == "/short";
    r.file = std::make_shared<FileBody>(
        ::open(path.c_str(), O_RDONLY | O_CLOEXEC), 5,
        static_cast<std::int64_t>(data.size()) - 5 + (shorter ? 100 : 0));
    ex->Respond(std::move(r));
  });
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();
  int fd = RawConnect(port);
  ASSERT_GE(fd, 0);
  auto get = [&](std::string const& method) {
    std::string req = method + " /blob HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[65536];
    std::size_t head_end = std::string::npos, want = 0;
    while (head_end == std::string::npos || got.size() < head_end + 4 + want) {
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
      if (head_end == std::string::npos && (head_end = got.find("\r\n\r\n")) != std::string::npos) {
        auto at = got.find("Content-Length: ");
        want = method == "HEAD" ? 0 : std::stoul(got.substr(at + 16));
      }
    }
    return got;
  };
  std::string first = get("GET");
  ASSERT_NE(first.find("Content-Length: " + std::to_string(data.size() - 5)), std::string::npos);
  EXPECT_TRUE(first.substr(first.find("\r\n\r\n") + 4) == data.substr(5)) << "bytes differ";
  std::string head = get("HEAD");
  EXPECT_NE(head.find("Content-Length: " + std::to_string(data.size() - 5)), std::string::npos);
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "") << "HEAD sends no body";
  std::string again = get("GET");
  EXPECT_EQ(again.size(), first.size()) << "the connection serves the next request";
  ::close(fd);
  // Promised 100 bytes more than the file has: the client sees the connection end early.
  auto cut = testing_util::RawHttp(port, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_LT(cut.body.size(), data.size() - 5 + 100);
  (*server)->Stop();
}

}  // namespace
}  // namespace bai::server
