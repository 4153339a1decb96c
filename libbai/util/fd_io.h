// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

/// Writing whole buffers to descriptors. Header-only: the static kernel runner uses it too.
namespace bai::internal {

/// Writes all of `data` to `fd`: a socket with send(MSG_NOSIGNAL) (a peer that has gone is an
/// error, never SIGPIPE), anything else with write(); interrupted writes are retried and a
/// non-blocking descriptor is waited on until it takes more. False once the descriptor fails.
inline bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace bai::internal
