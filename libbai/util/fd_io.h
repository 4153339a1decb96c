// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

/// Writes all of `data` to the Unix socket `sock`, the descriptor `passed` riding with its first
/// byte (SCM_RIGHTS). False once the socket fails.
inline bool WriteAllWithDescriptor(int sock, std::string_view data, int passed) {
  if (data.empty()) return false;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &passed, sizeof(int));
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  return WriteAll(sock, data.substr(static_cast<std::size_t>(n)));
}

/// Reads one byte from the Unix socket `sock` into `c`; a descriptor that came with it
/// (SCM_RIGHTS, close-on-exec) goes to `*passed` when that is -1, and is closed otherwise, as
/// are any beyond the first. False at the end or on an error.
inline bool ReadByteWithDescriptor(int sock, char& c, int* passed) {
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
  iovec iov{&c, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h != nullptr; h = CMSG_NXTHDR(&msg, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
      if (passed != nullptr && *passed < 0) {
        *passed = fd;
      } else {
        ::close(fd);
      }
    }
  }
  return n == 1;
}

}  // namespace bai::internal
