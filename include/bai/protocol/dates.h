// SPDX-License-Identifier: Apache-2.0
#pragma once
// Dates and durations as the protocol reads and writes them, in one place: the Date header
// (ISO 8601 and RFC 1123 forms), RFC 3339 times as 24.09 writes them, HTTP dates, compact
// stamps for names, and durations such as "90s" or "2h". UTC throughout; no time zone database.

#include "bai/export.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bai::protocol {

/// A parsed Date header.
struct HttpDate {
  std::int64_t unix_seconds = 0;  ///< the instant, seconds since the epoch (UTC)
  int utc_offset_seconds = 0;     ///< the header's own offset (0 for Z, GMT, UTC and naive)
  int local_yyyymmdd = 0;         ///< calendar date in that offset: the signing key date
};

/// Parses ISO 8601 ("2024-03-15T12:34:56.123+09:00", "…Z", "…" naive = UTC, date-time separator
/// 'T' or ' ') and RFC 1123 ("Fri, 15 Mar 2024 12:34:56 GMT", also UTC/+hhmm/common US zones).
BAI_EXPORT std::optional<HttpDate> ParseHttpDate(std::string_view text);

/// "2024-03-15T12:34:56+00:00" for `t` in UTC: what the SDK sends.
BAI_EXPORT std::string FormatRequestDate(std::chrono::system_clock::time_point t);

/// "2026-11-23T03:29:04.932986+00:00": a time as 24.09 writes them (UTC, microseconds).
BAI_EXPORT std::string FormatRfc3339(std::chrono::system_clock::time_point t);
BAI_EXPORT std::string FormatRfc3339(std::int64_t seconds, std::int64_t micros);
/// "2026-11-23T03:29:04+00:00": whole seconds (file times).
BAI_EXPORT std::string FormatRfc3339Seconds(std::int64_t seconds);
/// "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate: Last-Modified and friends).
BAI_EXPORT std::string FormatHttpDate(std::int64_t seconds);
/// "20261125T080309Z": a UTC stamp for file names.
BAI_EXPORT std::string FormatStamp(std::chrono::system_clock::time_point t);

/// "90", "30s", "5m", "1h", "2d", "1w" → seconds; nullopt for anything else.
BAI_EXPORT std::optional<std::int64_t> ParseDurationSeconds(std::string_view text);

}  // namespace bai::protocol
