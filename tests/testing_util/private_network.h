// SPDX-License-Identifier: Apache-2.0
#pragma once
// For root tests that touch the network: the test process moves into a network namespace of
// its own before any test (and any thread) starts, so every thread and child made later is in
// it and nothing on the host's own network is touched; the namespace goes with the process.
//   auto* const kNet = ::testing::AddGlobalTestEnvironment(new testing_util::PrivateNetwork);

#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace bai::testing_util {

/// A system tool by its full path (the tests' spawn does not search PATH).
inline std::string SystemTool(char const* name) {
  for (char const* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    if (access((std::string(dir) + name).c_str(), X_OK) == 0) return std::string(dir) + name;
  }
  return name;
}

class PrivateNetwork : public ::testing::Environment {
 public:
  void SetUp() override {
    if (geteuid() != 0) {
      error = "needs root (a network namespace of its own)";
      return;
    }
    if (unshare(CLONE_NEWNET) != 0) {
      error = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      return;
    }
    auto lo = RunProcess({SystemTool("ip"), "link", "set", "lo", "up"});
    if (lo.exit_code != 0) error = "ip link set lo up: " + lo.out + lo.err;
    entered = error.empty();
  }
  static inline bool entered = false;
  static inline std::string error;
};

}  // namespace bai::testing_util
