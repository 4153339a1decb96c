// SPDX-License-Identifier: Apache-2.0
#pragma once
// Live kernel output on its way from the agents to followers (`GET /session/{id}/logs?follow`):
// the registry publishes what an agent relays and says when a kernel has ended; followers
// subscribe per session. Memory only: a follower that joins late reads the backlog from the
// agent's stored log first (offsets line the two up).

#include "server-reference/common/wire/agent_messages.h"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace bai::manager {

class OutputHub {
 public:
  /// Output from `offset` (`chunks` empty and `ended` true: the kernel has ended; no more comes).
  using Listener = std::function<void(
      std::int64_t offset, std::vector<server::agent_protocol::OutputChunk> const& chunks,
      bool ended)>;

  /// Returns a token for Unsubscribe. Listeners run on the publisher's thread, outside the lock.
  std::uint64_t Subscribe(std::string const& session_id, Listener listener);
  void Unsubscribe(std::string const& session_id, std::uint64_t token);

  void Publish(std::string const& session_id, std::int64_t offset,
               std::vector<server::agent_protocol::OutputChunk> const& chunks);
  void End(std::string const& session_id);
  std::size_t FollowerCount();

 private:
  std::vector<Listener> ListenersOf(std::string const& session_id);

  std::mutex mu_;
  std::uint64_t next_ = 0;
  std::map<std::string, std::map<std::uint64_t, Listener>> listeners_;
};

}  // namespace bai::manager
