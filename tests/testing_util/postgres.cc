// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/postgres.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>

namespace bai::testing_util {

namespace fs = std::filesystem;

ThrowawayPostgres::ThrowawayPostgres(std::string dir, Mode mode, int tcp_port)
    : dir_(std::move(dir)), tcp_port_(tcp_port) {
  if (mode == Mode::kAttach) {
    detached_ = true;
    struct stat st {};
    as_nobody_ = geteuid() == 0 && ::stat(dir_.c_str(), &st) == 0 && st.st_uid != 0;
    if (!fs::exists(dir_ + "/data/postmaster.pid")) {
      error_ = "no PostgreSQL cluster runs in " + dir_;
    }
    return;
  }
  if (dir_.empty()) dir_ = temp_.emplace().path();
  std::error_code made;
  fs::create_directories(dir_, made);
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
    fs::permissions(dir_, fs::perms::owner_all, ec);
    if (chown(dir_.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
      error_ = "cannot give " + dir_ + " to nobody";
      return;
    }
  }
  auto init = AsOwner({bin_ + "/initdb", "-D", dir_ + "/data", "-A", "trust", "-U", "bai", "-E",
                       "UTF8", "--no-sync", "--no-instructions"});
  if (init.exit_code != 0) {
    error_ = "initdb: " + init.out + init.err;
    return;
  }
  if (!Ctl({"start"})) return;
}

ThrowawayPostgres::~ThrowawayPostgres() {
  if (!detached_) Stop();
}

bool ThrowawayPostgres::Stop() {
  if (!fs::exists(dir_ + "/data/postmaster.pid")) return true;
  auto r = AsOwner({bin_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"});
  return r.exit_code == 0;
}

ProcessResult ThrowawayPostgres::AsOwner(std::vector<std::string> argv) {
  if (as_nobody_) argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "nobody", "--"});
  return RunProcess(argv, {{"LC_ALL", "C.UTF-8"}});
}

bool ThrowawayPostgres::Ctl(std::vector<std::string> args) {
  std::vector<std::string> argv = {bin_ + "/pg_ctl", "-D", dir_ + "/data", "-l",
                                   dir_ + "/log",    "-w", "-t",           "60"};
  if (args.front() == "start" || args.front() == "restart") {
    argv.push_back("-o");
    std::string listen = tcp_port_ > 0 ? "127.0.0.1 -c port=" + std::to_string(tcp_port_) : "''";
    argv.push_back("-k " + dir_ + " -c listen_addresses=" + listen +
                   " -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=200");
  }
  if (args.front() == "restart") argv.insert(argv.end(), {"-m", "fast"});
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = AsOwner(argv);
  if (r.exit_code != 0) {
    error_ = "pg_ctl " + args.front() + ": " + r.out + r.err + ReadFileBytes(dir_ + "/log");
    return false;
  }
  return true;
}

std::string ThrowawayPostgres::Url(std::string const& db) const {
  return "postgresql:///" + db + "?host=" + dir_ + "&port=" + Port() + "&user=bai";
}

std::string ThrowawayPostgres::TcpUrl(std::string const& db) const {
  return "postgresql://bai@127.0.0.1:" + std::to_string(tcp_port_) + "/" + db;
}

bool ThrowawayPostgres::CreateDatabase(std::string const& db) {
  auto r = AsOwner({bin_ + "/createdb", "-h", dir_, "-p", Port(), "-U", "bai", db});
  if (r.exit_code != 0) error_ = "createdb " + db + ": " + r.out + r.err;
  return r.exit_code == 0;
}

bool ThrowawayPostgres::DropDatabase(std::string const& db) {
  auto r = AsOwner({bin_ + "/dropdb", "--force", "-h", dir_, "-p", Port(), "-U", "bai", db});
  if (r.exit_code != 0) error_ = "dropdb " + db + ": " + r.out + r.err;
  return r.exit_code == 0;
}

bool ThrowawayPostgres::Restart() { return Ctl({"restart"}); }

namespace {

// The databases this process made in the shared cluster, dropped at its exit.
struct TestDatabases {
  std::mutex mu;
  std::optional<ThrowawayPostgres> cluster;
  std::vector<std::string> made;
  ~TestDatabases() {
    if (!cluster) return;
    for (auto const& db : made) cluster->DropDatabase(db);
  }
};

}  // namespace

std::string TestDatabase() {
  char const* dir = std::getenv("BAI_TEST_POSTGRES");
  if (!dir || !*dir) return "";
  static TestDatabases databases;
  static std::atomic<int> next{0};
  std::lock_guard lock(databases.mu);
  if (!databases.cluster) databases.cluster.emplace(dir, ThrowawayPostgres::Mode::kAttach);
  std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(++next);
  if (!databases.cluster->error().empty() || !databases.cluster->CreateDatabase(name)) {
    // The manager's start then fails on this URL, naming the database; say why here too.
    std::cerr << "BAI_TEST_POSTGRES=" << dir << ": " << databases.cluster->error() << "\n";
  } else {
    databases.made.push_back(name);
  }
  return databases.cluster->Url(name);
}

}  // namespace bai::testing_util
