// SPDX-License-Identifier: Apache-2.0
#pragma once
// Jobs on threads of their own, each joined when it is done (at the next Run), at JoinAll or
// when the Workers go: an owner declares it after what its jobs use, so that outlives them.

#include <atomic>
#include <functional>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace bai::server {

class Workers {
 public:
  Workers() = default;
  Workers(Workers const&) = delete;
  Workers& operator=(Workers const&) = delete;
  ~Workers() { JoinAll(); }

  void Run(std::function<void()> job) {
    std::list<Worker> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = workers_.begin(); it != workers_.end();) {
        auto next = std::next(it);
        if (it->done->load()) finished.splice(finished.end(), workers_, it);
        it = next;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      workers_.push_back({std::thread([job = std::move(job), done] {
                            job();
                            done->store(true);
                          }),
                          done});
    }
    for (auto& w : finished) w.thread.join();  // returned already, or about to
  }

  /// Joins every job, also those a job started meanwhile; outside the lock, so a job may Run.
  void JoinAll() {
    for (;;) {
      std::list<Worker> all;
      {
        std::lock_guard<std::mutex> lock(mu_);
        all.swap(workers_);
      }
      if (all.empty()) return;
      for (auto& w : all) w.thread.join();
    }
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mu_;
  std::list<Worker> workers_;
};

}  // namespace bai::server
