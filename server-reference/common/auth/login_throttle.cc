// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/auth/login_throttle.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace bai::server {

void LoginThrottle::Expire(Times& times, TimePoint now) const {
  while (!times.empty() && times.front() + limits_.window <= now) times.pop_front();
}

std::int64_t LoginThrottle::RetryAfter(Times const& times, TimePoint now) const {
  auto left = std::chrono::ceil<std::chrono::seconds>(times.front() + limits_.window - now);
  return std::max<std::int64_t>(1, left.count());
}

void LoginThrottle::Bound(std::map<std::string, Times>& map, TimePoint now) {
  std::size_t const limit = std::max<std::size_t>(1, limits_.max_tracked / 2);
  if (map.size() <= limit) return;
  for (auto it = map.begin(); it != map.end();) {
    Expire(it->second, now);
    it = it->second.empty() ? map.erase(it) : std::next(it);
  }
  // Still full of live entries: forget those whose newest attempt is oldest, down to three
  // quarters so that the next few newcomers do not pay for this scan again.
  std::size_t const keep = limit * 3 / 4;
  if (map.size() <= keep) return;
  std::vector<std::pair<TimePoint, std::string>> by_age;
  by_age.reserve(map.size());
  for (auto const& [key, times] : map) by_age.emplace_back(times.back(), key);
  auto cut = by_age.begin() + static_cast<std::ptrdiff_t>(map.size() - keep);
  std::nth_element(by_age.begin(), cut, by_age.end());
  for (auto it = by_age.begin(); it != cut; ++it) map.erase(it->second);
}

LoginThrottle::Decision LoginThrottle::Admit(std::string const& address, std::string const& account,
                                             TimePoint now) {
  if (auto it = accounts_.find(Key(address, account)); it != accounts_.end()) {
    Expire(it->second, now);
    if (static_cast<int>(it->second.size()) >= limits_.failures_per_user) {
      return {false, RetryAfter(it->second, now)};
    }
  }
  auto& tries = addresses_[address];
  Expire(tries, now);
  if (static_cast<int>(tries.size()) >= limits_.per_address) {
    return {false, RetryAfter(tries, now)};
  }
  tries.push_back(now);
  Bound(addresses_, now);
  return {true, 0};
}

void LoginThrottle::Failed(std::string const& address, std::string const& account, TimePoint now) {
  auto& fails = accounts_[Key(address, account)];
  Expire(fails, now);
  fails.push_back(now);
  Bound(accounts_, now);
}

void LoginThrottle::Succeeded(std::string const& address, std::string const& account) {
  accounts_.erase(Key(address, account));
}

bool IsIpAddress(std::string const& text) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, text.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

std::string ThrottledAddress(std::string const& peer, std::optional<std::string_view> forwarded_for,
                             std::vector<std::string> const& trusted_proxies) {
  if (!forwarded_for ||
      std::find(trusted_proxies.begin(), trusted_proxies.end(), peer) == trusted_proxies.end()) {
    return peer;
  }
  std::string_view list = *forwarded_for;
  auto comma = list.rfind(',');
  std::string_view last = comma == std::string_view::npos ? list : list.substr(comma + 1);
  while (!last.empty() && (last.front() == ' ' || last.front() == '\t')) last.remove_prefix(1);
  while (!last.empty() && (last.back() == ' ' || last.back() == '\t')) last.remove_suffix(1);
  std::string client(last);
  return IsIpAddress(client) ? client : peer;
}

}  // namespace bai::server
