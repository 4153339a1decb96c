// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/agent_protocol.h"

#include "bai/protocol/errors.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>

namespace bai::server::agent_protocol {
namespace {

std::string Mac(std::string const& secret, std::string const& id, std::string const& ts) {
  std::string msg = "bai-agent\n" + id + "\n" + ts;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<unsigned char const*>(msg.data()), msg.size(), out, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[out[i] >> 4]);
    hex.push_back(kHex[out[i] & 15]);
  }
  return hex;
}

Status Denied(std::string why) {
  return protocol::MakeProblemStatus(protocol::ProblemType::kAuthFailed, std::move(why));
}

}  // namespace

bool ValidAgentId(std::string const& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string MakeAuth(std::string const& agent_id, std::string const& cluster_secret,
                     std::chrono::system_clock::time_point now) {
  std::string ts = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  return agent_id + ":" + ts + ":" + Mac(cluster_secret, agent_id, ts);
}

StatusOr<std::string> VerifyAuth(std::string const& header, std::string const& cluster_secret,
                                 std::chrono::system_clock::time_point now) {
  auto first = header.find(':');
  auto second = first == std::string::npos ? first : header.find(':', first + 1);
  if (second == std::string::npos) return Denied("malformed agent credentials");
  std::string id = header.substr(0, first);
  std::string ts = header.substr(first + 1, second - first - 1);
  std::string mac = header.substr(second + 1);
  if (!ValidAgentId(id)) return Denied("invalid agent id");
  char* end = nullptr;
  long long secs = std::strtoll(ts.c_str(), &end, 10);
  if (ts.empty() || *end != '\0') return Denied("malformed agent credentials");
  auto now_secs = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (secs > now_secs + kMaxSkew.count() || secs < now_secs - kMaxSkew.count()) {
    return Denied("agent clock is too far from the manager's");
  }
  std::string expected = Mac(cluster_secret, id, ts);
  if (mac.size() != expected.size() ||
      sodium_memcmp(mac.data(), expected.data(), mac.size()) != 0) {
    return Denied("wrong cluster secret");
  }
  return id;
}

}  // namespace bai::server::agent_protocol
