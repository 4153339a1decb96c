// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/agent_protocol.h"

#include "bai/protocol/errors.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>

namespace bai::server::agent_protocol {
namespace {

std::string Hex(unsigned char const* bytes, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (std::size_t i = 0; i < n; ++i) {
    hex.push_back(kHex[bytes[i] >> 4]);
    hex.push_back(kHex[bytes[i] & 15]);
  }
  return hex;
}

std::string HexMac(std::string const& secret, std::string const& msg) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<unsigned char const*>(msg.data()), msg.size(), out, &len);
  return Hex(out, len);
}

std::string Mac(std::string const& secret, std::string const& id, std::string const& ts) {
  return HexMac(secret, "bai-agent\n" + id + "\n" + ts);
}

bool SameText(std::string const& a, std::string const& b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
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
  if (!SameText(mac, Mac(cluster_secret, id, ts))) return Denied("wrong cluster secret");
  return id;
}

std::string MakeNonce() {
  unsigned char bytes[16];
  randombytes_buf(bytes, sizeof bytes);
  return Hex(bytes, sizeof bytes);
}

std::string RegisterProof(std::string const& agent_id, std::string const& cluster_secret,
                          std::string const& nonce) {
  return HexMac(cluster_secret, "bai-agent-register\n" + agent_id + "\n" + nonce);
}

bool VerifyRegisterProof(std::string const& proof, std::string const& agent_id,
                         std::string const& cluster_secret, std::string const& nonce) {
  return !nonce.empty() && SameText(proof, RegisterProof(agent_id, cluster_secret, nonce));
}

std::string StreamProof(std::string const& agent_id, std::string const& cluster_secret,
                        std::string const& stream_id) {
  return HexMac(cluster_secret, "bai-agent-stream\n" + agent_id + "\n" + stream_id);
}

bool VerifyStreamProof(std::string const& proof, std::string const& agent_id,
                       std::string const& cluster_secret, std::string const& stream_id) {
  return !stream_id.empty() && SameText(proof, StreamProof(agent_id, cluster_secret, stream_id));
}

}  // namespace bai::server::agent_protocol
