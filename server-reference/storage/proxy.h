// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http_server.h"
#include "server-reference/common/metrics/metrics.h"
#include "server-reference/storage/service.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace bai::storage {

struct ProxyListen {
  std::string address = "127.0.0.1";
  std::uint16_t client_port = 6021;  ///< 0: any free port
  /// The manager-facing API's own listener; none when the manager holds the proxy in process.
  std::optional<std::uint16_t> manager_port;
  int threads = 2;
  /// What clients are told to use; default http://ADDRESS:CLIENT_PORT.
  std::string public_url;
};

/// A StorageService behind its listeners, with a sweep of expired uploads every ten minutes.
/// Its metrics (requests by route and status, file bytes moved, volumes' space) go to
/// `metrics` when given (a manager holding the proxy shows them on its own `/metrics`), else to
/// a registry of its own served at `GET /metrics` of the manager-facing listener.
class StorageProxy {
 public:
  static StatusOr<std::unique_ptr<StorageProxy>> Start(
      StorageOptions options, ProxyListen listen, server::metrics::Registry* metrics = nullptr);
  ~StorageProxy();

  StorageService& service() { return *service_; }
  std::uint16_t client_port() const { return client_->port(); }
  std::uint16_t manager_port() const { return manager_ ? manager_->port() : 0; }
  void Stop();

 private:
  StorageProxy() = default;
  std::unique_ptr<StorageService> service_;
  server::metrics::Registry own_metrics_;
  std::unique_ptr<server::HttpServer> client_, manager_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread sweeper_;
};

}  // namespace bai::storage
