// SPDX-License-Identifier: Apache-2.0
#pragma once
// A runc test (runc_fixture.h: a manager, a root agent, `bai`) beside a registry of the test's own
// (local_registry.h): what the tests of pulled images start from.

#include "tests/agent/runc_fixture.h"
#include "tests/testing_util/local_registry.h"

#include <utility>

namespace bai::runc_testing {

class RegistryKernelTest : public RuncTest {
 protected:
  /// `options`: an account the registry asks for (htpasswd), or a token server.
  explicit RegistryKernelTest(testing_util::LocalRegistry::Options options = {})
      : registry_(std::move(options)) {}
  void SetUp() override {
    RuncTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(registry_.error(), "");
  }
  testing_util::LocalRegistry registry_;
};

}  // namespace bai::runc_testing
