// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::server {

/// A request as handlers see it: plain strings, no Beast types.
struct HttpRequest {
  std::string method;  ///< as received ("GET")
  std::string target;  ///< raw request-target ("/session/x?y=1"), byte-exact for signatures
  std::string path;    ///< target before '?', still percent-encoded
  std::string query;   ///< target after '?' ("" when none)
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased
  std::string body;
  std::string peer_address;  ///< remote IP

  /// The first header called `name` (lowercase).
  std::optional<std::string_view> Header(std::string_view name) const;
};

/// Part of an open file as a response body, sent in pieces as the client takes them (a
/// download never sits in memory whole). Closes the descriptor when the last owner goes.
struct FileBody {
  FileBody(int file, std::int64_t from, std::int64_t bytes)
      : fd(file), offset(from), length(bytes) {}
  FileBody(FileBody const&) = delete;
  FileBody& operator=(FileBody const&) = delete;
  ~FileBody();
  int fd;
  std::int64_t offset;
  std::int64_t length;
};

/// A complete response.
struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  /// When set, the body is this file's bytes (`body` is ignored) with a Content-Length; a file
  /// that turns out shorter than said ends the connection.
  std::shared_ptr<FileBody> file;

  static HttpResponse Json(int status, std::string body);
  static HttpResponse NoContent();
};

/// An accepted WebSocket. Every method may be called from any thread.
class WebSocket {
 public:
  virtual ~WebSocket() = default;
  /// Queues a text message; false once the socket is closed.
  virtual bool Send(std::string text) = 0;
  /// Queues a binary message; false once the socket is closed.
  virtual bool SendBinary(std::string bytes) { return Send(std::move(bytes)); }
  /// Closes with `code` (RFC 6455 7.4) and `reason` once what is queued has been written.
  virtual void Close(int code, std::string reason) = 0;
  void Close() { Close(1000, {}); }
  /// Bytes queued by Send/SendBinary and not yet written.
  virtual std::size_t Backlog() const { return 0; }
  /// Runs `callback` once, on any thread, when the backlog is below `below` (at once if it
  /// is); never if the socket closes first. One at a time: a later call replaces an earlier
  /// one still waiting. Lets a relay go at its reader's pace.
  virtual void WhenDrained(std::size_t below, std::function<void()> callback) {
    (void)below;
    callback();
  }
  /// Stops reading frames (true) or starts again: a relay whose other side is slow takes no
  /// more from this one, so TCP's window pushes back on the sender.
  virtual void PauseReading(bool paused) { (void)paused; }
};

/// Callbacks of an accepted WebSocket, run on its strand.
struct WebSocketHandlers {
  std::function<void(std::shared_ptr<WebSocket> const&)> on_open;
  /// A text frame (and a binary one when `on_binary` is not set). The message is the
  /// handler's to keep (a relay moves it on without a copy).
  std::function<void(std::shared_ptr<WebSocket> const&, std::string&&)> on_message;
  std::function<void(std::shared_ptr<WebSocket> const&, std::string&&)> on_binary;
  /// Once, however the socket ended: `code` is the peer's close code, 1000 after our own
  /// Close, 1006 when the connection ended without a close frame.
  std::function<void(int code)> on_close;
  /// A tunnel's client that asked for block frames (the WebSocket subprotocol kBlockSubprotocol,
  /// libbai's block_websocket.h): the answer agrees to it, and nothing is written to the
  /// socket before the client's first frame, the go marker (not passed to the handlers), so the
  /// client's WebSocket library has read nothing past the upgrade when it hands the socket over.
  bool block_tunnel = false;
};

/// The go marker a block-frame client sends first (libbai/internal/block_websocket.h's
/// kBlockGo).
inline constexpr char kBlockTunnelGo[] = "{\"bai_tunnel\":\"go\"}";
inline constexpr char kBlockSubprotocol[] = "bai-block";

/// One request in flight. A handler answers it exactly once, now or later, from any thread:
/// with Respond(), or by opening an event stream (Server-Sent Events) and writing to it.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual HttpRequest const& request() const = 0;

  /// Sends a complete response. Later calls are ignored.
  virtual void Respond(HttpResponse response) = 0;

  /// Starts a chunked `text/event-stream` response (plus `headers`).
  virtual void StartEventStream(std::vector<std::pair<std::string, std::string>> headers) = 0;
  /// Queues one chunk of an event stream; false once the client has gone, or has fallen so far
  /// behind (8 MiB waiting for it) that its connection was closed: a reader that never reads
  /// must not hold the server's memory.
  virtual bool WriteEvent(std::string chunk) = 0;
  /// Starts a chunked response of any status and type (`headers` name its Content-Type): a
  /// relayed answer whose end is not known yet. Its body goes as WriteEvent chunks, and it ends
  /// with EndEventStream, or AbortStream when it was cut short.
  virtual void StartChunked(int status,
                            std::vector<std::pair<std::string, std::string>> headers) = 0;
  /// Ends an event stream cleanly.
  virtual void EndEventStream() = 0;
  /// Ends a stream by closing the connection without its last chunk, so the client sees the
  /// answer as incomplete rather than whole.
  virtual void AbortStream() { EndEventStream(); }
  /// Bytes of the event stream handed to WriteEvent and not yet written to the client.
  virtual std::size_t StreamBacklog() const { return 0; }
  /// Runs `callback` once, on any thread, when the stream's backlog is below `below` (at once
  /// if it is already); never if the connection closes first. One at a time: a later call
  /// replaces an earlier one still waiting. Lets a producer go at its reader's pace.
  virtual void WhenDrained(std::size_t below, std::function<void()> callback) {
    (void)below;
    callback();
  }
  /// Runs `callback` once if the connection closes (client gone or server stopping) before this
  /// exchange has been answered; event streams count as unanswered until they end.
  virtual void OnClose(std::function<void()> callback) = 0;

  /// True when the request asks for a WebSocket upgrade.
  virtual bool IsWebSocketUpgrade() const = 0;
  /// Completes the upgrade; the exchange is answered (no Respond() after this).
  virtual void AcceptWebSocket(WebSocketHandlers handlers) = 0;
};

using Handler = std::function<void(std::shared_ptr<Exchange>)>;

/// Splits a query string into decoded key/value pairs ("a=1&b=x%20y"); repeated keys keep all
/// values in order.
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query);

/// Percent-decodes `text` ('+' stays '+'); nullopt for a malformed escape.
std::optional<std::string> PercentDecode(std::string_view text);

}  // namespace bai::server
