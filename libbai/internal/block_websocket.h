// SPDX-License-Identifier: Apache-2.0
#pragma once
// The data phase of a tunnel on a socket libwebsockets upgraded (lws_websocket.h hands it
// over when the server agreed to `X-BAI-Tunnel: block`, docs/agent-protocol.md): frames read
// and written a block at a time with ws_frames.h, as the client (outgoing frames masked).

#include "bai/transport.h"

#include <cstddef>
#include <memory>

namespace bai::internal {

/// How a caller asks OpenLwsWebSocket for block frames: this header on its request. On the
/// wire the client offers the WebSocket subprotocol kBlockSubprotocol and the server agrees by
/// answering it (a server that does not know it answers none, and libwebsockets carries the
/// data); after agreeing, the server sends nothing until the client's first frame, the text
/// kBlockGo.
inline constexpr char kBlockTunnelHeader[] = "X-BAI-Tunnel";
inline constexpr char kBlockTunnelValue[] = "block";
inline constexpr char kBlockSubprotocol[] = "bai-block";
inline constexpr char kBlockGo[] = "{\"bai_tunnel\":\"go\"}";

/// Takes `fd` (an upgraded, plain TCP socket with nothing of the server's read yet), sends
/// kBlockGo and serves WebSocketConnection over it. `max_message`: a longer incoming message
/// closes with 1009.
std::unique_ptr<WebSocketConnection> MakeBlockWebSocket(int fd, std::size_t max_message);

}  // namespace bai::internal
