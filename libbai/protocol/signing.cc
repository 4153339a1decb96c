// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/signing.h"

#include "bai/protocol/errors.h"

#include "libbai/util/text.h"

#include <sodium.h>

#include <ctime>

namespace bai::protocol {
namespace {

using internal::AsciiLower;
using internal::TrimSpaces;

// HMAC through libsodium: no provider tables to search. OpenSSL 3 looks its HMAC up by name
// the first time in a process (about a millisecond of a one-request CLI command) and its
// one-shot HMAC() allocates contexts on every call, which made signature checks a fifth of a
// signed request's server time; libsodium does neither. One HMAC, given libsodium's state type
// and functions for its hash.
template <typename State, std::size_t kBytes, typename Init, typename Update, typename Finish>
std::string Mac(Init init, Update update, Finish finish, std::string_view key,
                std::string_view msg) {
  // Empty keys and messages are valid input; never hand a null pointer to a copy.
  static unsigned char const kEmpty = 0;
  auto const* k = key.empty() ? &kEmpty : reinterpret_cast<unsigned char const*>(key.data());
  auto const* m = msg.empty() ? &kEmpty : reinterpret_cast<unsigned char const*>(msg.data());
  State state;
  unsigned char out[kBytes];
  init(&state, k, key.size());
  update(&state, m, msg.size());
  finish(&state, out);
  return std::string(reinterpret_cast<char const*>(out), sizeof out);
}

std::string Hmac(HashAlgorithm hash, std::string_view key, std::string_view msg) {
  if (hash == HashAlgorithm::kSha512) {
    return Mac<crypto_auth_hmacsha512_state, crypto_auth_hmacsha512_BYTES>(
        crypto_auth_hmacsha512_init, crypto_auth_hmacsha512_update, crypto_auth_hmacsha512_final,
        key, msg);
  }
  return Mac<crypto_auth_hmacsha256_state, crypto_auth_hmacsha256_BYTES>(
      crypto_auth_hmacsha256_init, crypto_auth_hmacsha256_update, crypto_auth_hmacsha256_final, key,
      msg);
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Hex digest of the empty body: since v4.20181215 the body is never hashed.
std::string_view EmptyBodyHash(HashAlgorithm hash) {
  if (hash == HashAlgorithm::kSha512) {
    return "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d"
           "2"
           "877eec2f63b931bd47417a81a538327af927da3e";
  }
  return "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
}

Status AuthParamsError(std::string detail) {
  return MakeProblemStatus(ProblemType::kInvalidAuthParams, std::move(detail));
}

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string_view SignMethodName(HashAlgorithm hash) {
  return hash == HashAlgorithm::kSha512 ? "HMAC-SHA512" : "HMAC-SHA256";
}

std::string SignedContentType(std::optional<std::string_view> header) {
  if (!header) return "application/octet-stream";
  std::string_view type = TrimSpaces(header->substr(0, header->find(';')));
  if (type.empty()) return "text/plain";
  return AsciiLower(type);
}

std::string StringToSign(SigningInput const& input) {
  std::string out;
  out.reserve(256 + input.request_target.size());
  out += input.method;
  out += '\n';
  out += input.request_target;
  out += '\n';
  out += input.date;
  out += "\nhost:";
  out += input.host;
  out += "\ncontent-type:";
  if (input.content_type) {
    out += SignedContentType(std::string_view(*input.content_type));
  } else {
    out += SignedContentType(std::nullopt);
  }
  out += '\n';
  out += input.version_label;
  out += ':';
  out += input.api_version;
  out += '\n';
  out += EmptyBodyHash(input.hash);
  return out;
}

std::string DeriveSigningKey(std::string_view secret_key, std::string_view key_date,
                             std::string_view host, HashAlgorithm hash) {
  return Hmac(hash, Hmac(hash, secret_key, key_date), host);
}

StatusOr<std::string> KeyDateOf(SigningInput const& input) {
  auto date = ParseHttpDate(input.date);
  if (!date) {
    return AuthParamsError("Date/time sync error (cannot parse the date \"" + input.date + "\")");
  }
  std::string key_date = std::to_string(date->local_yyyymmdd);
  key_date.insert(0, 8 - std::min<std::size_t>(8, key_date.size()), '0');
  return key_date;
}

std::string SignWithKey(SigningInput const& input, std::string_view derived_key) {
  return Hex(Hmac(input.hash, derived_key, StringToSign(input)));
}

StatusOr<std::string> Sign(SigningInput const& input, std::string_view secret_key) {
  auto key_date = KeyDateOf(input);
  if (!key_date.ok()) return key_date;
  return SignWithKey(input, DeriveSigningKey(secret_key, *key_date, input.host, input.hash));
}

std::string AuthorizationHeaderValue(std::string_view access_key, std::string_view signature,
                                     HashAlgorithm hash) {
  std::string out = "BackendAI signMethod=";
  out += SignMethodName(hash);
  out += ", credential=";
  out += access_key;
  out += ':';
  out += signature;
  return out;
}

StatusOr<ParsedAuthorization> ParseAuthorization(std::string_view header) {
  if (header.size() > 1024) return AuthParamsError("Authorization header is too long");
  auto space = header.find(' ');
  if (space == std::string_view::npos) return AuthParamsError("malformed Authorization header");
  std::string_view scheme = header.substr(0, space);
  if (scheme != "BackendAI" && scheme != "Sorna") {
    return AuthParamsError("unsupported authorization scheme (expected BackendAI)");
  }
  std::optional<std::string_view> sign_method;
  std::optional<std::string_view> credential;
  std::string_view rest = header.substr(space + 1);
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = TrimSpaces(rest.substr(0, comma));
    auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      return AuthParamsError("malformed Authorization header (a parameter lacks '=')");
    }
    std::string_view key = TrimSpaces(item.substr(0, eq));
    std::string_view value = TrimSpaces(item.substr(eq + 1));
    if (key == "signMethod" && !sign_method) sign_method = value;
    if (key == "credential" && !credential) credential = value;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (!sign_method || !credential) {
    return AuthParamsError("Authorization header needs signMethod and credential");
  }
  ParsedAuthorization out;
  auto dash = sign_method->find('-');
  if (dash == std::string_view::npos ||
      sign_method->find('-', dash + 1) != std::string_view::npos ||
      AsciiLower(sign_method->substr(0, dash)) != "hmac") {
    return AuthParamsError("unsupported signMethod (use HMAC-SHA256 or HMAC-SHA512)");
  }
  std::string hash = AsciiLower(sign_method->substr(dash + 1));
  if (hash == "sha256") {
    out.hash = HashAlgorithm::kSha256;
  } else if (hash == "sha512") {
    out.hash = HashAlgorithm::kSha512;
  } else {
    return AuthParamsError("unsupported signMethod (use HMAC-SHA256 or HMAC-SHA512)");
  }
  auto colon = credential->find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return AuthParamsError("malformed credential (expected ACCESS_KEY:SIGNATURE)");
  }
  out.access_key = std::string(credential->substr(0, colon));
  out.signature = std::string(credential->substr(colon + 1));
  std::size_t want = out.hash == HashAlgorithm::kSha512 ? 128 : 64;
  if (out.signature.size() != want || !IsLowerHex(out.signature)) {
    return AuthParamsError("malformed signature (expected " + std::to_string(want) +
                           " lowercase hex digits)");
  }
  return out;
}

StatusOr<PendingVerification> PrepareVerification(ReceivedRequest const& request,
                                                  std::chrono::system_clock::time_point now) {
  // Without any Authorization the request is simply unauthenticated (as HEAD answers); the date
  // rules apply to signed requests.
  if (!request.authorization) {
    return MakeProblemStatus(ProblemType::kAuthFailed, "Unauthorized access");
  }
  auto raw_date = request.date
                      ? request.date
                      : (request.backendai_date ? request.backendai_date : request.sorna_date);
  if (!raw_date) return AuthParamsError("Date/time sync error (no Date header)");
  auto date = ParseHttpDate(*raw_date);
  if (!date) return AuthParamsError("Date/time sync error (cannot parse the Date header)");
  auto now_secs = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  auto skew = date->unix_seconds - now_secs;
  if (skew > kMaxClockSkew.count() || skew < -kMaxClockSkew.count()) {
    return AuthParamsError("Date/time sync error (the request date is " +
                           std::to_string(skew < 0 ? -skew : skew) + " s from the server clock)");
  }
  auto auth = ParseAuthorization(*request.authorization);
  if (!auth.ok()) return std::move(auth).status();

  PendingVerification out;
  out.auth = std::move(*auth);
  auto& in = out.input;
  if (request.backendai_version) {
    in.api_version = std::string(*request.backendai_version);
  } else if (request.sorna_version) {
    in.api_version = std::string(*request.sorna_version);
    in.version_label = "x-sorna-version";
  } else {
    return AuthParamsError("missing X-BackendAI-Version header");
  }
  if (!request.host) return AuthParamsError("missing Host header");
  in.method = std::string(request.method);
  in.request_target = std::string(request.raw_target);
  in.date = std::string(*raw_date);
  in.host = std::string(*request.host);
  if (request.content_type) in.content_type = std::string(*request.content_type);
  in.hash = out.auth.hash;
  return out;
}

Status VerifySignatureWithKey(PendingVerification const& pending, std::string_view derived_key) {
  std::string expected = SignWithKey(pending.input, derived_key);
  auto const& got = pending.auth.signature;
  if (got.size() != expected.size() ||
      sodium_memcmp(got.data(), expected.data(), got.size()) != 0) {
    return MakeProblemStatus(ProblemType::kAuthFailed, "Signature mismatch");
  }
  return {};
}

Status VerifySignature(PendingVerification const& pending, std::string_view secret_key) {
  auto key_date = KeyDateOf(pending.input);
  if (!key_date.ok()) return key_date.status();
  return VerifySignatureWithKey(
      pending, DeriveSigningKey(secret_key, *key_date, pending.input.host, pending.input.hash));
}

}  // namespace bai::protocol
