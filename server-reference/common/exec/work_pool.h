// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bai::server {

/// A fixed set of worker threads with a bounded queue, for CPU- or memory-heavy work (password
/// hashing) that must not run on the I/O threads. A full queue refuses work instead of growing.
class WorkPool {
 public:
  WorkPool(int threads, std::size_t max_queued);
  /// Runs what is already running to its end; queued work that has not started is dropped.
  ~WorkPool();
  WorkPool(WorkPool const&) = delete;
  WorkPool& operator=(WorkPool const&) = delete;

  /// Queues `work`; false (and `work` not kept) when the queue is full or the pool stopping.
  bool TrySubmit(std::function<void()> work);

 private:
  void Run();

  std::size_t const max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace bai::server
