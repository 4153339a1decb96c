// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"
#include "bai/protocol/dates.h"
#include "bai/status.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bai::protocol {

/// The hash under HMAC; the header names it as `signMethod=HMAC-SHA256` / `HMAC-SHA512`.
enum class HashAlgorithm { kSha256, kSha512 };

/// "HMAC-SHA256" / "HMAC-SHA512".
BAI_EXPORT std::string_view SignMethodName(HashAlgorithm hash);

/// What the signature covers (PROTOCOL.md §2.2). Every field is the exact text that goes on the
/// wire: sign the request you send, never a re-encoded copy.
struct SigningInput {
  std::string method;          ///< upper case, e.g. "GET"
  std::string request_target;  ///< path + "?" + query, percent-encoded as sent
  std::string date;            ///< the Date (or X-BackendAI-Date) header value
  std::string host;            ///< the Host header value ("host" or "host:port")
  /// The Content-Type header value as sent; parameters are stripped and the type lowercased
  /// when signing. nullopt = no header sent, signed as application/octet-stream.
  std::optional<std::string> content_type;
  std::string api_version;                            ///< X-BackendAI-Version value
  std::string version_label = "x-backendai-version";  ///< "x-sorna-version" for legacy clients
  HashAlgorithm hash = HashAlgorithm::kSha256;
};

/// The MIME type as signed: parameters dropped, lowercased, surrounding spaces trimmed;
/// nullopt → "application/octet-stream"; a present but empty type → "text/plain".
BAI_EXPORT std::string SignedContentType(std::optional<std::string_view> header);

/// The seven-line string to sign.
BAI_EXPORT std::string StringToSign(SigningInput const& input);

/// The derived key HMAC(HMAC(secret, key_date), host) as raw bytes; `key_date` is YYYYMMDD.
BAI_EXPORT std::string DeriveSigningKey(std::string_view secret_key, std::string_view key_date,
                                        std::string_view host, HashAlgorithm hash);

/// The lowercase hex signature of `input` under `secret_key`. The key date comes from
/// input.date in the offset that the date itself carries; an unparseable date is an error.
BAI_EXPORT StatusOr<std::string> Sign(SigningInput const& input, std::string_view secret_key);

/// The key date (YYYYMMDD) of input.date in the date's own offset.
BAI_EXPORT StatusOr<std::string> KeyDateOf(SigningInput const& input);

/// The signature of `input` under a key from DeriveSigningKey() (servers cache derived keys:
/// they change only with the day and the host).
BAI_EXPORT std::string SignWithKey(SigningInput const& input, std::string_view derived_key);

/// "BackendAI signMethod=HMAC-SHA256, credential=AK:SIG".
BAI_EXPORT std::string AuthorizationHeaderValue(std::string_view access_key,
                                                std::string_view signature, HashAlgorithm hash);

// HttpDate, ParseHttpDate and FormatRequestDate: bai/protocol/dates.h.

/// A parsed Authorization header.
struct ParsedAuthorization {
  HashAlgorithm hash = HashAlgorithm::kSha256;
  std::string access_key;
  std::string signature;  ///< lowercase hex (validated)
};

/// Parses `BackendAI signMethod=HMAC-SHA256, credential=AK:SIG` (scheme `Sorna` too). Errors are
/// 400 invalid-auth-params problems.
BAI_EXPORT StatusOr<ParsedAuthorization> ParseAuthorization(std::string_view header);

/// The headers of a request as received; nullopt = header absent.
struct ReceivedRequest {
  std::string_view method;
  std::string_view raw_target;  ///< the request-target exactly as received
  std::optional<std::string_view> date;
  std::optional<std::string_view> backendai_date;  ///< X-BackendAI-Date
  std::optional<std::string_view> sorna_date;      ///< X-Sorna-Date
  std::optional<std::string_view> host;
  std::optional<std::string_view> content_type;
  std::optional<std::string_view> backendai_version;  ///< X-BackendAI-Version
  std::optional<std::string_view> sorna_version;      ///< X-Sorna-Version
  std::optional<std::string_view> authorization;
};

/// Maximum distance between the request's date and the server clock.
inline constexpr std::chrono::seconds kMaxClockSkew{15 * 60};

/// The first half of verification: everything that needs no secret. A request without
/// Authorization is 401 auth-failed "Unauthorized access"; otherwise checks the date (present,
/// parseable, within kMaxClockSkew of `now`), parses Authorization and requires a version
/// header. The caller then looks up the secret of `auth.access_key` and calls VerifySignature.
struct PendingVerification {
  ParsedAuthorization auth;
  SigningInput input;
};
BAI_EXPORT StatusOr<PendingVerification> PrepareVerification(
    ReceivedRequest const& request, std::chrono::system_clock::time_point now);

/// Recomputes the signature with `secret_key` and compares it in constant time; a mismatch is a
/// 401 auth-failed "Signature mismatch" problem.
BAI_EXPORT Status VerifySignature(PendingVerification const& pending, std::string_view secret_key);

/// VerifySignature with an already derived key (DeriveSigningKey of the secret, KeyDateOf the
/// request and its host).
BAI_EXPORT Status VerifySignatureWithKey(PendingVerification const& pending,
                                         std::string_view derived_key);

}  // namespace bai::protocol
