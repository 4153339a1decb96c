// SPDX-License-Identifier: Apache-2.0
// A run's output between two polls (run_console.h): merged by stream, taken in slices that fit
// one answer, bounded for a run nobody polls.
#include "server-reference/agent/run_console.h"

#include <gtest/gtest.h>

namespace bai::agent {
namespace {

TEST(RunConsoleTest, ChunksOfOneStreamMergeAndAnswersTakeTheOldestFirstWithinTheirBudget) {
  RunState run;
  AddConsole(run, "stdout", "abc");
  AddConsole(run, "stdout", "def");
  AddConsole(run, "stderr", "E");
  AddConsole(run, "stdout", "gh");
  ASSERT_EQ(run.console.size(), 3u);
  EXPECT_EQ(run.console[0].second, "abcdef");
  EXPECT_EQ(run.console_bytes, 9u);
  auto first = TakeConsole(run, 4);  // a chunk is split where the budget ends
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], (std::pair<std::string, std::string>{"stdout", "abcd"}));
  auto rest = TakeConsole(run, 100);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[0].second, "ef");
  EXPECT_EQ(rest[1], (std::pair<std::string, std::string>{"stderr", "E"}));
  EXPECT_EQ(rest[2].second, "gh");
  EXPECT_EQ(run.console_bytes, 0u);
  EXPECT_TRUE(run.console.empty());
}

TEST(RunConsoleTest, ARunNobodyPollsKeepsItsLatestOutputAndSaysWhatItDropped) {
  RunState run;
  std::string mib(1u << 20, 'x');
  for (int i = 0; i < 40; ++i) AddConsole(run, i % 2 ? "stderr" : "stdout", mib);
  EXPECT_LE(run.console_bytes, kMaxConsole);
  ASSERT_FALSE(run.console.empty());
  EXPECT_EQ(run.console.front().first, "stderr");
  EXPECT_NE(run.console.front().second.find("bytes of output dropped here"), std::string::npos);
  // What is kept is the end: the last chunk whole.
  EXPECT_EQ(run.console.back().second.size(), mib.size());
}

}  // namespace
}  // namespace bai::agent
