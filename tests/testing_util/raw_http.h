// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>

namespace bai::testing_util {

struct RawResponse {
  int status = 0;                              ///< 0 when no response could be read
  std::map<std::string, std::string> headers;  ///< names lowercased
  std::string body;
  std::size_t sent = 0;  ///< request bytes the server accepted before any send error
};

/// Sends `request` (bytes exactly as given) to 127.0.0.1:`port` on a new connection and reads
/// one response (Content-Length or until close). For requests no well-behaved client would send.
RawResponse RawHttp(int port, std::string const& request);

/// A TCP server on 127.0.0.1 at a free port (stand-ins for what a session serves: a simulated
/// kernel's preopen ports are its host's). Each accepted connection goes to `serve` on a thread
/// of its own, which closes it after. Stops accepting when destroyed.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<void(int fd)> serve);
  ~LoopbackServer();
  LoopbackServer(LoopbackServer const&) = delete;
  LoopbackServer& operator=(LoopbackServer const&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

/// A connected TCP socket to 127.0.0.1:`port` (receive timeout 10 s), or -1.
int RawConnect(int port);

/// A loopback port nothing listens on now (bound, read, released), or 0.
int UnusedLoopbackPort();

/// Sends `request` and returns every byte that arrives within `read_ms` (for streams that do
/// not end, such as Server-Sent Events).
std::string RawHttpStream(int port, std::string const& request, int read_ms);

}  // namespace bai::testing_util
