// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/manager/api/login_throttle.h"

#include <cstdint>
#include <string>

namespace bai::manager {

/// bai-manager's settings: a TOML file, then command-line flags on top.
///
/// ```toml
/// [server]
/// listen = "127.0.0.1:8081"   # host:port; port 0 = any free port
/// threads = 2
/// max_body_bytes = 1048576
/// [storage]
/// data_dir = "/var/lib/bai-manager"
/// database = ""               # default: <data_dir>/manager.db (SQLite)
/// [agents]
/// heartbeat_timeout = 15      # seconds of silence before an agent is LOST
/// lost_grace = 300            # seconds a LOST agent's sessions wait before they end as ERROR
/// [auth]
/// allow_signup = false        # POST /auth/signup creates users (off: 403)
/// login_attempts_per_address = 30  # password logins one client address may try per window
/// login_failures_per_user = 10     # failed logins an account takes per window, then 429
/// login_window = 300               # seconds
/// ```
struct ManagerConfig {
  std::string listen_address = "127.0.0.1";
  std::uint16_t listen_port = 8081;
  int threads = 2;
  std::size_t max_body_bytes = 1 << 20;
  std::string data_dir = "./bai-manager-data";
  std::string database;
  int agent_heartbeat_timeout = 15;
  int agent_lost_grace = 300;
  int agent_lost_forget = 3600;  ///< LOST agents holding nothing are removed this long after grace
  bool allow_signup = false;
  LoginLimits login_limits;

  std::string DatabasePath() const {
    return database.empty() ? data_dir + "/manager.db" : database;
  }
  /// Shared with agents; created on first start (mode 0600).
  std::string ClusterSecretPath() const { return data_dir + "/cluster-secret"; }
};

/// Reads `path` into `config` (keys not in the file keep their values). Unknown keys are errors
/// naming the key, so a typo does not pass silently.
Status LoadManagerConfig(std::string const& path, ManagerConfig& config);

/// Parses "host:port" into the config.
Status SetListen(std::string const& text, ManagerConfig& config);

}  // namespace bai::manager
