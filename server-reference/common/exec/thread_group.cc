// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/exec/thread_group.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace bai::server {

struct ThreadGroup::State {
  std::mutex mu;
  std::condition_variable idle;
  int running = 0;      // under mu
  bool closed = false;  // under mu
};

ThreadGroup::ThreadGroup() : state_(std::make_shared<State>()) {}

bool ThreadGroup::Start(std::function<void()> body) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->closed) return false;
    ++state_->running;
  }
  std::thread([state = state_, body = std::move(body)] {
    body();
    std::lock_guard<std::mutex> lock(state->mu);
    --state->running;
    state->idle.notify_all();
  }).detach();
  return true;
}

void ThreadGroup::Close() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->closed = true;
}

bool ThreadGroup::closed() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->closed;
}

bool ThreadGroup::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->idle.wait_for(lock, timeout, [&] { return state_->running == 0; });
}

}  // namespace bai::server
