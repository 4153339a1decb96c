// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/block_websocket.h"

#include "libbai/internal/ws_frames.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

namespace bai::internal {
namespace {

constexpr std::size_t kReadBlock = 256 << 10;

class BlockConnection : public WebSocketConnection {
 public:
  BlockConnection(int fd, std::size_t max_message) : fd_(fd), max_message_(max_message) {
    // Blocking writes push back on the sender; reads wait in poll with Receive's timeout.
    int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0) fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
    if (getrandom(&seed_, sizeof seed_, 0) != static_cast<ssize_t>(sizeof seed_)) {
      seed_ =
          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
          reinterpret_cast<std::uintptr_t>(this);
    }
    rx_.resize(kReadBlock + ws::kMaxHeader);
  }

  ~BlockConnection() override {
    Cancel();
    close(fd_);
  }

  Status Send(WebSocketMessage message) override {
    return Write(message.binary ? ws::kBinary : ws::kText, std::move(message.data));
  }

  WebSocketEvent Receive(std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    WebSocketEvent event;
    while (true) {
      if (Ended()) {
        event.kind = WebSocketEvent::Kind::kClosed;
        return event;
      }
      if (NextMessage(event.message)) {
        event.kind = WebSocketEvent::Kind::kMessage;
        return event;
      }
      if (Ended()) continue;  // a close frame was read
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) left = std::chrono::milliseconds(0);
      pollfd p{fd_, POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        event.kind = WebSocketEvent::Kind::kTimeout;
        return event;
      }
      if (!Fill()) Lost();
    }
  }

  void Close(int code, std::string reason) override {
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      if (close_sent_ || closed_ || cancelled_) return;
    }
    std::string payload;
    payload.push_back(static_cast<char>(code >> 8));
    payload.push_back(static_cast<char>(code & 0xFF));
    payload += reason.substr(0, 120);
    (void)Write(ws::kClose, std::move(payload));
  }

  void Cancel() override {
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      if (cancelled_) return;
      cancelled_ = true;
    }
    shutdown(fd_, SHUT_RDWR);
  }

  Status CloseStatus() const override {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (cancelled_) return Status(StatusCode::kCancelled, "the WebSocket was cancelled");
    if (!closed_) return Status();
    return WebSocketCloseStatus(close_code_, close_reason_);
  }

  int close_code() const override {
    std::lock_guard<std::mutex> lock(state_mu_);
    return closed_ ? close_code_ : 0;
  }

 private:
  bool Ended() const {
    std::lock_guard<std::mutex> lock(state_mu_);
    return closed_ || cancelled_;
  }

  void Lost() {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!closed_) {
      closed_ = true;
      close_code_ = 1006;
      close_reason_ = "the connection was lost";
    }
  }

  void Ended(int code, std::string reason) {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!closed_) {
      closed_ = true;
      close_code_ = code;
      close_reason_ = std::move(reason);
    }
  }

  std::array<std::uint8_t, 4> NextMask() {
    // splitmix64: unpredictable enough for a mask, seeded from getrandom.
    std::uint64_t z = (seed_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    std::array<std::uint8_t, 4> m;
    std::memcpy(m.data(), &z, 4);
    return m;
  }

  // One masked frame, header and payload in one writev.
  Status Write(std::uint8_t opcode, std::string payload) {
    std::lock_guard<std::mutex> write_lock(write_mu_);
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      if (cancelled_) return Status(StatusCode::kCancelled, "the WebSocket was cancelled");
      if (closed_ || close_sent_) return WebSocketCloseStatus(closed_ ? close_code_ : 1000, "");
      if (opcode == ws::kClose) close_sent_ = true;
    }
    ws::FrameHeader h;
    h.opcode = opcode;
    h.length = payload.size();
    h.masked = true;
    h.mask = NextMask();  // under write_mu_, as seed_ is
    std::uint8_t head[ws::kMaxHeader];
    std::size_t head_size = ws::EncodeHeader(h, head);
    ws::ApplyMask(reinterpret_cast<std::uint8_t*>(payload.data()), payload.size(), h.mask, 0);
    iovec parts[2] = {{head, head_size}, {payload.data(), payload.size()}};
    int count = 2;
    iovec* at = parts;
    while (count > 0) {
      ssize_t n = writev(fd_, at, count);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Lost();
        return WebSocketCloseStatus(1006, "the connection was lost");
      }
      auto done = static_cast<std::size_t>(n);
      while (count > 0 && done >= at->iov_len) {
        done -= at->iov_len;
        ++at;
        --count;
      }
      if (count > 0) {
        at->iov_base = static_cast<char*>(at->iov_base) + done;
        at->iov_len -= done;
      }
    }
    return Status();
  }

  // Reads what the socket has into the buffer; false at its end.
  bool Fill() {
    if (begin_ > 0 && begin_ == end_) begin_ = end_ = 0;
    if (end_ == rx_.size()) {
      std::memmove(rx_.data(), rx_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    while (true) {
      ssize_t n = read(fd_, rx_.data() + end_, rx_.size() - end_);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      end_ += static_cast<std::size_t>(n);
      return true;
    }
  }

  // The next message from the buffer, or false when more bytes are needed. A binary message's
  // payload is passed on a piece at a time as it arrives (a tunnel's bytes are a stream); a
  // text message whole. Pings are answered; a close ends the connection.
  bool NextMessage(WebSocketMessage& out) {
    while (true) {
      if (remaining_ == 0) {
        ws::FrameHeader h;
        std::size_t size = 0;
        auto r = ws::ParseHeader(rx_.data() + begin_, end_ - begin_, /*from_server=*/true, h, size);
        if (r == ws::ParseResult::kIncomplete) return false;
        if (r == ws::ParseResult::kMalformed) {
          Close(1002, "malformed frame");
          Ended(1002, "the server sent a malformed frame");
          return false;
        }
        bool control = (h.opcode & 0x08) != 0;
        if (control && end_ - begin_ < size + h.length) return false;  // read whole (≤ 139)
        begin_ += size;
        if (control) {
          std::string payload(reinterpret_cast<char const*>(rx_.data() + begin_), h.length);
          begin_ += h.length;
          if (h.opcode == ws::kPing) {
            (void)Write(ws::kPong, payload);
          } else if (h.opcode == ws::kClose) {
            int code = payload.size() >= 2 ? (static_cast<std::uint8_t>(payload[0]) << 8) |
                                                 static_cast<std::uint8_t>(payload[1])
                                           : 1005;
            std::string reason = payload.size() > 2 ? payload.substr(2) : "";
            Close(code == 1005 ? 1000 : code, "");
            Ended(code == 1005 ? 1000 : code, reason);
            return false;
          }
          continue;
        }
        if (h.opcode == ws::kContinuation) {
          if (!in_message_) {
            Close(1002, "continuation without a message");
            Ended(1002, "the server sent a continuation without a message");
            return false;
          }
        } else {
          if (in_message_) {
            Close(1002, "a new message inside a fragmented one");
            Ended(1002, "the server began a message inside another");
            return false;
          }
          in_message_ = true;
          binary_ = h.opcode == ws::kBinary;
          text_.clear();
        }
        remaining_ = h.length;
        final_ = h.fin;
        if (remaining_ == 0) {
          if (final_) in_message_ = false;
          if (!binary_ && final_) {
            out = {std::move(text_), false};
            text_.clear();
            return true;
          }
          continue;
        }
      }
      std::size_t have = end_ - begin_;
      if (have == 0) return false;
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(have, remaining_));
      char const* at = reinterpret_cast<char const*>(rx_.data() + begin_);
      begin_ += take;
      remaining_ -= take;
      bool done = remaining_ == 0 && final_;
      if (done) in_message_ = false;
      if (binary_) {
        out = {std::string(at, take), true};
        return true;
      }
      text_.append(at, take);
      if (text_.size() > max_message_) {
        Close(1009, "message too large");
        Ended(1009, "the server's message was too large");
        return false;
      }
      if (done) {
        out = {std::move(text_), false};
        text_.clear();
        return true;
      }
    }
  }

  int fd_;
  std::size_t max_message_;
  std::uint64_t seed_ = 0;
  std::mutex write_mu_;
  mutable std::mutex state_mu_;
  bool closed_ = false;
  bool cancelled_ = false;
  bool close_sent_ = false;
  int close_code_ = 0;
  std::string close_reason_;
  // Receive's own (one reader at a time).
  std::vector<std::uint8_t> rx_;
  std::size_t begin_ = 0, end_ = 0;
  std::uint64_t remaining_ = 0;  // of the current frame's payload
  bool final_ = true, binary_ = true, in_message_ = false;
  std::string text_;
};

}  // namespace

std::unique_ptr<WebSocketConnection> MakeBlockWebSocket(int fd, std::size_t max_message) {
  auto c = std::make_unique<BlockConnection>(fd, max_message);
  (void)c->Send({kBlockGo, false});
  return c;
}

}  // namespace bai::internal
