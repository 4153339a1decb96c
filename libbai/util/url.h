// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <string>
#include <string_view>

namespace bai::internal {

/// A manager endpoint split into what goes on the wire.
struct Endpoint {
  std::string url;        ///< as configured, without a trailing slash
  std::string origin;     ///< "https://api.example.com:8443"
  std::string host;       ///< "api.example.com:8443": the Host header, port as written
  std::string base_path;  ///< "" or "/backend" (no trailing slash)
};

/// Accepts absolute http:// and https:// URLs with an optional base path; no query, fragment
/// or user info.
StatusOr<Endpoint> ParseEndpoint(std::string_view url);

/// Percent-encodes the characters that may not appear in a request-target; keeps valid %XX
/// escapes, so an already encoded path is left as it is. Prepends "/" when missing.
std::string EncodeTarget(std::string_view path_and_query);

/// One path segment or query value: every byte but the unreserved ones percent-encoded.
std::string EncodeSegment(std::string_view text);

}  // namespace bai::internal
