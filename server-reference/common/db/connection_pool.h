// SPDX-License-Identifier: Apache-2.0
#pragma once
// The connection pool SQLite and PostgreSQL share: at most `max_connections` open, idle ones
// reused newest first, connections opened lazily outside the pool's lock. A connection type
// that can tell it is broken (`healthy()`, `in_transaction()`: PostgreSQL's) is checked before
// reuse and when returned, and a broken one is closed instead of pooled.

#include "bai/status.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace bai::server {

template <class C>
class ConnectionPool {
 public:
  using Opener = std::function<StatusOr<std::unique_ptr<C>>()>;

  /// `wait_limit` zero: a caller waits for a connection as long as it takes (SQLite's are
  /// local); else after that long with every connection busy, kUnavailable (a database that
  /// does not answer fails requests, retryably, instead of queueing them without end).
  ConnectionPool(Opener open, int max_connections,
                 std::chrono::milliseconds wait_limit = std::chrono::milliseconds(0))
      : open_(std::move(open)), max_connections_(max_connections), wait_limit_(wait_limit) {}

  ConnectionPool(ConnectionPool const&) = delete;
  ConnectionPool& operator=(ConnectionPool const&) = delete;

  /// One connection for one caller, back in the pool when the lease ends.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<C> c) : pool_(pool), c_(std::move(c)) {}
    Lease(Lease&& other) noexcept : pool_(other.pool_), c_(std::move(other.c_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (c_) pool_->Release(std::move(c_));
    }
    C& operator*() const { return *c_; }
    C* operator->() const { return c_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<C> c_;
  };

  StatusOr<Lease> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    auto ready = [this] { return !idle_.empty() || open_count_ < max_connections_; };
    bool got = true;
    if (wait_limit_.count() == 0) {
      cv_.wait(lock, ready);
    } else {
      got = cv_.wait_for(lock, wait_limit_, ready);
    }
    --waiting_;
    if (!got) {
      return Status(StatusCode::kUnavailable,
                    "the database did not answer: all " + std::to_string(max_connections_) +
                        " connections have been busy for " +
                        std::to_string(wait_limit_.count() / 1000) + " s");
    }
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (Healthy(*c)) return Lease(this, std::move(c));
      --open_count_;  // lost while idle (a server restart): another one
    }
    ++open_count_;
    lock.unlock();
    auto c = open_();
    if (!c.ok()) {
      std::lock_guard<std::mutex> relock(mu_);
      --open_count_;
      cv_.notify_one();
      return std::move(c).status();
    }
    return Lease(this, *std::move(c));
  }

  /// Runs `f` on a leased connection; the pool's refusal when none comes (`f` returns a
  /// StatusOr or a Status).
  template <class F>
  auto With(F&& f) -> decltype(f(std::declval<C&>())) {
    auto lease = Acquire();
    if (!lease.ok()) return std::move(lease).status();
    return f(**lease);
  }

  /// Opens one connection outside the pool (it does not count against the limit).
  StatusOr<std::unique_ptr<C>> OpenExtra() { return open_(); }

 private:
  static bool Healthy(C const& c) {
    if constexpr (requires { c.healthy(); }) {
      return c.healthy();
    } else {
      return true;
    }
  }
  static bool Reusable(C const& c) {
    if constexpr (requires { c.in_transaction(); }) {
      return Healthy(c) && !c.in_transaction();
    } else {
      return true;
    }
  }

  void Release(std::unique_ptr<C> c) {
    bool keep = Reusable(*c);
    if (!keep) c.reset();  // a broken connection is closed, not reused
    std::lock_guard<std::mutex> lock(mu_);
    if (keep) {
      idle_.push_back(std::move(c));
    } else {
      --open_count_;
    }
    if (waiting_ > 0) cv_.notify_one();  // no futex wake-up when nobody waits
  }

  Opener open_;
  int max_connections_;
  std::chrono::milliseconds wait_limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<C>> idle_;
  int open_count_ = 0;
  int waiting_ = 0;
};

}  // namespace bai::server
