// SPDX-License-Identifier: Apache-2.0
// The only translation unit of the HTTP server that includes Boost.Beast/Asio.
#include "server-reference/common/http/http_server.h"

#include "bai/protocol/errors.h"

#include "libbai/internal/ws_frames.h"
#include "libbai/util/text.h"
#include "server-reference/common/http/problem.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <deque>
#include <future>
#include <limits>
#include <list>
#include <mutex>
#include <thread>

namespace bai::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// The standard reason phrase ("Too Many Requests"), from Beast's table.
std::string Reason(int status) {
  auto phrase = boost::beast::http::obsolete_reason(
      boost::beast::http::int_to_status(static_cast<unsigned>(status)));
  return phrase.empty() ? "Status" : std::string(phrase);
}

}  // namespace

class Connection;
class WsSession;
class ExchangeImpl;

// Large request bodies (a storage upload's chunks, up to 64 MiB) reuse memory: a fresh block of
// that size is a new mapping whose every page faults and is zeroed by the kernel, a fifth of
// the storage proxy's CPU for a browser's upload. A body comes back when its exchange ends; at
// most kHeld bytes wait, and none much longer than kIdle unused (the server's reaper).
class BodyPool {
 public:
  static constexpr std::size_t kSmallest = 1 << 20;
  static constexpr std::size_t kHeld = 256u << 20;
  static constexpr auto kIdle = std::chrono::seconds(60);

  std::string Take(std::size_t n) {
    std::string body;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The smallest that holds n, else the largest (grown below).
      auto better = [n](std::size_t a, std::size_t b) {
        return (a >= n) != (b >= n) ? a >= n : (a >= n ? a < b : a > b);
      };
      auto best = buffers_.end();
      for (auto it = buffers_.begin(); it != buffers_.end(); ++it) {
        if (best == buffers_.end() || better(it->body.capacity(), best->body.capacity())) best = it;
      }
      if (best != buffers_.end()) {
        held_ -= best->body.capacity();
        body = std::move(best->body);
        buffers_.erase(best);
      }
    }
    body.resize(n);
    return body;
  }

  // Bodies being read or handled count against a bound while lent (HttpServerOptions::
  // max_buffered_body_bytes); false when `n` more would pass `limit` (0: none).
  bool Lend(std::size_t n, std::size_t limit) {
    std::lock_guard<std::mutex> lock(mu_);
    if (limit != 0 && lent_ + n > limit) return false;
    lent_ += n;
    return true;
  }
  void Return(std::size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    lent_ -= std::min(n, lent_);
  }

  void Give(std::string body) {
    if (body.capacity() < kSmallest) return;
    body.clear();  // keeps the memory
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + body.capacity() > kHeld) return;
    held_ += body.capacity();
    buffers_.push_back({std::move(body), std::chrono::steady_clock::now()});
  }

  // Drops what waited longer than kIdle (the server's reaper calls it every kIdle / 2).
  void DropIdle() {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = buffers_.begin(); it != buffers_.end();) {
      if (now - it->since > kIdle) {
        held_ -= it->body.capacity();
        it = buffers_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  struct Held {
    std::string body;
    std::chrono::steady_clock::time_point since;
  };
  std::mutex mu_;
  std::list<Held> buffers_;
  std::size_t held_ = 0;
  std::size_t lent_ = 0;
};

// A large body's share of the bound, given back when the request ends however it ends (its
// exchange answered and gone, or the connection closed while reading it).
class BodyLease {
 public:
  BodyLease(std::shared_ptr<BodyPool> pool, std::size_t n) : pool_(std::move(pool)), n_(n) {}
  BodyLease(BodyLease const&) = delete;
  BodyLease& operator=(BodyLease const&) = delete;
  ~BodyLease() { pool_->Return(n_); }

 private:
  std::shared_ptr<BodyPool> pool_;
  std::size_t n_;
};

struct HttpServer::Impl {
  HttpServerOptions options;
  Handler handler;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::mutex mu;
  std::list<std::weak_ptr<Connection>> connections;
  std::list<std::weak_ptr<WsSession>> websockets;
  std::atomic<bool> stopped{false};
  std::uint16_t port = 0;
  // Shared with connections and exchanges, which may end after the server.
  std::shared_ptr<BodyPool> bodies = std::make_shared<BodyPool>();
  net::steady_timer reaper{ioc};

  // Pooled bodies unused for a while go back to the system, requests or not.
  void Reap() {
    reaper.expires_after(BodyPool::kIdle / 2);
    reaper.async_wait([this](beast::error_code ec) {
      if (ec || stopped) return;
      bodies->DropIdle();
      Reap();
    });
  }

  void Accept();
};

namespace websocket = beast::websocket;

// An upgraded connection: a read loop feeding the handlers and a write queue of text and
// binary frames. State is touched only on the socket's strand, except the atomics.
class WsSession : public WebSocket, public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(beast::tcp_stream stream, WebSocketHandlers handlers)
      : ws_(std::move(stream)), handlers_(std::move(handlers)), gated_(handlers_.block_tunnel) {}

  void Start(http::request<http::string_body> request) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(16 << 20);
    // Whole messages in one frame, written in one go: a relayed tunnel's 64 KiB messages were
    // otherwise cut into 4 KiB frames, a write each.
    ws_.auto_fragment(false);
    if (gated_) {
      ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
        res.set(http::field::sec_websocket_protocol, kBlockSubprotocol);
      }));
    }
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Finish(1006);
      if (self->gated_) {
        // Block frames from here on, on the socket itself (Beast's stream is not used again).
        self->raw_ = true;
        beast::get_lowest_layer(self->ws_).expires_never();
        self->rx_.resize(kRawBlock);
      }
      if (self->handlers_.on_open) self->handlers_.on_open(self);
      self->MaybeRead();
    });
  }

  bool Send(std::string text) override { return Queue(std::move(text), false); }
  bool SendBinary(std::string bytes) override { return Queue(std::move(bytes), true); }

  void Close(int code, std::string reason) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), code, r = std::move(reason)] {
      if (self->closed_ || self->closing_) return;
      self->closing_ = true;
      self->close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), r);
      if (!self->writing_ && !self->gated_) self->DoClose();
    });
  }

  std::size_t Backlog() const override { return backlog_.load(); }

  void WhenDrained(std::size_t below, std::function<void()> callback) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), below, cb = std::move(callback)] {
      if (self->closed_) return;
      if (self->backlog_.load() < below) return cb();
      self->drained_ = {below, std::move(cb)};
    });
  }

  void PauseReading(bool paused) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), paused] {
      self->paused_ = paused;
      if (!paused) self->MaybeRead();
    });
  }

  // Immediate, for server stop: no close handshake. `done` runs once the socket is closed.
  void Abort(std::function<void()> done) {
    net::post(ws_.get_executor(), [self = shared_from_this(), done = std::move(done)] {
      boost::system::error_code ec;
      beast::get_lowest_layer(self->ws_).socket().close(ec);
      self->Finish(1001);
      done();
    });
  }

 private:
  static constexpr std::size_t kRawBlock = 256 << 10;
  static constexpr std::size_t kMaxText = 16 << 20;
  static constexpr int kRawGather = 16;  // frames per write

  struct Frame {
    std::string data;
    bool binary;
    std::uint8_t control = 0;  // block frames: a close or pong instead of data
  };

  bool Queue(std::string data, bool binary) {
    if (closed_) return false;
    backlog_ += data.size();
    net::post(ws_.get_executor(),
              [self = shared_from_this(), d = std::move(data), binary]() mutable {
                if (self->closed_ || self->closing_) {
                  self->backlog_ -= d.size();
                  return;
                }
                self->queue_.push_back({std::move(d), binary});
                if (!self->writing_ && !self->gated_) self->DoWrite();
              });
    return true;
  }

  void MaybeRead() {
    if (raw_) return RawRead();
    if (reading_ || paused_ || closed_) return;
    reading_ = true;
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->reading_ = false;
      if (ec) {
        // The peer's close code when its close frame came (even if the connection then broke
        // before the handshake finished); 1006 when none did.
        int code = self->ws_.reason().code != 0 ? self->ws_.reason().code : 1006;
        return self->Finish(code);
      }
      std::string data = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      bool binary = self->ws_.got_binary();
      if (self->gated_) {
        // A block-frame client's first frame: its go. What waited goes out now.
        if (binary || data != kBlockTunnelGo) {
          self->gated_ = false;
          self->Close(1002, "a block tunnel begins with its go frame");
          return;
        }
        self->gated_ = false;
        if (!self->writing_ && !self->queue_.empty()) {
          self->DoWrite();
        } else if (!self->writing_ && self->closing_) {
          self->DoClose();
        }
        return self->MaybeRead();
      }
      try {
        if (binary && self->handlers_.on_binary) {
          self->handlers_.on_binary(self, std::move(data));
        } else if (self->handlers_.on_message) {
          self->handlers_.on_message(self, std::move(data));
        }
      } catch (std::exception const& e) {
        // A handler that throws loses its connection, never the process.
        std::fprintf(stderr, "websocket message handler failed: %s\n", e.what());
        self->Close(1011, "internal error");
        return;
      }
      self->MaybeRead();
    });
  }

  void DoWrite() {
    if (raw_) return RawWrite();
    writing_ = true;
    ws_.binary(queue_.front().binary);
    ws_.async_write(net::buffer(queue_.front().data),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->writing_ = false;
                      if (ec) return self->Finish(1006);
                      self->backlog_ -= self->queue_.front().data.size();
                      self->queue_.pop_front();
                      self->RunDrained();
                      if (!self->queue_.empty()) return self->DoWrite();
                      if (self->closing_) self->DoClose();
                    });
  }

  // WhenDrained's callback, once the backlog has fallen below its mark (after each write).
  void RunDrained() {
    if (drained_.second && backlog_.load() < drained_.first) {
      auto cb = std::move(drained_.second);
      drained_ = {};
      cb();
    }
  }

  void DoClose() {
    if (raw_) return RawClose();
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) {
      self->Finish(self->close_reason_.code);
    });
  }

  void Finish(int code) {
    if (closed_.exchange(true)) return;
    drained_ = {};
    if (raw_) {
      boost::system::error_code ec;
      close_timer_.reset();
      beast::get_lowest_layer(ws_).socket().close(ec);
    }
    if (handlers_.on_close) handlers_.on_close(code);
    handlers_ = {};  // drop captured references, breaking cycles
  }

  // --- block frames (a block_tunnel after its upgrade) ------------------------------------------
  // The socket is read a block at a time and its frames parsed in place (libbai's ws_frames):
  // a binary frame's payload is passed on in the pieces it arrives in (a tunnel's bytes are a
  // stream), unmasked once and copied once; writes gather queued frames into one writev. Beast
  // unmasked a byte at a time and copied each message twice.

  tcp::socket& Socket() { return beast::get_lowest_layer(ws_).socket(); }

  void RawRead() {
    if (reading_ || closed_) return;
    if (!RawParse() || paused_ || closed_) return;
    if (rx_begin_ == rx_end_) {
      rx_begin_ = rx_end_ = 0;
    } else if (rx_end_ == rx_.size()) {
      // A partial header or control frame at the end: moved to the front (a few bytes).
      std::memmove(rx_.data(), rx_.data() + rx_begin_, rx_end_ - rx_begin_);
      rx_end_ -= rx_begin_;
      rx_begin_ = 0;
    }
    reading_ = true;
    Socket().async_read_some(
        net::buffer(rx_.data() + rx_end_, rx_.size() - rx_end_),
        [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          self->reading_ = false;
          if (ec) return self->Finish(self->close_sent_ ? self->close_reason_.code : 1006);
          self->rx_end_ += n;
          self->RawRead();
        });
  }

  // Drops the queued frames not being written (the front in_flight_ ones are: their bytes are
  // the write's buffers until it completes).
  void DropQueued() {
    std::size_t keep = writing_ ? in_flight_ : 0;
    while (queue_.size() > keep) {
      if (queue_.back().control == 0) backlog_ -= queue_.back().data.size();
      queue_.pop_back();
    }
  }

  // Protocol errors close with 1002 and drop what else came.
  bool RawFail(char const* why) {
    rx_begin_ = rx_end_ = 0;
    DropQueued();
    gated_ = false;
    if (!closing_) {
      closing_ = true;
      close_reason_ = websocket::close_reason(websocket::close_code::protocol_error, why);
      if (!writing_) RawClose();
    }
    return false;
  }

  // Passes on what the buffer holds; false when reading must stop (closed, or failed).
  bool RawParse() {
    namespace ws = internal::ws;
    while (!paused_ && !closed_) {
      std::uint8_t* at = rx_.data() + rx_begin_;
      std::size_t have = rx_end_ - rx_begin_;
      if (remaining_ == 0) {
        ws::FrameHeader h;
        std::size_t size = 0;
        auto r = ws::ParseHeader(at, have, /*from_server=*/false, h, size);
        if (r == ws::ParseResult::kIncomplete) return true;
        if (r == ws::ParseResult::kMalformed) return RawFail("malformed frame");
        bool control = (h.opcode & 0x08) != 0;
        if (control) {
          if (have < size + h.length) return true;  // whole (≤ 139 bytes) before it is read
          ws::ApplyMask(at + size, h.length, h.mask, 0);
          std::string payload(reinterpret_cast<char const*>(at + size), h.length);
          rx_begin_ += size + h.length;
          if (h.opcode == ws::kPing && !closing_) {
            QueueControl(ws::kPong, std::move(payload));
          } else if (h.opcode == ws::kClose) {
            int code = payload.size() >= 2 ? (static_cast<std::uint8_t>(payload[0]) << 8) |
                                                 static_cast<std::uint8_t>(payload[1])
                                           : 1005;
            if (code == 1005) code = 1000;
            if (close_sent_ || closing_) {
              // The answer to ours (or ours is on its way): done once it has gone.
              peer_closed_ = code;
              if (close_sent_) Finish(close_reason_.code);
              return false;
            }
            // The client's: answered with the same code, after what is being written.
            peer_closed_ = code;
            DropQueued();
            closing_ = true;
            close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code));
            if (!writing_) RawClose();
            return false;
          }
          continue;
        }
        if (h.opcode == ws::kContinuation) {
          if (!in_message_) return RawFail("continuation without a message");
        } else {
          if (in_message_) return RawFail("a new message inside a fragmented one");
          in_message_ = true;
          binary_ = h.opcode == ws::kBinary;
          text_.clear();
        }
        rx_begin_ += size;
        remaining_ = h.length;
        offset_ = 0;
        final_ = h.fin;
        mask_ = h.mask;
        if (remaining_ == 0) {
          if (final_) {
            in_message_ = false;
            if (!binary_ && !Deliver(std::move(text_), false)) return false;
          }
        }
        continue;
      }
      if (have == 0) return true;
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(have, remaining_));
      ws::ApplyMask(at, take, mask_, offset_);
      rx_begin_ += take;
      remaining_ -= take;
      offset_ += take;
      bool done = remaining_ == 0 && final_;
      if (done) in_message_ = false;
      if (binary_) {
        if (!Deliver(std::string(reinterpret_cast<char const*>(at), take), true)) return false;
        continue;
      }
      text_.append(reinterpret_cast<char const*>(at), take);
      if (text_.size() > kMaxText) return RawFail("message too large");
      if (done && !Deliver(std::move(text_), false)) return false;
    }
    return true;
  }

  // One message (or a binary piece) to the handlers; the first must be the go.
  bool Deliver(std::string data, bool binary) {
    if (gated_) {
      if (binary || data != kBlockTunnelGo)
        return RawFail("a block tunnel begins with its go frame");
      gated_ = false;
      if (!writing_ && !queue_.empty()) {
        RawWrite();
      } else if (!writing_ && closing_) {
        RawClose();
      }
      return true;
    }
    try {
      if (binary && handlers_.on_binary) {
        handlers_.on_binary(shared_from_this(), std::move(data));
      } else if (handlers_.on_message) {
        handlers_.on_message(shared_from_this(), std::move(data));
      }
    } catch (std::exception const& e) {
      std::fprintf(stderr, "websocket message handler failed: %s\n", e.what());
      Close(1011, "internal error");
      return false;
    }
    return true;
  }

  void QueueControl(std::uint8_t opcode, std::string payload) {
    queue_.push_back({std::move(payload), false, opcode});
    if (!writing_ && !gated_) RawWrite();
  }

  void RawWrite() {
    namespace ws = internal::ws;
    if (queue_.empty() || closed_) return;
    writing_ = true;
    int count = std::min<int>(kRawGather, static_cast<int>(queue_.size()));
    in_flight_ = static_cast<std::size_t>(count);
    std::vector<net::const_buffer> parts;
    parts.reserve(2 * count);
    for (int i = 0; i < count; ++i) {
      Frame const& f = queue_[i];
      ws::FrameHeader h;
      h.opcode = f.control != 0 ? f.control
                                : static_cast<std::uint8_t>(f.binary ? ws::kBinary : ws::kText);
      h.length = f.data.size();
      std::size_t n = ws::EncodeHeader(h, heads_[i].data());
      parts.emplace_back(heads_[i].data(), n);
      if (!f.data.empty()) parts.emplace_back(f.data.data(), f.data.size());
    }
    net::async_write(Socket(), parts,
                     [self = shared_from_this(), count](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec) return self->Finish(1006);
                       for (int i = 0; i < count && !self->queue_.empty(); ++i) {
                         if (self->queue_.front().control == 0) {
                           self->backlog_ -= self->queue_.front().data.size();
                         }
                         self->queue_.pop_front();
                       }
                       self->RunDrained();
                       if (!self->queue_.empty()) return self->RawWrite();
                       if (self->closing_) self->RawClose();
                     });
  }

  // Our close frame, once what was queued has gone; then the client's answer, for at most 5 s.
  void RawClose() {
    namespace ws = internal::ws;
    if (close_sent_ || closed_) return;
    close_sent_ = true;
    std::string payload;
    int code = close_reason_.code;
    payload.push_back(static_cast<char>(code >> 8));
    payload.push_back(static_cast<char>(code & 0xFF));
    payload.append(close_reason_.reason.data(),
                   std::min<std::size_t>(close_reason_.reason.size(), 120));
    queue_.push_back({std::move(payload), false, ws::kClose});
    writing_ = true;
    in_flight_ = queue_.size();
    ws::FrameHeader h;
    h.opcode = ws::kClose;
    h.length = queue_.back().data.size();
    std::size_t n = ws::EncodeHeader(h, heads_[0].data());
    std::array<net::const_buffer, 2> parts = {net::const_buffer(heads_[0].data(), n),
                                              net::buffer(queue_.back().data)};
    net::async_write(
        Socket(), parts, [self = shared_from_this()](beast::error_code ec, std::size_t) {
          self->writing_ = false;
          self->queue_.clear();
          if (ec || self->peer_closed_ != 0) return self->Finish(self->close_reason_.code);
          boost::system::error_code ignored;
          self->Socket().shutdown(tcp::socket::shutdown_send, ignored);
          self->paused_ = false;  // the client's close is read whatever the relay wanted
          self->close_timer_ = std::make_unique<net::steady_timer>(self->Socket().get_executor());
          self->close_timer_->expires_after(std::chrono::seconds(5));
          self->close_timer_->async_wait(
              [weak = std::weak_ptr<WsSession>(self)](beast::error_code e) {
                if (auto s = weak.lock(); s && !e) s->Finish(s->close_reason_.code);
              });
          self->RawRead();
        });
  }

  websocket::stream<beast::tcp_stream> ws_;
  WebSocketHandlers handlers_;
  beast::flat_buffer buffer_;
  std::deque<Frame> queue_;
  std::atomic<std::size_t> backlog_{0};
  std::pair<std::size_t, std::function<void()>> drained_;
  websocket::close_reason close_reason_;
  bool writing_ = false;
  bool reading_ = false;
  bool paused_ = false;
  bool closing_ = false;
  bool gated_ = false;  // block_tunnel: nothing written before the client's go
  std::atomic<bool> closed_{false};
  // Block frames (raw_: the upgrade agreed to them).
  bool raw_ = false;
  std::vector<std::uint8_t> rx_;
  std::size_t rx_begin_ = 0, rx_end_ = 0;
  std::uint64_t remaining_ = 0, offset_ = 0;  // of the frame being read
  std::array<std::uint8_t, 4> mask_{};
  bool final_ = true, binary_ = true, in_message_ = false;
  std::string text_;
  std::array<std::array<std::uint8_t, internal::ws::kMaxHeader>, kRawGather> heads_{};
  bool close_sent_ = false;
  std::size_t in_flight_ = 0;  // queued frames the write in progress carries (the front ones)
  int peer_closed_ = 0;        // the client's close code, once it came
  std::unique_ptr<net::steady_timer> close_timer_;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpServer::Impl& server)
      : stream_(std::move(socket)), server_(server), bodies_(server.bodies) {}

  void Start() {
    boost::system::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string();
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->DoRead(); });
  }

  template <typename F>
  void Post(F&& f) {
    net::post(stream_.get_executor(), std::forward<F>(f));
  }

  bool closed() const { return closed_.load(); }

  void WriteResponse(HttpResponse r, bool head) {
    std::string out;
    out.reserve(256);
    out += "HTTP/1.1 ";
    out += std::to_string(r.status);
    out += ' ';
    out += Reason(r.status);
    out += "\r\nServer: BackendAI\r\n";
    if (!r.content_type.empty()) out += "Content-Type: " + r.content_type + "\r\n";
    for (auto const& [k, v] : r.headers) out += k + ": " + v + "\r\n";
    std::int64_t length = r.file ? r.file->length : static_cast<std::int64_t>(r.body.size());
    if (r.status != 204) out += "Content-Length: " + std::to_string(length) + "\r\n";
    if (!keep_alive_) out += "Connection: close\r\n";
    out += "\r\n";
    after_write_ = keep_alive_ ? AfterWrite::kRead : AfterWrite::kClose;
    if (r.file && !head && r.status != 204) {
      // The head now, the file piece by piece as the writes complete (OnWrite).
      file_ = std::move(r.file);
      file_sent_ = 0;
      Queue(std::move(out));
      return;
    }
    // The body goes out as a second buffer of the same write, not copied behind the head.
    Queue(std::move(out), head || r.status == 204 ? std::string() : std::move(r.body));
  }

  // An event stream (status 0: 200 text/event-stream, not cached) or any chunked answer.
  void StartStream(int status, std::vector<std::pair<std::string, std::string>> const& headers) {
    std::string out =
        status == 0 ? "HTTP/1.1 200 OK\r\nServer: BackendAI\r\nContent-Type: text/event-stream\r\n"
                      "Cache-Control: no-cache\r\n"
                    : "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
                          "\r\nServer: BackendAI\r\n";
    out += "Transfer-Encoding: chunked\r\n";
    for (auto const& [k, v] : headers) out += k + ": " + v + "\r\n";
    out += "\r\n";
    streaming_ = true;
    after_write_ = AfterWrite::kNothing;
    Queue(std::move(out));
    WatchForHangUp();
  }

  void QueueChunk(std::string const& data) {
    if (!streaming_ || data.empty()) {
      backlog_ -= data.size();
      return;
    }
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    Queue(size + data + "\r\n", {}, data.size());
  }

  // Stream bytes handed over (WriteEvent) and not yet written to the socket.
  std::atomic<std::size_t> backlog_{0};

  void EndStream() {
    if (!streaming_) return;
    streaming_ = false;
    after_write_ = AfterWrite::kClose;
    Queue("0\r\n\r\n");
  }

  // Closes once what is queued has been written, without the last chunk: the client gets every
  // byte it was sent and sees the answer end early.
  void AbortStream() {
    streaming_ = false;
    after_write_ = AfterWrite::kClose;
    if (!writing_) Close();
  }

  void AddCloseCallback(void const* exchange, std::function<void()> cb) {
    if (closed_) {
      cb();
      return;
    }
    close_callbacks_.emplace_back(exchange, std::move(cb));
  }
  // An answered exchange no longer cares: a keep-alive connection would otherwise gather one
  // callback per request until it closes.
  void DropCloseCallbacks(void const* exchange) {
    std::erase_if(close_callbacks_, [exchange](auto const& c) { return c.first == exchange; });
  }

  bool is_upgrade() const { return upgrade_request_.has_value(); }

  void Upgrade(WebSocketHandlers handlers) {
    if (closed_ || !upgrade_request_) return;
    upgraded_ = true;
    auto ws = std::make_shared<WsSession>(std::move(stream_), std::move(handlers));
    {
      std::lock_guard<std::mutex> lock(server_.mu);
      server_.websockets.remove_if([](auto const& w) { return w.expired(); });
      server_.websockets.push_back(ws);
    }
    ws->Start(std::move(*upgrade_request_));
    upgrade_request_.reset();
    // This connection object is done; the socket belongs to the WebSocket now.
    closed_ = true;
    auto callbacks = std::move(close_callbacks_);
    for (auto& [exchange, cb] : callbacks) cb();
  }

  void Close() {
    if (upgraded_) return;
    if (closed_.exchange(true)) return;
    drained_ = {};  // it may hold what holds this connection
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    auto callbacks = std::move(close_callbacks_);
    for (auto& [exchange, cb] : callbacks) cb();
  }

 private:
  enum class AfterWrite { kRead, kClose, kNothing };
  static constexpr std::uint64_t kDirectBodyBytes = 1 << 20;

  void DoRead() {
    if (closed_) return;
    lease_.reset();
    parser_.emplace();
    body_limit_ = server_.options.max_body_bytes;
    parser_->body_limit(body_limit_);
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_header_bytes));
    stream_.expires_after(first_request_ ? server_.options.read_timeout
                                         : server_.options.idle_timeout);
    if (!server_.options.body_limit_for) {
      http::async_read(
          stream_, buffer_, *parser_,
          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
      return;
    }
    // The headers first: the path decides how large a body may be. (Beast compares a
    // Content-Length with the limit as the headers end, so the limit is checked here instead.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    http::async_read_header(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return self->OnRead(ec);
          auto const& head = self->parser_->get();
          std::string_view target = head.target();
          std::size_t limit = self->server_.options.body_limit_for(
              head.method_string(), target.substr(0, target.find('?')));
          if (limit) self->body_limit_ = limit;
          auto length = self->parser_->content_length();
          if (length && *length > self->body_limit_) return self->OnRead(http::error::body_limit);
          self->parser_->body_limit(self->body_limit_);
          if (self->parser_->is_done()) return self->OnRead(ec);
          if (length && *length > kDirectBodyBytes && self->server_.options.body_sink_for) {
            self->sink_request_ = self->RequestOf(head);
            self->sink_started_ = std::chrono::steady_clock::now();
            self->sink_ = self->server_.options.body_sink_for(self->sink_request_, *length);
            if (self->sink_ && !self->sink_->Accepts()) return self->EndSink(false);
          }
          if (length && *length > kDirectBodyBytes && !self->sink_) {
            auto n = static_cast<std::size_t>(*length);
            if (!self->bodies_->Lend(n, self->server_.options.max_buffered_body_bytes)) {
              return self->Reject(503, protocol::ProblemType::kServiceUnavailable,
                                  "The server is reading too many large requests at once; try "
                                  "again in a moment.");
            }
            self->lease_ = std::make_unique<BodyLease>(self->bodies_, n);
          }
          // A client that waits for leave to send its body (curl does for bodies over 1 MiB)
          // gets it at once instead of after its own timeout.
          if (beast::iequals(head[http::field::expect], "100-continue")) {
            auto go = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
            return net::async_write(self->stream_, net::buffer(*go),
                                    [self, go, length](beast::error_code ec2, std::size_t) {
                                      if (ec2) return self->OnRead(ec2);
                                      self->ReadBody(length);
                                    });
          }
          self->ReadBody(length);
        });
  }

  void ReadBody(boost::optional<std::uint64_t> length) {
    body_started_ = std::chrono::steady_clock::now();
    body_read_ = 0;
    if (sink_) return StreamBody(*length);
    if (length && *length > kDirectBodyBytes) return ReadLargeBody(*length);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  // A large body of known length (a storage upload's chunk): read straight into one string with
  // as few reads as the socket allows. Beast's own loop reads at most 64 KiB per operation, a
  // timer and a strand hop each: ~35 MiB/s on this machine. The read timeout counts from the
  // last bytes received, not from the request's start: a 16 MiB chunk over a 3 Mbit/s uplink
  // takes 45 s and is not cut off while it flows.
  void ReadLargeBody(std::uint64_t length) {
    // The body goes into the message itself (no second copy through the parser).
    auto& body = parser_->get().body();
    body = bodies_->Take(static_cast<std::size_t>(length));
    std::size_t have = std::min<std::size_t>(buffer_.size(), body.size());
    net::buffer_copy(net::buffer(body), buffer_.data(), have);
    buffer_.consume(have);
    ReadBodyPiece(have);
  }

  // A read of a large body wakes once `left` bytes (at most 256 KiB) have come, not for each of
  // a browser's 16 KiB writes; 1 (the default) again once the body is read.
  void WakeAfter(std::size_t left) {
    int lowat = static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(left, 1), 256 << 10));
    ::setsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
  }

  void ReadBodyPiece(std::size_t have) {
    auto& body = parser_->get().body();
    if (have == body.size()) {
      WakeAfter(1);
      return OnRead({});
    }
    WakeAfter(body.size() - have);
    body_read_ = have;
    if (!ExpireForPiece()) return OnRead(beast::error::timeout);
    stream_.async_read_some(net::buffer(body.data() + have, body.size() - have),
                            [self = shared_from_this(), have](beast::error_code ec, std::size_t n) {
                              if (ec) return self->OnRead(ec);
                              self->ReadBodyPiece(have + n);
                            });
  }

  // The timer for the next piece of a body: read_timeout from now, and no later than the body's
  // own deadline (read_timeout after it began plus what min_body_bytes_per_second allows for
  // what has come). False when that deadline has passed: a slow sender, cut.
  bool ExpireForPiece() {
    auto const& o = server_.options;
    if (o.min_body_bytes_per_second == 0) {
      stream_.expires_after(o.read_timeout);
      return true;
    }
    auto allowed = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        o.read_timeout +
        std::chrono::duration<double>(static_cast<double>(body_read_) /
                                      static_cast<double>(o.min_body_bytes_per_second)));
    // The average is over the whole body: bytes that came fast earn time for a slow patch.
    auto deadline = body_started_ + allowed;
    auto now = std::chrono::steady_clock::now();
    if (deadline <= now) return false;
    stream_.expires_after(
        std::min<std::chrono::steady_clock::duration>(o.read_timeout, deadline - now));
    return true;
  }

  // A body that goes to a BodySink: the bytes read with the headers, then pieces of up to
  // kSinkPiece as they come (woken as ReadBodyPiece is), the same buffer each time.
  static constexpr std::size_t kSinkPiece = 1 << 20;
  void StreamBody(std::uint64_t length) {
    sink_left_ = length;
    std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), length));
    if (have > 0) {
      bool more = sink_->Write({static_cast<char const*>(buffer_.data().data()), have});
      buffer_.consume(have);
      sink_left_ -= have;
      if (!more) return EndSink(false);
    }
    NextSinkPiece();
  }

  void NextSinkPiece() {
    if (sink_left_ == 0) return EndSink(true);
    sink_->WhenWritable([self = shared_from_this()] {
      self->Post([self] {
        if (!self->closed_ && self->sink_) self->ReadSinkPiece();
      });
    });
  }

  void ReadSinkPiece() {
    if (sink_buffer_.size() < kSinkPiece) sink_buffer_.resize(kSinkPiece);
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(sink_left_, kSinkPiece));
    WakeAfter(want);
    if (!ExpireForPiece()) return AbandonSink();
    stream_.async_read_some(net::buffer(sink_buffer_.data(), want),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              // Gone, or silent past the read timeout: what came is kept.
                              if (ec) return self->AbandonSink();
                              self->sink_left_ -= n;
                              self->body_read_ += n;
                              if (!self->sink_->Write({self->sink_buffer_.data(), n})) {
                                return self->EndSink(false);
                              }
                              self->NextSinkPiece();
                            });
  }

  // The client is gone mid-body: the sink keeps what came and is let go (with whatever it holds,
  // such as an upload's write lock) before the socket closes, so that a client that sees the
  // close and sends the rest again is not refused by the sink it left behind.
  void AbandonSink() {
    if (sink_) sink_->Finish(false, [](HttpResponse) {});
    sink_.reset();
    sink_request_ = {};
    Close();
  }

  // The sink's answer; a body not read to its end is drained before the connection closes.
  void EndSink(bool whole) {
    WakeAfter(1);
    stream_.expires_never();
    sink_->Finish(whole, [self = shared_from_this(), whole](HttpResponse r) {
      self->Post(
          [self, whole, r = std::move(r)]() mutable { self->AnswerSink(whole, std::move(r)); });
    });
  }

  void AnswerSink(bool whole, HttpResponse r) {
    sink_.reset();
    if (closed_) return;
    first_request_ = false;
    keep_alive_ = whole && parser_->get().keep_alive();
    if (!whole) linger_ = true;
    if (auto const& observe = server_.options.on_response) {
      observe(sink_request_, r.status, std::chrono::steady_clock::now() - sink_started_);
    }
    sink_request_ = {};
    head_ = false;
    WriteResponse(std::move(r), false);
  }

  // The request is refused before its body was read: answer, then drain what the client still
  // sends (see Linger) so that it reads the answer instead of a reset.
  void Reject(int status, protocol::ProblemType type, std::string detail) {
    keep_alive_ = false;
    linger_ = true;
    auto r = ProblemResponse(protocol::MakeProblemStatus(type, std::move(detail)));
    r.status = status;  // 431 has no problem type of its own
    WriteResponse(std::move(r), false);
  }

  void OnRead(beast::error_code ec) {
    first_request_ = false;
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || closed_) {
      return Close();
    }
    if (ec == http::error::body_limit) {
      return Reject(413, protocol::ProblemType::kRequestTooLarge,
                    "The request body is larger than " + std::to_string(body_limit_) + " bytes.");
    }
    if (ec == http::error::header_limit) {
      return Reject(431, protocol::ProblemType::kGenericBadRequest, "Request headers too large.");
    }
    if (ec) {
      // A malformed request gets a 400 before the connection closes; a dropped one just closes.
      bool parse_error =
          ec.category() == http::make_error_code(http::error::bad_method).category() &&
          ec != http::error::partial_message;
      if (!parse_error) return Close();
      return Reject(400, protocol::ProblemType::kGenericBadRequest,
                    "Malformed HTTP request: " + ec.message());
    }
    stream_.expires_never();
    auto msg = parser_->release();
    keep_alive_ = msg.keep_alive();
    if (websocket::is_upgrade(msg)) upgrade_request_ = msg;
    HttpRequest req = RequestOf(msg);
    req.body = std::move(msg.body());
    head_ = req.method == "HEAD";
    Dispatch(std::move(req), std::move(lease_));
  }

  // A request as handlers see it, without its body.
  HttpRequest RequestOf(http::request<http::string_body> const& msg) const {
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    auto q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = req.target.substr(q + 1);
    req.headers.reserve(16);
    for (auto const& field : msg) {
      req.headers.emplace_back(internal::AsciiLower(field.name_string()),
                               std::string(field.value()));
    }
    req.peer_address = peer_;
    return req;
  }

  void Dispatch(HttpRequest req, std::unique_ptr<BodyLease> lease = nullptr);

  // `counted`: the part of it that counts in backlog_ (stream chunks), given back once written.
  void Queue(std::string data, std::string more = {}, std::size_t counted = 0) {
    if (closed_) {
      backlog_ -= counted;
      return;
    }
    queue_.push_back({std::move(data), std::move(more)});
    counted_.push_back(counted);
    if (!writing_) DoWrite();
  }

  void DoWrite() {
    writing_ = true;
    net::async_write(
        stream_,
        std::array<net::const_buffer, 2>{net::buffer(queue_.front().first),
                                         net::buffer(queue_.front().second)},
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    if (ec) return Close();
    queue_.pop_front();
    backlog_ -= counted_.front();
    counted_.pop_front();
    if (drained_ && backlog_.load() < drained_below_) std::exchange(drained_, {})();
    if (!queue_.empty()) return DoWrite();
    writing_ = false;
    if (file_ && !NextFilePiece()) return;
    if (after_write_ == AfterWrite::kRead) {
      after_write_ = AfterWrite::kNothing;
      DoRead();
    } else if (after_write_ == AfterWrite::kClose) {
      if (linger_) return Linger();
      Close();
    }
  }

  // Queues the next piece of the file being sent; false while it is not done (or it failed and
  // the connection closes: its Content-Length can no longer be kept).
  bool NextFilePiece() {
    constexpr std::int64_t kPiece = 256 * 1024;
    std::int64_t left = file_->length - file_sent_;
    if (left <= 0) {
      file_.reset();
      return true;
    }
    std::string piece(static_cast<std::size_t>(std::min(left, kPiece)), '\0');
    ssize_t n;
    do {
      n = ::pread(file_->fd, piece.data(), piece.size(),
                  static_cast<off_t>(file_->offset + file_sent_));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      file_.reset();
      Close();
      return false;
    }
    piece.resize(static_cast<std::size_t>(n));
    file_sent_ += n;
    Queue(std::move(piece));
    return false;
  }

  // Closing a socket with unread input makes the kernel send a reset, which destroys the answer
  // still on its way to the client. So: end our side, read and drop the client's input until it
  // ends its side too (or kLingerLimit passes), then close.
  static constexpr auto kLingerLimit = std::chrono::seconds(10);
  void Linger() {
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    stream_.expires_after(kLingerLimit);
    Drain();
  }
  void Drain() {
    stream_.async_read_some(net::buffer(hangup_buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Close();
                              self->Drain();
                            });
  }

  // While an answer is due nothing reads the socket, so a client that gives up would hold it
  // (and whatever waits for the answer) until then: watch for it hanging up.
  void WatchWhileAnswerDue(std::weak_ptr<ExchangeImpl> exchange);

  // While streaming, the only way to notice a vanished client is a read that fails.
  void WatchForHangUp() {
    stream_.socket().async_read_some(
        net::buffer(hangup_buffer_),
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return self->Close();
          self->WatchForHangUp();
        });
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  std::shared_ptr<BodyPool> bodies_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::size_t body_limit_ = 0;        // the limit of the request being read
  std::unique_ptr<BodyLease> lease_;  // a large body's share of max_buffered_body_bytes
  std::chrono::steady_clock::time_point body_started_;
  std::uint64_t body_read_ = 0;     // of the body being read in pieces
  std::unique_ptr<BodySink> sink_;  ///< where the body being read goes (body_sink_for)
  HttpRequest sink_request_;        ///< its request, for on_response
  std::uint64_t sink_left_ = 0;     ///< its bytes still to come
  std::chrono::steady_clock::time_point sink_started_;
  std::string sink_buffer_;  ///< kSinkPiece, kept for the connection's next streamed body
  std::deque<std::pair<std::string, std::string>> queue_;  ///< writes: head, then body
  std::deque<std::size_t> counted_;                        ///< each write's share of backlog_
  std::function<void()> drained_;  ///< WhenDrained's callback, waiting for the backlog to fall
  std::size_t drained_below_ = 0;

 public:
  void WhenDrained(std::size_t below, std::function<void()> callback) {
    if (closed_) return;
    if (backlog_.load() < below) return callback();
    drained_below_ = below;
    drained_ = std::move(callback);
  }

 private:
  bool writing_ = false;
  std::shared_ptr<FileBody> file_;  // the file body being sent, piece by piece
  std::int64_t file_sent_ = 0;
  bool keep_alive_ = true;
  bool streaming_ = false;
  bool head_ = false;
  bool first_request_ = true;
  AfterWrite after_write_ = AfterWrite::kNothing;
  std::atomic<bool> closed_{false};
  std::vector<std::pair<void const*, std::function<void()>>> close_callbacks_;
  std::string peer_;
  char hangup_buffer_[512];
  std::optional<http::request<http::string_body>> upgrade_request_;
  bool upgraded_ = false;
  bool linger_ = false;

  friend class ExchangeImpl;
  friend struct HttpServer::Impl;
};

// What may wait in memory for one event-stream reader before it is dropped.
constexpr std::size_t kMaxStreamBacklog = 8u << 20;

class ExchangeImpl : public Exchange {
 public:
  ExchangeImpl(std::shared_ptr<Connection> conn, HttpRequest request, bool head)
      : conn_(std::move(conn)), request_(std::move(request)), head_(head) {}
  ~ExchangeImpl() override { conn_->bodies_->Give(std::move(request_.body)); }

  std::unique_ptr<BodyLease> lease_;  // a large body's share of the bound, until this ends

  HttpRequest const& request() const override { return request_; }
  bool answered() const { return answered_.load(); }

  void Respond(HttpResponse response) override {
    if (answered_.exchange(true)) return;
    Observed(response.status);
    conn_->Post([conn = conn_, r = std::move(response), head = head_, self = this]() mutable {
      conn->WriteResponse(std::move(r), head);
      conn->DropCloseCallbacks(self);
    });
  }

  void StartEventStream(std::vector<std::pair<std::string, std::string>> headers) override {
    if (answered_.exchange(true)) return;
    Observed(200);
    conn_->Post([conn = conn_, h = std::move(headers)] { conn->StartStream(0, h); });
  }

  void StartChunked(int status, std::vector<std::pair<std::string, std::string>> headers) override {
    if (answered_.exchange(true)) return;
    Observed(status);
    conn_->Post([conn = conn_, status, h = std::move(headers)] { conn->StartStream(status, h); });
  }

  void AbortStream() override {
    conn_->Post([conn = conn_] { conn->AbortStream(); });
  }

  bool WriteEvent(std::string chunk) override {
    if (conn_->closed()) return false;
    // A reader that does not keep up (a follower that never reads) is dropped once this much
    // waits for it, instead of the server holding its stream in memory without bound.
    if (conn_->backlog_.load() + chunk.size() > kMaxStreamBacklog) {
      conn_->Post([conn = conn_] { conn->Close(); });
      return false;
    }
    conn_->backlog_ += chunk.size();
    conn_->Post([conn = conn_, c = std::move(chunk)] { conn->QueueChunk(c); });
    return true;
  }

  void EndEventStream() override {
    conn_->Post([conn = conn_] { conn->EndStream(); });
  }

  std::size_t StreamBacklog() const override { return conn_->backlog_.load(); }

  void WhenDrained(std::size_t below, std::function<void()> callback) override {
    conn_->Post([conn = conn_, below, cb = std::move(callback)]() mutable {
      conn->WhenDrained(below, std::move(cb));
    });
  }

  void OnClose(std::function<void()> callback) override {
    conn_->Post([conn = conn_, cb = std::move(callback), self = this]() mutable {
      conn->AddCloseCallback(self, std::move(cb));
    });
  }

  bool IsWebSocketUpgrade() const override { return conn_->is_upgrade(); }

  void AcceptWebSocket(WebSocketHandlers handlers) override {
    if (answered_.exchange(true)) return;
    Observed(101);
    conn_->Post([conn = conn_, h = std::move(handlers)]() mutable { conn->Upgrade(std::move(h)); });
  }

 private:
  void Observed(int status) {
    auto const& observe = conn_->server_.options.on_response;
    if (observe) observe(request_, status, std::chrono::steady_clock::now() - start_);
  }

  std::shared_ptr<Connection> conn_;
  HttpRequest request_;
  bool head_;
  std::atomic<bool> answered_{false};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void Connection::Dispatch(HttpRequest req, std::unique_ptr<BodyLease> lease) {
  auto exchange = std::make_shared<ExchangeImpl>(shared_from_this(), std::move(req), head_);
  exchange->lease_ = std::move(lease);
  try {
    server_.handler(exchange);
  } catch (std::exception const& e) {
    // A handler bug must not take the server down; the client gets a 500.
    exchange->Respond(ProblemResponse(protocol::MakeProblemStatus(
        protocol::ProblemType::kInternalServerError, std::string("unhandled error: ") + e.what())));
  }
  if (!exchange->answered() && !upgrade_request_) WatchWhileAnswerDue(exchange);
}

void Connection::WatchWhileAnswerDue(std::weak_ptr<ExchangeImpl> exchange) {
  stream_.socket().async_wait(
      tcp::socket::wait_read,
      [self = shared_from_this(), exchange = std::move(exchange)](beast::error_code ec) mutable {
        if (self->closed_) return;
        auto x = exchange.lock();
        if (!x || x->answered()) return;  // the answer came; reading resumes after it
        if (ec) return self->Close();
        // Readiness alone proves nothing (it can be reported with no data, e.g. after another
        // read took the bytes): only a peek that reads the end of the stream is a hang-up.
        // Bytes of a pipelined next request stay unread until this answer is written.
        char probe;
        auto n = ::recv(self->stream_.socket().native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0) return;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
          return self->WatchWhileAnswerDue(std::move(exchange));
        }
        self->Close();
      });
}

void HttpServer::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (stopped) return;
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      auto conn = std::make_shared<Connection>(std::move(socket), *this);
      {
        std::lock_guard<std::mutex> lock(mu);
        connections.remove_if([](auto const& w) { return w.expired(); });
        connections.push_back(conn);
      }
      conn->Start();
    }
    Accept();
  });
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                        Handler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->handler = std::move(handler);
  boost::system::error_code ec;
  auto address = net::ip::make_address(impl->options.address, ec);
  if (ec) {
    return Status(StatusCode::kInvalidArgument,
                  "invalid listen address \"" + impl->options.address + "\"");
  }
  tcp::endpoint endpoint(address, impl->options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable, "cannot listen on " + impl->options.address + ":" +
                                                std::to_string(impl->options.port) + ": " +
                                                ec.message());
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->Accept();
  impl->Reap();
  int threads = std::max(1, impl->options.threads);
  for (int i = 0; i < threads; ++i) {
    impl->threads.emplace_back([io = &impl->ioc] { io->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

std::uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  if (impl_->stopped.exchange(true)) return;
  net::post(impl_->ioc, [this] {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
  });
  // Close every connection on its own strand and wait for those closes (their close callbacks
  // end event streams and long polls), then stop whatever still waits on timers.
  std::vector<std::future<void>> closed;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& w : impl_->connections) {
      auto c = w.lock();
      if (!c) continue;
      auto done = std::make_shared<std::promise<void>>();
      closed.push_back(done->get_future());
      c->Post([c, done] {
        c->Close();
        done->set_value();
      });
    }
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& w : impl_->websockets) {
      auto ws = w.lock();
      if (!ws) continue;
      auto done = std::make_shared<std::promise<void>>();
      closed.push_back(done->get_future());
      ws->Abort([done] { done->set_value(); });
    }
  }
  for (auto& f : closed) f.wait_for(std::chrono::seconds(2));
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace bai::server
