// SPDX-License-Identifier: Apache-2.0
#pragma once
// Jobs on threads of their own, each joined when it is done (at the next Run) or when the
// Workers go: an owner declares it after the stores its jobs use, so they outlive every job.

#include <atomic>
#include <functional>
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
  ~Workers() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : workers_) w.thread.join();
  }
  void Run(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back({std::thread([job = std::move(job), done] {
                          job();
                          done->store(true);
                        }),
                        done});
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
