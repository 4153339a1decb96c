// SPDX-License-Identifier: Apache-2.0
// bai-manager: the reference Backend.AI manager.
//   bai-manager [--config FILE] [--listen HOST:PORT] [--data-dir DIR] [--threads N]
//               [--storage-listen HOST:PORT]
//   bai-manager fixture load FILE.json [--config FILE] [--data-dir DIR]
#include "server-reference/common/auth/login_throttle.h"
#include "server-reference/common/daemon/daemon.h"
#include "server-reference/common/log/log_options.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/state/copy_database.h"

#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

namespace {

bai::server::Daemon process("bai-manager");

int Fail(bai::Status const& s) { return process.Fail(s.message()); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bai-manager: the reference Backend.AI manager", "bai-manager"};
  std::string config_file, listen, data_dir, fixture_file;
  int threads = 0;
  bool allow_signup = false;
  app.add_option("--config", config_file, "TOML configuration file")->check(CLI::ExistingFile);
  app.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:8081)");
  app.add_option("--data-dir", data_dir, "Directory for the database and credentials");
  app.add_option("--threads", threads, "I/O threads")->check(CLI::Range(1, 256));
  std::string database;
  app.add_option("--database", database,
                 "postgresql://USER@HOST:PORT/DB, or a SQLite file (default: "
                 "<data-dir>/manager.db)")
      ->envname("BAI_DATABASE");
  std::string storage_listen;
  app.add_option("--storage-listen", storage_listen,
                 "HOST:PORT of the embedded storage proxy's /upload and /download");
  bai::server::log::Options log_flags;
  bai::server::log::AddOptions(app, log_flags);
  app.add_flag("--allow-signup", allow_signup, "Let anyone create a user with POST /auth/signup");
  std::vector<std::string> trusted_proxies;
  app.add_option("--trusted-proxy", trusted_proxies,
                 "A bai-webserver's address: logins it forwards count against the client its "
                 "X-Forwarded-For names (repeatable; also [auth] trusted_proxies)");
  app.add_flag_function(
      "--version",
      [](std::int64_t) {
        std::cout << bai::manager::ManagerVersion() << "\n";
        std::exit(0);
      },
      "Print the version");
  auto* fixture = app.add_subcommand("fixture", "Database fixtures");
  auto* load = fixture->add_subcommand("load", "Load domains, projects, users, keypairs, policies");
  load->add_option("FILE", fixture_file, "Fixture JSON file")->required()->check(CLI::ExistingFile);
  fixture->require_subcommand(1);
  std::string migrate_from, migrate_to;
  auto* migrate = app.add_subcommand(
      "migrate", "Copy an installation's data into another database (e.g. SQLite to PostgreSQL)");
  migrate->add_option("--from", migrate_from, "sqlite:PATH or postgresql://…")->required();
  migrate->add_option("--to", migrate_to, "postgresql://… or sqlite:PATH (empty)")->required();
  app.fallthrough();
  CLI11_PARSE(app, argc, argv);
  // Errors in the configuration are named as this daemon's before its [logging] is read.
  (void)bai::server::log::Init("bai-manager", {});

  bai::manager::ManagerConfig config;
  if (!config_file.empty()) {
    if (auto s = bai::manager::LoadManagerConfig(config_file, config); !s.ok()) return Fail(s);
  }
  if (!listen.empty()) {
    if (auto s = bai::manager::SetListen(listen, config); !s.ok()) return Fail(s);
  }
  if (!storage_listen.empty()) {
    if (auto s = bai::manager::SetStorageListen(storage_listen, config); !s.ok()) return Fail(s);
  }
  if (!data_dir.empty()) config.data_dir = data_dir;
  if (!database.empty()) config.database = database;
  if (threads > 0) config.threads = threads;
  if (allow_signup) config.allow_signup = true;
  for (auto const& address : trusted_proxies) {
    if (!bai::server::IsIpAddress(address)) {
      std::cerr << "bai-manager: --trusted-proxy " << address << ": not an IP address\n";
      return 2;
    }
    config.trusted_proxies.push_back(address);
  }
  bai::server::log::ApplyGiven(app, log_flags, config.logging);
  if (!process.InitLog(config.logging).ok()) return 2;

  if (migrate->parsed()) {
    auto open =
        [](std::string const& where) -> bai::StatusOr<std::unique_ptr<bai::server::Database>> {
      if (where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0) {
        return bai::server::OpenPostgres(where);
      }
      if (where.rfind("sqlite:", 0) == 0) return bai::server::OpenSqlite(where.substr(7), 2);
      return bai::Status(bai::StatusCode::kInvalidArgument,
                         where + ": name sqlite:PATH or postgresql://USER@HOST:PORT/DB");
    };
    if (migrate_from.rfind("sqlite:", 0) == 0 && ::access(migrate_from.c_str() + 7, R_OK) != 0) {
      return Fail(
          bai::Status(bai::StatusCode::kNotFound, "no database at " + migrate_from.substr(7)));
    }
    auto from = open(migrate_from);
    if (!from.ok()) return Fail(from.status());
    auto to = open(migrate_to);
    if (!to.ok()) return Fail(to.status());
    auto summary = bai::manager::CopyDatabase(**from, **to);
    if (!summary.ok()) return Fail(summary.status());
    std::cout << *summary << "\n";
    return 0;
  }

  if (load->parsed()) {
    auto state = bai::manager::OpenState(config);
    if (!state.ok()) return Fail(state.status());
    std::ifstream in(fixture_file);
    std::stringstream text;
    text << in.rdbuf();
    auto summary = bai::manager::LoadFixture(*state->store, text.str());
    if (!summary.ok()) return Fail(summary.status());
    std::cout << *summary << "\n";
    return 0;
  }

  // Signals are taken synchronously by this thread; the server threads never see them.
  process.BlockStopSignals();

  auto manager = bai::manager::Manager::Start(config);
  if (!manager.ok()) return Fail(manager.status());
  auto const& boot = (*manager)->bootstrap();
  if (boot.created) {
    bai::server::log::Info("first start; superadmin credentials written",
                           {{"file", boot.credentials_file}});
  }
  if (auto* storage = (*manager)->storage()) {
    std::cout << "bai-manager: storage proxy 'local' at " << storage->service().options().client_url
              << std::endl;
  }
  std::cout << "bai-manager listening on " << config.listen_address << ":" << (*manager)->port()
            << std::endl;
  bai::server::log::Info("listening",
                         {{"address", config.listen_address},
                          {"port", static_cast<int>((*manager)->port())},
                          {"database", config.UsesPostgres() ? "postgresql" : "sqlite"},
                          {"version", bai::manager::ManagerVersion()}});
  process.WaitForStop();
  (*manager)->Stop();
  return 0;
}
