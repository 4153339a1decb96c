// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a registry's answers say beyond the content (OCI distribution, Docker's token auth):
// the WWW-Authenticate challenge, the token server's answer, the `Link` of a paged listing and
// the errors document. Pure functions.

#include "bai/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::server::oci {

/// One challenge of a WWW-Authenticate header: `Bearer realm="…",service="…",scope="…"`.
struct Challenge {
  std::string scheme;                         ///< lower case: "bearer", "basic"
  std::map<std::string, std::string> params;  ///< names lower case, values unquoted
};
/// Every challenge in the header (RFC 9110 §11.6.1: schemes, then auth-params, quoted strings
/// with backslash escapes); what cannot be read ends the list there.
std::vector<Challenge> ParseWwwAuthenticate(std::string_view header);

/// The URL a Bearer challenge sends a client to for a token: realm?service=…&scope=… (`scope`
/// replaces the challenge's when given). kInvalidArgument when the realm is missing or is not
/// http(s).
StatusOr<std::string> TokenUrl(Challenge const& bearer, std::string const& scope = {});

/// A token server's answer: `token` (or `access_token`) and how long it lives (`expires_in`,
/// 60 s when absent, as the spec says).
struct Token {
  std::string token;
  std::int64_t expires_in = 60;
};
StatusOr<Token> ParseTokenAnswer(std::string_view body);

/// The next page of a listing from its `Link` header (`<URL>; rel="next"`), or nullopt.
std::optional<std::string> NextLink(std::string_view link_header);

/// The registry's errors document (`{"errors": [{code, message}]}`) as words: "MANIFEST_UNKNOWN:
/// manifest unknown"; the body itself (cut to 200 characters) when it is not one.
std::string RegistryErrorWords(std::string_view body);

}  // namespace bai::server::oci
