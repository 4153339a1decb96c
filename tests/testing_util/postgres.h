// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tests/testing_util/subprocess.h"

#include <optional>
#include <string>

namespace bai::testing_util {

/// A throwaway PostgreSQL cluster (Debian's postgresql-15): initdb into a temporary directory,
/// pg_ctl start listening on a Unix socket there only (no TCP, no port to collide on), fsync
/// off; stopped and removed on destruction. Run as root, the server runs as `nobody` (PostgreSQL
/// refuses root), so CI needs no service and no account of its own.
class ThrowawayPostgres {
 public:
  enum class Mode {
    kStart,   // initdb and start a cluster (stopped on destruction unless detached)
    kAttach,  // the cluster another process started in `dir`: nothing is started or stopped
  };
  /// A cluster in a new temporary directory, or (when `dir` is given) in that directory, which
  /// is then left in place.
  /// `tcp_port`: also listen on 127.0.0.1 at that port (tests that cut the network).
  explicit ThrowawayPostgres(std::string dir = {}, Mode mode = Mode::kStart, int tcp_port = 0);
  ~ThrowawayPostgres();
  ThrowawayPostgres(ThrowawayPostgres const&) = delete;
  ThrowawayPostgres& operator=(ThrowawayPostgres const&) = delete;

  /// Empty when the cluster started; else what went wrong.
  std::string const& error() const { return error_; }
  /// A connection URI for database `db` (made by CreateDatabase, or "postgres").
  std::string Url(std::string const& db = "postgres") const;
  /// The same over TCP to 127.0.0.1 (a cluster started with a `tcp_port`).
  std::string TcpUrl(std::string const& db) const;
  /// A new empty database; false (and error()) when it cannot be made.
  bool CreateDatabase(std::string const& db);
  /// Drops database `db`, closing its connections first.
  bool DropDatabase(std::string const& db);
  /// pg_ctl stop (fast) and start again: connections are lost, data kept.
  bool Restart();
  /// pg_ctl stop (immediate) now.
  bool Stop();
  /// Leaves the cluster running when this object goes (a ctest fixture stops it later).
  void Detach() { detached_ = true; }

 private:
  bool Ctl(std::vector<std::string> args);
  /// The port the socket is named after (5432 unless a `tcp_port` was given).
  std::string Port() const { return std::to_string(tcp_port_ > 0 ? tcp_port_ : 5432); }
  ProcessResult AsOwner(std::vector<std::string> argv);

  std::optional<TempDir> temp_;
  std::string dir_;
  std::string bin_ = "/usr/lib/postgresql/15/bin";
  std::string error_;
  bool as_nobody_ = false;
  int tcp_port_ = 0;
  bool detached_ = false;
};

/// The database the manager's store tests run on: "" (SQLite in the data directory, the
/// default) or, when $BAI_TEST_POSTGRES names the directory of a running throwaway cluster
/// (ctest's `postgres` fixture starts one for the `pg.` run of the tests), the URL of a new
/// empty database there, dropped when the test process exits.
std::string TestDatabase();

}  // namespace bai::testing_util
