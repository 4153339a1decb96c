// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http.h"
#include "server-reference/manager/state/store.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace bai::manager {

/// Requests per access key over a rolling 900 s window (PROTOCOL.md §4.3), estimated with a
/// sliding window counter (the previous fixed window weighted by its remaining overlap plus the
/// current one): O(1) memory per key.
///
/// The counters live in this process: with several managers each enforces the limit on its own
/// share of the traffic (docs/adr/0006).
class RateLimiter {
 public:
  static constexpr std::int64_t kWindowSeconds = 900;

  struct Result {
    bool allowed;
    std::int64_t limit;
    std::int64_t remaining;
  };
  /// Counts one request for `key` at `now` (a request over the limit is not counted).
  Result Hit(std::string const& key, std::int64_t limit, std::chrono::system_clock::time_point now);

  /// Adds this process's new counts to the shared `rate_limit_windows` table and reads back the
  /// totals of every manager, so several managers on one database enforce one limit (off by up
  /// to one flush interval of traffic). Also drops windows older than the sliding window needs.
  Status Flush(Store& store, std::chrono::system_clock::time_point now);

 private:
  struct Window {
    std::int64_t start = 0;
    std::int64_t current = 0;    ///< this window's total as last read from the table
    std::int64_t previous = 0;   ///< the previous window's total
    std::int64_t unflushed = 0;  ///< counted here since the last flush
  };
  std::mutex mu_;
  std::map<std::string, Window> windows_;
};

enum class AuthLevel { kAnonymous, kUser, kAdmin, kSuperadmin };

/// Keypair records and derived signing keys for a short time (default 2 s), so a busy client
/// costs one HMAC and no keypair query per request. Changes in the database (a deactivated or
/// deleted keypair) take effect within the TTL; nothing else depends on this memory.
class KeypairCache {
 public:
  explicit KeypairCache(std::chrono::milliseconds ttl = std::chrono::milliseconds(2000))
      : ttl_(ttl) {}

  /// The keypair of `access_key`, or null when there is none. Shared and never changed: a
  /// reload replaces the pointer, so callers may keep it for the request.
  StatusOr<std::shared_ptr<KeypairRecord const>> Find(Store& store, std::string const& access_key);
  /// DeriveSigningKey(secret, key_date, host), remembered with the keypair.
  std::string DerivedKey(KeypairRecord const& record, std::string const& key_date,
                         std::string const& host, int hash);

 private:
  struct Entry {
    std::shared_ptr<KeypairRecord const> record;
    std::chrono::steady_clock::time_point expires;
    std::map<std::string, std::string> derived;  ///< "hash|date|host" → key
  };
  std::chrono::milliseconds ttl_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

/// Verifies a request per PROTOCOL.md §2.2 against the keypairs in `store`: date window,
/// Authorization header, signature, active keypair and user, allowed client IPs, then the
/// privilege `level` needs. Errors are the problem statuses of §2.2 (400 invalid-auth-params,
/// 401 auth-failed).
/// The result is the caller's keypair; its `identity` is who the request acts as.
StatusOr<std::shared_ptr<KeypairRecord const>> Authenticate(
    server::HttpRequest const& request, Store& store, KeypairCache& cache, AuthLevel level,
    std::chrono::system_clock::time_point now);

/// True when `ip` lies in one of the CIDRs (or equals one of the addresses) of `allowed`; an
/// empty list allows everything.
bool ClientIpAllowed(std::string const& ip, std::vector<std::string> const& allowed);

}  // namespace bai::manager
