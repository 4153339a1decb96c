// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/agents/output_hub.h"

namespace bai::manager {

std::uint64_t OutputHub::Subscribe(std::string const& session_id, Listener listener) {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t token = ++next_;
  listeners_[session_id][token] = std::move(listener);
  return token;
}

void OutputHub::Unsubscribe(std::string const& session_id, std::uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = listeners_.find(session_id);
  if (it == listeners_.end()) return;
  it->second.erase(token);
  if (it->second.empty()) listeners_.erase(it);
}

std::vector<OutputHub::Listener> OutputHub::ListenersOf(std::string const& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Listener> out;
  auto it = listeners_.find(session_id);
  if (it == listeners_.end()) return out;
  for (auto const& [token, l] : it->second) out.push_back(l);
  return out;
}

void OutputHub::Publish(std::string const& session_id, std::int64_t offset,
                        std::vector<server::agent_protocol::OutputChunk> const& chunks) {
  for (auto const& l : ListenersOf(session_id)) l(offset, chunks, false);
}

void OutputHub::End(std::string const& session_id) {
  for (auto const& l : ListenersOf(session_id)) l(0, {}, true);
}

std::size_t OutputHub::FollowerCount() {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (auto const& [session, ls] : listeners_) n += ls.size();
  return n;
}

}  // namespace bai::manager
