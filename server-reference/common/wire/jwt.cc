// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/jwt.h"

#include "libbai/util/json_parse.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <optional>

namespace bai::server {
namespace {

using nlohmann::json;

std::string Base64Url(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view in) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '-'             ? 62
            : c == '_'             ? 63
                                   : -1;
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return std::nullopt;  // a length no encoding produces
  return out;
}

std::string Hmac(std::string_view secret, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<unsigned char const*>(data.data()), data.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

Status Refused(std::string why) {
  return Status(StatusCode::kUnauthenticated, "invalid token: " + std::move(why));
}

}  // namespace

std::string SignJwt(json const& claims, std::string_view secret) {
  std::string signing = Base64Url(R"({"alg":"HS256","typ":"JWT"})") + "." +
                        Base64Url(claims.dump(-1, ' ', false, json::error_handler_t::replace));
  return signing + "." + Base64Url(Hmac(secret, signing));
}

StatusOr<json> VerifyJwt(std::string_view token, std::string_view secret, std::int64_t now) {
  if (token.size() > 8192) return Refused("too long");
  auto dot1 = token.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return Refused("not three parts");
  }
  auto header = FromBase64Url(token.substr(0, dot1));
  auto payload = FromBase64Url(token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto signature = FromBase64Url(token.substr(dot2 + 1));
  if (!header || !payload || !signature) return Refused("not Base64url");
  json h = internal::ParseJson(*header).value_or(json(json::value_t::discarded));
  // `value("alg", "")` would throw on a non-string alg: look before reading.
  auto alg = h.is_object() ? h.find("alg") : h.end();
  if (!h.is_object() || alg == h.end() || !alg->is_string() || *alg != "HS256") {
    return Refused("not HS256");
  }
  std::string expected = Hmac(secret, token.substr(0, dot2));
  if (signature->size() != expected.size() ||
      CRYPTO_memcmp(signature->data(), expected.data(), expected.size()) != 0) {
    return Refused("bad signature");
  }
  json claims = internal::ParseJson(*payload).value_or(json(json::value_t::discarded));
  if (!claims.is_object()) return Refused("claims are not an object");
  auto exp = claims.find("exp");
  if (exp == claims.end() || !exp->is_number()) return Refused("no expiry");
  if (exp->get<double>() <= static_cast<double>(now)) return Refused("expired");
  return claims;
}

}  // namespace bai::server
