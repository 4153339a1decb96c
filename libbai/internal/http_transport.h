// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/status.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::internal {

/// A request as it goes on the wire. `target` and `host` are exactly what is sent, so the
/// signing decorator signs the same bytes.
struct HttpRequest {
  std::string method;
  std::string origin;  ///< "http://127.0.0.1:8081": scheme and authority
  std::string target;  ///< request-target: base path + path + "?" + query, percent-encoded
  std::string host;    ///< Host header value (the authority as written in the endpoint)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string api_version;
  bool sign = true;
};

/// Moves bytes. Implementations: CurlTransport; decorators: SigningTransport, LoggingTransport.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  /// Fails only when no HTTP response arrived (connection, TLS, timeout).
  virtual StatusOr<ApiResponse> Send(HttpRequest const& request) = 0;

  /// Like Send, but a 2xx body goes to `on_data` as it arrives instead of into the response;
  /// returning false from `on_data` ends the transfer (not an error). An empty chunk comes
  /// first, when the 2xx headers have arrived. Other statuses are buffered as usual.
  virtual StatusOr<ApiResponse> SendStreaming(HttpRequest const& request,
                                              std::function<bool(std::string_view)> on_data) = 0;
};

/// True when a transport error means the request never reached the server (so even a
/// non-idempotent request may go to the next endpoint).
bool IsConnectFailure(Status const& status);

}  // namespace bai::internal
