// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/transport.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace bai::internal {

struct LwsWebSocketOptions {
  std::chrono::milliseconds connect_timeout{10000};  ///< connect and upgrade
  bool verify_tls = true;
  std::string ca_bundle;
  std::string user_agent;
  std::size_t max_queued = 4u << 20;    ///< bytes waiting in either direction before pushing back
  std::size_t max_message = 16u << 20;  ///< a longer incoming message closes with 1009
  int ping_seconds = 30;                ///< idle this long → a PING (the Python SDK's heartbeat)
};

/// A WebSocket client over libwebsockets (the only file that includes it): one lws context and
/// service thread per connection. `request.target`, `host` and `headers` go on the wire as
/// given (already signed); no Content-Type is sent. A request carrying `X-BAI-Tunnel: block`
/// (a tunnel's data: tcpproxy, service ports; block_websocket.h) gets bai's own frame reader
/// and writer on the upgraded socket when the server agrees; on TLS the header is not sent and
/// libwebsockets carries the data.
StatusOr<std::unique_ptr<WebSocketConnection>> OpenLwsWebSocket(TransportRequest const& request,
                                                                LwsWebSocketOptions const& options);

}  // namespace bai::internal
