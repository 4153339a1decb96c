// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace bai::server::agent_protocol {

/// The manager ⇄ agent protocol (docs/agent-protocol.md): JSON text frames over one WebSocket
/// that the agent opens to the manager.
inline constexpr int kVersion = 2;
inline constexpr char kPath[] = "/agent/ws";
inline constexpr char kAuthHeader[] = "X-BAI-Agent-Auth";
/// How far the agent's timestamp may be from the manager's clock.
inline constexpr std::chrono::seconds kMaxSkew{300};

/// "AGENT_ID:UNIX_SECONDS:HEX(HMAC-SHA256(cluster_secret, "bai-agent\n" AGENT_ID "\n" SECONDS))".
std::string MakeAuth(std::string const& agent_id, std::string const& cluster_secret,
                     std::chrono::system_clock::time_point now);

/// The agent id if `header` is a valid, fresh proof of the cluster secret; 401 auth-failed
/// problems otherwise.
StatusOr<std::string> VerifyAuth(std::string const& header, std::string const& cluster_secret,
                                 std::chrono::system_clock::time_point now);

/// A fresh random challenge for one connection (32 hex characters).
std::string MakeNonce();

/// HEX(HMAC-SHA256(cluster_secret, "bai-agent-register\n" AGENT_ID "\n" NONCE)): what the
/// agent's `register` carries to answer its connection's challenge.
std::string RegisterProof(std::string const& agent_id, std::string const& cluster_secret,
                          std::string const& nonce);
/// Constant-time check of a RegisterProof.
bool VerifyRegisterProof(std::string const& proof, std::string const& agent_id,
                         std::string const& cluster_secret, std::string const& nonce);

/// Data streams (terminals, service-port tunnels): the manager sends `open_stream` with a fresh
/// stream id; the agent opens `GET kStreamPath + STREAM_ID` with kAuthHeader and kStreamProofHeader
/// = StreamProof(...), and the manager pairs that WebSocket with the client's.
inline constexpr char kStreamPath[] = "/agent/stream/";
inline constexpr char kStreamProofHeader[] = "X-BAI-Stream-Proof";
/// HEX(HMAC-SHA256(cluster_secret, "bai-agent-stream\n" AGENT_ID "\n" STREAM_ID)).
std::string StreamProof(std::string const& agent_id, std::string const& cluster_secret,
                        std::string const& stream_id);
bool VerifyStreamProof(std::string const& proof, std::string const& agent_id,
                       std::string const& cluster_secret, std::string const& stream_id);

/// Agent ids: 1–64 characters of letters, digits, '.', '_', '-'.
bool ValidAgentId(std::string const& id);

}  // namespace bai::server::agent_protocol
