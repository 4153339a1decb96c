// SPDX-License-Identifier: Apache-2.0
#pragma once
// Session mode (PROTOCOL.md §2.5), the pure part: the cookie, the CSRF rule, the headers every
// answer carries, what crosses to the manager and back, and the shapes of /server/login's
// request and answer. No I/O, no clock: the webserver (webserver.cc) is the shell around it.

#include "bai/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::webserver {

using Headers = std::vector<std::pair<std::string, std::string>>;

/// The login cookie's name: aiohttp-session's, as Backend.AI's webserver sets it.
inline constexpr std::string_view kSessionCookie = "AIOHTTP_SESSION";
/// The header the console sends its CSRF token in.
inline constexpr std::string_view kCsrfHeader = "x-bai-csrf-token";

/// The query parameter a page's EventSource and WebSocket requests carry the CSRF token in
/// (they cannot send headers); taken off before the request goes on to a manager.
inline constexpr std::string_view kCsrfQuery = "bai_csrf";

/// The value of cookie `name` in a Cookie header ("a=1; AIOHTTP_SESSION=x"); nullopt if absent.
std::optional<std::string> CookieValue(std::string_view cookie_header, std::string_view name);
/// Every value of cookie `name`, in order. Cookies ignore ports, so a page served on another
/// port of this host (a session's app) can set a second login cookie (another Path) or replace
/// the console's: the login is the one whose CSRF token the console's page proves (ChooseLogin).
std::vector<std::string> CookieValues(std::string_view cookie_header, std::string_view name);
/// The CSRF token of a request-target's query (`kCsrfQuery`), if any.
std::optional<std::string> QueryCsrfToken(std::string_view target);

/// Set-Cookie for a login: HttpOnly, SameSite=Strict, Path=/, Max-Age; Secure over TLS.
std::string LoginCookie(std::string_view token, std::int64_t max_age_seconds, bool secure);
/// Set-Cookie that removes the login cookie.
std::string ClearedLoginCookie(bool secure);

/// What a request says about where it came from, for the CSRF rule.
struct RequestOrigin {
  std::string method;                     ///< "POST"
  std::optional<std::string> origin;      ///< Origin header
  std::optional<std::string> fetch_site;  ///< Sec-Fetch-Site header
  std::optional<std::string> csrf_token;  ///< the kCsrfHeader header
  std::string own_origin;                 ///< "http://" + Host: this server as the browser sees it
  bool websocket = false;                 ///< a WebSocket upgrade (a GET that acts)
};

enum class CsrfVerdict {
  kAllowed,
  kCrossSite,     ///< another site's page sent it (Origin or Sec-Fetch-Site says so)
  kMissingToken,  ///< a browser's state-changing request without the token
  kWrongToken,    ///< with a token that is not this login's
};

/// The CSRF rule. A state-changing request (or an upgrade) that another site sent is refused.
/// Every request a browser sent (it carries Origin or Sec-Fetch-Site) must carry this login's
/// token, reads included: the console keeps it in its own origin's storage, which a page on
/// another port cannot read, so a login cookie tossed in by such a page (cookies ignore ports)
/// does not make the console act, or read, as somebody else. One with neither header comes
/// from a program, not a page (the official client, curl), which no other site can drive with
/// the user's cookie, and passes without a token.
CsrfVerdict CheckCsrf(RequestOrigin const& request, std::string_view session_token);

/// Whether two tokens are equal, in time that does not depend on where they differ.
bool SameToken(std::string_view a, std::string_view b);

/// Whether a request came from a page (Origin or Sec-Fetch-Site), not from a program.
bool FromAPage(RequestOrigin const& request);

/// The answer's text for a refusal (what to do next included).
std::string CsrfRefusal(CsrfVerdict verdict);

/// Headers every answer of the webserver carries: a strict Content-Security-Policy (scripts,
/// styles and connections from this origin only; no framing), nosniff, no referrer. The
/// console's page gets a `style_nonce`: style elements its scripts make carry it (xterm.js makes
/// some), while a style element injected into the markup cannot.
/// `connect_origins`: other origins the page may fetch from (storage proxies, for uploads that
/// skip the webserver); anything that is not a plain http(s) origin is left out.
Headers SecurityHeaders(bool tls, std::string_view style_nonce = {},
                        std::vector<std::string> const& connect_origins = {});

/// The manager's request-target for a /func target: "/func/session?x=1" → "/session?x=1",
/// "/func" and "/func/" → "/", the `kCsrfQuery` parameter left out. nullopt when `target` is not
/// under /func.
std::optional<std::string> UpstreamTarget(std::string_view target);

/// The client's headers that go on to the manager (names lowercased): Content-Type, Accept, the
/// API version and the other X-BackendAI-* headers, tus headers; never the cookie, the client's
/// own Authorization, Date or Host (the webserver signs anew).
Headers ForwardedRequestHeaders(Headers const& client_headers);
/// The manager's headers that go back to the client: none of the hop-by-hop ones, no
/// Content-Length or Content-Type (the answer sets its own), no Set-Cookie.
Headers ForwardedResponseHeaders(Headers const& upstream_headers);

/// A parsed POST /server/login body: `username` and `password` required; every other key (otp,
/// …) goes on to the manager's /auth/authorize.
struct LoginRequest {
  std::string username;
  std::string password;
  std::string domain;  ///< "" when the sign-in names none (ChooseDomain decides)
  nlohmann::json extra = nlohmann::json::object();
};
/// 400 invalid-api-params naming what is missing or malformed.
StatusOr<LoginRequest> ParseLoginRequest(std::string_view body);

/// The domain a sign-in is for: the one it names; else the only domain with a user of that
/// name (`user_domains`); else the webserver's own `fallback`.
std::string ChooseDomain(LoginRequest const& login, std::vector<std::string> const& user_domains,
                         std::string const& fallback);

/// The body for the manager's POST /auth/authorize.
std::string AuthorizeBody(LoginRequest const& login, std::string_view domain);

/// What a login session knows of its user (the manager's /auth/authorize answer).
struct LoginIdentity {
  std::string access_key;
  std::string role;    ///< "superadmin", "admin", "user"
  std::string status;  ///< "active", …
};
/// The `data` object of login and login-check answers; the console's CSRF token rides along
/// (the official client ignores extra keys).
nlohmann::json LoginData(LoginIdentity const& who, std::string_view csrf_token);
/// The answer to a refused login, as 24.09's webserver gives it: 200
/// {"authenticated": false, "data": {"type", "title", "details"}} built from the manager's
/// problem+json (or `fallback_details` when the body is not one).
nlohmann::json FailedLoginAnswer(std::string_view manager_body, std::string_view fallback_details);

/// Decrypts a body sent with `X-BackendAI-Encoded: true` (PROTOCOL.md §2.5): "IV:BASE64"
/// under AES-256-CBC with key = the first 32 bytes of Base64(endpoint) ‖ IV ‖ IV, where
/// `endpoint` is "<scheme>://<Host header>". 400 for anything malformed.
StatusOr<std::string> DecryptPayload(std::string_view body, std::string_view endpoint);

}  // namespace bai::webserver
