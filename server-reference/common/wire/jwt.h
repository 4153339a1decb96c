// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

/// HS256 JSON Web Tokens (RFC 7519), as the storage proxy hands them out for uploads and
/// downloads: the token is the credential, clients never look inside.
namespace bai::server {

/// `claims` (an object; give it an `exp`) signed with `secret`.
std::string SignJwt(nlohmann::json const& claims, std::string_view secret);

/// The claims of a token that `secret` signed with HS256 and whose `exp` is after `now` (seconds
/// since the epoch). kUnauthenticated with the reason for anything else: malformed, another
/// algorithm (including "none"), a wrong signature, expired or without `exp`.
StatusOr<nlohmann::json> VerifyJwt(std::string_view token, std::string_view secret,
                                   std::int64_t now);

}  // namespace bai::server
