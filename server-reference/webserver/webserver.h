// SPDX-License-Identifier: Apache-2.0
#pragma once
// bai-webserver: the web console's server and session mode (PROTOCOL.md §2.5). Browsers and
// session-mode clients sign in with a password at /server/login and get a cookie; their
// /func/* requests go on to a manager signed with the user's keypair (event streams and
// WebSockets bridged); everything else is the console's files. Logins live in the manager's
// database (login_sessions.h), so any number of webservers serve the same users.

#include "bai/status.h"

#include "server-reference/common/auth/login_throttle.h"
#include "server-reference/common/db/database.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bai::webserver {

struct WebServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8090;  ///< 0: any free port
  /// Managers' URLs; a request that cannot reach one goes to the next.
  std::vector<std::string> managers;
  std::string domain = "default";  ///< the domain users sign in to
  /// The built console (index.html and its assets); empty or missing: a page that says how to
  /// build it.
  std::string static_dir;
  std::int64_t login_max_age = 7 * 24 * 3600;  ///< seconds a login lasts (24.09's default)
  /// Cookies marked Secure and HSTS sent: the console is served over HTTPS (by a proxy in
  /// front that terminates TLS).
  bool secure_cookies = false;
  server::LoginLimits login_limits;
  int io_threads = 2;
  int forward_threads = 16;                ///< requests to managers in flight at once
  std::size_t max_body_bytes = 64u << 20;  ///< a larger /func request body gets 413
  /// What large request bodies read into memory may hold together; past it, 503 before reading.
  std::size_t max_buffered_body_bytes = 512u << 20;
  /// A request body slower than this on average (after the first 30 s) is cut: slow senders.
  std::size_t min_body_bytes_per_second = 16u << 10;
  std::size_t max_response_bytes = 256u << 20;  ///< a larger manager answer gets 502
  /// Ports for apps opened from the console (app_ports.h), bound on `address`; 0 and 0: no
  /// app launcher.
  int app_first_port = 10200;
  int app_last_port = 10299;
  /// App ports one user holds at once; opening one more closes their least recently used.
  int app_ports_per_user = 4;
  /// The host name browsers reach app ports at; empty: the one they reached the console at.
  std::string app_host;
  /// Storage proxies' client URLs the console may upload to directly (the page's connect-src
  /// names them); ones seen in tickets are added as they pass.
  std::vector<std::string> storage_urls;
};

class WebServer {
 public:
  /// Listens; `db` is the managers' database (migrated by them) and must outlive the server.
  static StatusOr<std::unique_ptr<WebServer>> Start(WebServerOptions options, server::Database& db);
  ~WebServer();
  std::uint16_t port() const;
  /// Stops listening, ends bridged streams, waits for requests in flight.
  void Stop();

  struct Impl;

 private:
  explicit WebServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace bai::webserver
