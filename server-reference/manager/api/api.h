// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/auth/login_throttle.h"
#include "server-reference/common/exec/work_pool.h"
#include "server-reference/common/http/http.h"
#include "server-reference/common/http/router.h"
#include "server-reference/common/metrics/metrics.h"
#include "server-reference/manager/api/auth.h"
#include "server-reference/manager/state/store.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bai::manager {

/// What a handler gets: the request, its path parameters, who sent it (null for anonymous
/// handlers) and the store.
struct RequestContext {
  server::HttpRequest const& request;
  server::PathParams const& params;
  Identity const* identity;
  Store& store;
  /// X-RateLimit-* headers: added to what sync handlers return; async handlers add them to
  /// their late response themselves.
  std::vector<std::pair<std::string, std::string>> response_headers;
};

using SyncHandler = std::function<server::HttpResponse(RequestContext&)>;
/// Returns a response now, or nullopt after arranging to answer `exchange` later.
using AsyncHandler = std::function<std::optional<server::HttpResponse>(
    RequestContext&, std::shared_ptr<server::Exchange> const&)>;

class EventHub;
class SessionStore;

/// Runs `work` on `pool` and answers `exchange` later with its response plus `headers`:
/// nullopt once queued; when the pool is full, 429 rate-limit-exceeded with `busy_message` and
/// Retry-After: 1, to answer now.
std::optional<server::HttpResponse> AnswerOnPool(
    server::WorkPool& pool, std::shared_ptr<server::Exchange> const& exchange,
    std::vector<std::pair<std::string, std::string>> headers,
    std::function<server::HttpResponse()> work, std::string const& busy_message);

struct ApiOptions {
  std::string manager_version;  ///< "bai-manager 0.1.0"
  /// Clock for signature windows and rate limits (tests move it).
  std::function<std::chrono::system_clock::time_point()> clock;
  bool allow_signup = false;         ///< POST /auth/signup creates users; off: 403
  server::LoginLimits login_limits;  ///< password-guessing throttle of POST /auth/authorize
  int signups_per_address = 5;       ///< POST /auth/signup calls per client address and hour
  /// Peers whose X-Forwarded-For names the client the login throttle counts (ThrottledAddress).
  std::vector<std::string> trusted_proxies;
  /// Threads hashing passwords (Argon2id, 64 MiB each) and logins that may wait for one.
  int password_workers = 2;
  std::size_t password_queue = 64;
  /// Threads for AddPooled handlers, and requests that may wait for one.
  int slow_workers = 2;
  std::size_t slow_queue = 256;
  /// WebSocket streams (terminals, commands, execute, app tunnels) one keypair may hold open on
  /// this manager at once (0: no limit); one more is answered 429 before the upgrade.
  int max_streams_per_user = 64;
};

/// The manager's REST surface: routes with their auth level, the API-version check, signature
/// verification, rate limiting with X-RateLimit-* headers on every response. The handlers live
/// in one file per area and are added by its Register…Routes (routes.h).
class ManagerApi {
 public:
  ManagerApi(Store& store, ApiOptions options);

  /// The server's entry point.
  void Handle(std::shared_ptr<server::Exchange> const& exchange);

  void Add(std::string method, std::string const& pattern, AuthLevel level, SyncHandler handler);
  void AddAsync(std::string method, std::string const& pattern, AuthLevel level,
                AsyncHandler handler);
  /// A handler whose work may take long (walking a folder's tree, a large GraphQL query): it
  /// runs on the slow-work pool, never on an I/O thread, so the rest of the API keeps answering.
  /// A full pool answers 429 with Retry-After.
  void AddPooled(std::string method, std::string const& pattern, AuthLevel level,
                 SyncHandler handler);

  Store& store() { return store_; }
  ApiOptions const& options() const { return options_; }
  /// The manager's metrics (`GET /metrics`; manager/metrics.h declares them).
  server::metrics::Registry& metrics() { return metrics_; }
  /// The route pattern a request goes to ("" when none): its metrics label.
  std::string RouteOf(server::HttpRequest const& request) const {
    return router_.PatternOf(request);
  }

  /// Shares this process's rate-limit counts with the other managers (Manager runs it every
  /// 200 ms).
  Status FlushRateLimits(std::chrono::system_clock::time_point now) {
    return limiter_.Flush(store_, now);
  }

 private:
  Store& store_;
  ApiOptions options_;
  RateLimiter limiter_;
  KeypairCache keypairs_;
  server::Router router_;
  server::metrics::Registry metrics_;
  std::unique_ptr<server::WorkPool> slow_pool_;  // last: its destructor waits for running work
};

}  // namespace bai::manager
