// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/webserver.h"

#include "bai/protocol/api_version.h"
#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"
#include "bai/transport.h"

#include "libbai/internal/curl_transport.h"
#include "libbai/internal/lws_websocket.h"
#include "libbai/util/url.h"
#include "server-reference/common/exec/thread_group.h"
#include "server-reference/common/exec/work_pool.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/common/log/log.h"
#include "server-reference/webserver/app_ports.h"
#include "server-reference/webserver/app_proxy.h"
#include "server-reference/webserver/login_sessions.h"
#include "server-reference/webserver/session_mode.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace bai::webserver {
namespace {

using server::Exchange;
using server::HttpRequest;
using server::HttpResponse;
using Clock = std::chrono::system_clock;
namespace ps = protocol;

std::int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
}

HttpResponse Problem(ps::ProblemType type, std::string detail) {
  return server::ProblemResponse(ps::MakeProblemStatus(type, std::move(detail)));
}

HttpResponse JsonAnswer(int status, nlohmann::json const& body) {
  return HttpResponse::Json(status,
                            body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string ContentTypeOf(std::string const& path) {
  auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext == "html") return "text/html; charset=utf-8";
  if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "json" || ext == "map") return "application/json";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "ico") return "image/x-icon";
  if (ext == "woff2") return "font/woff2";
  if (ext == "txt") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

// The page served when the console has not been built.
constexpr char kNotBuiltPage[] =
    "<!doctype html><meta charset=utf-8><title>bai console</title>"
    "<p>The console is not built. Run <code>make build</code> (it builds the console with npm) "
    "and restart bai-webserver with <code>--static-dir build/console</code>.</p>";

}  // namespace

struct WebServer::Impl : std::enable_shared_from_this<WebServer::Impl> {
  Impl(WebServerOptions o, server::Database& db)
      : options(std::move(o)),
        logins(db),
        transport(internal::MakeCurlTransport({.connect_timeout = std::chrono::seconds(5),
                                               .read_timeout = std::chrono::seconds(0),
                                               .verify_tls = true,
                                               .ca_bundle = {},
                                               .user_agent = "bai-webserver"})),
        throttle(options.login_limits),
        pool(options.forward_threads, 1024) {}

  WebServerOptions options;
  LoginSessions logins;
  std::vector<internal::Endpoint> managers;
  std::atomic<std::size_t> next_manager{0};
  std::unique_ptr<Transport> transport;
  std::mutex throttle_mu;
  server::LoginThrottle throttle;  // under throttle_mu
  std::unique_ptr<server::HttpServer> http;
  std::unique_ptr<AppPorts> apps;  // null: no app launcher
  // Storage proxies' transfer URLs seen in the manager's tickets, by key (storage_relay).
  std::mutex storage_mu;
  std::map<std::string, std::string> storage_urls;  // under storage_mu

  // Event streams and WebSockets run on threads of their own; Stop() ends and waits for them.
  server::ThreadGroup stream_threads;  // closed when stopping
  std::mutex streams_mu;
  std::set<std::shared_ptr<StreamCancel>> cancels;  // under streams_mu
  std::set<WebSocketConnection*> upstream_sockets;  // under streams_mu

  server::WorkPool pool;  // last: its destructor waits for work that uses the members above

  bool Tls() const { return options.secure_cookies; }

  void Answer(std::shared_ptr<Exchange> const& ex, HttpResponse r, std::string_view nonce = {},
              std::vector<std::string> const& connect_origins = {}) {
    for (auto& h : SecurityHeaders(Tls(), nonce, connect_origins))
      r.headers.push_back(std::move(h));
    ex->Respond(std::move(r));
  }

  std::string OwnOrigin(HttpRequest const& req) const {
    auto host = req.Header("host");
    return std::string(Tls() ? "https://" : "http://") + std::string(host ? *host : "");
  }

  // The request as the CSRF rule sees it; the token from the header or, for the event streams
  // and WebSockets a page cannot add headers to, the query.
  RequestOrigin OriginOf(HttpRequest const& req, bool websocket) const {
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

  // The request's login and its cookie's value. Cookies ignore ports, so a page on another port
  // of this host (a session's app) can replace the console's login cookie or add one of its own
  // (another Path): a page's request is the login whose CSRF token it shows, when one of its
  // cookies has it (else the first live one, which the CSRF rule then refuses); a program's
  // request (no Origin, no Sec-Fetch-Site) must bring exactly one.
  struct ChosenLogin {
    std::string token;
    std::optional<LoginSession> session;
    bool proven = false;  ///< a page showed this login's token
  };
  StatusOr<ChosenLogin> ChooseLogin(std::shared_ptr<Exchange> const& ex) {
    return ChooseLogin(ex->request(), ex->IsWebSocketUpgrade());
  }
  StatusOr<ChosenLogin> ChooseLogin(HttpRequest const& req, bool websocket) {
    auto header = req.Header("cookie");
    auto values = header ? CookieValues(*header, kSessionCookie) : std::vector<std::string>{};
    auto origin = OriginOf(req, websocket);
    bool page = FromAPage(origin);
    if (!page && values.size() > 1) {
      return protocol::MakeProblemStatus(
          ps::ProblemType::kInvalidApiParams,
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

  // ---- the request's way in -------------------------------------------------------------

  void Handle(std::shared_ptr<Exchange> ex) {
    auto const& req = ex->request();
    if (req.path == "/func" || req.path.rfind("/func/", 0) == 0) return Forward(std::move(ex));
    if (req.path.rfind("/server/", 0) == 0) return ServerRoute(std::move(ex));
    if (req.path.rfind("/storage/", 0) == 0) {
      // The relay is the console's: only for a signed-in user (issue 43, 5e: 300 slow
      // unauthenticated PATCHes held 332 descriptors); the ticket's token still decides at the
      // storage proxy.
      if (!RequireLogin(ex)) return;
      return Submit(ex, [this, ex] { StorageRelay(ex); });
    }
    if (req.method != "GET" && req.method != "HEAD") {
      return Answer(ex, Problem(ps::ProblemType::kMethodNotAllowed, "Only GET reads the console."));
    }
    StaticFile(ex);
  }

  void ServerRoute(std::shared_ptr<Exchange> ex) {
    auto const& req = ex->request();
    if (req.method != "POST") {
      return Answer(ex, Problem(ps::ProblemType::kMethodNotAllowed, req.path + " takes POST."));
    }
    if (req.path == "/server/login") return Submit(ex, [this, ex] { Login(ex); });
    if (req.path == "/server/logout") return Submit(ex, [this, ex] { Logout(ex); });
    if (req.path == "/server/login-check") return Submit(ex, [this, ex] { LoginCheck(ex); });
    if (req.path == "/server/extend-login-session") {
      return Submit(ex, [this, ex] { ExtendLogin(ex); });
    }
    if (req.path == "/server/update-password-no-auth") {
      return Submit(ex, [this, ex] { UpdatePasswordNoAuth(ex); });
    }
    if (req.path == "/server/apps") return Submit(ex, [this, ex] { OpenApp(ex); });
    Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such route: " + req.path));
  }

  // Database and manager calls block: they run on the pool, never on an I/O thread.
  void Submit(std::shared_ptr<Exchange> const& ex, std::function<void()> work) {
    if (!pool.TrySubmit(std::move(work))) {
      Answer(ex, Problem(ps::ProblemType::kServiceUnavailable,
                         "The webserver is busy; retry in a moment."));
    }
  }

  // ---- the manager --------------------------------------------------------------------------

  // Sends `r` (target relative to the manager's base path) to a manager, the next one when a
  // manager cannot be reached. Signed with `keys` when given.
  struct Keys {
    std::string access_key, secret_key;
  };
  TransportRequest Upstream(internal::Endpoint const& m, std::string const& method,
                            std::string const& target, Headers headers, std::string body,
                            std::string const& api_version, Keys const* keys) const {
    TransportRequest t;
    t.method = method;
    t.origin = m.origin;
    t.host = m.host;
    t.target = m.base_path + target;
    t.body = std::move(body);
    t.api_version = api_version;
    t.sign = false;  // signed here, with the login's keys
    bool has_version = false;
    for (auto const& [name, value] : headers) has_version |= name == "x-backendai-version";
    if (!has_version) headers.emplace_back("x-backendai-version", api_version);
    if (keys) {
      std::string date = ps::FormatRequestDate(Clock::now());
      std::optional<std::string> content_type;
      for (auto const& [name, value] : headers) {
        if (name == "content-type") content_type = value;
      }
      ps::SigningInput in;
      in.method = method;
      in.request_target = t.target;
      in.date = date;
      in.host = m.host;
      in.content_type = content_type;
      in.api_version = api_version;
      auto sig = ps::Sign(in, keys->secret_key);
      if (sig.ok()) {
        headers.emplace_back("date", date);
        headers.emplace_back("authorization",
                             ps::AuthorizationHeaderValue(keys->access_key, *sig, in.hash));
      }
    }
    t.headers = std::move(headers);
    return t;
  }

  template <typename Send>
  StatusOr<ApiResponse> ToManagers(Send&& send) {
    Status last(StatusCode::kUnavailable, "no manager configured");
    std::size_t n = managers.size();
    std::size_t first = next_manager.load() % std::max<std::size_t>(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t at = (first + i) % n;
      auto r = send(managers[at]);
      if (r.ok() || !internal::IsConnectFailure(r.status())) {
        next_manager.store(at);
        return r;
      }
      last = r.status();
    }
    return last;
  }

  static std::string VersionOf(HttpRequest const& req) {
    auto v = req.Header("x-backendai-version");
    if (v && ps::IsAcceptedApiVersion(*v)) return std::string(*v);
    return ps::kCurrentApiVersion.ToString();
  }

  // ---- /server/* ----------------------------------------------------------------------------

  void Login(std::shared_ptr<Exchange> const& ex) {
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
                         "The manager failed to sign you in (HTTP " +
                             std::to_string(answer->status) + "); try again later.");
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
    auto created =
        logins.Create(who, login->username, req.peer_address, options.login_max_age, now);
    if (!created.ok()) return Answer(ex, server::ProblemResponse(created.status()));
    auto r =
        JsonAnswer(200, {{"authenticated", true}, {"data", LoginData(who, created->csrf_token)}});
    r.headers.emplace_back("Set-Cookie", LoginCookie(created->token, options.login_max_age, Tls()));
    r.headers.emplace_back("Cache-Control", "no-store");
    server::log::Info("signed in", {{"user", login->username}, {"peer", req.peer_address}});
    Answer(ex, std::move(r));
  }

  // The request's login (ChooseLogin), or an answer already given; `token`: its cookie's value.
  std::optional<LoginSession> RequireLogin(std::shared_ptr<Exchange> const& ex,
                                           std::string* token = nullptr) {
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

  CsrfVerdict Verdict(std::shared_ptr<Exchange> const& ex, std::string_view session_token) {
    return CheckCsrf(OriginOf(ex->request(), ex->IsWebSocketUpgrade()), session_token);
  }

  bool PassesCsrf(std::shared_ptr<Exchange> const& ex, LoginSession const& s) {
    auto const& req = ex->request();
    auto verdict = Verdict(ex, s.csrf_token);
    if (verdict == CsrfVerdict::kAllowed) return true;
    server::log::Warn("refused a request without a valid CSRF token",
                      {{"path", req.path}, {"peer", req.peer_address}});
    Answer(ex, Problem(ps::ProblemType::kGenericForbidden, CsrfRefusal(verdict)));
    return false;
  }

  void Logout(std::shared_ptr<Exchange> const& ex) {
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

  // A page is signed in only when it shows its login's token (which it keeps in its own
  // origin's storage): a cookie tossed in by another port's page is nobody's login here, and its
  // token is never handed out to a page that cannot show it.
  void LoginCheck(std::shared_ptr<Exchange> const& ex) {
    auto chosen = ChooseLogin(ex);
    if (!chosen.ok()) return Answer(ex, server::ProblemResponse(chosen.status()));
    bool page = FromAPage(OriginOf(ex->request(), false));
    bool signed_in = chosen->session && (chosen->proven || !page);
    nlohmann::json body = {
        {"authenticated", signed_in}, {"data", nullptr}, {"session_id", nullptr}};
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

  void ExtendLogin(std::shared_ptr<Exchange> const& ex) {
    std::string token;
    auto s = RequireLogin(ex, &token);
    if (!s || !PassesCsrf(ex, *s)) return;
    auto until = logins.Extend(token, options.login_max_age, NowSeconds());
    if (!until.ok()) return Answer(ex, server::ProblemResponse(until.status()));
    auto r = JsonAnswer(
        201, {{"status", 201}, {"expires", ps::FormatRfc3339Seconds(until->value_or(0))}});
    r.headers.emplace_back("Set-Cookie", LoginCookie(token, options.login_max_age, Tls()));
    Answer(ex, std::move(r));
  }

  void UpdatePasswordNoAuth(std::shared_ptr<Exchange> const& ex) {
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

  // ---- apps ---------------------------------------------------------------------------------

  // POST /server/apps {"session": ID, "app": NAME, "port"?: N}: starts the app (the manager's
  // start-service, with the login's keys) and answers {"url"} of a one-time link that opens it
  // on an app port of this webserver (app_ports.h).
  void OpenApp(std::shared_ptr<Exchange> const& ex) {
    std::string login_token;
    auto s = RequireLogin(ex, &login_token);
    if (!s || !PassesCsrf(ex, *s)) return;
    if (!apps) {
      return Answer(ex, Problem(ps::ProblemType::kNotImplemented,
                                "This webserver opens no apps (started with --app-ports 0); use "
                                "`bai session app` on your machine."));
    }
    auto const& req = ex->request();
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    auto text = [&](char const* key) {
      return body.is_object() && body.contains(key) && body[key].is_string()
                 ? body[key].get<std::string>()
                 : std::string();
    };
    std::string session = text("session"), app = text("app");
    int port = 0;
    if (body.is_object() && body.contains("port") && body["port"].is_number_integer()) {
      port = body["port"].get<int>();
    }
    if (session.empty() || app.empty() || port < 0 || port > 65535) {
      return Answer(ex, Problem(ps::ProblemType::kInvalidApiParams,
                                "Give {\"session\": ID, \"app\": NAME} (and \"port\" for an "
                                "app's other port)."));
    }
    Keys keys{s->identity.access_key, s->secret_key};
    nlohmann::json start = {{"app", app}};
    if (port != 0) start["port"] = port;
    auto started = ToManagers([&](internal::Endpoint const& m) {
      return transport->Send(
          Upstream(m, "POST", "/session/" + internal::EncodeSegment(session) + "/start-service",
                   {{"content-type", "application/json"}}, start.dump(),
                   ps::kCurrentApiVersion.ToString(), &keys));
    });
    if (!started.ok() || started->status != 200) return RelayAnswer(ex, started);
    auto host = req.Header("host");
    auto link = apps->Open(login_token, s->identity.access_key, session, app, port,
                           HostName(host ? *host : ""));
    if (!link.ok()) return Answer(ex, server::ProblemResponse(link.status()));
    Answer(ex, JsonAnswer(200, {{"url", *link}, {"app", app}}));
  }

  // The tunnel of one app request: the manager's httpproxy WebSocket, signed with the keys of
  // the login that opened the app (read again each time: a login that ended opens nothing).
  StatusOr<std::unique_ptr<WebSocketConnection>> AppTunnel(std::string const& token,
                                                           std::string const& target) {
    auto live = logins.Find(token, NowSeconds());
    if (!live.ok()) return live.status();
    if (!*live) return Status(StatusCode::kPermissionDenied, "the login has ended");
    Keys keys{(*live)->identity.access_key, (*live)->secret_key};
    Status last(StatusCode::kUnavailable, "no manager configured");
    for (std::size_t i = 0; i < managers.size(); ++i) {
      auto t = Upstream(managers[(next_manager.load() + i) % managers.size()], "GET", target, {},
                        {}, ps::kCurrentApiVersion.ToString(), &keys);
      auto opened = internal::OpenLwsWebSocket(t, {});
      if (opened.ok()) return opened;
      last = opened.status();
      if (last.error_info().http_status != 0) break;  // a manager answered: that is the answer
    }
    return last;
  }

  // ---- /func/* ------------------------------------------------------------------------------

  void RelayAnswer(std::shared_ptr<Exchange> const& ex, StatusOr<ApiResponse> const& answer) {
    if (!answer.ok()) {
      auto r = Problem(ps::ProblemType::kServiceUnavailable,
                       "No manager answers (" + answer.status().message() + "); try again later.");
      r.status = 502;
      return Answer(ex, std::move(r));
    }
    HttpResponse r;
    r.status = answer->status;
    r.content_type = answer->Header("content-type").value_or("");
    r.body = answer->body;
    r.headers = ForwardedResponseHeaders(answer->headers);
    Answer(ex, std::move(r));
  }

  void Forward(std::shared_ptr<Exchange> ex) {
    Submit(ex, [this, ex] {
      auto s = RequireLogin(ex);
      if (!s || !PassesCsrf(ex, *s)) return;
      auto const& req = ex->request();
      auto target = UpstreamTarget(req.target);
      if (!target) {
        return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such route: " + req.path));
      }
      Keys keys{s->identity.access_key, s->secret_key};
      if (ex->IsWebSocketUpgrade()) return BridgeWebSocket(ex, *target, keys);
      auto accept = req.Header("accept");
      bool events = target->rfind("/events/", 0) == 0 ||
                    (accept && accept->find("text/event-stream") != std::string_view::npos);
      if (events) return BridgeEvents(ex, *target, keys);
      std::string method = req.method == "HEAD" ? "HEAD" : req.method;
      auto answer = ToManagers([&](internal::Endpoint const& m) {
        return transport->Send(Upstream(m, method, *target, ForwardedRequestHeaders(req.headers),
                                        req.body, VersionOf(req), &keys));
      });
      if (answer.ok() && answer->status == 200 && IsTransferTicketTarget(*target)) {
        answer->body = WithConsoleUrl(answer->body);
      }
      if (answer.ok() && answer->body.size() > options.max_response_bytes) {
        auto r = Problem(ps::ProblemType::kRequestTooLarge,
                         "The manager's answer is larger than the webserver relays (" +
                             std::to_string(options.max_response_bytes) +
                             " bytes); use the bai CLI for this.");
        r.status = 502;
        return Answer(ex, std::move(r));
      }
      RelayAnswer(ex, answer);
    });
  }

  // ---- storage transfers ---------------------------------------------------------------------
  // A page may talk to its own origin only (the policy's connect-src), and the storage proxy is
  // another one: a ticket (request-upload/-download) that passes here gains "console_url", a
  // path of this webserver that relays the transfer (tus uploads, downloads) to the URL in the
  // ticket. Only URLs seen in tickets are relayed; the ticket's token is what authorizes.

  static bool IsTransferTicketTarget(std::string const& target) {
    auto path = std::string_view(target).substr(0, target.find('?'));
    auto ends = [&](std::string_view tail) {
      return path.size() > tail.size() && path.substr(path.size() - tail.size()) == tail;
    };
    return path.rfind("/folders/", 0) == 0 &&
           (ends("/request-upload") || ends("/request-download"));
  }

  // The relay path's key for a storage URL: its hash, the same on every webserver.
  static std::string RelayKey(std::string const& url) {
    return LoginSessions::Hash(url).substr(0, 16);
  }

  std::string WithConsoleUrl(std::string const& body) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("url") || !j["url"].is_string()) return body;
    std::string url = j["url"].get<std::string>();
    if (!internal::ParseEndpoint(url).ok()) return body;
    std::string key = RelayKey(url);
    {
      std::lock_guard<std::mutex> lock(storage_mu);
      if (storage_urls.size() >= 256 && !storage_urls.count(key)) storage_urls.clear();
      storage_urls[key] = url;
    }
    j["console_url"] = "/storage/" + key;
    return j.dump();
  }

  // The origins of the storage proxies configured and seen in tickets.
  std::vector<std::string> StorageOrigins() {
    std::vector<std::string> urls = options.storage_urls;
    {
      std::lock_guard<std::mutex> lock(storage_mu);
      for (auto const& [key, url] : storage_urls) urls.push_back(url);
    }
    std::vector<std::string> out;
    for (auto const& u : urls) {
      auto e = internal::ParseEndpoint(u);
      if (e.ok() && std::find(out.begin(), out.end(), e->origin) == out.end()) {
        out.push_back(e->origin);
      }
    }
    return out;
  }

  // The storage proxy's URL a relay path (`/storage/KEY`) stands for; "" when none is known.
  std::string RelayUrl(std::string const& key) {
    std::string url;
    {
      std::lock_guard<std::mutex> lock(storage_mu);
      auto it = storage_urls.find(key);
      if (it != storage_urls.end()) url = it->second;
    }
    // A key is the hash of its URL, so a transfer another webserver issued (several behind one
    // address) is found among the storage proxies this one was configured with.
    for (std::string base : options.storage_urls) {
      while (!base.empty() && base.back() == '/') base.pop_back();
      for (char const* path : {"/upload", "/download"}) {
        std::string candidate = base + path;
        if (url.empty() && RelayKey(candidate) == key) url = candidate;
      }
    }
    return url;
  }

  // A relayed request as it goes to the storage proxy (its body set by the caller).
  std::optional<TransportRequest> RelayRequest(HttpRequest const& req) {
    auto e = internal::ParseEndpoint(RelayUrl(req.path.substr(9)));
    if (!e.ok()) return std::nullopt;
    TransportRequest t;
    t.method = req.method;
    t.origin = e->origin;
    t.host = e->host;
    t.target = e->base_path + (req.query.empty() ? "" : "?" + req.query);
    t.sign = false;
    t.headers = ForwardedRequestHeaders(req.headers);
    for (char const* h : {"range", "if-range"}) {
      if (auto v = req.Header(h)) t.headers.emplace_back(h, std::string(*v));
    }
    return t;
  }

  // The relay's answer, from the storage proxy's.
  HttpResponse RelayedAnswer(StatusOr<ApiResponse> const& answer) {
    HttpResponse r;
    if (!answer.ok()) {
      r = Problem(ps::ProblemType::kServiceUnavailable, "The storage proxy does not answer (" +
                                                            answer.status().message() +
                                                            "); try again later.");
      r.status = 502;
    } else {
      r.status = answer->status;
      r.content_type = answer->Header("content-type").value_or("");
      r.body = answer->body;
      r.headers = ForwardedResponseHeaders(answer->headers);
    }
    for (auto& h : SecurityHeaders(Tls())) r.headers.push_back(std::move(h));
    return r;
  }

  void StorageRelay(std::shared_ptr<Exchange> const& ex) {
    auto t = RelayRequest(ex->request());
    if (!t) {
      return Answer(ex, Problem(ps::ProblemType::kUrlNotFound,
                                "No such transfer here (this webserver has not issued it, or "
                                "restarted since); ask for the upload or download again."));
    }
    t->body = ex->request().body;
    auto answer = transport->Send(*t);
    if (answer.ok() && answer->body.size() > options.max_response_bytes) {
      auto r = Problem(ps::ProblemType::kRequestTooLarge,
                       "The file is larger than the console relays (" +
                           std::to_string(options.max_response_bytes >> 20) +
                           " MiB); download it with `bai vfolder download`.");
      r.status = 502;
      return Answer(ex, std::move(r));
    }
    ex->Respond(RelayedAnswer(answer));
  }

  // Relayed chunks in flight: each holds a thread, a connection to the storage proxy and up to
  // RelaySink::kRoom bytes, so a user has at most kRelaysPerUser at once (the console sends up
  // to 4 parts of a file at once) and the webserver kRelaysInAll.
  static constexpr int kRelaysPerUser = 8;
  static constexpr int kRelaysInAll = 64;
  std::mutex relay_mu;
  std::map<std::string, int> relays_by_user;  // under relay_mu
  int relays_in_all = 0;                      // under relay_mu

  // A relay's place under the caps, given back when its thread ends.
  class RelaySlot {
   public:
    RelaySlot(Impl& impl, std::string user) : impl_(impl), user_(std::move(user)) {}
    RelaySlot(RelaySlot const&) = delete;
    RelaySlot& operator=(RelaySlot const&) = delete;
    ~RelaySlot() {
      std::lock_guard<std::mutex> lock(impl_.relay_mu);
      --impl_.relays_in_all;
      if (--impl_.relays_by_user[user_] <= 0) impl_.relays_by_user.erase(user_);
    }

   private:
    Impl& impl_;
    std::string user_;
  };

  std::shared_ptr<RelaySlot> TakeRelaySlot(std::string const& user) {
    std::lock_guard<std::mutex> lock(relay_mu);
    if (relays_in_all >= kRelaysInAll) return nullptr;
    int& mine = relays_by_user[user];
    if (mine >= kRelaysPerUser) return nullptr;
    ++mine;
    ++relays_in_all;
    return std::make_shared<RelaySlot>(*this, user);
  }

  // A relayed chunk passed on to the storage proxy as it arrives (ADR 12's streamed chunks): the
  // client's pieces wait in a queue of at most kRoom bytes that a thread of stream_threads sends
  // from; the client is not read while it is full. A client that goes away mid-body has what it
  // sent passed on before the upstream request is cut, so the proxy keeps it.
  class RelaySink : public server::BodySink {
   public:
    static constexpr std::size_t kRoom = 4u << 20;
    RelaySink(Impl& impl, TransportRequest t, std::int64_t length, std::shared_ptr<RelaySlot> slot)
        : state_(std::make_shared<State>()) {
      t.body_length = length;
      t.body_reader = [state = state_](char* out, std::size_t room) {
        return state->Read(out, room);
      };
      started_ =
          impl.StartStreamThread([&impl, state = state_, t = std::move(t), slot = std::move(slot)] {
            auto answer = impl.RelayedAnswer(impl.transport->Send(t));
            std::function<void(HttpResponse)> deliver;
            std::function<void()> go;
            {
              std::lock_guard<std::mutex> lock(state->mu);
              state->done = true;
              state->response = std::move(answer);
              deliver = std::exchange(state->deliver, {});
              go = std::exchange(state->writable, {});
            }
            if (go) go();  // its Write then refuses: the answer came before the body went
            if (deliver) deliver(std::move(state->response));
          });
    }
    ~RelaySink() override { state_->End(State::kCut); }
    bool Accepts() const override { return started_; }
    bool Write(std::string_view bytes) override {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->done) return false;
      state_->pieces.emplace_back(bytes);
      state_->bytes += bytes.size();
      state_->cv.notify_all();
      return true;
    }
    void WhenWritable(std::function<void()> go) override {
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        if (state_->bytes >= kRoom && !state_->done) {
          state_->writable = std::move(go);
          return;
        }
      }
      go();
    }
    void Finish(bool whole, std::function<void(HttpResponse)> answer) override {
      if (!started_) {
        auto r = Problem(ps::ProblemType::kServiceUnavailable, "The webserver is stopping.");
        return answer(std::move(r));
      }
      state_->End(whole ? State::kWhole : State::kCut);
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!state_->done) {
        state_->deliver = std::move(answer);
        return;
      }
      answer(std::move(state_->response));
    }

   private:
    struct State {
      enum How { kOpen, kWhole, kCut };
      std::mutex mu;
      std::condition_variable cv;
      std::deque<std::string> pieces;
      std::size_t front_sent = 0, bytes = 0;
      How end = kOpen;
      bool done = false;  ///< the storage proxy answered (`response`)
      HttpResponse response;
      std::function<void()> writable;             ///< waiting for room
      std::function<void(HttpResponse)> deliver;  ///< waiting for the answer
      void End(How how) {
        std::lock_guard<std::mutex> lock(mu);
        if (end == kOpen) end = how;
        cv.notify_all();
      }
      // curl's reader: what is queued, then the end (0) or, for a cut body, a failure (-1).
      std::ptrdiff_t Read(char* out, std::size_t room) {
        std::function<void()> go;
        std::size_t n = 0;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return bytes > 0 || end != kOpen; });
          if (bytes == 0) return end == kWhole ? 0 : -1;
          while (n < room && !pieces.empty()) {
            auto& front = pieces.front();
            std::size_t take = std::min(room - n, front.size() - front_sent);
            std::memcpy(out + n, front.data() + front_sent, take);
            n += take;
            front_sent += take;
            if (front_sent == front.size()) {
              pieces.pop_front();
              front_sent = 0;
            }
          }
          bytes -= n;
          if (bytes < kRoom) go = std::exchange(writable, {});
        }
        if (go) go();
        return static_cast<std::ptrdiff_t>(n);
      }
    };
    std::shared_ptr<State> state_;
    bool started_ = false;
  };

  // A body refused before it is read: answered at once, no 100 Continue, what the client
  // still sends is drained.
  class RefusedSink : public server::BodySink {
   public:
    RefusedSink(HttpResponse r, bool tls) : r_(std::move(r)) {
      for (auto& h : SecurityHeaders(tls)) r_.headers.push_back(std::move(h));
    }
    bool Accepts() const override { return false; }
    bool Write(std::string_view) override { return false; }
    void Finish(bool, std::function<void(HttpResponse)> answer) override { answer(std::move(r_)); }

   private:
    HttpResponse r_;
  };

  // body_sink_for, once a body over 1 MiB has its headers: a /func request without a live
  // login is refused before its body is read (32 unauthenticated 64 MiB bodies took 1.5 GiB);
  // a relayed PATCH chunk streams; the rest is read whole.
  // body_sink_for, once a body over 1 MiB has its headers: without a live login it is refused
  // before it is read (32 unauthenticated 64 MiB bodies to /func took 1.5 GiB); a relayed PATCH
  // chunk streams, within the relay caps; the rest is read whole (within the HTTP server's
  // max_buffered_body_bytes).
  std::unique_ptr<server::BodySink> BodyFor(HttpRequest const& head, std::uint64_t length) {
    auto chosen = ChooseLogin(head, false);
    if (!chosen.ok() || !chosen->session) {
      return std::make_unique<RefusedSink>(
          Problem(ps::ProblemType::kAuthFailed,
                  "Sign in first (POST /server/login, or the console's sign-in page); a request "
                  "body is read only for a signed-in user."),
          Tls());
    }
    if (head.path.rfind("/storage/", 0) != 0) return nullptr;
    if (head.method != "PATCH") {
      return std::make_unique<RefusedSink>(
          Problem(ps::ProblemType::kRequestTooLarge,
                  "Only an upload's PATCH carries a large body through the relay."),
          Tls());
    }
    return StreamRelay(head, length, chosen->session->identity.access_key);
  }

  // A relayed PATCH chunk over 1 MiB streams to the storage proxy as it arrives.
  std::unique_ptr<server::BodySink> StreamRelay(HttpRequest const& head, std::uint64_t length,
                                                std::string const& user) {
    auto t = RelayRequest(head);
    if (!t) return nullptr;  // answered (404) by StorageRelay
    auto slot = TakeRelaySlot(user);
    if (!slot) {
      auto r = Problem(ps::ProblemType::kRateLimitExceeded,
                       "Too many uploads through the console at once (" +
                           std::to_string(kRelaysPerUser) +
                           " per user); this part can be sent again when one ends.");
      r.headers.emplace_back("Retry-After", "1");
      return std::make_unique<RefusedSink>(std::move(r), Tls());
    }
    return std::make_unique<RelaySink>(*this, std::move(*t), static_cast<std::int64_t>(length),
                                       std::move(slot));
  }

  // A thread for a long-lived stream; false when stopping.
  bool StartStreamThread(std::function<void()> body) {
    return stream_threads.Start([self = shared_from_this(), body = std::move(body)] { body(); });
  }

  // Server-Sent Events: the manager's stream written through as it comes.
  void BridgeEvents(std::shared_ptr<Exchange> const& ex, std::string const& target, Keys keys) {
    auto cancel = std::make_shared<StreamCancel>();
    bool started = StartStreamThread([this, ex, target, keys, cancel] {
      {
        std::lock_guard<std::mutex> lock(streams_mu);
        cancels.insert(cancel);
      }
      ex->OnClose([cancel] { cancel->Cancel(); });
      auto const& req = ex->request();
      bool opened = false;
      auto answer = ToManagers([&](internal::Endpoint const& m) {
        auto t = Upstream(m, "GET", target, ForwardedRequestHeaders(req.headers), {},
                          VersionOf(req), &keys);
        t.cancel = cancel;
        return transport->SendStreaming(t, [&](std::string_view chunk) {
          if (!opened) {
            opened = true;
            auto h = SecurityHeaders(Tls());
            h.emplace_back("Cache-Control", "no-cache");
            h.emplace_back("X-Accel-Buffering", "no");
            ex->StartEventStream(std::move(h));
          }
          if (chunk.empty()) return !cancel->cancelled();
          return ex->WriteEvent(std::string(chunk));
        });
      });
      if (opened) {
        ex->EndEventStream();
      } else {
        RelayAnswer(ex, answer);
      }
      std::lock_guard<std::mutex> lock(streams_mu);
      cancels.erase(cancel);
    });
    if (!started) {
      Answer(ex, Problem(ps::ProblemType::kServiceUnavailable, "The webserver is stopping."));
    }
  }

  // A WebSocket (/stream/…): the manager's socket opened with the login's signature, then the
  // two relayed both ways, each at its reader's pace.
  struct Bridge {
    std::unique_ptr<WebSocketConnection> upstream;
    std::mutex mu;
    std::condition_variable cv;
    std::shared_ptr<server::WebSocket> client;  // under mu
    std::deque<WebSocketMessage> to_upstream;   // under mu
    std::size_t queued = 0;                     // under mu
    bool paused = false;                        // under mu
    bool client_closed = false;                 // under mu
    int client_code = 1000;                     // under mu
    bool relaying = false;                      // under mu: the two threads were started
  };
  static constexpr std::size_t kHighWater = 4u << 20;
  static constexpr std::size_t kLowWater = 1u << 20;

  void BridgeWebSocket(std::shared_ptr<Exchange> const& ex, std::string const& target, Keys keys) {
    auto const& req = ex->request();
    std::unique_ptr<WebSocketConnection> upstream;
    Status last(StatusCode::kUnavailable, "no manager configured");
    for (std::size_t i = 0; i < managers.size() && !upstream; ++i) {
      auto t = Upstream(managers[(next_manager.load() + i) % managers.size()], "GET", target,
                        ForwardedRequestHeaders(req.headers), {}, VersionOf(req), &keys);
      auto opened = internal::OpenLwsWebSocket(t, {});
      if (opened.ok()) {
        upstream = *std::move(opened);
      } else {
        last = opened.status();
        if (last.error_info().http_status != 0) break;  // a manager answered: that is the answer
      }
    }
    if (!upstream) {
      int code = last.error_info().http_status;
      auto r = code != 0 ? Problem(ps::ProblemType::kGenericBadRequest, last.message())
                         : Problem(ps::ProblemType::kServiceUnavailable,
                                   "No manager answers (" + last.message() + ").");
      r.status = code != 0 ? code : 502;
      return Answer(ex, std::move(r));
    }
    auto bridge = std::make_shared<Bridge>();
    bridge->upstream = std::move(upstream);
    {
      std::lock_guard<std::mutex> lock(streams_mu);
      if (stream_threads.closed()) {
        return Answer(ex, Problem(ps::ProblemType::kServiceUnavailable, "stopping"));
      }
      upstream_sockets.insert(bridge->upstream.get());
    }
    server::WebSocketHandlers h;
    h.on_open = [this, bridge](std::shared_ptr<server::WebSocket> const& ws) {
      {
        std::lock_guard<std::mutex> lock(bridge->mu);
        bridge->client = ws;
        bridge->relaying = true;
      }
      bool ok = StartStreamThread([this, bridge] { UpstreamToClient(bridge); }) &&
                StartStreamThread([this, bridge] { ClientToUpstream(bridge); });
      if (!ok) {
        ws->Close(1001, "stopping");
        bridge->upstream->Cancel();
      }
    };
    auto take = [bridge](std::shared_ptr<server::WebSocket> const& ws, std::string const& data,
                         bool binary) {
      std::lock_guard<std::mutex> lock(bridge->mu);
      bridge->queued += data.size();
      bridge->to_upstream.push_back({data, binary});
      if (bridge->queued > kHighWater && !bridge->paused) {
        bridge->paused = true;
        ws->PauseReading(true);
      }
      bridge->cv.notify_all();
    };
    h.on_message = [take](auto const& ws, std::string const& text) { take(ws, text, false); };
    h.on_binary = [take](auto const& ws, std::string const& bytes) { take(ws, bytes, true); };
    h.on_close = [this, bridge](int code) {
      bool relaying;
      {
        std::lock_guard<std::mutex> lock(bridge->mu);
        bridge->client_closed = true;
        bridge->client_code = code;
        relaying = bridge->relaying;
        bridge->cv.notify_all();
      }
      if (!relaying) {
        // The browser left before the upgrade completed: nobody relays, the manager's side goes.
        bridge->upstream->Cancel();
        std::lock_guard<std::mutex> lock(streams_mu);
        upstream_sockets.erase(bridge->upstream.get());
      }
    };
    ex->AcceptWebSocket(std::move(h));
  }

  void ClientToUpstream(std::shared_ptr<Bridge> const& b) {
    for (;;) {
      WebSocketMessage m;
      {
        std::unique_lock<std::mutex> lock(b->mu);
        b->cv.wait(lock, [&] { return !b->to_upstream.empty() || b->client_closed; });
        if (b->to_upstream.empty()) break;
        m = std::move(b->to_upstream.front());
        b->to_upstream.pop_front();
        b->queued -= m.data.size();
        if (b->paused && b->queued < kLowWater) {
          b->paused = false;
          if (b->client) b->client->PauseReading(false);
        }
      }
      if (!b->upstream->Send(std::move(m)).ok()) return;
    }
    int code;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      code = b->client_code;
    }
    // 1005/1006 (no code, no close frame) cannot be sent on: a normal close stands for them.
    b->upstream->Close(code == 1005 || code == 1006 ? 1000 : code, "");
  }

  void UpstreamToClient(std::shared_ptr<Bridge> const& b) {
    std::shared_ptr<server::WebSocket> client;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      client = b->client;
    }
    auto deadline = std::optional<std::chrono::steady_clock::time_point>();
    for (;;) {
      auto e = b->upstream->Receive(std::chrono::milliseconds(500));
      if (e.kind == WebSocketEvent::Kind::kClosed) {
        int code = b->upstream->close_code();
        client->Close(code == 0 || code == 1005 || code == 1006 ? 1000 : code, "");
        break;
      }
      if (e.kind == WebSocketEvent::Kind::kMessage) {
        bool sent = e.message.binary ? client->SendBinary(std::move(e.message.data))
                                     : client->Send(std::move(e.message.data));
        if (!sent) break;
        if (client->Backlog() > kHighWater) {
          // The browser reads slowly: stop taking from the manager until it catches up.
          auto drained = std::make_shared<std::atomic<bool>>(false);
          client->WhenDrained(kLowWater, [b, drained] {
            drained->store(true);
            std::lock_guard<std::mutex> lock(b->mu);
            b->cv.notify_all();
          });
          std::unique_lock<std::mutex> lock(b->mu);
          b->cv.wait(lock, [&] { return drained->load() || b->client_closed; });
        }
      }
      bool closed;
      {
        std::lock_guard<std::mutex> lock(b->mu);
        closed = b->client_closed;
      }
      if (closed) {
        // The browser left: the manager's side gets its close and a few seconds to answer.
        if (!deadline) deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        if (std::chrono::steady_clock::now() > *deadline) {
          b->upstream->Cancel();
          break;
        }
      }
    }
    {
      // The socket's handlers hold the bridge: letting go of the socket here breaks the cycle.
      std::lock_guard<std::mutex> lock(b->mu);
      b->client.reset();
    }
    std::lock_guard<std::mutex> lock(streams_mu);
    upstream_sockets.erase(b->upstream.get());
  }

  // ---- the console's files ------------------------------------------------------------------

  void StaticFile(std::shared_ptr<Exchange> const& ex) {
    auto const& req = ex->request();
    auto decoded = server::PercentDecode(req.path);
    std::string path = decoded.value_or("");
    bool bad = path.empty() || path.front() != '/' || path.find("..") != std::string::npos ||
               path.find('\0') != std::string::npos;
    if (bad) return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file."));
    if (options.static_dir.empty() ||
        ::access((options.static_dir + "/index.html").c_str(), R_OK) != 0) {
      HttpResponse r;
      r.content_type = "text/html; charset=utf-8";
      r.body = kNotBuiltPage;
      return Answer(ex, std::move(r));
    }
    std::string file = path == "/" ? "/index.html" : path;
    std::string full = options.static_dir + file;
    struct stat st {};
    bool exists = ::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (!exists) {
      // A route of the single-page app (/sessions/…): its page; a missing asset: 404.
      if (file.find('.') != std::string::npos) {
        return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file: " + path));
      }
      file = "/index.html";
      full = options.static_dir + file;
      if (::stat(full.c_str(), &st) != 0) {
        return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file."));
      }
    }
    if (file == "/index.html") return Page(ex, full);
    int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file."));
    HttpResponse r;
    r.content_type = ContentTypeOf(file);
    r.file = std::make_shared<server::FileBody>(fd, 0, static_cast<std::int64_t>(st.st_size));
    // Built assets carry a hash in their names; the page itself must be fetched again.
    r.headers.emplace_back("Cache-Control", file.rfind("/assets/", 0) == 0
                                                ? "public, max-age=31536000, immutable"
                                                : "no-cache");
    Answer(ex, std::move(r));
  }

  // The console's page, with a fresh style nonce in its policy and in its markup
  // (`%NONCE%`), where the app finds it for the style elements it makes.
  void Page(std::shared_ptr<Exchange> const& ex, std::string const& full) {
    std::ifstream in(full, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string page = text.str();
    std::string nonce = LoginSessions::RandomToken(18);
    for (auto at = page.find("%NONCE%"); at != std::string::npos; at = page.find("%NONCE%")) {
      page.replace(at, 7, nonce);
    }
    // The storage proxies the page may send uploads to itself (in its policy and its markup).
    auto origins = StorageOrigins();
    std::string listed;
    for (auto const& o : origins) listed += (listed.empty() ? "" : " ") + o;
    for (auto at = page.find("%STORAGE_ORIGINS%"); at != std::string::npos;
         at = page.find("%STORAGE_ORIGINS%")) {
      page.replace(at, 17, listed);
    }
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::move(page);
    r.headers.emplace_back("Cache-Control", "no-store");
    Answer(ex, std::move(r), nonce, origins);
  }

  void StopAll() {
    // Closed first: a bridge registers its upstream socket under streams_mu only while the
    // group is open, so the cancelling below reaches every one registered.
    stream_threads.Close();
    if (http) http->Stop();
    if (apps) apps->Stop();
    {
      std::lock_guard<std::mutex> lock(streams_mu);
      for (auto const& c : cancels) c->Cancel();
      for (auto* s : upstream_sockets) s->Cancel();
    }
    stream_threads.WaitIdle(std::chrono::seconds(10));
  }
};

StatusOr<std::unique_ptr<WebServer>> WebServer::Start(WebServerOptions options,
                                                      server::Database& db) {
  if (options.managers.empty()) {
    return Status(StatusCode::kInvalidArgument, "bai-webserver needs a manager's URL");
  }
  auto impl = std::make_shared<Impl>(std::move(options), db);
  for (auto const& url : impl->options.managers) {
    auto e = internal::ParseEndpoint(url);
    if (!e.ok()) {
      return Status(StatusCode::kInvalidArgument,
                    "manager URL '" + url + "': " + e.status().message());
    }
    impl->managers.push_back(*std::move(e));
  }
  server::HttpServerOptions http;
  http.address = impl->options.address;
  http.port = impl->options.port;
  http.threads = impl->options.io_threads;
  http.max_body_bytes = 1 << 20;
  // Large bodies read into memory (signed-in /func requests) hold at most this together;
  // a body must keep coming at 16 KiB/s on average after the first read timeout (issue 43, 5e).
  http.max_buffered_body_bytes = impl->options.max_buffered_body_bytes;
  http.min_body_bytes_per_second = impl->options.min_body_bytes_per_second;
  std::size_t func_limit = impl->options.max_body_bytes;
  http.body_limit_for = [func_limit](std::string_view, std::string_view path) -> std::size_t {
    return path.rfind("/func/", 0) == 0 || path.rfind("/storage/", 0) == 0 ? func_limit : 0;
  };
  std::weak_ptr<Impl> weak = impl;
  http.body_sink_for = [weak](HttpRequest const& head,
                              std::uint64_t length) -> std::unique_ptr<server::BodySink> {
    auto self = weak.lock();
    return self ? self->BodyFor(head, length) : nullptr;
  };
  auto server = server::HttpServer::Start(http, [weak](std::shared_ptr<Exchange> ex) {
    if (auto self = weak.lock()) self->Handle(std::move(ex));
  });
  if (!server.ok()) return std::move(server).status();
  impl->http = *std::move(server);
  if (impl->options.app_first_port > 0) {
    AppPortsOptions a;
    a.bind_address = impl->options.address;
    a.advertised_host = impl->options.app_host;
    a.first_port = impl->options.app_first_port;
    a.last_port = impl->options.app_last_port;
    a.tls = impl->options.secure_cookies;
    a.max_body_bytes = impl->options.max_body_bytes;
    a.max_per_user = impl->options.app_ports_per_user;
    impl->apps = std::make_unique<AppPorts>(
        a,
        [weak](std::string const& token,
               std::string const& target) -> StatusOr<std::unique_ptr<WebSocketConnection>> {
          auto self = weak.lock();
          if (!self) return Status(StatusCode::kUnavailable, "the webserver is stopping");
          return self->AppTunnel(token, target);
        });
  }
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

WebServer::WebServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebServer::~WebServer() { Stop(); }
std::uint16_t WebServer::port() const { return impl_->http->port(); }
void WebServer::Stop() {
  if (impl_) impl_->StopAll();
}

}  // namespace bai::webserver
