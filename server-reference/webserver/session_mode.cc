// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/session_mode.h"

#include "bai/protocol/errors.h"

#include "libbai/util/base64.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>

namespace bai::webserver {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool SafeMethod(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

Status BadRequest(std::string detail) {
  return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams, std::move(detail));
}

}  // namespace

std::vector<std::string> CookieValues(std::string_view header, std::string_view name) {
  std::vector<std::string> out;
  while (!header.empty()) {
    auto semi = header.find(';');
    auto pair = Trim(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    if (Trim(pair.substr(0, eq)) != name) continue;
    auto value = Trim(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    out.emplace_back(value);
  }
  return out;
}

std::optional<std::string> CookieValue(std::string_view header, std::string_view name) {
  auto all = CookieValues(header, name);
  if (all.empty()) return std::nullopt;
  return all.front();
}

namespace {

// The query of a target, split into its parameters ("a=1&b=2").
std::vector<std::string_view> QueryParts(std::string_view target) {
  std::vector<std::string_view> parts;
  auto q = target.find('?');
  if (q == std::string_view::npos) return parts;
  auto rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    parts.push_back(rest.substr(0, amp));
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
  }
  return parts;
}

bool IsCsrfParameter(std::string_view part) {
  return part.substr(0, kCsrfQuery.size()) == kCsrfQuery &&
         (part.size() == kCsrfQuery.size() || part[kCsrfQuery.size()] == '=');
}

}  // namespace

std::optional<std::string> QueryCsrfToken(std::string_view target) {
  for (auto part : QueryParts(target)) {
    if (IsCsrfParameter(part)) {
      return std::string(part.size() > kCsrfQuery.size() ? part.substr(kCsrfQuery.size() + 1)
                                                         : std::string_view());
    }
  }
  return std::nullopt;
}

std::string LoginCookie(std::string_view token, std::int64_t max_age_seconds, bool secure) {
  std::string c = std::string(kSessionCookie) + "=" + std::string(token) +
                  "; Path=/; Max-Age=" + std::to_string(max_age_seconds) +
                  "; HttpOnly; SameSite=Strict";
  if (secure) c += "; Secure";
  return c;
}

std::string ClearedLoginCookie(bool secure) {
  std::string c = std::string(kSessionCookie) +
                  "=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; "
                  "SameSite=Strict";
  if (secure) c += "; Secure";
  return c;
}

bool SameToken(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool FromAPage(RequestOrigin const& r) { return r.origin.has_value() || r.fetch_site.has_value(); }

CsrfVerdict CheckCsrf(RequestOrigin const& r, std::string_view session_token) {
  bool acts = r.websocket || !SafeMethod(r.method);
  if (acts && r.fetch_site) {
    auto site = Lower(Trim(*r.fetch_site));
    // "none": typed into the address bar or a bookmark, which no other site can cause.
    if (site != "same-origin" && site != "none") return CsrfVerdict::kCrossSite;
  }
  if (acts && r.origin && Lower(Trim(*r.origin)) != Lower(r.own_origin)) {
    return CsrfVerdict::kCrossSite;
  }
  if (!FromAPage(r)) return CsrfVerdict::kAllowed;
  // Reads too, and WebSockets and event streams (their token rides in the query): a page that
  // cannot show this login's token is not the console this login signed in.
  if (!r.csrf_token || r.csrf_token->empty()) return CsrfVerdict::kMissingToken;
  if (session_token.empty() || !SameToken(*r.csrf_token, session_token)) {
    return CsrfVerdict::kWrongToken;
  }
  return CsrfVerdict::kAllowed;
}

std::string CsrfRefusal(CsrfVerdict verdict) {
  switch (verdict) {
    case CsrfVerdict::kAllowed:
      return {};
    case CsrfVerdict::kCrossSite:
      return "Refused: this request came from another site. Use the console itself.";
    case CsrfVerdict::kMissingToken:
      return "Refused: the request has no CSRF token (header X-BAI-CSRF-Token). Reload the "
             "console and try again.";
    case CsrfVerdict::kWrongToken:
      return "Refused: the CSRF token is not this login's. Reload the console and try again.";
  }
  return {};
}

Headers SecurityHeaders(bool tls, std::string_view style_nonce,
                        std::vector<std::string> const& connect_origins) {
  std::string style = "style-src 'self'";
  if (!style_nonce.empty()) style += " 'nonce-" + std::string(style_nonce) + "'";
  std::string connect = "connect-src 'self'";
  for (auto const& o : connect_origins) {
    bool plain = (o.rfind("http://", 0) == 0 || o.rfind("https://", 0) == 0) &&
                 o.find_first_not_of(
                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                     ".-:/[]") == std::string::npos &&
                 o.find('/', o.find("//") + 2) == std::string::npos;
    if (plain) connect += " " + o;
  }
  Headers h = {
      {"Content-Security-Policy",
       "default-src 'self'; script-src 'self'; " + style + "; img-src 'self' data: blob:; " +
           connect +
           "; font-src 'self'; "
           "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cross-Origin-Opener-Policy", "same-origin"},
  };
  if (tls) h.emplace_back("Strict-Transport-Security", "max-age=31536000");
  return h;
}

std::optional<std::string> UpstreamTarget(std::string_view target) {
  constexpr std::string_view kFunc = "/func";
  if (target.substr(0, kFunc.size()) != kFunc) return std::nullopt;
  auto rest = target.substr(kFunc.size());
  std::string out;
  if (rest.empty() || rest.front() == '?') {
    out = "/" + std::string(rest);
  } else if (rest.front() != '/') {
    return std::nullopt;  // "/function" is not under /func
  } else {
    out = std::string(rest);
  }
  auto q = out.find('?');
  if (q == std::string::npos) return out;
  std::string query;
  for (auto part : QueryParts(out)) {
    if (IsCsrfParameter(part)) continue;
    query += (query.empty() ? "" : "&") + std::string(part);
  }
  out.resize(q);
  if (!query.empty()) out += "?" + query;
  return out;
}

Headers ForwardedRequestHeaders(Headers const& client) {
  Headers out;
  for (auto const& [name, value] : client) {
    auto n = Lower(name);
    bool pass = n == "content-type" || n == "accept" || n == "accept-language" || n == "range" ||
                n == "if-none-match" || n == "if-modified-since" || n == "tus-resumable" ||
                n == "upload-offset" || n == "upload-length" || n == "upload-metadata" ||
                n == "upload-checksum" || n == "upload-concat" || n == "upload-defer-length" ||
                n == "content-disposition";
    if (n.rfind("x-backendai-", 0) == 0) {
      pass = n != "x-backendai-date" && n != "x-backendai-token";
    }
    if (pass) out.emplace_back(n, value);
  }
  return out;
}

Headers ForwardedResponseHeaders(Headers const& upstream) {
  static constexpr std::array<std::string_view, 12> kDropped = {
      "connection", "keep-alive",     "proxy-authenticate", "proxy-authorization",
      "te",         "trailer",        "transfer-encoding",  "upgrade",
      "set-cookie", "content-length", "content-type",       "server"};
  Headers out;
  for (auto const& [name, value] : upstream) {
    auto n = Lower(name);
    if (std::find(kDropped.begin(), kDropped.end(), n) != kDropped.end()) continue;
    // The manager's own security headers would repeat ours.
    if (n == "content-security-policy" || n == "x-frame-options" || n == "x-content-type-options" ||
        n == "referrer-policy") {
      continue;
    }
    out.emplace_back(n, value);
  }
  return out;
}

StatusOr<LoginRequest> ParseLoginRequest(std::string_view body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return BadRequest("The login request must be a JSON object with username and password.");
  }
  LoginRequest login;
  for (auto const& [key, value] : json.items()) {
    if (key == "username" || key == "password") {
      if (!value.is_string() || value.get_ref<std::string const&>().empty()) {
        return BadRequest("'" + key + "' must be a non-empty string.");
      }
      (key == "username" ? login.username : login.password) = value.get<std::string>();
    } else if (key == "domain") {
      if (value.is_string()) login.domain = value.get<std::string>();
    } else if (key == "type") {
      continue;  // the webserver chooses it
    } else {
      login.extra[key] = value;
    }
  }
  if (login.username.empty()) return BadRequest("'username' is missing.");
  if (login.password.empty()) return BadRequest("'password' is missing.");
  return login;
}

std::string ChooseDomain(LoginRequest const& login, std::vector<std::string> const& user_domains,
                         std::string const& fallback) {
  if (!login.domain.empty()) return login.domain;
  if (user_domains.size() == 1) return user_domains.front();
  return fallback;
}

std::string AuthorizeBody(LoginRequest const& login, std::string_view domain) {
  nlohmann::json body = login.extra;
  body["type"] = "keypair";
  body["domain"] = std::string(domain);
  body["username"] = login.username;
  body["password"] = login.password;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json LoginData(LoginIdentity const& who, std::string_view csrf_token) {
  return {{"access_key", who.access_key},
          {"role", who.role},
          {"status", who.status},
          {"csrf_token", std::string(csrf_token)}};
}

nlohmann::json FailedLoginAnswer(std::string_view manager_body, std::string_view fallback_details) {
  std::string type = "https://api.backend.ai/probs/auth-failed";
  std::string title = "Authorization failed.";
  std::string details(fallback_details);
  auto problem = nlohmann::json::parse(manager_body, nullptr, false);
  if (problem.is_object()) {
    if (problem.contains("type") && problem["type"].is_string()) type = problem["type"];
    if (problem.contains("title") && problem["title"].is_string()) title = problem["title"];
    for (auto const* key : {"msg", "detail", "details"}) {
      if (problem.contains(key) && problem[key].is_string()) {
        details = problem[key].get<std::string>();
        break;
      }
    }
  }
  return {{"authenticated", false},
          {"data", {{"type", type}, {"title", title}, {"details", details}}}};
}

StatusOr<std::string> DecryptPayload(std::string_view body, std::string_view endpoint) {
  auto colon = body.find(':');
  if (colon != 16) return BadRequest("An encoded body is IV:BASE64 with a 16-character IV.");
  auto iv = body.substr(0, 16);
  auto cipher = internal::Base64Decode(Trim(body.substr(17)));
  if (!cipher || cipher->empty() || cipher->size() % 16 != 0) {
    return BadRequest("The encoded body is not Base64 of whole AES blocks.");
  }
  std::string key_material = internal::Base64Encode(endpoint) + std::string(iv) + std::string(iv);
  if (key_material.size() < 32) return BadRequest("The endpoint is too short to derive a key.");
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(),
                                                                      EVP_CIPHER_CTX_free);
  auto const* key = reinterpret_cast<unsigned char const*>(key_material.data());
  auto const* ivp = reinterpret_cast<unsigned char const*>(iv.data());
  std::string plain(cipher->size() + 16, '\0');
  int n1 = 0, n2 = 0;
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_cbc(), nullptr, key, ivp) != 1 ||
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &n1,
                        reinterpret_cast<unsigned char const*>(cipher->data()),
                        static_cast<int>(cipher->size())) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()) + n1, &n2) !=
          1) {
    return BadRequest(
        "The encoded body does not decrypt for this endpoint (is the client's "
        "endpoint this server's address?).");
  }
  plain.resize(static_cast<std::size_t>(n1 + n2));
  return plain;
}

}  // namespace bai::webserver
