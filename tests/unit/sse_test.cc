// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/sse.h"

#include "bai/session_client.h"

#include <gtest/gtest.h>

#include <vector>

namespace bai::internal {
namespace {

using Events = std::vector<std::pair<std::string, std::string>>;

Events ParseAll(std::vector<std::string> const& chunks) {
  Events out;
  SseParser p([&](std::string const& e, std::string const& d) {
    out.emplace_back(e, d);
    return true;
  });
  for (auto const& c : chunks) EXPECT_TRUE(p.Feed(c));
  return out;
}

TEST(SseTest, ParsesEventsAcrossChunkBoundaries) {
  std::string stream =
      ": ping\r\n\r\nevent: session_started\r\ndata: {\"a\":1}\r\n\r\n"
      "data: line one\ndata: line two\n\nevent: done\r\ndata:\r\n\r\n";
  Events whole = ParseAll({stream});
  Events expected = {
      {"session_started", "{\"a\":1}"}, {"message", "line one\nline two"}, {"done", ""}};
  EXPECT_EQ(whole, expected);
  // Byte by byte gives the same.
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(ParseAll(bytes), expected);
}

TEST(SseTest, StopsWhenTheHandlerSaysSo) {
  int seen = 0;
  SseParser p([&](std::string const&, std::string const&) { return ++seen < 2; });
  EXPECT_TRUE(p.Feed("data: 1\n\n"));
  EXPECT_FALSE(p.Feed("data: 2\n\ndata: 3\n\n"));
  EXPECT_EQ(seen, 2);
}

TEST(ShellJoinTest, QuotesExactlyWhatTheShellWouldSplit) {
  EXPECT_EQ(ShellJoin({"python3", "-c", "print(6*7)"}), "python3 -c 'print(6*7)'");
  EXPECT_EQ(ShellJoin({"echo", "it's", ""}), "echo 'it'\\''s' ''");
  EXPECT_EQ(ShellJoin({"a b", "$HOME", "x;y", "--opt=1"}), "'a b' '$HOME' 'x;y' --opt=1");
}

}  // namespace
}  // namespace bai::internal
