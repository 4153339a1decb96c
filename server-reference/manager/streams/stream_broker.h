// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http.h"

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager::streams {

/// Data streams the manager has asked an agent to open (`open_stream`) and not yet paired:
/// each stream id is expected from one agent, once, before its deadline
/// (docs/agent-protocol.md, "Data streams"). Pure apart from its lock: times are given.
template <class Waiter>
class StreamBroker {
 public:
  using Clock = std::chrono::steady_clock;

  /// Expects `stream_id` from `agent_id` until `deadline`; `waiter` is what Claim hands back.
  void Expect(std::string stream_id, std::string agent_id, Clock::time_point deadline,
              Waiter waiter) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[std::move(stream_id)] = {std::move(agent_id), deadline, std::move(waiter)};
  }

  /// The waiter of `stream_id` when `agent_id` is the agent it was asked of and it is on time;
  /// the id is used up either way. kNotFound for an unknown, used or expired id,
  /// kPermissionDenied for another agent.
  StatusOr<Waiter> Claim(std::string const& stream_id, std::string const& agent_id,
                         Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(stream_id);
    if (it == pending_.end() || now > it->second.deadline) {
      return Status(StatusCode::kNotFound, "no stream " + stream_id + " is expected");
    }
    if (it->second.agent_id != agent_id) {
      return Status(StatusCode::kPermissionDenied,
                    "stream " + stream_id + " was not asked of agent " + agent_id);
    }
    Waiter w = std::move(it->second.waiter);
    pending_.erase(it);
    return w;
  }

  /// Removes `stream_id` (its client left before the agent came).
  void Forget(std::string const& stream_id) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(stream_id);
  }

  /// The waiters whose deadline has passed, removed.
  std::vector<Waiter> Expire(Clock::time_point now) {
    std::vector<Waiter> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (now > it->second.deadline) {
        out.push_back(std::move(it->second.waiter));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  std::size_t Pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }

 private:
  struct Entry {
    std::string agent_id;
    Clock::time_point deadline;
    Waiter waiter;
  };
  std::mutex mu_;
  std::map<std::string, Entry> pending_;
};

/// What a stream waits with: `pair` gives the handlers for the agent's WebSocket (nullopt
/// when the client has gone meanwhile); `expired` runs when the agent never came.
struct StreamWaiter {
  std::function<std::optional<server::WebSocketHandlers>()> pair;
  std::function<void()> expired;
};
using AgentStreamBroker = StreamBroker<StreamWaiter>;

}  // namespace bai::manager::streams
