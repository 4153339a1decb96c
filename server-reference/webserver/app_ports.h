// SPDX-License-Identifier: Apache-2.0
#pragma once
// The app launcher's ports: an app of a session opened from the console gets a port of the
// webserver's own (a "circuit"), where every request is relayed to the app through the
// manager's /stream/session/ID/httpproxy (one tunnel per request) with the login's keys. A
// browser enters with the setup link's one-time token, which sets the port's permit cookie;
// without it, the port answers 403. A circuit ends when its login does, or after an idle time.

#include "bai/status.h"
#include "bai/transport.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace bai::webserver {

struct AppPortsOptions {
  std::string bind_address = "127.0.0.1";
  /// The host the browser reaches app ports at; empty: the host name the browser reached the
  /// console at (or bind_address when that is unknown).
  std::string advertised_host;
  int first_port = 10200;
  int last_port = 10299;
  bool tls = false;  ///< permit cookies Secure, links https:// (a TLS proxy fronts each port)
  std::chrono::seconds idle_timeout{30 * 60};
  std::chrono::seconds setup_token_lifetime{120};
  std::size_t max_body_bytes = 64u << 20;
  int relay_threads = 16;
  /// Circuits one user (access key) holds at once (0: no limit); opening one more closes that
  /// user's least recently used, so one user cannot take every port from the others.
  int max_per_user = 4;
};

/// Opens the tunnel for a request: `target` is the manager's request-target
/// ("/stream/session/ID/httpproxy?app=http"), signed with the keys of the login whose cookie is
/// `login_token`. A permission-denied status when that login has ended.
using OpenAppTunnel = std::function<StatusOr<std::unique_ptr<WebSocketConnection>>(
    std::string const& login_token, std::string const& target)>;

class AppPorts {
 public:
  AppPorts(AppPortsOptions options, OpenAppTunnel open);
  ~AppPorts();
  AppPorts(AppPorts const&) = delete;
  AppPorts& operator=(AppPorts const&) = delete;

  /// The link that opens `app` (container port `app_port`, 0 for its first) of `session_id`
  /// for the login `login_token` of the user `owner` (its access key): "http://HOST:PORT/
  /// bai-app-setup?token=…", HOST being advertised_host or else `browser_host` (the host name
  /// the browser reached the console at). The login's circuit for that app is reused; past
  /// `max_per_user` the owner's least recently used circuit is closed; 503 when every app port
  /// is taken.
  StatusOr<std::string> Open(std::string const& login_token, std::string const& owner,
                             std::string const& session_id, std::string const& app, int app_port,
                             std::string const& browser_host = {});
  /// Ends the circuits of a login (sign-out).
  void EndLogin(std::string const& login_token);
  /// How many circuits are open.
  std::size_t open_count() const;
  /// Ends every circuit and waits for requests in flight.
  void Stop();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace bai::webserver
