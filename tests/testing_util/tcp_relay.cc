// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/tcp_relay.h"

#include "tests/testing_util/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace bai::testing_util {

TcpRelay::TcpRelay(int target_port, std::int64_t bytes_per_second)
    : target_port_(target_port), rate_(bytes_per_second) {
  port_ = UnusedLoopbackPort();
  if (port_ == 0) return;
  acceptor_ = std::thread([this] { Accept(); });
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, std::chrono::seconds(5), [this] { return open_; });
  if (!open_) port_ = 0;
}

TcpRelay::~TcpRelay() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : live_) ::shutdown(fd, SHUT_RDWR);
  }
  changed_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : relays_) t.join();
}

int TcpRelay::Listen() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void TcpRelay::Cut() {
  std::unique_lock<std::mutex> lock(mu_);
  want_open_ = false;
  for (int fd : live_) ::shutdown(fd, SHUT_RDWR);
  changed_.wait_for(lock, std::chrono::seconds(5), [this] { return !open_; });
}

void TcpRelay::Heal() {
  std::unique_lock<std::mutex> lock(mu_);
  want_open_ = true;
  changed_.wait_for(lock, std::chrono::seconds(5), [this] { return open_; });
}

// The acceptor alone opens and closes the listening socket, as Cut and Heal ask.
void TcpRelay::Accept() {
  int listener = -1;
  while (!stop_) {
    bool want;
    {
      std::lock_guard<std::mutex> lock(mu_);
      want = want_open_;
    }
    if (want != (listener >= 0)) {
      if (want) {
        listener = Listen();
      } else {
        ::close(listener);
        listener = -1;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        open_ = listener >= 0;
      }
      changed_.notify_all();
      if (want && listener < 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
    }
    if (listener < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    relays_.emplace_back([this, client] { Relay(client); });
  }
  if (listener >= 0) ::close(listener);
}

void TcpRelay::Relay(int client) {
  int server = RawConnect(target_port_);
  if (server < 0) {
    ::close(client);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(client);
    live_.insert(server);
  }
  auto start = std::chrono::steady_clock::now();
  std::int64_t sent_down = 0;
  char buffer[16384];
  bool open = true;
  while (open && !stop_) {
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (::poll(p, 2, 100) < 0) break;
    for (int i = 0; i < 2 && open; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int from = i == 0 ? client : server, to = i == 0 ? server : client;
      ssize_t n = ::read(from, buffer, sizeof buffer);
      if (n <= 0) {
        open = false;
        break;
      }
      for (ssize_t done = 0; done < n;) {
        ssize_t w = ::write(to, buffer + done, static_cast<std::size_t>(n - done));
        if (w <= 0) {
          open = false;
          break;
        }
        done += w;
      }
      if (from == server) {
        sent_down += n;
        bytes_down_ += n;
        if (rate_ > 0) {
          // Keep to the rate: sleep until these bytes are due.
          auto due = start + std::chrono::microseconds(sent_down * 1000000 / rate_);
          std::this_thread::sleep_until(due);
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(client);
  live_.erase(server);
  ::close(client);
  ::close(server);
}

}  // namespace bai::testing_util
