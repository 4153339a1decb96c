// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/api/auth.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "libbai/util/json_parse.h"

#include <arpa/inet.h>

#include <cstring>

namespace bai::manager {

using protocol::MakeProblemStatus;
using protocol::ProblemType;

RateLimiter::Result RateLimiter::Hit(std::string const& key, std::int64_t limit,
                                     std::chrono::system_clock::time_point now) {
  auto t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::int64_t start = t - t % kWindowSeconds;
  std::lock_guard<std::mutex> lock(mu_);
  auto& w = windows_[key];
  if (w.start != start) {
    w.previous = w.start == start - kWindowSeconds ? w.current + w.unflushed : 0;
    w.current = 0;
    w.unflushed = 0;
    w.start = start;
  }
  double overlap = 1.0 - static_cast<double>(t - start) / static_cast<double>(kWindowSeconds);
  auto used = static_cast<std::int64_t>(static_cast<double>(w.previous) * overlap) + w.current +
              w.unflushed;
  if (used >= limit) return {false, limit, 0};
  ++w.unflushed;
  return {true, limit, std::max<std::int64_t>(0, limit - used - 1)};
}

Status RateLimiter::Flush(Store& store, std::chrono::system_clock::time_point now) {
  auto t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::int64_t start = t - t % kWindowSeconds;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> taken;  // key → (window, count)
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = windows_.begin(); it != windows_.end();) {
      auto& w = it->second;
      if (w.start < start - kWindowSeconds) {
        it = windows_.erase(it);  // idle for a whole window: nothing left to remember
        continue;
      }
      if (w.unflushed > 0) taken[it->first] = {w.start, w.unflushed};
      w.current += w.unflushed;
      w.unflushed = 0;
      ++it;
    }
  }
  auto totals = store.AddRequestCounts(taken, start, kWindowSeconds);
  std::lock_guard<std::mutex> lock(mu_);
  if (!totals.ok()) {
    // Not lost: counted again at the next flush.
    for (auto const& [key, wc] : taken) {
      auto it = windows_.find(key);
      if (it != windows_.end() && it->second.start == wc.first) {
        it->second.current -= wc.second;
        it->second.unflushed += wc.second;
      }
    }
    return totals.status();
  }
  for (auto const& [key, tot] : *totals) {
    auto& w = windows_[key];
    if (w.start != start) {
      w.start = start;
      w.unflushed = 0;
    }
    w.current = tot.first;
    w.previous = tot.second;
  }
  return Status();
}

namespace {

bool ParseAddress(std::string const& text, unsigned char out[16], int& family) {
  if (inet_pton(AF_INET, text.c_str(), out) == 1) {
    family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), out) == 1) {
    family = AF_INET6;
    return true;
  }
  return false;
}

}  // namespace

bool ClientIpAllowed(std::string const& ip, std::vector<std::string> const& allowed) {
  if (allowed.empty()) return true;
  unsigned char addr[16] = {0};
  int family = 0;
  std::string bare =
      ip.rfind("::ffff:", 0) == 0 && ip.find('.') != std::string::npos ? ip.substr(7) : ip;
  if (!ParseAddress(bare, addr, family)) return false;
  for (auto const& cidr : allowed) {
    auto slash = cidr.find('/');
    unsigned char net[16] = {0};
    int net_family = 0;
    if (!ParseAddress(cidr.substr(0, slash), net, net_family) || net_family != family) continue;
    int bits = family == AF_INET ? 32 : 128;
    if (slash != std::string::npos) bits = std::atoi(cidr.c_str() + slash + 1);
    bool match = true;
    for (int i = 0; i < bits && match; ++i) {
      int byte = i / 8;
      int mask = 0x80 >> (i % 8);
      match = (addr[byte] & mask) == (net[byte] & mask);
    }
    if (match) return true;
  }
  return false;
}

StatusOr<std::shared_ptr<KeypairRecord const>> KeypairCache::Find(Store& store,
                                                                  std::string const& access_key) {
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(access_key);
    if (it != entries_.end() && it->second.expires > now) return it->second.record;
  }
  auto found = store.FindKeypair(access_key);
  if (!found.ok()) return std::move(found).status();
  std::shared_ptr<KeypairRecord const> record;
  if (*found) record = std::make_shared<KeypairRecord const>(**std::move(found));
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() > 10000) entries_.clear();  // bounded under a flood of random keys
  auto& e = entries_[access_key];
  bool same_secret = e.record && record && e.record->secret_key == record->secret_key;
  if (!same_secret) e.derived.clear();
  e.record = record;
  e.expires = now + ttl_;
  return record;
}

std::string KeypairCache::DerivedKey(KeypairRecord const& record, std::string const& key_date,
                                     std::string const& host, int hash) {
  std::string slot = std::to_string(hash) + "|" + key_date + "|" + host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(record.identity.access_key);
    if (it != entries_.end() && it->second.record &&
        it->second.record->secret_key == record.secret_key) {
      auto d = it->second.derived.find(slot);
      if (d != it->second.derived.end()) return d->second;
    }
  }
  std::string key = protocol::DeriveSigningKey(record.secret_key, key_date, host,
                                               static_cast<protocol::HashAlgorithm>(hash));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(record.identity.access_key);
  if (it != entries_.end() && it->second.derived.size() < 64) it->second.derived[slot] = key;
  return key;
}

StatusOr<std::shared_ptr<KeypairRecord const>> Authenticate(
    server::HttpRequest const& request, Store& store, KeypairCache& cache, AuthLevel level,
    std::chrono::system_clock::time_point now) {
  protocol::ReceivedRequest received;
  received.method = request.method;
  received.raw_target = request.target;
  received.date = request.Header("date");
  received.backendai_date = request.Header("x-backendai-date");
  received.sorna_date = request.Header("x-sorna-date");
  received.host = request.Header("host");
  received.content_type = request.Header("content-type");
  received.backendai_version = request.Header("x-backendai-version");
  received.sorna_version = request.Header("x-sorna-version");
  received.authorization = request.Header("authorization");
  auto pending = protocol::PrepareVerification(received, now);
  if (!pending.ok()) return std::move(pending).status();
  auto keypair = cache.Find(store, pending->auth.access_key);
  if (!keypair.ok()) return std::move(keypair).status();
  if (!*keypair || !(*keypair)->keypair_active) {
    return MakeProblemStatus(ProblemType::kAuthFailed, "Access key not found");
  }
  auto const& record = **keypair;
  auto key_date = protocol::KeyDateOf(pending->input);
  if (!key_date.ok()) return std::move(key_date).status();
  std::string derived = cache.DerivedKey(record, *key_date, pending->input.host,
                                         static_cast<int>(pending->input.hash));
  if (auto verified = protocol::VerifySignatureWithKey(*pending, derived); !verified.ok()) {
    return verified;
  }
  if (record.user_status != "active") {
    return MakeProblemStatus(ProblemType::kAuthFailed, "The user account is " + record.user_status);
  }
  if (!ClientIpAllowed(request.peer_address, record.allowed_client_ip)) {
    return MakeProblemStatus(ProblemType::kAuthFailed,
                             "'" + request.peer_address + "' is not allowed IP address");
  }
  Identity const& who = record.identity;
  bool allowed = level == AuthLevel::kAnonymous || level == AuthLevel::kUser ||
                 (level == AuthLevel::kAdmin && (who.is_admin || who.IsSuperadmin())) ||
                 (level == AuthLevel::kSuperadmin && who.IsSuperadmin());
  if (!allowed) return MakeProblemStatus(ProblemType::kAuthFailed, "Unauthorized access");
  return *std::move(keypair);
}

}  // namespace bai::manager
