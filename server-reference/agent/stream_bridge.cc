// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/stream_bridge.h"

#include "libbai/util/fd_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <thread>

namespace bai::agent {
using internal::WriteAll;

void BridgeStream(int fd, WebSocketConnection& ws, bool pty) {
  // Kernel → manager.
  std::thread up([fd, &ws, pty] {
    std::string lines;
    char chunk[64 << 10];
    while (true) {
      ssize_t n = read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (!pty) {
        if (!ws.Send({std::string(chunk, static_cast<std::size_t>(n)), true}).ok()) return;
        continue;
      }
      lines.append(chunk, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (auto nl = lines.find('\n'); nl != std::string::npos; nl = lines.find('\n', start)) {
        if (!ws.Send({lines.substr(start, nl - start), false}).ok()) return;
        start = nl + 1;
      }
      lines.erase(0, start);
    }
    // The shell's exit frame was the last line; a service that closed is "going away" (24.09).
    ws.Close(pty ? 1000 : 1001, pty ? "" : "the service closed the connection");
  });
  // Manager → kernel.
  while (true) {
    auto e = ws.Receive(std::chrono::seconds(1));
    if (e.kind == WebSocketEvent::Kind::kTimeout) continue;
    if (e.kind == WebSocketEvent::Kind::kClosed) break;
    if (pty && !e.message.binary) {
      if (!WriteAll(fd, e.message.data + "\n")) break;
    } else if (!pty && e.message.binary) {
      if (!WriteAll(fd, e.message.data)) break;
    }
  }
  shutdown(fd, SHUT_RDWR);  // ends the reader above, and tells the kernel side
  up.join();
  ws.Cancel();
  close(fd);
}

}  // namespace bai::agent
