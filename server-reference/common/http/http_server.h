// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace bai::server {

/// Where a large request body goes as it arrives, instead of into memory (a storage upload's
/// chunk: written to its file piece by piece, or sent on by the webserver's relay, so a server
/// holds a fixed buffer per connection rather than each chunk whole). Its calls come on the
/// connection's strand, in order; the callbacks it is given may be called from any thread.
class BodySink {
 public:
  virtual ~BodySink() = default;
  /// False: the request is refused before its body is read (Finish(false) answers; the body the
  /// client still sends is drained, and no 100 Continue is sent).
  virtual bool Accepts() const { return true; }
  /// The next bytes of the body (copied or written before it returns); false stops reading
  /// (Finish(false) says why).
  virtual bool Write(std::string_view bytes) = 0;
  /// Calls `go` once the sink takes more bytes (at once, unless what it was given still waits
  /// to go on): nothing more is read from the client until then.
  virtual void WhenWritable(std::function<void()> go) { go(); }
  /// Called once: after the last bytes (`whole`), or when the body ended early (a Write that
  /// refused, a client that went away or stopped sending). `answer` gets the response, sent if
  /// the client is still there; the handler is not called for this request.
  virtual void Finish(bool whole, std::function<void(HttpResponse)> answer) = 0;
};

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8081;  ///< 0 = any free port (see HttpServer::port())
  int threads = 2;
  std::size_t max_body_bytes = 1 << 20;  ///< larger bodies get 413
  /// A larger limit for some requests (file uploads), chosen from the method and path once the
  /// headers are read; returns 0 for "max_body_bytes". Empty: max_body_bytes for all.
  std::function<std::size_t(std::string_view method, std::string_view path)> body_limit_for;
  /// Chooses a BodySink for a request whose body is over 1 MiB, of known length (`length`) and
  /// within its limit, once its headers are read (`head`: the request without its body);
  /// nullptr reads the body into memory and calls the handler as for any request. Needs
  /// body_limit_for.
  std::function<std::unique_ptr<BodySink>(HttpRequest const& head, std::uint64_t length)>
      body_sink_for;
  /// What the bodies over 1 MiB being read into memory may hold together (0: no bound); a
  /// request whose body would pass it gets 503 before its body is read, so many large requests
  /// at once cannot exhaust the process (bodies that go to a BodySink do not count).
  std::size_t max_buffered_body_bytes = 0;
  /// Slow senders: a body's read ends (the connection closes) when, read_timeout after it
  /// began, fewer than this many bytes per second have come on average (0: only read_timeout
  /// between pieces). A client trickling a large body cannot hold a connection for hours.
  std::size_t min_body_bytes_per_second = 0;
  std::size_t max_header_bytes = 16 * 1024;  ///< larger headers get 431
  std::chrono::seconds read_timeout{30};     ///< for one request's headers and body
  std::chrono::seconds idle_timeout{75};     ///< keep-alive connection without a request
  /// Called once per request the handler answers (its status; 200 for an event stream, 101 for
  /// a WebSocket) with the time from its dispatch to the answer, on the answering thread.
  std::function<void(HttpRequest const& request, int status, std::chrono::nanoseconds took)>
      on_response;
};

/// An HTTP/1.1 server on Boost.Beast: keep-alive, one strand per connection, limits and timeouts
/// on every read, event streams, graceful stop. All Beast and Asio code is behind this class.
class HttpServer {
 public:
  /// Binds and listens; the handler runs on the connection's strand.
  static StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, Handler handler);
  ~HttpServer();

  std::uint16_t port() const;

  /// Stops accepting, closes every connection (event streams end), joins the threads.
  void Stop();

  struct Impl;  ///< defined in http_server.cc only

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bai::server
