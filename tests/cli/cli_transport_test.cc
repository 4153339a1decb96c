// SPDX-License-Identifier: Apache-2.0
// Commands run in process against bai/mocks/mock_transport.h (cli::Main's transport, ADR 25):
// what a command sends and how it prints an answer, without a server or a process.
#include "bai/mocks/mock_transport.h"

#include "cli/app.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

namespace bai {
namespace {

using ::testing::HasSubstr;
using ::testing::Invoke;

class CliTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The configuration comes from the environment, as for a user: one process, one test.
    ::setenv("BAI_CONFIG_DIR", config_.path().c_str(), 1);
    ::setenv("BACKEND_ENDPOINT", "http://manager.test:8081", 1);
    ::setenv("BACKEND_ACCESS_KEY", "AKIAIOSFODNN7EXAMPLE", 1);
    ::setenv("BACKEND_SECRET_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1);
    ::unsetenv("BAI_PROFILE");
  }
  void TearDown() override {
    for (char const* name :
         {"BAI_CONFIG_DIR", "BACKEND_ENDPOINT", "BACKEND_ACCESS_KEY", "BACKEND_SECRET_KEY"}) {
      ::unsetenv(name);
    }
  }
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "bai");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    out_.str("");
    err_.str("");
    std::istringstream in;
    return cli::Main(static_cast<int>(argv.size()), argv.data(), out_, err_, in, transport_);
  }

  testing_util::TempDir config_;
  std::shared_ptr<mocks::MockTransport> transport_ = std::make_shared<mocks::MockTransport>();
  std::ostringstream out_, err_;
};

TEST_F(CliTransportTest, PsRunsInProcessAgainstTheMockTransport) {
  std::vector<TransportRequest> sent;
  EXPECT_CALL(*transport_, Send(::testing::_))
      .WillRepeatedly(Invoke([&sent](TransportRequest const& r) {
        sent.push_back(r);
        if (r.target == "/") {
          return mocks::JsonAnswer(200,
                                   R"({"version": "v8.20240915", "manager": "bai-manager 0.1.0"})");
        }
        return mocks::JsonAnswer(200,
                                 R"({"data": {"compute_session_list": {"total_count": 1, "items": [
                   {"id": "9f0c5e4e-1f6b-4c1e-8a4e-2b2f4f7f0001", "name": "train", "status": "RUNNING",
                    "type": "BATCH", "image": "python:3.11", "created_at": "2026-11-29T12:00:00+00:00"}]}}})");
      }));
  ASSERT_EQ(Run({"-o", "json", "ps"}), 0) << err_.str();
  auto j = nlohmann::json::parse(out_.str());
  ASSERT_EQ(j["items"].size(), 1u);
  EXPECT_EQ(j["items"][0]["name"], "train");
  EXPECT_EQ(j["items"][0]["status"], "RUNNING");
  // What went out: the version probe, then one signed GraphQL query for the list.
  ASSERT_GE(sent.size(), 2u);
  EXPECT_EQ(sent.back().method, "POST");
  EXPECT_EQ(sent.back().target, "/admin/gql");
  EXPECT_THAT(sent.back().body, HasSubstr("compute_session_list"));
}

TEST_F(CliTransportTest, AServerErrorIsPrintedAndExitsWithItsCode) {
  EXPECT_CALL(*transport_, Send(::testing::_)).WillRepeatedly(Invoke([](TransportRequest const& r) {
    if (r.target == "/") {
      return mocks::JsonAnswer(200,
                               R"({"version": "v8.20240915", "manager": "bai-manager 0.1.0"})");
    }
    return mocks::JsonAnswer(
        404,
        R"({"type": "https://api.backend.ai/probs/session-not-found", "title": "No such session."})");
  }));
  EXPECT_EQ(Run({"session", "info", "nope"}), 5);
  EXPECT_THAT(err_.str(), HasSubstr("No such session"));
  EXPECT_TRUE(out_.str().empty());
}

}  // namespace
}  // namespace bai
