// SPDX-License-Identifier: Apache-2.0
// The WebSocket client: libwebsockets, one context and service thread per connection. Every lws
// call but lws_cancel_service happens on the service thread; other threads queue work under
// the mutex and wake it with lws_cancel_service.
#include "libbai/internal/lws_websocket.h"

#include "libbai/internal/block_websocket.h"
#include "libbai/util/url.h"

#include <fcntl.h>
#include <libwebsockets.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace bai::internal {
namespace {

enum class State { kConnecting, kOpen, kClosed };

constexpr std::size_t kRxBuffer = 256 << 10;

class LwsConnection : public WebSocketConnection {
 public:
  explicit LwsConnection(LwsWebSocketOptions options) : options_(std::move(options)) {}

  ~LwsConnection() override {
    Cancel();
    if (thread_.joinable()) thread_.join();
  }

  // Connects and waits for the upgrade's answer.
  Status Open(TransportRequest const& request) {
    auto endpoint = ParseEndpoint(request.origin);
    if (!endpoint.ok()) return endpoint.status();
    tls_ = request.origin.rfind("https://", 0) == 0;
    // host is "name", "name:port", "[v6]" or "[v6]:port".
    std::string authority = endpoint->host;
    port_ = tls_ ? 443 : 80;
    auto colon = authority.rfind(':');
    if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
      port_ = std::atoi(authority.c_str() + colon + 1);
      authority.resize(colon);
    }
    if (authority.size() >= 2 && authority.front() == '[' && authority.back() == ']') {
      authority = authority.substr(1, authority.size() - 2);
    }
    address_ = authority;
    target_ = request.target;
    host_ = request.host;
    for (auto const& [name, value] : request.headers) {
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      // lws writes Host itself; a WebSocket upgrade carries no Content-Type (PROTOCOL.md §2.2).
      if (lower == "host" || lower == "content-type") continue;
      if (lower == "x-bai-tunnel") {
        // Asked on the wire as a subprotocol; the socket can be handed over on plain TCP only.
        block_asked_ = !tls_ && value == kBlockTunnelValue;
        continue;
      }
      headers_.emplace_back(lower + ":", value);
    }
    if (!options_.user_agent.empty()) headers_.emplace_back("user-agent:", options_.user_agent);

    static std::once_flag quiet;
    std::call_once(quiet, [] { lws_set_log_level(0, nullptr); });

    // A large receive buffer: libwebsockets reads at most this much per service round (its
    // default, 4 KiB, held a tunnel to a few MB/s).
    // The subprotocol offered is one of this client's, so that libwebsockets accepts a server
    // that answers it (whether one did is read from the answer: FILTER_PRE_ESTABLISH).
    protocols_[0] = {"bai", &LwsConnection::Callback, 0, kRxBuffer, 0, nullptr, 0};
    protocols_[1] = {kBlockSubprotocol, &LwsConnection::Callback, 0, kRxBuffer, 0, nullptr, 0};
    protocols_[2] = {nullptr, nullptr, 0, 0, 0, nullptr, 0};
    lws_context_creation_info info;
    std::memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols_;
    info.gid = -1;
    info.uid = -1;
    info.user = this;
    info.fd_limit_per_thread = 16;
    auto seconds = static_cast<unsigned>(
        std::max<std::int64_t>(1, (options_.connect_timeout.count() + 999) / 1000));
    info.timeout_secs = seconds;
    info.connect_timeout_secs = seconds;
    if (tls_) {
      info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
      if (!options_.ca_bundle.empty()) info.client_ssl_ca_filepath = options_.ca_bundle.c_str();
    }
    context_ = lws_create_context(&info);
    if (!context_) return Status(StatusCode::kInternal, "libwebsockets: cannot create a context");

    retry_.secs_since_valid_ping = static_cast<std::uint16_t>(options_.ping_seconds);
    retry_.secs_since_valid_hangup = static_cast<std::uint16_t>(options_.ping_seconds * 2 + 10);
    lws_client_connect_info ci;
    std::memset(&ci, 0, sizeof ci);
    ci.context = context_;
    ci.address = address_.c_str();
    ci.port = port_;
    ci.path = target_.c_str();
    ci.host = host_.c_str();
    ci.origin = nullptr;
    ci.protocol = block_asked_ ? kBlockSubprotocol : nullptr;
    ci.pwsi = &wsi_;
    ci.retry_and_idle_policy = &retry_;
    if (tls_) {
      ci.ssl_connection = LCCSCF_USE_SSL;
      if (!options_.verify_tls) {
        ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK |
                             LCCSCF_ALLOW_EXPIRED | LCCSCF_ALLOW_INSECURE;
      }
    }
    if (!lws_client_connect_via_info(&ci)) {
      lws_context_destroy(context_);
      context_ = nullptr;
      return Status(StatusCode::kUnavailable, "cannot connect to " + request.origin);
    }
    serving_ = true;
    thread_ = std::thread([this] { Serve(); });
    std::unique_lock<std::mutex> lock(mu_);
    // libwebsockets' own timeouts end a connect or upgrade that hangs; this bound is a backstop.
    if (!cv_.wait_for(lock, options_.connect_timeout + std::chrono::seconds(5),
                      [this] { return state_ != State::kConnecting || cancelled_; })) {
      lock.unlock();
      Cancel();
      return Status(StatusCode::kDeadlineExceeded,
                    request.origin + request.target + ": the WebSocket upgrade timed out");
    }
    // Established counts even when the peer has closed meanwhile (a refusal sent right after the
    // upgrade can end it before this thread wakes): its messages and close code are read next.
    if (established_) return Status();
    ErrorInfo e;
    e.http_status = http_status_;
    if (http_status_ == 0) e.type = "connect-failure";
    std::string why = error_.empty() ? "the WebSocket upgrade failed" : error_;
    if (http_status_ != 0) {
      why = "the WebSocket upgrade was answered with HTTP " + std::to_string(http_status_);
    }
    return Status(http_status_ == 0 ? StatusCode::kUnavailable : StatusCode::kFailedPrecondition,
                  request.origin + request.target + ": " + why, std::move(e));
  }

  /// The upgraded socket, when the server agreed to block frames (-1 otherwise); the caller
  /// owns it, and libwebsockets has let go of it.
  int TakeSocket() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(taken_fd_, -1);
  }

  Status Send(WebSocketMessage message) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] {
      return cancelled_ || state_ != State::kOpen || out_bytes_ < options_.max_queued;
    });
    if (cancelled_ || state_ != State::kOpen || closing_) return ClosedStatus();
    std::string framed(LWS_PRE, '\0');
    framed += message.data;
    out_bytes_ += message.data.size();
    out_.push_back({std::move(framed), message.binary});
    lock.unlock();
    Wake();
    return Status();
  }

  WebSocketEvent Receive(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout,
                 [this] { return !in_.empty() || cancelled_ || state_ == State::kClosed; });
    WebSocketEvent event;
    if (!in_.empty()) {
      event.kind = WebSocketEvent::Kind::kMessage;
      event.message = std::move(in_.front());
      in_.pop_front();
      in_bytes_ -= event.message.data.size();
      if (rx_paused_ && in_bytes_ < options_.max_queued / 2) {
        want_resume_ = true;
        lock.unlock();
        Wake();
      }
      return event;
    }
    event.kind = state_ == State::kClosed || cancelled_ ? WebSocketEvent::Kind::kClosed
                                                        : WebSocketEvent::Kind::kTimeout;
    return event;
  }

  void Close(int code, std::string reason) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == State::kClosed || closing_) return;
      closing_ = true;
      close_code_out_ = code;
      close_reason_out_ = std::move(reason);
    }
    Wake();
  }

  void Cancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_ || state_ == State::kClosed) {
        cancelled_ = true;
        cv_.notify_all();
        return;
      }
      cancelled_ = true;
      cv_.notify_all();
    }
    Wake();
  }

  Status CloseStatus() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != State::kClosed && !cancelled_) return Status();
    return ClosedStatus();
  }

  int close_code() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return state_ == State::kClosed ? close_code_in_ : 0;
  }

 private:
  struct Outgoing {
    std::string framed;  // LWS_PRE bytes of room, then the payload
    bool binary;
  };

  Status ClosedStatus() const {
    if (cancelled_) return Status(StatusCode::kCancelled, "the WebSocket was cancelled");
    return WebSocketCloseStatus(close_code_in_, close_reason_in_);
  }

  void Serve() {
    while (true) {
      lws_service(context_, 0);
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == State::kClosed) break;
    }
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      serving_ = false;
    }
    lws_context_destroy(context_);
  }

  // Wakes the service thread from another thread; nothing once it has stopped (its context is
  // being destroyed).
  void Wake() {
    std::lock_guard<std::mutex> lock(wake_mu_);
    if (serving_) lws_cancel_service(context_);
  }

  // Runs on the service thread, woken by lws_cancel_service.
  void OnWake() {
    bool kill = false, resume = false, write = false;
    lws* wsi;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wsi = wsi_;
      if (!wsi) return;
      kill = cancelled_;
      if (!kill && want_resume_) {
        want_resume_ = false;
        rx_paused_ = false;
        resume = true;
      }
      write = !kill && state_ == State::kOpen && (!out_.empty() || closing_);
    }
    // lws calls outside the lock: they may call back into this object.
    if (kill) {
      // Ends the connection without a close handshake, from the service thread.
      lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
      return;
    }
    if (resume) lws_rx_flow_control(wsi, 1);
    if (write) lws_callback_on_writable(wsi);
  }

  int OnWritable(lws* wsi) {
    std::unique_lock<std::mutex> lock(mu_);
    if (cancelled_) return -1;
    if (!out_.empty()) {
      Outgoing m = std::move(out_.front());
      out_.pop_front();
      std::size_t size = m.framed.size() - LWS_PRE;
      lock.unlock();
      auto* data = reinterpret_cast<unsigned char*>(m.framed.data()) + LWS_PRE;
      int n = lws_write(wsi, data, size, m.binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
      lock.lock();
      out_bytes_ -= size;
      cv_.notify_all();
      if (n < static_cast<int>(size)) return -1;
      if (!out_.empty() || closing_) lws_callback_on_writable(wsi);
      return 0;
    }
    if (closing_) {
      lws_close_reason(wsi, static_cast<lws_close_status>(close_code_out_),
                       reinterpret_cast<unsigned char*>(close_reason_out_.data()),
                       std::min<std::size_t>(close_reason_out_.size(), 120));
      we_closed_ = true;
      return -1;
    }
    return 0;
  }

  int OnReceive(lws* wsi, void* in, std::size_t len) {
    std::unique_lock<std::mutex> lock(mu_);
    if (lws_is_first_fragment(wsi)) {
      partial_.clear();
      partial_binary_ = lws_frame_is_binary(wsi) != 0;
    }
    partial_.append(static_cast<char const*>(in), len);
    if (partial_.size() > options_.max_message) {
      lock.unlock();
      lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, nullptr, 0);
      return -1;
    }
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) != 0) return 0;
    in_bytes_ += partial_.size();
    in_.push_back({std::move(partial_), partial_binary_});
    partial_.clear();
    if (in_bytes_ >= options_.max_queued && !rx_paused_) {
      rx_paused_ = true;
      lws_rx_flow_control(wsi, 0);
    }
    cv_.notify_all();
    return 0;
  }

  // The connection is over (the first reason given counts); the service loop stops.
  void Ended(int code, std::string reason) {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != State::kClosed) {
      close_code_in_ = code;
      close_reason_in_ = std::move(reason);
      state_ = State::kClosed;
    }
    cv_.notify_all();
    // The callback runs inside lws_service, which would go on to poll until its next timer:
    // wake it so that Serve sees the end.
    lws_cancel_service(context_);
  }

  static int Callback(lws* wsi, lws_callback_reasons reason, void* user, void* in,
                      std::size_t len) {
    (void)user;
    if (!wsi) return 0;  // context-wide notifications this client does not use
    auto* self = static_cast<LwsConnection*>(lws_context_user(lws_get_context(wsi)));
    if (!self) return 0;
    switch (reason) {
      case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
        auto** p = static_cast<unsigned char**>(in);
        unsigned char* end = *p + len;
        for (auto const& [name, value] : self->headers_) {
          if (lws_add_http_header_by_name(wsi, reinterpret_cast<unsigned char const*>(name.c_str()),
                                          reinterpret_cast<unsigned char const*>(value.data()),
                                          static_cast<int>(value.size()), p, end)) {
            return -1;
          }
        }
        return 0;
      }
      case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH: {
        // The answer's headers are readable here (not after): did it agree to block frames?
        if (self->block_asked_) {
          char agreed[32] = {};
          int n = lws_hdr_copy(wsi, agreed, sizeof agreed, WSI_TOKEN_PROTOCOL);
          self->block_agreed_ = n > 0 && std::string_view(agreed) == kBlockSubprotocol;
        }
        return 0;
      }
      case LWS_CALLBACK_CLIENT_ESTABLISHED: {
        if (self->block_asked_ && self->TakeOver(wsi)) return 0;
        std::lock_guard<std::mutex> lock(self->mu_);
        self->state_ = State::kOpen;
        self->established_ = true;
        self->cv_.notify_all();
        if (!self->out_.empty() || self->closing_) lws_callback_on_writable(wsi);
        return 0;
      }
      case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        {
          std::lock_guard<std::mutex> lock(self->mu_);
          self->http_status_ = static_cast<int>(lws_http_client_http_response(wsi));
          if (self->http_status_ == 101 || self->http_status_ < 0) self->http_status_ = 0;
          self->error_ = in ? std::string(static_cast<char const*>(in),
                                          strnlen(static_cast<char const*>(in), len ? len : 256))
                            : "";
          self->wsi_ = nullptr;
        }
        self->Ended(1006, "");
        return 0;
      }
      case LWS_CALLBACK_CLIENT_RECEIVE:
        return self->OnReceive(wsi, in, len);
      case LWS_CALLBACK_CLIENT_WRITEABLE:
        return self->OnWritable(wsi);
      case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: {
        std::lock_guard<std::mutex> lock(self->mu_);
        auto const* b = static_cast<unsigned char const*>(in);
        if (len >= 2) {
          self->peer_code_ = (b[0] << 8) | b[1];
          self->peer_reason_.assign(reinterpret_cast<char const*>(b) + 2, len - 2);
        } else {
          self->peer_code_ = 1005;  // a close frame without a code
        }
        return 0;
      }
      case LWS_CALLBACK_CLIENT_CLOSED: {
        int code;
        std::string why;
        {
          std::lock_guard<std::mutex> lock(self->mu_);
          if (self->peer_code_ != 0) {
            code = self->peer_code_ == 1005 ? 1000 : self->peer_code_;
            why = self->peer_reason_;
          } else if (self->we_closed_) {
            code = self->close_code_out_;
            why = self->close_reason_out_;
          } else {
            code = 1006;
            why = "the connection was lost";
          }
        }
        self->Ended(code, why);
        return 0;
      }
      case LWS_CALLBACK_WSI_DESTROY: {
        {
          std::lock_guard<std::mutex> lock(self->mu_);
          if (self->wsi_ == wsi) self->wsi_ = nullptr;
        }
        self->Ended(1006, "");
        return 0;
      }
      case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        self->OnWake();
        return 0;
      default:
        return 0;
    }
  }

  // Block frames agreed (the answer names the subprotocol): the socket is duplicated for the
  // caller, libwebsockets' descriptor is pointed at a dead socket (so whatever it writes or
  // closes now touches nothing of the connection) and its connection is ended. The server sends
  // nothing before the client's first frame, so libwebsockets has read nothing past the 101.
  bool TakeOver(lws* wsi) {
    if (!block_agreed_) return false;
    int fd = lws_get_socket_fd(wsi);
    if (fd < 0) return false;
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    int dead[2];
    if (mine < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, dead) != 0) {
      if (mine >= 0) close(mine);
      return false;
    }
    close(dead[1]);
    dup2(dead[0], fd);
    close(dead[0]);
    {
      std::lock_guard<std::mutex> lock(mu_);
      taken_fd_ = mine;
      established_ = true;
      state_ = State::kClosed;  // this object's part is over; the caller serves the socket
      close_code_in_ = 1000;
      cv_.notify_all();
    }
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    lws_cancel_service(context_);
    return true;
  }

  LwsWebSocketOptions options_;
  bool block_asked_ = false;
  bool block_agreed_ = false;
  int taken_fd_ = -1;
  bool tls_ = false;
  std::string address_;
  int port_ = 0;
  std::string target_;
  std::string host_;
  std::vector<std::pair<std::string, std::string>> headers_;
  lws_protocols protocols_[3];
  lws_retry_bo_t retry_{};
  lws_context* context_ = nullptr;
  std::thread thread_;
  std::mutex wake_mu_;  // held while waking the service thread, and when it stops serving
  bool serving_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  lws* wsi_ = nullptr;
  State state_ = State::kConnecting;
  bool established_ = false;  ///< the upgrade succeeded (state_ may be kClosed since)
  bool cancelled_ = false;
  bool closing_ = false;
  bool we_closed_ = false;
  int close_code_out_ = 1000;
  std::string close_reason_out_;
  int peer_code_ = 0;
  std::string peer_reason_;
  int close_code_in_ = 0;
  std::string close_reason_in_;
  int http_status_ = 0;
  std::string error_;
  std::deque<Outgoing> out_;
  std::size_t out_bytes_ = 0;
  std::deque<WebSocketMessage> in_;
  std::size_t in_bytes_ = 0;
  bool rx_paused_ = false;
  bool want_resume_ = false;
  std::string partial_;
  bool partial_binary_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<WebSocketConnection>> OpenLwsWebSocket(
    TransportRequest const& request, LwsWebSocketOptions const& options) {
  auto c = std::make_unique<LwsConnection>(options);
  if (auto s = c->Open(request); !s.ok()) return s;
  if (int fd = c->TakeSocket(); fd >= 0) {
    c.reset();  // libwebsockets' context ends (its descriptor is a dead socket now)
    return MakeBlockWebSocket(fd, options.max_message);
  }
  return std::unique_ptr<WebSocketConnection>(std::move(c));
}

}  // namespace bai::internal
