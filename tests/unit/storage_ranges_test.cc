// SPDX-License-Identifier: Apache-2.0
// The storage proxy's range decisions (server-reference/storage/ranges.h), as a table.
#include "server-reference/storage/ranges.h"

#include <gtest/gtest.h>

namespace bai::storage {
namespace {

TEST(StorageRangesTest, DecidesWhatAGetSends) {
  std::string const etag = "\"a-b\"", lm = "Mon, 23 Nov 2026 09:26:12 GMT";
  struct Row {
    std::optional<std::string_view> range, if_range;
    std::int64_t size;
    RangeVerdict::Kind kind;
    std::int64_t from, length;
  };
  using K = RangeVerdict;
  Row const rows[] = {
      {std::nullopt, std::nullopt, 100, K::kWhole, 0, 100},
      {"bytes=0-9", std::nullopt, 100, K::kPartial, 0, 10},
      {"bytes=10-", std::nullopt, 100, K::kPartial, 10, 90},
      {"bytes=90-500", std::nullopt, 100, K::kPartial, 90, 10},  // clipped
      {"bytes=-5", std::nullopt, 100, K::kPartial, 95, 5},
      {"bytes=-500", std::nullopt, 100, K::kPartial, 0, 100},
      {"bytes=100-", std::nullopt, 100, K::kUnsatisfiable, 0, 0},
      {"bytes=-0", std::nullopt, 100, K::kUnsatisfiable, 0, 0},
      {"bytes=0-", std::nullopt, 0, K::kUnsatisfiable, 0, 0},
      {"bytes=5-1", std::nullopt, 100, K::kWhole, 0, 100},      // malformed: ignored
      {"items=0-1", std::nullopt, 100, K::kWhole, 0, 100},      // another unit
      {"bytes=0-1,5-6", std::nullopt, 100, K::kWhole, 0, 100},  // several: whole
      {"bytes=x-", std::nullopt, 100, K::kWhole, 0, 100},
      {"bytes=10-", lm, 100, K::kPartial, 10, 90},
      {"bytes=10-", etag, 100, K::kPartial, 10, 90},
      {"bytes=10-", "W/\"a-b\"", 100, K::kWhole, 0, 100},  // weak tags never match
      {"bytes=10-", "Tue, 01 Jan 2002 00:00:00 GMT", 100, K::kWhole, 0, 100},
  };
  for (auto const& r : rows) {
    auto v = DecideRange(r.range, r.if_range, etag, lm, r.size);
    SCOPED_TRACE(std::string(r.range.value_or("-")) + " / " +
                 std::string(r.if_range.value_or("-")));
    EXPECT_EQ(v.kind, r.kind);
    EXPECT_EQ(v.from, r.from);
    EXPECT_EQ(v.length, r.length);
  }
}

}  // namespace
}  // namespace bai::storage
