// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/postgres.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>

namespace bai::testing_util {

namespace fs = std::filesystem;

ThrowawayPostgres::ThrowawayPostgres() {
  bin_ = "/usr/lib/postgresql/15/bin";
  if (!fs::exists(bin_ + "/initdb")) {
    error_ = "PostgreSQL 15 is not installed (scripts/install-deps.sh installs postgresql-15)";
    return;
  }
  as_nobody_ = geteuid() == 0;
  if (as_nobody_) {
    passwd const* nobody = getpwnam("nobody");
    if (!nobody) {
      error_ = "no user nobody to run PostgreSQL as";
      return;
    }
    std::error_code ec;
    fs::permissions(dir_.path(), fs::perms::owner_all, ec);
    if (chown(dir_.path().c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
      error_ = "cannot give " + dir_.path() + " to nobody";
      return;
    }
  }
  auto init = AsOwner({bin_ + "/initdb", "-D", dir_.path() + "/data", "-A", "trust", "-U", "bai",
                       "-E", "UTF8", "--no-sync", "--no-instructions"});
  if (init.exit_code != 0) {
    error_ = "initdb: " + init.out + init.err;
    return;
  }
  if (!Ctl({"start"})) return;
}

ThrowawayPostgres::~ThrowawayPostgres() {
  if (fs::exists(dir_.path() + "/data/postmaster.pid")) {
    AsOwner({bin_ + "/pg_ctl", "-D", dir_.path() + "/data", "-m", "immediate", "-w", "stop"});
  }
}

ProcessResult ThrowawayPostgres::AsOwner(std::vector<std::string> argv) {
  if (as_nobody_) argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "nobody", "--"});
  return RunProcess(argv, {{"LC_ALL", "C.UTF-8"}});
}

bool ThrowawayPostgres::Ctl(std::vector<std::string> args) {
  std::vector<std::string> argv = {
      bin_ + "/pg_ctl", "-D", dir_.path() + "/data", "-l", dir_.path() + "/log", "-w", "-t", "60"};
  if (args.front() == "start" || args.front() == "restart") {
    argv.push_back("-o");
    argv.push_back("-k " + dir_.path() +
                   " -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=200");
  }
  if (args.front() == "restart") argv.insert(argv.end(), {"-m", "fast"});
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = AsOwner(argv);
  if (r.exit_code != 0) {
    error_ = "pg_ctl " + args.front() + ": " + r.out + r.err + ReadFileBytes(dir_.path() + "/log");
    return false;
  }
  return true;
}

std::string ThrowawayPostgres::Url(std::string const& db) const {
  return "postgresql:///" + db + "?host=" + dir_.path() + "&user=bai";
}

bool ThrowawayPostgres::CreateDatabase(std::string const& db) {
  auto r = AsOwner({bin_ + "/createdb", "-h", dir_.path(), "-U", "bai", db});
  if (r.exit_code != 0) error_ = "createdb " + db + ": " + r.out + r.err;
  return r.exit_code == 0;
}

bool ThrowawayPostgres::Restart() { return Ctl({"restart"}); }

}  // namespace bai::testing_util
