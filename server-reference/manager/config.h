// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/auth/login_throttle.h"
#include "server-reference/common/log/log.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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
/// database = ""               # default: <data_dir>/manager.db (SQLite); or postgresql://…
/// [agents]
/// heartbeat_timeout = 15      # seconds of silence before an agent is LOST
/// lost_grace = 300            # seconds a LOST agent's sessions wait before they end as ERROR
/// [images]
/// auto_pull = "digest"        # registry images: digest (pull when the rescan's digest is not
///                             # the one held), tag (only when absent) or none (never)
/// [scheduler]
/// head_wait = 600             # seconds a session that could fit waits before an agent is held
///                             # for it (nothing else starts there; the others keep backfilling)
/// [auth]
/// allow_signup = false        # POST /auth/signup creates users (off: 403)
/// login_attempts_per_address = 30  # password logins one client address may try per window
/// login_failures_per_user = 10     # failed logins an account takes per window, then 429
/// login_window = 300               # seconds
/// signups_per_address = 5          # POST /auth/signup calls one client address may make per hour
/// trusted_proxies = []             # webservers' addresses: their X-Forwarded-For names the
///                                  # client the login throttle counts (not them)
/// max_streams_per_user = 64        # WebSocket streams one keypair holds open (0: no limit)
/// [vfolders]
/// embedded = true             # run a storage proxy "local" in this process
/// listen = "127.0.0.1:0"      # its client-facing /upload and /download (0: any free port)
/// public_url = ""             # what clients are told (default http://LISTEN)
/// volumes = { volume1 = "/srv/vfolders/volume1" }  # default: <data_dir>/vfolders/volume1
/// default_host = "local:volume1"
/// file_owner = "1000:1000"   # UID:GID of folders' files: the kernels' work user (when root)
/// [[vfolders.proxies]]        # bai-storage processes (their manager-facing API)
/// name = "nas"
/// url = "http://10.0.0.2:6022"
/// secret_file = "/etc/bai/storage-secret"
/// [logging]                   # also --log-level, --log-format, --log-file, --log-max-size…
/// level = "info"              # debug (every request) | info | warn | error
/// format = "text"             # text | json (one object a line)
/// file = ""                   # default stderr; a file is rotated by size
/// max_size = "100m"
/// max_files = 5
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
  std::string image_auto_pull = "digest";
  int agent_lost_forget = 3600;   ///< LOST agents holding nothing are removed this long after grace
  int scheduler_head_wait = 600;  ///< seconds; scheduler::Input::max_head_wait
  bool allow_signup = false;
  server::LoginLimits login_limits;
  int signups_per_address = 5;  ///< per hour, right or wrong
  /// WebSocket streams one keypair may hold open on a manager at once (0: no limit).
  int max_streams_per_user = 64;
  /// Peers (bai-webserver) whose X-Forwarded-For names the client for the login throttle.
  std::vector<std::string> trusted_proxies;
  server::log::Options logging;

  struct RemoteProxy {
    std::string name, url, secret_file;
  };
  struct VFolders {
    bool embedded = true;
    std::string listen_address = "127.0.0.1";
    std::uint16_t listen_port = 0;
    std::string public_url;
    std::map<std::string, std::string> volumes;  ///< empty: volume1 under the data directory
    std::string default_host = "local:volume1";
    /// Applied when the manager runs as root (bai-agent's default --uid/--gid); "" for none.
    std::string file_owner = "1000:1000";
    std::vector<RemoteProxy> proxies;
  } vfolders;

  /// `database` names a PostgreSQL server (postgresql:// or postgres://).
  bool UsesPostgres() const {
    return database.rfind("postgresql://", 0) == 0 || database.rfind("postgres://", 0) == 0;
  }
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
/// Parses "host:port" for the embedded storage proxy's client listener.
Status SetStorageListen(std::string const& text, ManagerConfig& config);

}  // namespace bai::manager
