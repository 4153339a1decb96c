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
  EXPECT_EQ(logs.Append(kId, "stdout", "one\n"), 0);
  EXPECT_EQ(logs.Append(kId, "stdout", "two\n"), 4);
  EXPECT_EQ(logs.Append(kId, "stderr", "oops\n"), 8);
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
  EXPECT_EQ(again.Append(kId, "stdout", "x"), 13);
}

// Reads the whole log page by page as the manager does: each page from where the last ended.
std::vector<server::agent_protocol::LogsReply> Pages(KernelLogs& logs, std::int64_t page) {
  std::vector<server::agent_protocol::LogsReply> out;
  std::int64_t offset = 0;
  for (int i = 0; i < 1000; ++i) {
    auto r = logs.Read(kId, offset, page);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) break;
    std::int64_t data = 0;
    for (auto const& c : r->chunks) data += c.stream == "notice" ? 0 : c.data.size();
    out.push_back(*r);
    if (data == 0) break;
    offset = r->offset + data;
  }
  return out;
}

// A CI job's final traceback is at the end: past the limit the log keeps the first half and
// the last quarter to half, a notice where the middle was dropped, offsets still lining up.
TEST(KernelLogsTest, KeepsTheHeadAndTheTailWithANoticeBetween) {
  TempDir dir;
  KernelLogs logs(dir.path(), 40);  // head 20 bytes, tail segments of 10
  std::string all;
  for (int i = 0; i < 30; ++i) {
    std::string piece = std::string(1, static_cast<char>('a' + i % 26)) + "bcd";
    std::string stream = i == 29 ? "stderr" : "stdout";
    EXPECT_EQ(logs.Append(kId, stream, piece), static_cast<std::int64_t>(all.size()));
    all += piece;
  }
  ASSERT_EQ(all.size(), 120u);
  auto pages = Pages(logs, 1000);
  ASSERT_GE(pages.size(), 2u);
  // The head: the first 20 bytes, then the next read jumps past the dropped middle.
  EXPECT_EQ(Text(pages[0]), all.substr(0, 20));
  EXPECT_EQ(pages[0].offset, 0);
  EXPECT_TRUE(pages[0].truncated);
  EXPECT_EQ(pages[0].size, 120);
  ASSERT_FALSE(pages[1].chunks.empty());
  EXPECT_EQ(pages[1].chunks[0].stream, "notice");
  std::int64_t tail_start = pages[1].offset;
  EXPECT_GE(tail_start, 100) << "at least the last quarter (10 bytes) is kept";
  EXPECT_LE(tail_start, 110);
  EXPECT_THAT(pages[1].chunks[0].data,
              HasSubstr(std::to_string(tail_start - 20) + " bytes of output dropped here"));
  std::string tail;
  for (std::size_t i = 1; i < pages.size(); ++i) {
    for (auto const& c : pages[i].chunks) {
      if (c.stream != "notice") tail += c.data;
    }
  }
  EXPECT_EQ(tail, all.substr(static_cast<std::size_t>(tail_start))) << "the tail, to the end";
  EXPECT_EQ(pages[pages.size() - 2].chunks.back().stream, "stderr") << "streams stay apart";
  EXPECT_EQ(pages[pages.size() - 2].chunks.back().data, all.substr(116));
  // Small pages line up the same way; a page never spans the gap.
  std::string paged;
  for (auto const& r : Pages(logs, 3)) {
    for (auto const& c : r.chunks) paged += c.stream == "notice" ? "|" : c.data;
  }
  EXPECT_EQ(paged, all.substr(0, 20) + "|" + tail);
  // A new process (an agent restart) reads the same head and tail, and goes on at 120.
  KernelLogs again(dir.path(), 40);
  std::string reread;
  for (auto const& r : Pages(again, 1000)) {
    for (auto const& c : r.chunks) reread += c.stream == "notice" ? "|" : c.data;
  }
  EXPECT_EQ(reread, all.substr(0, 20) + "|" + tail);
  EXPECT_EQ(again.Append(kId, "stdout", "z"), 120);
}

// Output that fits is kept whole, with no notice.
TEST(KernelLogsTest, OutputWithinTheLimitHasNoNotice) {
  TempDir dir;
  KernelLogs logs(dir.path(), 40);
  logs.Append(kId, "stdout", std::string(20, 'x'));
  auto r = logs.Read(kId, 0, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Text(*r), std::string(20, 'x'));
  EXPECT_FALSE(r->truncated);
  EXPECT_TRUE(Text(*logs.Read(kId, 20, 100)).empty());
}

TEST(KernelLogsTest, UnknownAndUnsafeSessionsHaveNoLog) {
  TempDir dir;
  KernelLogs logs(dir.path(), 1 << 20);
  EXPECT_EQ(logs.Read(kId, 0, 10).status().code(), StatusCode::kNotFound);
  logs.Append("../../etc/passwd", "stdout", "x");
  EXPECT_EQ(logs.Read("../../etc/passwd", 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Issue 43, 5f: 16 batch sessions printing fast grew an agent's logs by 1 GiB in 12 s, kept a
// day. All logs together stay within the agent's budget: ended kernels' go first, the oldest
// first; running kernels that fill it alone store no more, and the log says so.
TEST(KernelLogsTest, AllLogsStayWithinTheAgentsBudget) {
  TempDir dir;
  std::string const a = "aaaaaaaa-1111-4222-8333-444455556666";
  std::string const b = "bbbbbbbb-1111-4222-8333-444455556666";
  std::string const c = "cccccccc-1111-4222-8333-444455556666";
  std::string const d = "dddddddd-1111-4222-8333-444455556666";
  KernelLogs logs(dir.path(), 4000, 2500);
  logs.Append(a, "stdout", std::string(1000, 'a'));
  logs.MarkEnded(a);
  logs.Append(b, "stdout", std::string(1000, 'b'));
  logs.MarkEnded(b);
  // 3000 bytes: the first to end goes.
  logs.Append(c, "stdout", std::string(1000, 'c'));
  EXPECT_EQ(logs.Read(a, 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + a + ".log"));
  ASSERT_TRUE(logs.Read(b, 0, 10000).ok());
  EXPECT_EQ(Text(*logs.Read(b, 0, 10000)), std::string(1000, 'b'));
  // Running kernels alone over it: the one writing stores no more, and says why.
  logs.Append(d, "stdout", std::string(1000, 'd'));  // b goes: c and d are 2000
  EXPECT_EQ(logs.Read(b, 0, 10).status().code(), StatusCode::kNotFound);
  logs.Append(d, "stdout", std::string(1000, 'e'));  // 3000, nothing ended is left
  logs.Append(d, "stdout", std::string(1000, 'f'));
  auto r = logs.Read(d, 0, 100000);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->size, 3000);
  auto tail = logs.Read(d, 2000, 100000);
  ASSERT_TRUE(tail.ok());
  EXPECT_THAT(Text(*tail), HasSubstr("filled this agent's log space"));
  EXPECT_EQ(Text(*logs.Read(c, 0, 10000)), std::string(1000, 'c'));
  // A restarted agent counts the logs it finds.
  KernelLogs again(dir.path(), 4000, 2000);
  again.Append(a, "stdout", std::string(500, 'z'));
  EXPECT_LE(std::filesystem::exists(dir.path() + "/" + c + ".log") +
                std::filesystem::exists(dir.path() + "/" + d + ".log"),
            1)
      << "the earlier run's logs were not counted";
}

}  // namespace
}  // namespace bai::agent
