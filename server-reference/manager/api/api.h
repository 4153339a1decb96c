// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/http.h"
#include "server-reference/common/router.h"
#include "server-reference/common/work_pool.h"
#include "server-reference/manager/api/auth.h"
#include "server-reference/manager/api/login_throttle.h"
#include "server-reference/manager/state/store.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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

struct ApiOptions {
  std::string manager_version;  ///< "bai-manager 0.1.0"
  /// Clock for signature windows and rate limits (tests move it).
  std::function<std::chrono::system_clock::time_point()> clock;
  bool allow_signup = false;  ///< POST /auth/signup creates users; off: 403
  LoginLimits login_limits;   ///< password-guessing throttle of POST /auth/authorize
  /// Threads hashing passwords (Argon2id, 64 MiB each) and logins that may wait for one.
  int password_workers = 2;
  std::size_t password_queue = 64;
};

/// The manager's REST surface: routes with their auth level, the API-version check, signature
/// verification, rate limiting with X-RateLimit-* headers on every response, and the handlers.
class ManagerApi {
 public:
  ManagerApi(Store& store, ApiOptions options);

  /// The server's entry point.
  void Handle(std::shared_ptr<server::Exchange> const& exchange);

  void Add(std::string method, std::string const& pattern, AuthLevel level, SyncHandler handler);
  void AddAsync(std::string method, std::string const& pattern, AuthLevel level,
                AsyncHandler handler);

  /// The agents' WebSocket (docs/agent-protocol.md), authenticated with the cluster secret.
  void AddAgentRoutes(class AgentRegistry& agents, std::string cluster_secret);

  /// Code execution (`POST /session/{id}`), relayed to the session's agent (session_api.cc).
  void AddExecuteRoutes(SessionStore& sessions, class AgentRegistry& agents);
  /// PATCH /session/{id} (restart) and /session/{id}/interrupt, relayed to the agent.
  void AddKernelControlRoutes(SessionStore& sessions, class AgentRegistry& agents);

  /// Background tasks: GET /events/background-task, and the session commit that runs as one
  /// (task_api.cc).
  void AddBackgroundTaskRoutes(SessionStore& sessions, class AgentRegistry& agents,
                               class BackgroundTaskStore& tasks, EventHub& hub);

  /// Session and event routes (session_api.cc).
  void AddSessionRoutes(SessionStore& sessions, EventHub& hub,
                        std::function<void(std::string const&)> schedule);

  /// Shares this process's rate-limit counts with the other managers (Manager runs it every
  /// 200 ms).
  Status FlushRateLimits(std::chrono::system_clock::time_point now) {
    return limiter_.Flush(store_.db(), now);
  }

 private:
  void AddRoutes();
  /// 429 with Retry-After.
  static server::HttpResponse TooManyLogins(std::int64_t retry_after_seconds, std::string message);
  /// Runs `work` (password hashing) on the password pool and answers `exchange` with its
  /// response plus `headers`; a full pool answers 429 now.
  std::optional<server::HttpResponse> OnPasswordPool(
      std::shared_ptr<server::Exchange> const& exchange,
      std::vector<std::pair<std::string, std::string>> headers,
      std::function<server::HttpResponse()> work);
  /// Checks a password login (on the password pool); `mismatch` is set for an unknown user or a
  /// wrong password.
  StatusOr<server::HttpResponse> Login(std::string const& domain, std::string const& username,
                                       std::string const& password, bool& mismatch);

  Store& store_;
  ApiOptions options_;
  RateLimiter limiter_;
  KeypairCache keypairs_;
  server::Router router_;
  std::mutex login_mu_;
  LoginThrottle login_throttle_;
  /// Last: its destructor waits for running logins, which use the members above.
  server::WorkPool password_pool_;
};

}  // namespace bai::manager
