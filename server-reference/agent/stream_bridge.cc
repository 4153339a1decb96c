// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/stream_bridge.h"

#include "bai/protocol/pty_wire.h"

#include "libbai/util/fd_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <thread>

namespace bai::agent {
using internal::WriteAll;

void BridgeStream(int fd, WebSocketConnection& ws, bool line_mode) {
  // Kernel → manager.
  std::thread up([fd, &ws, line_mode] {
    std::string lines;
    bool exited = false;  // the last line was the shell's exit frame
    char chunk[64 << 10];
    while (true) {
      ssize_t n = read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (!line_mode) {
        if (!ws.Send({std::string(chunk, static_cast<std::size_t>(n)), true}).ok()) return;
        continue;
      }
      lines.append(chunk, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (auto nl = lines.find('\n'); nl != std::string::npos; nl = lines.find('\n', start)) {
        std::string_view line(lines.data() + start, nl - start);
        if (line.size() < 64) {  // an exit frame is short: longer lines are output, not parsed
          auto f = protocol::DecodePtyFrame(line);
          exited = f.ok() && f->type == protocol::PtyFrame::Type::kExit;
        } else {
          exited = false;
        }
        if (!ws.Send({std::string(line), false}).ok()) return;
        start = nl + 1;
      }
      lines.erase(0, start);
    }
    // After the shell's exit frame, a normal close; a terminal whose kernel ended under it (the
    // session was terminated: no exit frame) and a service that closed are "going away" (24.09),
    // as the manager says when it ends the session's streams itself.
    if (line_mode && exited) {
      ws.Close(1000, "");
    } else {
      ws.Close(1001,
               line_mode ? "the session's kernel has ended" : "the service closed the connection");
    }
  });
  // Manager → kernel.
  while (true) {
    auto e = ws.Receive(std::chrono::seconds(1));
    if (e.kind == WebSocketEvent::Kind::kTimeout) continue;
    if (e.kind == WebSocketEvent::Kind::kClosed) break;
    if (line_mode && !e.message.binary) {
      if (!WriteAll(fd, e.message.data + "\n")) break;
    } else if (!line_mode && e.message.binary) {
      if (!WriteAll(fd, e.message.data)) break;
    }
  }
  shutdown(fd, SHUT_RDWR);  // ends the reader above, and tells the kernel side
  up.join();
  // The reader has queued its last frames (a shell's exit) and the close: let them go out and
  // the close handshake finish before tearing down. Cancelling at once cut them off when the
  // loop above ended first (a command that exits at once: the client's first frame met a
  // closed socket), and the client got 1011 instead of the exit code.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline &&
         ws.Receive(std::chrono::milliseconds(100)).kind != WebSocketEvent::Kind::kClosed) {
  }
  ws.Cancel();
  close(fd);
}

}  // namespace bai::agent
