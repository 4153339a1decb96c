// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::server {

/// Limits on password logins (POST /auth/authorize).
struct LoginLimits {
  /// Attempts one client address may make per window, right or wrong.
  int per_address = 30;
  /// Failed attempts one account (domain + username) may take per window from one address;
  /// then that address's attempts for it are refused until the oldest failure leaves the
  /// window. Other addresses are not hit: a guesser cannot lock the owner (or the superadmin)
  /// out, and one address gets at most `per_address` guesses per window anyway.
  int failures_per_user = 10;
  std::chrono::seconds window{300};
  /// Addresses and accounts remembered at most (the oldest are dropped first).
  std::size_t max_tracked = 100000;
};

/// Password-guessing throttle: a pure core (no clock, no I/O, not thread-safe; the caller locks)
/// counting attempts per client address and failures per (account, address) over a sliding
/// window.
class LoginThrottle {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  explicit LoginThrottle(LoginLimits limits = {}) : limits_(limits) {}

  struct Decision {
    bool allowed;
    /// When refused: seconds until an attempt may pass again (at least 1).
    std::int64_t retry_after_seconds;
  };
  /// Counts one attempt from `address` at `account` unless it is refused.
  Decision Admit(std::string const& address, std::string const& account, TimePoint now);
  /// The attempt failed (wrong password or unknown user): it counts against the account from
  /// that address.
  void Failed(std::string const& address, std::string const& account, TimePoint now);
  /// The attempt succeeded: the account's failures from that address are forgotten.
  void Succeeded(std::string const& address, std::string const& account);

  std::size_t tracked() const { return addresses_.size() + accounts_.size(); }

 private:
  using Times = std::deque<TimePoint>;
  void Expire(Times& times, TimePoint now) const;
  std::int64_t RetryAfter(Times const& times, TimePoint now) const;
  static std::string Key(std::string const& address, std::string const& account) {
    return account + '\n' + address;
  }
  void Bound(std::map<std::string, Times>& map, TimePoint now);

  LoginLimits limits_;
  std::map<std::string, Times> addresses_;
  std::map<std::string, Times> accounts_;
};

/// An IPv4 or IPv6 address in text ("192.0.2.1", "2001:db8::1").
bool IsIpAddress(std::string const& text);

/// The address a login is counted against: the peer's, or, when the peer is one of
/// `trusted_proxies` (a webserver signing users in for them), the client it names last in
/// `X-Forwarded-For` (the address that proxy saw), if that is an IPv4 or IPv6 address. Without
/// it every console user behind one webserver would share that webserver's per-address budget.
std::string ThrottledAddress(std::string const& peer, std::optional<std::string_view> forwarded_for,
                             std::vector<std::string> const& trusted_proxies);

}  // namespace bai::server
