// SPDX-License-Identifier: Apache-2.0
// bai-webserver: the web console and session mode in front of one or more managers.
//   bai-webserver --manager URL[,URL…] (--data-dir DIR | --database URL) [--listen HOST:PORT]
//                 [--static-dir DIR] [--domain NAME] [--secure-cookies] [--log-…]
// The database is the managers' own (SQLite file or PostgreSQL URL): logins live there, so
// every webserver on it serves the same users. Start it after a manager has migrated it.
#include "server-reference/common/daemon/daemon.h"
#include "server-reference/common/db/database.h"
#include "server-reference/common/http/listen_address.h"
#include "server-reference/common/log/log_options.h"
#include "server-reference/webserver/app_proxy.h"
#include "server-reference/webserver/webserver.h"

#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <sstream>

#ifndef BAI_BIN_TO_DATADIR
#define BAI_BIN_TO_DATADIR "../share"
#endif

namespace {

bai::server::Daemon process("bai-webserver");

int Fail(std::string const& message) { return process.Fail(message); }

std::vector<std::string> SplitList(std::string const& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The console beside the binary: DATADIR/bai/console where installed (cmake/BaiInstall.cmake),
// build/console in a build tree; "" when neither holds one (the webserver says how to build it).
std::string DefaultStaticDir() {
  std::string self = bai::server::ExecutableDir();
  for (std::string dir : {self + "/" BAI_BIN_TO_DATADIR "/bai/console", self + "/../console"}) {
    if (::access((dir + "/index.html").c_str(), R_OK) == 0) return dir;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bai-webserver: the web console and session-mode login for bai", "bai-webserver"};
  app.set_config("--config", "", "TOML file of these options by their long names");
  app.allow_config_extras(false);
  std::string listen = "127.0.0.1:8090", managers, data_dir, database, static_dir;
  bai::webserver::WebServerOptions options;
  std::int64_t login_days = 7;
  app.add_option("--listen", listen, "HOST:PORT to serve the console on (default 127.0.0.1:8090)");
  app.add_option("--manager", managers, "The managers' URLs, comma-separated")
      ->envname("BAI_MANAGER")
      ->required();
  app.add_option("--data-dir", data_dir, "The manager's data directory (its SQLite database)");
  app.add_option("--database", database,
                 "postgresql://USER@HOST:PORT/DB or a SQLite file: the managers' database")
      ->envname("BAI_DATABASE");
  app.add_option("--static-dir", static_dir,
                 "The built console (default: DATADIR/bai/console where installed, else "
                 "build/console beside build/bin)");
  app.add_option("--domain", options.domain, "The domain users sign in to (default 'default')");
  app.add_option("--login-days", login_days, "Days a login lasts (default 7)")
      ->check(CLI::Range(1, 365));
  app.add_flag("--secure-cookies", options.secure_cookies,
               "Mark cookies Secure and send HSTS (the console is served over HTTPS by a "
               "TLS-terminating proxy in front)");
  app.add_option("--login-attempts-per-address", options.login_limits.per_address,
                 "Sign-in attempts one address may make per 5 minutes (default 30)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--login-failures-per-user", options.login_limits.failures_per_user,
                 "Failed sign-ins per account and address per 5 minutes (default 10)")
      ->check(CLI::Range(1, 1000000));
  std::string app_ports = "10200-10299";
  app.add_option("--app-ports", app_ports,
                 "Ports for apps opened from the console, FIRST-LAST on the listen address "
                 "(default 10200-10299); 0: no app launcher");
  app.add_option("--app-ports-per-user", options.app_ports_per_user,
                 "App ports one user holds at once; one more closes their least recently used "
                 "(default 4; 0: no limit)")
      ->check(CLI::Range(0, 10000));
  app.add_option(
      "--app-host", options.app_host,
      "The host name browsers reach app ports at (default: the one they reached the console at)");
  std::string storage_urls;
  app.add_option("--storage-url", storage_urls,
                 "Storage proxies' client URLs (comma-separated) the console may upload to "
                 "directly; others go through this webserver");
  bai::server::log::Options log;
  bai::server::log::AddOptions(app, log);
  CLI11_PARSE(app, argc, argv);
  if (!process.InitLog(log).ok()) return 2;

  auto where = bai::server::ParseListenAddress(listen);
  if (!where.ok()) return Fail(where.status().message());
  options.address = where->host;
  options.port = where->port;
  options.managers = SplitList(managers);
  if (static_dir.empty()) static_dir = DefaultStaticDir();
  options.static_dir = static_dir;
  options.storage_urls = SplitList(storage_urls);
  if (app_ports == "0") {
    options.app_first_port = options.app_last_port = 0;
  } else {
    auto range = bai::webserver::ParsePortRange(app_ports);
    if (!range.ok()) return Fail(range.status().message());
    options.app_first_port = range->first;
    options.app_last_port = range->last;
  }
  options.login_max_age = login_days * 24 * 3600;
  if (database.empty() && data_dir.empty()) {
    return Fail("name the managers' database: --data-dir DIR (SQLite) or --database URL");
  }
  bool postgres = database.rfind("postgresql://", 0) == 0 || database.rfind("postgres://", 0) == 0;
  std::string sqlite_path = database.empty() ? data_dir + "/manager.db" : database;
  if (!postgres && ::access(sqlite_path.c_str(), R_OK | W_OK) != 0) {
    return Fail("no manager database at " + sqlite_path + " (start bai-manager first)");
  }
  auto db = postgres ? bai::server::OpenPostgres(database, {options.forward_threads + 2})
                     : bai::server::OpenSqlite(sqlite_path, options.forward_threads + 2);
  if (!db.ok()) return Fail("cannot open the database: " + db.status().message());
  // The managers own the schema; this one only checks that it has the logins' table.
  if (auto probe = (*db)->Query("SELECT COUNT(*) FROM web_sessions"); !probe.ok()) {
    return Fail(
        "the database has no web_sessions table: start a bai-manager of this version on "
        "it first (" +
        probe.status().message() + ")");
  }

  process.BlockStopSignals();
  auto server = bai::webserver::WebServer::Start(options, **db);
  if (!server.ok()) return Fail(server.status().message());
  std::cout << "bai-webserver: the console at http://" << options.address << ":"
            << (*server)->port() << "/" << std::endl;
  bai::server::log::Info("listening", {{"address", options.address},
                                       {"port", static_cast<int>((*server)->port())},
                                       {"managers", managers},
                                       {"database", postgres ? "postgresql" : "sqlite"}});
  process.WaitForStop();
  (*server)->Stop();
  return 0;
}
