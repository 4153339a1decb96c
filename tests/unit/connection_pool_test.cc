// SPDX-License-Identifier: Apache-2.0
// The pool SQLite and PostgreSQL share, over a connection type that can say it is broken (as
// PostgreSQL's does) and one that cannot (as SQLite's).
#include "server-reference/common/db/connection_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace bai::server {
namespace {

struct Checked {
  int id;
  bool broken = false;
  bool open_transaction = false;
  bool healthy() const { return !broken; }
  bool in_transaction() const { return open_transaction; }
};

struct Plain {
  int id;
};

TEST(ConnectionPoolTest, IdleConnectionsAreReusedAndTheLimitHolds) {
  int opened = 0;
  ConnectionPool<Plain> pool(
      [&]() -> StatusOr<std::unique_ptr<Plain>> {
        return std::make_unique<Plain>(Plain{++opened});
      },
      2);
  {
    auto a = pool.Acquire();
    ASSERT_TRUE(a.ok());
    EXPECT_EQ((*a)->id, 1);
  }
  {
    auto again = pool.Acquire();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->id, 1) << "an idle connection is reused, not a new one opened";
    auto second = pool.Acquire();
    ASSERT_TRUE(second.ok());
    EXPECT_EQ((*second)->id, 2);
    // A third waits (no limit on the wait) until one is given back.
    std::atomic<int> got{0};
    std::thread waiter([&] {
      auto third = pool.Acquire();
      got = third.ok() ? (*third)->id : -1;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(got.load(), 0) << "no third connection past the limit";
    { auto drop = std::move(*second); }
    waiter.join();
    EXPECT_EQ(got.load(), 2) << "the waiter takes the connection given back";
  }
  EXPECT_EQ(opened, 2);
}

TEST(ConnectionPoolTest, BrokenConnectionsAreClosedAndABusyPoolAnswersAfterItsLimit) {
  int opened = 0;
  ConnectionPool<Checked> pool(
      [&]() -> StatusOr<std::unique_ptr<Checked>> {
        return std::make_unique<Checked>(Checked{++opened});
      },
      1, std::chrono::milliseconds(100));
  {
    auto a = pool.Acquire();
    ASSERT_TRUE(a.ok());
    (*a)->open_transaction = true;  // given back mid-transaction: closed, not pooled
  }
  {
    auto b = pool.Acquire();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ((*b)->id, 2);
    auto busy = pool.Acquire();
    ASSERT_FALSE(busy.ok());
    EXPECT_EQ(busy.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(busy.status().message().find("all 1 connections have been busy"), std::string::npos)
        << busy.status().message();
  }
  {
    auto c = pool.Acquire();
    ASSERT_TRUE(c.ok());
    EXPECT_EQ((*c)->id, 2);
    c->operator->()->broken = true;  // lost while in use
  }
  auto d = pool.Acquire();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->id, 3) << "a broken connection is replaced";
}

TEST(ConnectionPoolTest, AFailedOpenGivesItsPlaceBack) {
  bool fail = true;
  int opened = 0;
  ConnectionPool<Plain> pool(
      [&]() -> StatusOr<std::unique_ptr<Plain>> {
        if (fail) return Status(StatusCode::kUnavailable, "cannot connect");
        return std::make_unique<Plain>(Plain{++opened});
      },
      1);
  auto first = pool.Acquire();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().message(), "cannot connect");
  fail = false;
  auto second = pool.Acquire();
  ASSERT_TRUE(second.ok()) << "the failed open did not keep its place";
}

}  // namespace
}  // namespace bai::server
