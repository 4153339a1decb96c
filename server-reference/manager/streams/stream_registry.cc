// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/streams/stream_registry.h"

#include <utility>
#include <vector>

namespace bai::manager::streams {

bool StreamRegistry::IsEnding(std::string_view event) {
  return event == "session_terminating" || event == "session_terminated" ||
         event == "session_cancelled" || event == "session_failure" || event == "session_success";
}

std::uint64_t StreamRegistry::Add(std::string const& session_id, Ender end, std::string owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto token = ++next_;
  streams_.emplace(token, Entry{session_id, std::move(end), std::move(owner)});
  return token;
}

std::size_t StreamRegistry::CountFor(std::string const& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (auto const& [token, e] : streams_) n += e.owner == owner ? 1 : 0;
  return n;
}

void StreamRegistry::Remove(std::uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(token);
}

void StreamRegistry::OnEvent(std::string const& session_id, std::string const& event) {
  if (!IsEnding(event)) return;
  std::vector<Ender> ending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (it->second.session_id == session_id) {
        ending.push_back(std::move(it->second.end));
        it = streams_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Outside the lock: an ender closes its socket, whose close handler calls Remove.
  for (auto& end : ending) end(event);
}

std::size_t StreamRegistry::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace bai::manager::streams
