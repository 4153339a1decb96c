// SPDX-License-Identifier: Apache-2.0
#pragma once
// The seam between the SDK and the network: requests and responses as plain structs, and the
// Transport interface a Client sends through. The default transport is libcurl; set
// Options::transport to supply another one (a test double, a different HTTP stack). Mocks for
// tests: bai/mocks/mock_transport.h.

#include "bai/export.h"
#include "bai/status.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai {

/// Ends a streaming request from another thread at once: SendStreaming returns as if the
/// consumer had stopped the stream (ok). Without one, a consumer can stop only when its data
/// callback runs (about once a second while the stream is quiet).
class BAI_EXPORT StreamCancel {
 public:
  void Cancel();
  bool cancelled() const;

  /// For transports: `wake` (called under this object's lock) interrupts the transfer in
  /// progress; Detach before it becomes invalid.
  void Attach(std::function<void()> wake);
  void Detach();

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  std::function<void()> wake_;
};

/// One HTTP request to the manager, before signing.
struct ApiRequest {
  ApiRequest() = default;
  ApiRequest(std::string m, std::string p) : method(std::move(m)), path(std::move(p)) {}

  std::string method = "GET";
  /// Path and query relative to the endpoint ("/session/abc/logs?kernel_id=…"). Characters that
  /// are not allowed in a URL are percent-encoded; existing %XX escapes are kept.
  std::string path = "/";
  std::string body;
  std::string content_type = "application/json";             ///< used only when body is not empty
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers
  /// Overrides the method's idempotency (GET, HEAD, PUT, DELETE, OPTIONS are idempotent).
  std::optional<bool> idempotent;
  bool sign = true;  ///< false = anonymous even when the client has credentials
  /// Streaming requests: a way to end the stream from another thread.
  std::shared_ptr<StreamCancel> cancel;
};

/// One HTTP response.
struct ApiResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased
  std::string body;

  /// The first header called `name` (case-insensitive).
  BAI_EXPORT std::optional<std::string> Header(std::string_view name) const;
};

/// A request as it goes on the wire: the Client has chosen the endpoint, the API version and
/// the exact target. When `sign` is set the Client's signing layer adds Date and Authorization
/// before the transport sees it, over exactly these `target`, `host` and headers.
struct TransportRequest {
  std::string method;
  std::string origin;  ///< "http://127.0.0.1:8081": scheme and authority
  std::string target;  ///< request-target: base path + path + "?" + query, percent-encoded
  std::string host;    ///< Host header value (the authority as written in the endpoint)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// A body read as it is sent, instead of `body` (a relay passing a body on as it arrives;
  /// never signed): fills up to `room` bytes of `out` and returns how many, waiting while none
  /// is ready; 0 once all `body_length` bytes were given, -1 to end the request as failed.
  std::function<std::ptrdiff_t(char* out, std::size_t room)> body_reader;
  std::int64_t body_length = 0;
  std::string api_version;
  bool sign = true;
  std::shared_ptr<StreamCancel> cancel;  ///< from ApiRequest::cancel
};

/// One WebSocket message: a text or a binary frame's payload.
struct WebSocketMessage {
  std::string data;
  bool binary = false;
};

/// What WebSocketConnection::Receive found.
struct WebSocketEvent {
  enum class Kind {
    kMessage,  ///< `message` arrived
    kTimeout,  ///< nothing within the time asked; the socket is still open
    kClosed,   ///< the socket is closed: CloseStatus() says how
  };
  Kind kind = Kind::kTimeout;
  WebSocketMessage message;
};

/// An open WebSocket (RFC 6455). Thread-safe: one thread may wait in Receive while others Send,
/// Close or Cancel. Memory is bounded both ways: Send blocks while the outgoing queue is full,
/// and a full incoming queue stops reading from the network until Receive takes some, so a slow
/// reader pushes back on the server instead of growing this process.
class BAI_EXPORT WebSocketConnection {
 public:
  virtual ~WebSocketConnection();
  /// Queues a message, waiting while the outgoing queue is full; fails once the socket is closed
  /// (with CloseStatus(), or kCancelled after Cancel()).
  virtual Status Send(WebSocketMessage message) = 0;
  /// Waits up to `timeout` for the next message (messages already received come before the
  /// close).
  virtual WebSocketEvent Receive(std::chrono::milliseconds timeout) = 0;
  /// Receive, with binary messages' bytes written to the descriptor `out` instead of into the
  /// event (its message is then binary and empty): a tunnel's data forwarded without passing
  /// through this process where the connection can (block frames move them with splice(2)).
  /// `out_failed` is set when writing to `out` failed (the event is then kClosed-free: the
  /// WebSocket is still open). Text messages come as Receive's.
  virtual WebSocketEvent ReceiveInto(int out, std::chrono::milliseconds timeout, bool& out_failed);
  /// Starts a clean close with `code` and `reason` once queued messages are written.
  virtual void Close(int code, std::string reason) = 0;
  /// From any thread: ends the connection at once (no close handshake); waiting Send and
  /// Receive return at once.
  virtual void Cancel() = 0;
  /// How the socket closed: ok for a normal close (1000); otherwise the close code as a Status
  /// (1001 going away and 1013 try again later: kUnavailable; 1011: kInternal; 1008:
  /// kPermissionDenied; 1009: kResourceExhausted; 1006, no close frame: kUnavailable; after
  /// Cancel(): kCancelled), the code in the message. Ok while the socket is open.
  virtual Status CloseStatus() const = 0;
  /// The close code received (1006 when none came); 0 while open.
  virtual int close_code() const = 0;
};

/// The Status for a WebSocket close `code` with `reason` (as WebSocketConnection::CloseStatus).
BAI_EXPORT Status WebSocketCloseStatus(int code, std::string_view reason);

/// Moves bytes. Implementations must be thread-safe: one Client sends from many threads.
class BAI_EXPORT Transport {
 public:
  virtual ~Transport();
  /// The response, whatever its status. Fails only when no HTTP response arrived (connection,
  /// TLS, timeout): StatusCode::kUnavailable for a failure worth retrying.
  virtual StatusOr<ApiResponse> Send(TransportRequest const& request) = 0;

  /// Like Send, but a 2xx body goes to `on_data` as it arrives instead of into the response.
  /// An empty chunk comes first, when the 2xx headers have arrived, and again about once a
  /// second while the stream is quiet, so a caller can stop a silent stream; returning false
  /// from `on_data` ends the transfer (not an error). Other statuses are buffered as usual.
  virtual StatusOr<ApiResponse> SendStreaming(TransportRequest const& request,
                                              std::function<bool(std::string_view)> on_data) = 0;
  /// Opens a WebSocket with a GET upgrade of `request` (no body; signed like any request when
  /// `sign` is set, PROTOCOL.md §2.2). Returns once the upgrade is answered. A refusal with an
  /// HTTP status fails with ErrorInfo::http_status set; the default implementation fails with
  /// kUnimplemented.
  virtual StatusOr<std::unique_ptr<WebSocketConnection>> OpenWebSocket(
      TransportRequest const& request);
};

}  // namespace bai
