// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <chrono>
#include <functional>
#include <memory>

namespace bai::server {

/// Long-lived threads (bridged streams, relays) started detached and counted, so that a stop
/// refuses new ones and waits for the running ones. Thread-safe. A thread keeps the group's
/// count alive on its own: it may end after the group is gone.
class ThreadGroup {
 public:
  ThreadGroup();
  /// Runs `body` on a new thread; false (and `body` not run) once Close() was called.
  bool Start(std::function<void()> body);
  /// Refuses new threads from now on.
  void Close();
  bool closed() const;
  /// Waits up to `timeout` for the running threads to end; true when none is left.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace bai::server
