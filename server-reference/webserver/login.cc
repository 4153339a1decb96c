// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/webserver_impl.h"

namespace bai::webserver {

RequestOrigin WebServer::Impl::OriginOf(HttpRequest const& req, bool websocket) const {
  RequestOrigin o;
  o.method = req.method;
  if (auto v = req.Header("origin")) o.origin = std::string(*v);
  if (auto v = req.Header("sec-fetch-site")) o.fetch_site = std::string(*v);
  if (auto v = req.Header(kCsrfHeader)) {
    o.csrf_token = std::string(*v);
  } else {
    o.csrf_token = QueryCsrfToken(req.target);
  }
  o.own_origin = OwnOrigin(req);
  o.websocket = websocket;
  return o;
}

StatusOr<WebServer::Impl::ChosenLogin> WebServer::Impl::ChooseLogin(
    std::shared_ptr<Exchange> const& ex) {
  return ChooseLogin(ex->request(), ex->IsWebSocketUpgrade());
}

StatusOr<WebServer::Impl::ChosenLogin> WebServer::Impl::ChooseLogin(HttpRequest const& req,
                                                                    bool websocket) {
  auto header = req.Header("cookie");
  auto values = header ? CookieValues(*header, kSessionCookie) : std::vector<std::string>{};
  auto origin = OriginOf(req, websocket);
  bool page = FromAPage(origin);
  if (!page && values.size() > 1) {
    return protocol::MakeProblemStatus(ps::ProblemType::kInvalidApiParams,
                                       "The request carries " + std::to_string(values.size()) +
                                           " login cookies; send only the one this webserver set.");
  }
  ChosenLogin first;
  auto now = NowSeconds();
  for (auto const& value : values) {
    auto live = logins.Find(value, now);
    if (!live.ok()) return live.status();
    if (!*live) continue;
    bool proven = page && origin.csrf_token && !origin.csrf_token->empty() &&
                  SameToken(*origin.csrf_token, (*live)->csrf_token);
    if (proven) return ChosenLogin{value, std::move(*live), true};
    if (!first.session) first = ChosenLogin{value, std::move(*live), false};
  }
  if (!first.session && !values.empty()) first.token = values.front();
  return first;
}

// ---- /server/* ----------------------------------------------------------------------------

void WebServer::Impl::Login(std::shared_ptr<Exchange> const& ex) {
  auto const& req = ex->request();
  // Another site's page must not sign the browser in either (to an account of its choosing).
  if (Verdict(ex, "") == CsrfVerdict::kCrossSite) {
    return Answer(
        ex, Problem(ps::ProblemType::kGenericForbidden, CsrfRefusal(CsrfVerdict::kCrossSite)));
  }
  std::string body = req.body;
  if (auto enc = req.Header("x-backendai-encoded"); enc && *enc == "true") {
    auto plain = DecryptPayload(body, OwnOrigin(req));
    if (!plain.ok()) return Answer(ex, server::ProblemResponse(plain.status()));
    body = *std::move(plain);
  }
  auto login = ParseLoginRequest(body);
  if (!login.ok()) return Answer(ex, server::ProblemResponse(login.status()));
  auto now = NowSeconds();
  // Signed in already, as 24.09 answers; a page only when it shows that login's token (a
  // cookie another port's page tossed in must not keep the user from signing in).
  if (auto chosen = ChooseLogin(ex);
      chosen.ok() && chosen->session && (chosen->proven || !FromAPage(OriginOf(req, false)))) {
    return Answer(ex, Problem(ps::ProblemType::kGenericBadRequest,
                              "You have already logged in. Sign out first."));
  }
  // The domain it names (the console's field), else the user's own when only one domain has
  // that user, else this webserver's: a user of another domain signs in too.
  auto domains = logins.DomainsOf(login->username);
  std::string domain =
      ChooseDomain(*login, domains.ok() ? *domains : std::vector<std::string>{}, options.domain);
  std::string account = domain + "\n" + login->username;
  {
    std::lock_guard<std::mutex> lock(throttle_mu);
    auto d = throttle.Admit(req.peer_address, account, Clock::now());
    if (!d.allowed) {
      auto r = Problem(ps::ProblemType::kRateLimitExceeded,
                       "Too many sign-in attempts; try again in " +
                           std::to_string(d.retry_after_seconds) + " seconds.");
      r.status = 429;
      r.headers.emplace_back("Retry-After", std::to_string(d.retry_after_seconds));
      return Answer(ex, std::move(r));
    }
  }
  auto answer = ToManagers([&](internal::Endpoint const& m) {
    Headers h = {{"content-type", "application/json"}, {"x-forwarded-for", req.peer_address}};
    return transport->Send(Upstream(m, "POST", "/auth/authorize", std::move(h),
                                    AuthorizeBody(*login, domain), VersionOf(req), nullptr));
  });
  if (!answer.ok()) {
    auto r = Problem(ps::ProblemType::kServiceUnavailable,
                     "No manager answers (" + answer.status().message() + "); try again later.");
    r.status = 502;
    return Answer(ex, std::move(r));
  }
  if (answer->status == 429) {
    HttpResponse r;
    r.status = 429;
    r.content_type = answer->Header("content-type").value_or("application/problem+json");
    r.body = answer->body;
    r.headers = ForwardedResponseHeaders(answer->headers);
    return Answer(ex, std::move(r));
  }
  if (answer->status != 200) {
    if (answer->status == 401) {
      std::lock_guard<std::mutex> lock(throttle_mu);
      throttle.Failed(req.peer_address, account, Clock::now());
    }
    if (answer->status >= 500) {
      auto r = Problem(ps::ProblemType::kServiceUnavailable,
                       "The manager failed to sign you in (HTTP " + std::to_string(answer->status) +
                           "); try again later.");
      r.status = 502;
      return Answer(ex, std::move(r));
    }
    return Answer(
        ex, JsonAnswer(200, FailedLoginAnswer(answer->body, "The email or password is wrong.")));
  }
  auto data = nlohmann::json::parse(answer->body, nullptr, false);
  if (data.is_object() && data.contains("data")) data = data["data"];
  if (!data.is_object() || !data.value("access_key", nlohmann::json()).is_string() ||
      !data.value("secret_key", nlohmann::json()).is_string()) {
    auto r = Problem(ps::ProblemType::kInternalServerError,
                     "The manager's sign-in answer has no keypair.");
    r.status = 502;
    return Answer(ex, std::move(r));
  }
  {
    std::lock_guard<std::mutex> lock(throttle_mu);
    throttle.Succeeded(req.peer_address, account);
  }
  (void)logins.Purge(now);  // the ended logins go as new ones come (an indexed delete)
  LoginIdentity who{data["access_key"].get<std::string>(), data.value("role", "user"),
                    data.value("status", "active")};
  auto created = logins.Create(who, login->username, req.peer_address, options.login_max_age, now);
  if (!created.ok()) return Answer(ex, server::ProblemResponse(created.status()));
  auto r =
      JsonAnswer(200, {{"authenticated", true}, {"data", LoginData(who, created->csrf_token)}});
  r.headers.emplace_back("Set-Cookie", LoginCookie(created->token, options.login_max_age, Tls()));
  r.headers.emplace_back("Cache-Control", "no-store");
  server::log::Info("signed in", {{"user", login->username}, {"peer", req.peer_address}});
  Answer(ex, std::move(r));
}

std::optional<LoginSession> WebServer::Impl::RequireLogin(std::shared_ptr<Exchange> const& ex,
                                                          std::string* token) {
  auto live = ChooseLogin(ex);
  if (!live.ok()) {
    Answer(ex, server::ProblemResponse(live.status()));
    return std::nullopt;
  }
  if (token) *token = live->token;
  if (!live->session) {
    auto r = Problem(ps::ProblemType::kAuthFailed,
                     "Sign in first (POST /server/login, or the console's sign-in page); a "
                     "login ends after a week or when you sign out.");
    Answer(ex, std::move(r));
    return std::nullopt;
  }
  return std::move(*live->session);
}

CsrfVerdict WebServer::Impl::Verdict(std::shared_ptr<Exchange> const& ex,
                                     std::string_view session_token) {
  return CheckCsrf(OriginOf(ex->request(), ex->IsWebSocketUpgrade()), session_token);
}

bool WebServer::Impl::PassesCsrf(std::shared_ptr<Exchange> const& ex, LoginSession const& s) {
  auto const& req = ex->request();
  auto verdict = Verdict(ex, s.csrf_token);
  if (verdict == CsrfVerdict::kAllowed) return true;
  server::log::Warn("refused a request without a valid CSRF token",
                    {{"path", req.path}, {"peer", req.peer_address}});
  Answer(ex, Problem(ps::ProblemType::kGenericForbidden, CsrfRefusal(verdict)));
  return false;
}

void WebServer::Impl::Logout(std::shared_ptr<Exchange> const& ex) {
  auto chosen = ChooseLogin(ex);
  if (!chosen.ok()) return Answer(ex, server::ProblemResponse(chosen.status()));
  std::string token = chosen->token;
  if (chosen->session && !PassesCsrf(ex, *chosen->session)) return;
  if (!token.empty()) {
    if (auto s = logins.End(token); !s.ok()) return Answer(ex, server::ProblemResponse(s));
    if (apps) apps->EndLogin(token);
  }
  auto r = JsonAnswer(200, nlohmann::json::object());
  r.headers.emplace_back("Set-Cookie", ClearedLoginCookie(Tls()));
  Answer(ex, std::move(r));
}

void WebServer::Impl::LoginCheck(std::shared_ptr<Exchange> const& ex) {
  auto chosen = ChooseLogin(ex);
  if (!chosen.ok()) return Answer(ex, server::ProblemResponse(chosen.status()));
  bool page = FromAPage(OriginOf(ex->request(), false));
  bool signed_in = chosen->session && (chosen->proven || !page);
  nlohmann::json body = {{"authenticated", signed_in}, {"data", nullptr}, {"session_id", nullptr}};
  if (signed_in) {
    auto const& live = *chosen->session;
    body["data"] = LoginData(live.identity, live.csrf_token);
    body["data"]["username"] = live.username;
    body["data"]["expires"] = ps::FormatRfc3339Seconds(live.expires_at);
    body["session_id"] = LoginSessions::Hash(chosen->token).substr(0, 16);
  }
  auto r = JsonAnswer(200, body);
  r.headers.emplace_back("Cache-Control", "no-store");
  Answer(ex, std::move(r));
}

void WebServer::Impl::ExtendLogin(std::shared_ptr<Exchange> const& ex) {
  std::string token;
  auto s = RequireLogin(ex, &token);
  if (!s || !PassesCsrf(ex, *s)) return;
  auto until = logins.Extend(token, options.login_max_age, NowSeconds());
  if (!until.ok()) return Answer(ex, server::ProblemResponse(until.status()));
  auto r =
      JsonAnswer(201, {{"status", 201}, {"expires", ps::FormatRfc3339Seconds(until->value_or(0))}});
  r.headers.emplace_back("Set-Cookie", LoginCookie(token, options.login_max_age, Tls()));
  Answer(ex, std::move(r));
}

void WebServer::Impl::UpdatePasswordNoAuth(std::shared_ptr<Exchange> const& ex) {
  auto const& req = ex->request();
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (!body.is_object()) {
    return Answer(ex, Problem(ps::ProblemType::kInvalidApiParams, "The body must be JSON."));
  }
  body["domain"] = options.domain;
  auto answer = ToManagers([&](internal::Endpoint const& m) {
    return transport->Send(
        Upstream(m, "POST", "/auth/update-password-no-auth",
                 {{"content-type", "application/json"}, {"x-forwarded-for", req.peer_address}},
                 body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                 VersionOf(req), nullptr));
  });
  RelayAnswer(ex, answer);
}

}  // namespace bai::webserver
