// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/raw_http.h"

#include "libbai/util/text.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>

namespace bai::testing_util {

LoopbackServer::LoopbackServer(std::function<void(int fd)> serve) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd_, 128) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;  // port() stays 0: a test's connection then fails, named
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([fd = fd_, serve = std::move(serve)] {
    for (;;) {
      int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      std::thread([c, serve] {
        serve(c);
        ::close(c);
      }).detach();
    }
  });
}

LoopbackServer::~LoopbackServer() {
  if (fd_ >= 0) {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
  }
  if (thread_.joinable()) thread_.join();
}

int RawConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int UnusedLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

RawResponse RawHttp(int port, std::string const& request) {
  RawResponse out;
  int fd = RawConnect(port);
  if (fd < 0) return out;
  std::size_t sent = 0;
  while (sent < request.size()) {
    auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (413) before reading everything
    sent += static_cast<std::size_t>(n);
  }
  out.sent = sent;
  std::string data;
  char buf[65536];
  std::size_t header_end = std::string::npos;
  std::size_t length = std::string::npos;
  while (true) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        auto lower = internal::AsciiLower(data.substr(0, header_end));
        auto cl = lower.find("\r\ncontent-length:");
        if (cl != std::string::npos) length = std::stoul(lower.substr(cl + 17));
      }
    }
    if (header_end != std::string::npos && length != std::string::npos &&
        data.size() >= header_end + 4 + length) {
      break;
    }
    if (header_end != std::string::npos && data.rfind("HTTP/1.1 101", 0) == 0) break;  // upgraded
  }
  ::close(fd);
  if (data.rfind("HTTP/1.1 ", 0) != 0 || header_end == std::string::npos) return out;
  out.status = std::stoi(data.substr(9, 3));
  std::size_t pos = data.find("\r\n") + 2;
  while (pos < header_end) {
    auto eol = data.find("\r\n", pos);
    auto line = data.substr(pos, eol - pos);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      auto value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      out.headers[internal::AsciiLower(line.substr(0, colon))] = value;
    }
    pos = eol + 2;
  }
  out.body = data.substr(header_end + 4);
  return out;
}

std::string RawHttpStream(int port, std::string const& request, int read_ms) {
  std::string data;
  int fd = RawConnect(port);
  if (fd < 0) return data;
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(read_ms);
  char buf[8192];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace bai::testing_util
