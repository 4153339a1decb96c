// SPDX-License-Identifier: Apache-2.0
// SessionClient::WaitForEnd: events as the fast path, the session's info as the safety net.
#include "bai/session_client.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace bai {
namespace {

using Clock = std::chrono::steady_clock;

// What the event thread learnt, shared with the waiting thread under `mu`.
struct WaitState {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;         // the stream is subscribed
  bool stream_over = false;  // the event thread has finished
  bool stop = false;         // the waiting thread is done with it
  bool started = false;
  bool done = false;
  SessionEnd end;

  // Applies one event; false once the session has ended.
  bool Apply(SessionEvent const& e) {
    if (e.name == "session_success" || e.name == "session_failure") {
      if (e.exit_code) end.exit_code = e.exit_code;
      end.reason = e.reason.value_or("");
    } else if (e.name == "session_terminated" || e.name == "session_cancelled") {
      if (e.exit_code && !end.exit_code) end.exit_code = e.exit_code;
      end.status = e.name == "session_cancelled" ? "CANCELLED" : "TERMINATED";
      if (end.reason.empty()) end.reason = e.reason.value_or("");
      done = true;
    } else if (e.name == "session_started") {
      started = true;
    }
    return !done;
  }
};

}  // namespace

StatusOr<SessionEnd> SessionClient::WaitForEnd(std::string const& session_id,
                                               WaitOptions const& options) const {
  WaitState st;
  auto cancel = std::make_shared<StreamCancel>();
  std::thread events([this, &st, &session_id, cancel] {
    SessionEventFilter filter;
    filter.session_id = session_id;
    (void)WatchEvents(
        filter,
        [&st](SessionEvent const& e) {
          std::lock_guard<std::mutex> lock(st.mu);
          bool more = st.Apply(e) && !st.stop;
          st.cv.notify_all();
          return more;
        },
        [&st] {
          std::lock_guard<std::mutex> lock(st.mu);
          st.open = true;
          st.cv.notify_all();
        },
        [&st] {
          std::lock_guard<std::mutex> lock(st.mu);
          return !st.stop;
        },
        cancel);
    std::lock_guard<std::mutex> lock(st.mu);
    st.stream_over = true;
    st.cv.notify_all();
  });
  // The event thread never outlives this call: its stream is cancelled, which ends it at once.
  struct Join {
    WaitState& st;
    std::thread& thread;
    StreamCancel& cancel;
    ~Join() {
      {
        std::lock_guard<std::mutex> lock(st.mu);
        st.stop = true;
      }
      cancel.Cancel();
      thread.join();
    }
  } join{st, events, *cancel};

  {
    // Subscribed first, so that the first look below and the events together miss nothing.
    std::unique_lock<std::mutex> lock(st.mu);
    st.cv.wait_for(lock, std::chrono::seconds(10), [&] { return st.open || st.stream_over; });
  }
  bool announced = false;
  auto announce = [&] {
    if (announced) return;
    announced = true;
    if (options.on_started) options.on_started();
  };
  auto running = [] { return SessionEnd{"RUNNING", std::nullopt, ""}; };
  auto next_look = Clock::now();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(st.mu);
      st.cv.wait_until(lock, std::min(next_look, Clock::now() + std::chrono::milliseconds(100)),
                       [&] { return st.done || (st.started && !announced); });
      bool started = st.started;
      if (st.done) {
        SessionEnd end = st.end;
        lock.unlock();
        if (started) announce();
        return end;
      }
      lock.unlock();
      if (started) {
        announce();
        if (options.until_running) return running();
      }
    }
    if (options.cancelled && options.cancelled()) {
      return Status(StatusCode::kCancelled, "stopped waiting for session " + session_id);
    }
    if (Clock::now() < next_look) continue;
    bool stream_over = false;
    {
      std::lock_guard<std::mutex> lock(st.mu);
      stream_over = st.stream_over;
    }
    next_look = Clock::now() +
                (stream_over ? std::min(options.poll_interval, std::chrono::milliseconds(1000))
                             : options.poll_interval);
    auto info = Info(session_id);
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) return std::move(info).status();
      continue;  // a passing failure: look again later
    }
    if (options.on_info) options.on_info(*info);
    auto status = info->status.status;
    if (status == protocol::SessionStatus::kRunning) {
      announce();
      if (options.until_running) return running();
    }
    if (protocol::IsTerminal(status) || status == protocol::SessionStatus::kError) {
      SessionEnd end;
      end.status = info->status.text;
      end.exit_code = info->exit_code;
      end.reason = info->status_info;
      return end;
    }
  }
}

}  // namespace bai
