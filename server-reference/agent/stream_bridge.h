// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/transport.h"

namespace bai::agent {

/// Carries one data stream between `fd` (the kernel's stream socket, its request accepted) and
/// `ws` (the agent's WebSocket to the manager) until either side ends (docs/agent-protocol.md,
/// "Data streams"). `line_mode` (pty, exec): one text frame per line of `fd` each way; else (tcp):
/// binary frames ⇄ raw bytes (text frames are ignored, as 24.09 does), the kernel side's end
/// closing with 1001.
/// Blocking writes on both sides are the flow control: a slow reader stalls only its stream.
/// Returns once both directions are done; closes `fd`.
void BridgeStream(int fd, WebSocketConnection& ws, bool line_mode);

}  // namespace bai::agent
