// SPDX-License-Identifier: Apache-2.0
// AppTunnel: local TCP connections to a session's app, one WebSocket (/tcpproxy) each.
#include "bai/session_client.h"

#include "libbai/internal/block_websocket.h"
#include "libbai/util/fd_io.h"
#include "libbai/util/url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

namespace bai {
namespace {

std::string JsonObject(std::map<std::string, std::string> const& m) {
  nlohmann::json j = nlohmann::json::object();
  for (auto const& [k, v] : m) j[k] = v;
  return j.dump();
}

std::string Escape(std::string const& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

struct AppTunnel::Impl {
  Client client;
  std::string path;  // /stream/session/{id}/tcpproxy?app=…
  int listen_fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;
  std::mutex mu;
  struct Connection {
    std::thread thread;
    std::shared_ptr<WebSocketConnection> socket;
    int fd = -1;
    std::atomic<bool> done{false};
  };
  std::list<Connection> connections;
  std::atomic<std::size_t> served{0};
  std::function<void(Status const&)> on_error;

  explicit Impl(Client c) : client(std::move(c)) {}

  void Serve(int fd, Connection* conn) {
    // Block frames for the data where the manager agrees (libbai/internal/block_websocket.h).
    ApiRequest request("GET", path);
    request.headers.emplace_back(internal::kBlockTunnelHeader, internal::kBlockTunnelValue);
    auto ws = client.OpenWebSocket(request);
    if (!ws.ok()) {
      // As the official client: the local peer hears why, as an HTTP 503.
      internal::WriteAll(
          fd, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\nWebSocket reply: " +
                  ws.status().message());
      if (on_error) on_error(ws.status());
      close(fd);
      conn->done = true;
      return;
    }
    std::shared_ptr<WebSocketConnection> socket(std::move(*ws));
    {
      std::lock_guard<std::mutex> lock(mu);
      conn->socket = socket;
    }
    ++served;
    std::thread up([fd, socket] {
      char buf[64 << 10];
      while (true) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (!socket->Send({std::string(buf, static_cast<std::size_t>(n)), true}).ok()) return;
      }
      socket->Close(1000, "");
    });
    bool answered = false;
    std::optional<Status> said;  // the close the server announced in a text frame
    while (true) {
      // The app's bytes go to the local connection as they come (spliced where they can be).
      bool local_failed = false;
      auto e = socket->ReceiveInto(fd, std::chrono::seconds(1), local_failed);
      if (local_failed) break;
      if (e.kind == WebSocketEvent::Kind::kTimeout) continue;
      if (e.kind == WebSocketEvent::Kind::kClosed) break;
      if (!e.message.binary) {
        auto j = nlohmann::json::parse(e.message.data, nullptr, false);
        if (j.is_object() && j.contains("close_code") && j["close_code"].is_number_integer()) {
          said = WebSocketCloseStatus(j["close_code"].get<int>(), j.value("reason", std::string()));
        }
        continue;
      }
      answered = true;
    }
    auto st = said ? *said : socket->CloseStatus();
    if (!st.ok() && !answered && st.code() != StatusCode::kCancelled) {
      internal::WriteAll(
          fd, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\nWebSocket reply: " +
                  st.message());
    }
    if (!st.ok() && st.code() != StatusCode::kCancelled && socket->close_code() != 1001 &&
        on_error) {
      on_error(st);
    }
    shutdown(fd, SHUT_RDWR);
    up.join();
    socket->Cancel();
    close(fd);
    conn->done = true;
  }

  void Accept() {
    while (!stopping) {
      pollfd p{listen_fd, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(mu);
      // Finished connections are joined here, so a long-lived tunnel does not pile them up.
      for (auto it = connections.begin(); it != connections.end();) {
        if (it->done) {
          it->thread.join();
          it = connections.erase(it);
        } else {
          ++it;
        }
      }
      auto& c = connections.emplace_back();
      c.fd = fd;
      c.thread = std::thread([this, fd, conn = &c] { Serve(fd, conn); });
    }
  }
};

StatusOr<std::unique_ptr<AppTunnel>> AppTunnel::Open(Client client, std::string const& session,
                                                     AppTunnelOptions const& options) {
  auto impl = std::make_unique<Impl>(std::move(client));
  impl->on_error = options.on_error;
  impl->path = "/stream/session/" + internal::EncodeTarget(session).substr(1) +
               "/tcpproxy?app=" + Escape(options.app);
  if (options.port) impl->path += "&port=" + std::to_string(*options.port);
  if (!options.arguments.empty())
    impl->path += "&arguments=" + Escape(JsonObject(options.arguments));
  if (!options.envs.empty()) impl->path += "&envs=" + Escape(JsonObject(options.envs));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(options.bind_port);
  if (int rc = getaddrinfo(options.bind_host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "cannot bind " + options.bind_host + ": " + gai_strerror(rc));
  }
  int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool bound = fd >= 0 && bind(fd, found->ai_addr, found->ai_addrlen) == 0 && listen(fd, 128) == 0;
  int err = errno;
  freeaddrinfo(found);
  if (!bound) {
    if (fd >= 0) close(fd);
    return Status(StatusCode::kUnavailable, "cannot listen on " + options.bind_host + ":" +
                                                service + ": " + std::strerror(err));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  impl->port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(addr).sin6_port
                                                : reinterpret_cast<sockaddr_in&>(addr).sin_port);
  impl->listen_fd = fd;
  auto* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->Accept(); });
  return std::unique_ptr<AppTunnel>(new AppTunnel(std::move(impl)));
}

AppTunnel::AppTunnel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AppTunnel::~AppTunnel() { Stop(); }

int AppTunnel::port() const { return impl_->port; }

std::size_t AppTunnel::served() const { return impl_->served.load(); }

void AppTunnel::Stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  close(impl_->listen_fd);
  std::list<Impl::Connection> connections;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& c : impl_->connections) {
      if (c.socket) c.socket->Cancel();
      shutdown(c.fd, SHUT_RDWR);
    }
    connections.swap(impl_->connections);
  }
  for (auto& c : connections) c.thread.join();
}

}  // namespace bai
