// SPDX-License-Identifier: Apache-2.0
// The session examples, built against libbai.so, run against a whole local cluster.
#include "tests/testing_util/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>

namespace bai {
namespace {

using ::testing::HasSubstr;
using SessionExamplesTest = testing_util::LocalCluster;

TEST_F(SessionExamplesTest, BatchSubmitExitsWithTheJobsCode) {
  auto ok = testing_util::RunProcess(
      {testing_util::BinPath("example_batch_submit"), "python", "python3", "-c", "print(1)"}, env_);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.err, HasSubstr("submitted "));
  EXPECT_THAT(ok.out, HasSubstr("python3 -c 'print(1)'"));  // the dummy agent echoes the job
  auto failed = testing_util::RunProcess(
      {testing_util::BinPath("example_batch_submit"), "python", "sh", "-c", "exit 5"}, env_);
  EXPECT_EQ(failed.exit_code, 5) << failed.err;
  auto refused = testing_util::RunProcess(
      {testing_util::BinPath("example_batch_submit"), "no-such-image", "true"}, env_);
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("cannot submit"));
}

TEST_F(SessionExamplesTest, ListSessionsReadsEveryPage) {
  for (char const* name : {"ex-a1", "ex-a2", "ex-b1", "ex-a3", "ex-a4"}) {
    ASSERT_EQ(Bai({"run", "--detach", "--name", name, "--starts-at", "1h", "python", "--", "true"})
                  .exit_code,
              0);
  }
  auto all = testing_util::RunProcess({testing_util::BinPath("example_list_sessions")}, env_);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), '\n'), 5);
  EXPECT_THAT(all.err, HasSubstr("5 sessions in 3 pages"));
  // Which server answered, from Client::server() (issue 44).
  EXPECT_THAT(all.err, HasSubstr("bai-manager "));
  EXPECT_THAT(all.err, HasSubstr("(API v8.20240915), sessions have priorities"));
  auto some = testing_util::RunProcess(
      {testing_util::BinPath("example_list_sessions"), "name like \"ex-a%\""}, env_);
  ASSERT_EQ(some.exit_code, 0) << some.err;
  EXPECT_THAT(some.out, ::testing::Not(HasSubstr("ex-b1")));
  EXPECT_THAT(some.err, HasSubstr("4 sessions in 2 pages"));
}

TEST_F(SessionExamplesTest, CreateUserMakesAUserWithTwoKeypairs) {
  auto made = testing_util::RunProcess(
      {testing_util::BinPath("example_create_user"), "ex-user@example.com"}, env_,
      "ex-password-1\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_THAT(made.out, HasSubstr("user ex-user@example.com"));
  EXPECT_THAT(made.out, HasSubstr("2 keypairs"));
  auto again = testing_util::RunProcess(
      {testing_util::BinPath("example_create_user"), "ex-user@example.com"}, env_, "x\n");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("is taken"));
}

TEST_F(SessionExamplesTest, PrintUsageShowsTheDaysSessions) {
  ASSERT_EQ(Bai({"run", "--name", "ex-usage", "python", "--", "true"}).exit_code, 0);
  auto t = std::time(nullptr);
  char day[16];
  std::strftime(day, sizeof day, "%Y-%m-%d", std::gmtime(&t));
  auto shown =
      testing_util::RunProcess({testing_util::BinPath("example_print_usage"), day, day}, env_);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("project default"));
  EXPECT_THAT(shown.out, HasSubstr("ex-usage"));
  EXPECT_THAT(shown.out, HasSubstr("TERMINATED"));
  auto bad = testing_util::RunProcess(
      {testing_util::BinPath("example_print_usage"), "2026-01-01", "2026-12-31"}, env_);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("100 days"));
}

}  // namespace
}  // namespace bai
