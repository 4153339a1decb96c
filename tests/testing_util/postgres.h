// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tests/testing_util/subprocess.h"

#include <string>

namespace bai::testing_util {

/// A throwaway PostgreSQL cluster (Debian's postgresql-15): initdb into a temporary directory,
/// pg_ctl start listening on a Unix socket there only (no TCP, no port to collide on), fsync
/// off; stopped and removed on destruction. Run as root, the server runs as `nobody` (PostgreSQL
/// refuses root), so CI needs no service and no account of its own.
class ThrowawayPostgres {
 public:
  ThrowawayPostgres();
  ~ThrowawayPostgres();
  ThrowawayPostgres(ThrowawayPostgres const&) = delete;
  ThrowawayPostgres& operator=(ThrowawayPostgres const&) = delete;

  /// Empty when the cluster started; else what went wrong.
  std::string const& error() const { return error_; }
  /// A connection URI for database `db` (made by CreateDatabase, or "postgres").
  std::string Url(std::string const& db = "postgres") const;
  /// A new empty database; false (and error()) when it cannot be made.
  bool CreateDatabase(std::string const& db);
  /// pg_ctl stop (fast) and start again: connections are lost, data kept.
  bool Restart();

 private:
  bool Ctl(std::vector<std::string> args);
  ProcessResult AsOwner(std::vector<std::string> argv);

  TempDir dir_;
  std::string bin_;
  std::string error_;
  bool as_nobody_ = false;
};

}  // namespace bai::testing_util
