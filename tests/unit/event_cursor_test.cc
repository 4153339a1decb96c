// SPDX-License-Identifier: Apache-2.0
// EventCursor: the events table read by several managers, whose numbers (on PostgreSQL) become
// visible out of order. Nothing is handed out twice, nothing late is missed, and a number that
// never comes (a rolled-back insert) holds the floor only for the gap wait.
#include "server-reference/manager/events.h"

#include <gtest/gtest.h>

namespace bai::manager {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(EventCursorTest, InOrderNumbersAreHandedOutOnceAndRaiseTheFloor) {
  EventCursor c(10);
  auto t = steady_clock::now();
  EXPECT_EQ(c.Take({11, 12, 13}, t), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(c.floor(), 13);
  EXPECT_TRUE(c.Take({}, t).empty());
  EXPECT_EQ(c.floor(), 13);
}

TEST(EventCursorTest, ALateCommitIsHandedOutWhenItAppears) {
  EventCursor c(0, milliseconds(1000));
  auto t = steady_clock::now();
  // 2 is still in flight: 1 and 3 go out, the floor stays at 1.
  EXPECT_EQ(c.Take({1, 3}, t), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(c.floor(), 1);
  // The next read (from the floor) sees 3 again: not handed out twice.
  EXPECT_TRUE(c.Take({3}, t + milliseconds(100)).empty());
  // 2 commits: it goes out, and the floor moves past 3.
  EXPECT_EQ(c.Take({2, 3, 4}, t + milliseconds(200)), (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(c.floor(), 4);
}

TEST(EventCursorTest, ANumberThatNeverComesIsGivenUpAfterTheWait) {
  EventCursor c(0, milliseconds(1000));
  auto t = steady_clock::now();
  EXPECT_EQ(c.Take({2, 3}, t).size(), 2u);
  EXPECT_EQ(c.floor(), 0);
  EXPECT_TRUE(c.Take({2, 3}, t + milliseconds(999)).empty());
  EXPECT_EQ(c.floor(), 0);
  EXPECT_TRUE(c.Take({2, 3}, t + milliseconds(1000)).empty());
  EXPECT_EQ(c.floor(), 3);
  // Numbers below the floor are old news.
  EXPECT_TRUE(c.Take({1}, t + milliseconds(1100)).empty());
}

}  // namespace
}  // namespace bai::manager
