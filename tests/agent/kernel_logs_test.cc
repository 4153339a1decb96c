// SPDX-License-Identifier: Apache-2.0
// The agent's on-disk kernel output: order and streams kept, pages by offset, the size limit
// with its notice, logs that outlive the agent process, and session ids that are not names.
#include "server-reference/agent/kernel_logs.h"

#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace bai::agent {
namespace {

using ::testing::HasSubstr;
using testing_util::TempDir;

constexpr char kId[] = "3f2b8a9e-1111-4222-8333-444455556666";

std::string Text(server::agent_protocol::LogsReply const& r, bool with_streams = false) {
  std::string out;
  for (auto const& c : r.chunks) out += (with_streams ? c.stream + ":" : "") + c.data;
  return out;
}

TEST(KernelLogsTest, KeepsOrderStreamsAndOffsets) {
  TempDir dir;
  KernelLogs logs(dir.path() + "/logs", 1 << 20);
  EXPECT_EQ(logs.Append(kId, "stdout", "one\n").offset, 0);
  EXPECT_EQ(logs.Append(kId, "stdout", "two\n").offset, 4);
  EXPECT_EQ(logs.Append(kId, "stderr", "oops\n").offset, 8);
  auto all = logs.Read(kId, 0, 1000);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(Text(*all, true), "stdout:one\ntwo\nstderr:oops\n");
  ASSERT_EQ(all->chunks.size(), 2u) << "consecutive chunks of one stream merge";
  EXPECT_EQ(all->size, 13);
  EXPECT_FALSE(all->ended);
  // Pages: from an offset inside a record, at most `limit` bytes.
  auto page = logs.Read(kId, 2, 5);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Text(*page), "e\ntwo");
  EXPECT_EQ(Text(*logs.Read(kId, 7, 100)), "\noops\n");
  EXPECT_EQ(Text(*logs.Read(kId, 13, 100)), "");
  logs.MarkEnded(kId);
  EXPECT_TRUE(logs.Read(kId, 0, 1)->ended);
  // A new process (an agent restart) reads the same log.
  KernelLogs again(dir.path() + "/logs", 1 << 20);
  EXPECT_EQ(Text(*again.Read(kId, 0, 100)), "one\ntwo\noops\n");
  EXPECT_EQ(again.Append(kId, "stdout", "x").offset, 13);
}

TEST(KernelLogsTest, PastTheLimitANoticeSaysSoAndNothingMoreIsStored) {
  TempDir dir;
  KernelLogs logs(dir.path(), 10);
  EXPECT_FALSE(logs.Append(kId, "stdout", "12345678").notice);
  auto crossed = logs.Append(kId, "stdout", "abcdef");
  ASSERT_TRUE(crossed.notice);
  EXPECT_THAT(crossed.notice->data, HasSubstr("output truncated"));
  EXPECT_EQ(logs.Append(kId, "stderr", "later").offset, 14) << "offsets count all output";
  auto r = logs.Read(kId, 0, 100);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->chunks.size(), 2u);
  EXPECT_EQ(r->chunks[0].data, "12345678ab");
  EXPECT_EQ(r->chunks[1].stream, "notice");
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->size, 10);
  // Read up to the limit exactly, the notice comes with the next page.
  EXPECT_EQ(Text(*logs.Read(kId, 0, 10)), "12345678ab");
  EXPECT_THAT(Text(*logs.Read(kId, 10, 10)), HasSubstr("output truncated"));
}

TEST(KernelLogsTest, UnknownAndUnsafeSessionsHaveNoLog) {
  TempDir dir;
  KernelLogs logs(dir.path(), 1 << 20);
  EXPECT_EQ(logs.Read(kId, 0, 10).status().code(), StatusCode::kNotFound);
  logs.Append("../../etc/passwd", "stdout", "x");
  EXPECT_EQ(logs.Read("../../etc/passwd", 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace bai::agent
