// SPDX-License-Identifier: Apache-2.0
// bai-test-postgres: the throwaway PostgreSQL cluster as a ctest fixture. `start DIR` makes and
// starts a cluster in DIR (any earlier one there is stopped and removed first) and leaves it
// running; `stop DIR` stops it and removes DIR. The `pg.` run of the store's tests creates its
// databases there (testing_util::TestDatabase).
#include "tests/testing_util/postgres.h"

#include <filesystem>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  using bai::testing_util::ThrowawayPostgres;
  std::string const verb = argc == 3 ? argv[1] : "";
  if (verb != "start" && verb != "stop") {
    std::cerr << "usage: bai-test-postgres start|stop DIR\n";
    return 2;
  }
  std::string const dir = argv[2];
  {
    ThrowawayPostgres old(dir, ThrowawayPostgres::Mode::kAttach);
    if (old.error().empty() && !old.Stop()) {
      std::cerr << "cannot stop the cluster in " << dir << "\n";
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (verb == "stop") return 0;
  ThrowawayPostgres cluster(dir);
  if (!cluster.error().empty()) {
    std::cerr << cluster.error() << "\n";
    return 1;
  }
  cluster.Detach();
  std::cout << "PostgreSQL runs in " << dir << ": " << cluster.Url() << "\n";
  return 0;
}
