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
  explicit ThrowawayPostgres(std::string dir = {}, Mode mode = Mode::kStart);
  ~ThrowawayPostgres();
  ThrowawayPostgres(ThrowawayPostgres const&) = delete;
  ThrowawayPostgres& operator=(ThrowawayPostgres const&) = delete;

  /// Empty when the cluster started; else what went wrong.
  std::string const& error() const { return error_; }
  /// A connection URI for database `db` (made by CreateDatabase, or "postgres").
  std::string Url(std::string const& db = "postgres") const;
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
  ProcessResult AsOwner(std::vector<std::string> argv);

  std::optional<TempDir> temp_;
  std::string dir_;
  std::string bin_ = "/usr/lib/postgresql/15/bin";
  std::string error_;
  bool as_nobody_ = false;
  bool detached_ = false;
};

/// The database the manager's store tests run on: "" (SQLite in the data directory, the
/// default) or, when $BAI_TEST_POSTGRES names the directory of a running throwaway cluster
/// (ctest's `postgres` fixture starts one for the `pg.` run of the tests), the URL of a new
/// empty database there, dropped when the test process exits.
std::string TestDatabase();

}  // namespace bai::testing_util
