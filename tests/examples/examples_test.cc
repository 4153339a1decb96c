// SPDX-License-Identifier: Apache-2.0
// Every example runs against a server that verifies signatures (label `examples`).
#include "tests/testing_util/subprocess.h"
#include "tests/testing_util/test_http_server.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai {
namespace {

using testing_util::BinPath;
using testing_util::RunProcess;

// examples/raw_request.cc, built against libbai.so.
TEST(ExamplesTest, RawRequestSignsAndReportsFailures) {
  testing_util::TestHttpServer server(testing_util::VerifyingHandler());
  testing_util::TempDir config;
  std::map<std::string, std::string> env = {{"BACKEND_ENDPOINT", server.url()},
                                            {"BACKEND_ACCESS_KEY", testing_util::kTestAccessKey},
                                            {"BACKEND_SECRET_KEY", testing_util::kTestSecretKey},
                                            {"BAI_CONFIG_DIR", config.path()},
                                            {"BAI_PROFILE", ""}};
  auto r = RunProcess({BinPath("example_raw_request"), "/auth?echo=hello"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["target"], "/auth?echo=hello");
  env["BACKEND_SECRET_KEY"] = "wrong";
  EXPECT_EQ(RunProcess({BinPath("example_raw_request")}, env).exit_code, 1);
}

}  // namespace
}  // namespace bai
