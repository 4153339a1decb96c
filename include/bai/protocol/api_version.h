// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// A Backend.AI API version, `v<major>.<YYYYMMDD>`, ordered as the tuple (major, date).
struct ApiVersion {
  int major = 0;
  int date = 0;  ///< YYYYMMDD as an integer

  /// Parses "v8.20240915". Returns nullopt for anything else (no leading/trailing text).
  BAI_EXPORT static std::optional<ApiVersion> Parse(std::string_view text);
  /// "v8.20240915".
  BAI_EXPORT std::string ToString() const;

  friend bool operator==(ApiVersion a, ApiVersion b) {
    return a.major == b.major && a.date == b.date;
  }
  friend bool operator!=(ApiVersion a, ApiVersion b) { return !(a == b); }
  friend bool operator<(ApiVersion a, ApiVersion b) {
    return a.major != b.major ? a.major < b.major : a.date < b.date;
  }
  friend bool operator>(ApiVersion a, ApiVersion b) { return b < a; }
  friend bool operator<=(ApiVersion a, ApiVersion b) { return !(b < a); }
  friend bool operator>=(ApiVersion a, ApiVersion b) { return !(a < b); }
};

/// The version this SDK and the reference server speak (Backend.AI 24.09).
inline constexpr ApiVersion kCurrentApiVersion{8, 20240915};
/// The version assumed for a request that carries no version header.
inline constexpr ApiVersion kDefaultRequestApiVersion{5, 20191215};
/// Servers older than this get a warning from the SDK.
inline constexpr ApiVersion kOldestRecommendedApiVersion{7, 20230615};

/// Every version string a server of ours accepts in X-BackendAI-Version, oldest first.
BAI_EXPORT std::vector<ApiVersion> const& AcceptedApiVersions();

/// True when `text` is exactly one of AcceptedApiVersions().
BAI_EXPORT bool IsAcceptedApiVersion(std::string_view text);

/// The version a client uses after probing the server: min(server, client).
inline ApiVersion NegotiateApiVersion(ApiVersion server, ApiVersion client) {
  return server < client ? server : client;
}

/// What `GET /` says about the server: the manager writes it (EncodeServerInfo), the SDK reads it
/// (DecodeServerInfo).
struct ServerInfo {
  std::string version;         ///< the server's API version ("v8.20240915")
  std::string manager;         ///< the manager's own version text ("24.09.0", "bai-manager 0.1.0")
  bool is_backend_ai = false;  ///< false when the answer did not look like Backend.AI's
};

/// `{"version": …, "manager": …}`.
BAI_EXPORT std::string EncodeServerInfo(ServerInfo const& info);
/// Lenient: what is missing or not text stays empty; `is_backend_ai` when `version` is an API
/// version.
BAI_EXPORT ServerInfo DecodeServerInfo(std::string_view body);

}  // namespace bai::protocol
