// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/block_websocket.h"

#include "libbai/internal/ws_frames.h"
#include "libbai/util/fd_io.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string_view>
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
    if (pipe_[0] >= 0) {
      close(pipe_[0]);
      close(pipe_[1]);
    }
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
      if (!WaitReadable(deadline)) {
        event.kind = WebSocketEvent::Kind::kTimeout;
        return event;
      }
      if (!Fill()) Lost();
    }
  }

  WebSocketEvent ReceiveInto(int out, std::chrono::milliseconds timeout,
                             bool& out_failed) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    WebSocketEvent event;
    while (true) {
      if (Ended()) {
        event.kind = WebSocketEvent::Kind::kClosed;
        return event;
      }
      if (remaining_ > 0 && binary_) {
        // A binary frame's payload: what the buffer holds, then spliced from the socket.
        std::size_t moved = 0;
        if (end_ > begin_) {
          moved = static_cast<std::size_t>(std::min<std::uint64_t>(end_ - begin_, remaining_));
          if (!WriteAll(out, std::string_view(reinterpret_cast<char const*>(rx_.data() + begin_),
                                              moved))) {
            out_failed = true;
          }
          begin_ += moved;
        } else if (splice_ok_) {
          if (!WaitReadable(deadline)) {
            event.kind = WebSocketEvent::Kind::kTimeout;
            return event;
          }
          auto n = Splice(out, out_failed);
          if (n < 0) continue;  // nothing yet, or splice refused (reads from here on)
          if (n == 0) {
            Lost();
            continue;
          }
          moved = static_cast<std::size_t>(n);
        } else {
          if (!WaitReadable(deadline)) {
            event.kind = WebSocketEvent::Kind::kTimeout;
            return event;
          }
          if (!Fill()) Lost();
          continue;
        }
        remaining_ -= moved;
        if (remaining_ == 0 && final_) in_message_ = false;
        event.kind = WebSocketEvent::Kind::kMessage;
        event.message = {std::string(), true};
        return event;
      }
      if (NextMessage(event.message, /*stop_at_binary=*/true)) {
        event.kind = WebSocketEvent::Kind::kMessage;
        return event;
      }
      if (Ended() || (remaining_ > 0 && binary_)) continue;
      if (!WaitReadable(deadline)) {
        event.kind = WebSocketEvent::Kind::kTimeout;
        return event;
      }
      if (!FillHeader()) Lost();
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

  // Waits until the socket can be read or `deadline` passes (false).
  bool WaitReadable(std::chrono::steady_clock::time_point deadline) {
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) left = std::chrono::milliseconds(0);
      pollfd p{fd_, POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      return ready != 0;
    }
  }

  // Reads no further than the next header when the buffer holds none whole, so the payload
  // behind a binary frame's header stays in the socket for splice; otherwise as Fill.
  bool FillHeader() {
    std::size_t have = end_ - begin_;
    std::size_t want = 0;
    if (remaining_ == 0) {
      if (have < 2) {
        want = 2 - have;
      } else {
        std::uint8_t len7 = rx_[begin_ + 1] & 0x7F;
        std::size_t whole = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
        if (have < whole) want = whole - have;
      }
    }
    if (want == 0 || !splice_ok_) return Fill();
    if (begin_ > 0 && begin_ == end_) begin_ = end_ = 0;
    if (end_ + want > rx_.size()) {
      std::memmove(rx_.data(), rx_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    while (true) {
      ssize_t n = read(fd_, rx_.data() + end_, want);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      end_ += static_cast<std::size_t>(n);
      return true;
    }
  }

  // Moves up to the rest of the frame's payload from the socket to `out` through a pipe,
  // without copying it here: its size, 0 at the socket's end, -1 when nothing came or splice is
  // refused (then reads are used from here on). A failure of `out` sets `out_failed`; the
  // bytes taken from the socket are then dropped with the pipe.
  ssize_t Splice(int out, bool& out_failed) {
    if (pipe_[0] < 0) {
      if (pipe2(pipe_, O_CLOEXEC) != 0) {
        splice_ok_ = false;
        return -1;
      }
      int size = fcntl(pipe_[1], F_SETPIPE_SZ, 1 << 20);
      pipe_size_ = size > 0 ? static_cast<std::size_t>(size) : 65536;
    }
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, pipe_size_));
    ssize_t n = splice(fd_, nullptr, pipe_[1], nullptr, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) splice_ok_ = false;
      return -1;
    }
    // splice(2) to a socket whose peer has gone raises SIGPIPE (it has no MSG_NOSIGNAL): held
    // back on this thread while it runs, and the one it raised taken before letting go.
    sigset_t pipe_signal, before;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
    struct Restore {
      sigset_t const& pipe_signal;
      sigset_t const& before;
      bool raised = false;
      ~Restore() {
        if (raised && !sigismember(&before, SIGPIPE)) {
          timespec zero{0, 0};
          sigtimedwait(&pipe_signal, nullptr, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
      }
    } restore{pipe_signal, before};
    for (ssize_t left = n; left > 0;) {
      ssize_t m = out_failed ? -1
                             : splice(pipe_[0], nullptr, out, nullptr,
                                      static_cast<std::size_t>(left), SPLICE_F_MOVE);
      if (m < 0 && errno == EPIPE) restore.raised = true;
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) {
        // `out` is gone: what the pipe holds is dropped with it.
        out_failed = true;
        close(pipe_[0]);
        close(pipe_[1]);
        pipe_[0] = pipe_[1] = -1;
        break;
      }
      left -= m;
    }
    return n;
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
  bool NextMessage(WebSocketMessage& out, bool stop_at_binary = false) {
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
      if (stop_at_binary && binary_) return false;  // ReceiveInto moves the payload
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
  // ReceiveInto's pipe for splice(2), made on first use; splice_ok_ false where it failed.
  int pipe_[2] = {-1, -1};
  std::size_t pipe_size_ = 0;
  bool splice_ok_ = true;
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
