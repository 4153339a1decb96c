// SPDX-License-Identifier: Apache-2.0
// Dates and durations (bai/protocol/dates.h): the forms the protocol writes, checked against
// known instants and against the C library's calendar over a wide range, and read back.
#include "bai/protocol/dates.h"

#include <gtest/gtest.h>

#include <ctime>

namespace bai::protocol {
namespace {

using std::chrono::microseconds;
using std::chrono::system_clock;

TEST(DatesTest, KnownInstantsInEveryForm) {
  EXPECT_EQ(FormatHttpDate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(FormatHttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(FormatHttpDate(951782400), "Tue, 29 Feb 2000 00:00:00 GMT");
  EXPECT_EQ(FormatRfc3339(1763868544, 932986), "2025-11-23T03:29:04.932986+00:00");
  EXPECT_EQ(FormatRfc3339(system_clock::time_point(microseconds(1763868544932986))),
            "2025-11-23T03:29:04.932986+00:00");
  EXPECT_EQ(FormatRfc3339(system_clock::time_point(microseconds(-1))),
            "1969-12-31T23:59:59.999999+00:00");
  EXPECT_EQ(FormatRfc3339Seconds(1763868544), "2025-11-23T03:29:04+00:00");
  EXPECT_EQ(FormatStamp(system_clock::time_point(std::chrono::seconds(1763868544))),
            "20251123T032904Z");
  EXPECT_EQ(FormatRequestDate(system_clock::time_point(std::chrono::seconds(1763868544))),
            "2025-11-23T03:29:04+00:00");
}

// The calendar arithmetic agrees with gmtime_r from 1900 to 2400, leap days included.
TEST(DatesTest, AgreesWithTheCLibraryCalendar) {
  for (std::int64_t s = -2208988800; s < 13574563200; s += 86400 * 37 + 3607) {
    std::time_t t = static_cast<std::time_t>(s);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char expected[40];
    std::strftime(expected, sizeof expected, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    ASSERT_EQ(FormatHttpDate(s), expected) << s;
  }
}

TEST(DatesTest, WhatIsWrittenReadsBack) {
  for (std::int64_t s : {0LL, 784111777LL, 1763868544LL, 4102444800LL}) {
    auto rfc = ParseHttpDate(FormatRfc3339(s, 250000));
    ASSERT_TRUE(rfc) << s;
    EXPECT_EQ(rfc->unix_seconds, s);
    auto http = ParseHttpDate(FormatHttpDate(s));
    ASSERT_TRUE(http) << s;
    EXPECT_EQ(http->unix_seconds, s);
  }
  EXPECT_FALSE(ParseHttpDate("2025-02-29T00:00:00Z")) << "not a leap year";
  EXPECT_EQ(ParseDurationSeconds("90"), 90);
  EXPECT_EQ(ParseDurationSeconds("2h"), 7200);
  EXPECT_EQ(ParseDurationSeconds("1w"), 604800);
  EXPECT_FALSE(ParseDurationSeconds("soon"));
  EXPECT_FALSE(ParseDurationSeconds(""));
}

}  // namespace
}  // namespace bai::protocol
