// SPDX-License-Identifier: Apache-2.0
// Who is asking: the manager's identity, liveness, signature checks, password login and signup,
// roles.
#include "bai/protocol/api_version.h"
#include "bai/protocol/errors.h"

#include "server-reference/common/auth/login_throttle.h"
#include "server-reference/common/exec/work_pool.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/manager/admin/ssh_keys.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/store.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <mutex>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;

namespace {

server::LoginLimits SignupLimits(int per_address) {
  server::LoginLimits l;
  l.per_address = per_address;
  l.window = std::chrono::hours(1);
  return l;
}

// What the auth routes share: the manager's version, and for password logins the guessing
// throttle and the pool that hashes off the I/O threads.
struct AuthEnv {
  explicit AuthEnv(ManagerApi& api)
      : manager_version(api.options().manager_version),
        store(api.store()),
        clock(api.options().clock),
        allow_signup(api.options().allow_signup),
        trusted_proxies(api.options().trusted_proxies),
        throttle(api.options().login_limits),
        signups(SignupLimits(api.options().signups_per_address)),
        pool(api.options().password_workers, api.options().password_queue) {}

  /// The client a request's attempt counts against (a trusted webserver's X-Forwarded-For).
  std::string Address(server::HttpRequest const& request) const {
    return server::ThrottledAddress(request.peer_address, request.Header("x-forwarded-for"),
                                    trusted_proxies);
  }

  /// Counts one password attempt of `account` from `address`: nullopt when it may go on, else
  /// the 429 to answer ("Too many `what` attempts; retry in N seconds.").
  std::optional<HttpResponse> Admit(std::string const& address, std::string const& account,
                                    char const* what);

  /// Runs `work` (password hashing) on the pool and answers `exchange` with its response plus
  /// `headers`; a full pool answers 429 now.
  std::optional<HttpResponse> OnPool(std::shared_ptr<server::Exchange> const& exchange,
                                     std::vector<std::pair<std::string, std::string>> headers,
                                     std::function<HttpResponse()> work);

  /// A password check of `account` (the three password routes): admitted by the throttle
  /// (else its 429 now, "Too many `what` attempts"), then `check` on the pool. A mismatch it
  /// reports counts as a failed attempt; an answer of `success_status` (0: none) clears the
  /// account's failures.
  using PasswordCheck = std::function<StatusOr<HttpResponse>(bool& mismatch)>;
  std::optional<HttpResponse> CheckPassword(RequestContext& ctx, LateExchange const& exchange,
                                            std::string const& account, char const* what,
                                            int success_status, PasswordCheck check);

  std::string manager_version;  ///< "bai-manager 0.1.0"
  Store& store;
  std::function<std::chrono::system_clock::time_point()> clock;
  bool allow_signup;
  std::vector<std::string> trusted_proxies;
  std::mutex mu;
  server::LoginThrottle throttle;  // under mu
  server::LoginThrottle signups;   // under mu: signups per address (every call counts)
  server::WorkPool pool;           // last: its destructor waits for running checks
};

HttpResponse TooManyLogins(std::int64_t retry_after_seconds, std::string message) {
  auto r = ProblemResponse(MakeProblemStatus(ProblemType::kRateLimitExceeded, std::move(message)));
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  return r;
}

// The active user `username` of `domain` whose password is `password`; `mismatch` set for a
// wrong password or an unknown user (the same answer, and the same time spent, for both).
StatusOr<LoginRecord> CheckCredential(Store& store, std::string const& domain,
                                      std::string const& username, std::string const& password,
                                      bool& mismatch) {
  auto login = store.FindLogin(domain, username);
  if (!login.ok()) return std::move(login).status();
  if (!*login) SpendPasswordCheck(password);
  if (!*login || !VerifyPassword((*login)->password_hash, password)) {
    mismatch = true;
    return MakeProblemStatus(ProblemType::kAuthFailed, "User credential mismatch.");
  }
  if ((*login)->status != "active") {
    return MakeProblemStatus(ProblemType::kAuthFailed,
                             "The user account is " + (*login)->status + ".");
  }
  return **std::move(login);
}

StatusOr<HttpResponse> Login(Store& store, std::string const& domain, std::string const& username,
                             std::string const& password, bool& mismatch) {
  auto login = CheckCredential(store, domain, username, password, mismatch);
  if (!login.ok()) return std::move(login).status();
  auto keypair = store.ActiveKeypairOf(login->user_id);
  if (!keypair.ok()) return std::move(keypair).status();
  if (!*keypair) return MakeProblemStatus(ProblemType::kAuthFailed, "No API keypairs found.");
  return JsonResponse({{"data",
                        {{"access_key", (*keypair)->first},
                         {"secret_key", (*keypair)->second},
                         {"role", login->role},
                         {"status", login->status}}}});
}

std::optional<HttpResponse> AuthEnv::Admit(std::string const& address, std::string const& account,
                                           char const* what) {
  std::lock_guard<std::mutex> lock(mu);
  auto d = throttle.Admit(address, account, clock());
  if (d.allowed) return std::nullopt;
  return TooManyLogins(d.retry_after_seconds,
                       std::string("Too many ") + what + " attempts; retry in " +
                           std::to_string(d.retry_after_seconds) + " seconds.");
}

std::optional<HttpResponse> AuthEnv::OnPool(
    std::shared_ptr<server::Exchange> const& exchange,
    std::vector<std::pair<std::string, std::string>> headers, std::function<HttpResponse()> work) {
  return AnswerOnPool(pool, exchange, std::move(headers), std::move(work),
                      "Too many password checks in progress; retry shortly.");
}

std::optional<HttpResponse> AuthEnv::CheckPassword(RequestContext& ctx,
                                                   LateExchange const& exchange,
                                                   std::string const& account, char const* what,
                                                   int success_status, PasswordCheck check) {
  std::string address = Address(ctx.request);
  if (auto refused = Admit(address, account, what)) return refused;
  return OnPool(exchange, ctx.response_headers,
                [this, account, address, success_status, check = std::move(check)] {
                  bool mismatch = false;
                  auto response = Guard([&] { return check(mismatch); });
                  std::lock_guard<std::mutex> lock(mu);
                  if (mismatch) {
                    throttle.Failed(address, account, clock());
                  } else if (success_status != 0 && response.status == success_status) {
                    throttle.Succeeded(address, account);
                  }
                  return response;
                });
}

// Stores a user's new password: its hash, need_password_change cleared; the time of the change.
StatusOr<std::string> StorePassword(Store& store, std::string const& user_id,
                                    std::string const& new_password) {
  auto hash = HashPassword(new_password);
  if (!hash.ok()) return std::move(hash).status();
  return store.SetPasswordHash(user_id, *hash);
}

// POST /auth/update-password-no-auth {domain, username, current_password, new_password}: a
// password changed without a login (24.09: for one that expired), the current one checked as a
// login's is (throttled per address and account, on the pool); 201 {password_changed_at}.
std::optional<HttpResponse> UpdatePasswordNoAuth(AuthEnv& gate, RequestContext& ctx,
                                                 LateExchange const& ex) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return ProblemResponse(p.status());
  auto domain = p->String({"domain"}, true);
  auto username = p->String({"username"}, true);
  auto current = p->String({"current_password"}, true);
  auto next = p->String({"new_password"}, true);
  if (next && next->size() < 8) p->Fail("new_password", "at least 8 characters");
  if (current && next && *current == *next) {
    p->Fail("new_password", "the same as the current password");
  }
  if (auto s = p->Check(); !s.ok()) return ProblemResponse(s);
  return gate.CheckPassword(
      ctx, ex, *domain + "\n" + *username, "password", 201,
      [gate = &gate, domain = *domain, username = *username, current = *current,
       next = *next](bool& mismatch) -> StatusOr<HttpResponse> {
        auto login = CheckCredential(gate->store, domain, username, current, mismatch);
        if (!login.ok()) return std::move(login).status();
        auto changed = StorePassword(gate->store, login->user_id, next);
        if (!changed.ok()) return std::move(changed).status();
        return JsonResponse({{"password_changed_at", *changed}}, 201);
      });
}

// POST /auth/authorize: password login. Throttled per client address and per account before
// any work; the Argon2 check runs on the password pool, never on an I/O thread.
std::optional<HttpResponse> Authorize(AuthEnv& gate, RequestContext& ctx,
                                      LateExchange const& exchange) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return ProblemResponse(p.status());
  auto type = p->String({"type"}, true);
  auto domain = p->String({"domain"}, true);
  auto username = p->String({"username"}, true);
  auto password = p->String({"password"}, true);
  if (auto s = p->Check(); !s.ok()) return ProblemResponse(s);
  if (*type != "keypair") {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kInvalidApiParams, "Unsupported authorization type"));
  }
  return gate.CheckPassword(
      ctx, exchange, *domain + "\n" + *username, "login", 200,
      [gate = &gate, domain = *domain, username = *username, password = *password](bool& mismatch) {
        return Login(gate->store, domain, username, password, mismatch);
      });
}

// POST /auth/update-password: the caller's own password, the old one checked (throttled as
// logins are, on the pool), the new one twice. 24.09 answers {} and clears
// need_password_change.
std::optional<HttpResponse> UpdatePassword(AuthEnv& gate, RequestContext& ctx,
                                           LateExchange const& exchange) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return ProblemResponse(p.status());
  auto old_password = p->String({"old_password"}, true);
  auto new_password = p->String({"new_password"}, true);
  auto again = p->String({"new_password2"}, true);
  if (new_password && again && *new_password != *again) {
    p->Fail("new_password2", "new password mismatch");
  }
  if (new_password && new_password->size() < 8) p->Fail("new_password", "at least 8 characters");
  if (auto s = p->Check(); !s.ok()) return ProblemResponse(s);
  Identity const who = *ctx.identity;
  // A success does not clear the account's failures (a login does).
  return gate.CheckPassword(
      ctx, exchange, who.domain + "\n" + who.email, "password", 0,
      [gate = &gate, who, old_password = *old_password,
       new_password = *new_password](bool& mismatch) -> StatusOr<HttpResponse> {
        auto login = gate->store.FindLogin(who.domain, who.email);
        if (!login.ok()) return std::move(login).status();
        if (!*login || (*login)->user_id != who.user_id ||
            !VerifyPassword((*login)->password_hash, old_password)) {
          mismatch = true;
          return MakeProblemStatus(ProblemType::kAuthFailed, "Old password mismatch");
        }
        auto changed = StorePassword(gate->store, who.user_id, new_password);
        if (!changed.ok()) return std::move(changed).status();
        return JsonResponse(nlohmann::json::object());
      });
}

// The caller's SSH keypair (the keypair's columns): read the public half (GET), make a new
// pair (PATCH, answered once with the private half), or store one of one's own (POST).
StatusOr<HttpResponse> GetSshKeypair(AuthEnv&, RequestContext& ctx) {
  auto key = ctx.store.SshPublicKey(ctx.identity->access_key);
  if (!key.ok()) return std::move(key).status();
  return JsonResponse({{"ssh_public_key", *key ? json(**key) : json(nullptr)}});
}

StatusOr<HttpResponse> StoreSshKeypair(Store& store, std::string const& access_key,
                                       SshKeypair const& k) {
  if (auto w = store.SetSshKeypair(access_key, k.public_key, k.private_key); !w.ok()) return w;
  return JsonResponse({{"ssh_public_key", k.public_key}, {"ssh_private_key", k.private_key}});
}

std::optional<HttpResponse> RenewSshKeypair(AuthEnv& gate, RequestContext& ctx,
                                            LateExchange const& exchange) {
  // RSA generation takes tens of milliseconds: on the pool, not an I/O thread.
  return gate.OnPool(exchange, ctx.response_headers,
                     [gate = &gate, access_key = ctx.identity->access_key] {
                       return Guard([&]() -> StatusOr<HttpResponse> {
                         auto k = GenerateSshKeypair();
                         if (!k.ok()) return std::move(k).status();
                         return StoreSshKeypair(gate->store, access_key, *k);
                       });
                     });
}

void TrimRight(std::string& s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
}

StatusOr<HttpResponse> PutSshKeypair(AuthEnv&, RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto pub = p->String({"pubkey"}, true);
  auto priv = p->String({"privkey"}, true);
  if (auto s = p->Check(); !s.ok()) return s;
  SshKeypair k{*pub, *priv};
  TrimRight(k.public_key);
  TrimRight(k.private_key);
  if (auto s = CheckSshKeypair(k.public_key, k.private_key); !s.ok()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
  }
  k.public_key += "\n";
  k.private_key += "\n";
  return StoreSshKeypair(ctx.store, ctx.identity->access_key, k);
}

// POST /auth/signup: off unless configured (Backend.AI leaves it to a hook plugin; an open
// manager should not let anyone in by default).
std::optional<HttpResponse> SignUp(AuthEnv& gate, RequestContext& ctx,
                                   LateExchange const& exchange) {
  if (!gate.allow_signup) {
    return ProblemResponse(MakeProblemStatus(
        ProblemType::kGenericForbidden, "Signup is disabled on this manager (auth.allow_signup)."));
  }
  auto p = Params::From(ctx.request);
  if (!p.ok()) return ProblemResponse(p.status());
  auto domain = p->String({"domain"}, true);
  auto email = p->String({"email"}, true);
  auto password = p->String({"password"}, true);
  auto username = p->String({"username"});
  auto full_name = p->String({"full_name"}).value_or("");
  (void)p->String({"description"});
  if (email && (email->size() > 64 || email->find('@') == std::string::npos ||
                email->find_first_of(" \t\r\n") != std::string::npos)) {
    p->Fail("email", "not an email address");
  }
  if (password && password->size() < 8) p->Fail("password", "at least 8 characters");
  if (username && (username->empty() || username->size() > 64)) {
    p->Fail("username", "1 to 64 characters");
  }
  if (auto s = p->Check(); !s.ok()) return ProblemResponse(s);
  {
    // Each address makes a few signups an hour: accounts are not mass-made, and whether an
    // address is taken cannot be probed quickly.
    std::lock_guard<std::mutex> lock(gate.mu);
    auto d = gate.signups.Admit(gate.Address(ctx.request), "signup", gate.clock());
    if (!d.allowed) {
      return TooManyLogins(d.retry_after_seconds, "Too many signups from this address; retry in " +
                                                      std::to_string(d.retry_after_seconds) +
                                                      " seconds.");
    }
  }
  return gate.OnPool(
      exchange, ctx.response_headers,
      [gate = &gate, domain = *domain, email = *email, password = *password,
       username = username.value_or(*email), full_name] {
        return Guard([&]() -> StatusOr<HttpResponse> {
          auto hash = HashPassword(password);
          if (!hash.ok()) return std::move(hash).status();
          auto keys = gate->store.SignUp(domain, email, username, *hash, full_name);
          if (!keys.ok()) return std::move(keys).status();
          return JsonResponse({{"access_key", keys->first}, {"secret_key", keys->second}}, 201);
        });
      });
}

// GET /
StatusOr<HttpResponse> GetRoot(AuthEnv& env, RequestContext&) {
  protocol::ServerInfo info;
  info.version = protocol::kCurrentApiVersion.ToString();
  info.manager = env.manager_version;
  return server::HttpResponse::Json(200, protocol::EncodeServerInfo(info));
}

// GET /health: liveness and database reachability, for process supervisors and load balancers.
StatusOr<HttpResponse> GetHealth(AuthEnv&, RequestContext& ctx) {
  if (auto probe = ctx.store.Ping(); !probe.ok()) {
    return JsonResponse({{"status", "unhealthy"}, {"database", probe.message()}}, 503);
  }
  return JsonResponse({{"status", "ok"}, {"database", ctx.store.db().Backend()}});
}

// GET|POST /auth, /auth/test: a signed echo.
StatusOr<HttpResponse> AuthTest(AuthEnv&, RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto echo = p->String({"echo"}, true);
  if (auto s = p->Check(); !s.ok()) return s;
  return JsonResponse({{"authorized", "yes"}, {"echo", *echo}});
}

// GET /auth/role
StatusOr<HttpResponse> GetAuthRole(AuthEnv&, RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto group = p->String({"group"});
  if (auto s = p->Check(); !s.ok()) return s;
  auto const& who = *ctx.identity;
  json out = {{"global_role", who.IsSuperadmin() ? "superadmin" : "user"},
              {"domain_role", who.IsSuperadmin() || who.role == "admin" ? "admin" : "user"},
              {"group_role", nullptr}};
  if (group) {
    auto id = ctx.store.FindGroup(who.domain, *group);
    if (!id.ok()) return std::move(id).status();
    if (!*id)
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such user group (or project).");
    auto member = ctx.store.IsMember(**id, who.user_id);
    if (!member.ok()) return std::move(member).status();
    if (*member) out["group_role"] = "user";
  }
  return JsonResponse(out);
}

}  // namespace

void RegisterAuthRoutes(ManagerApi& api) {
  using L = AuthLevel;
  // Owned by the routes. Work on its pool holds a plain pointer: the pool is the env's last
  // member, so its destructor waits for that work while the rest of it still lives (a shared
  // owner there could make a worker destroy, and so join, its own pool).
  AddRoutes<AuthEnv>(
      api, std::make_shared<AuthEnv>(api),
      {
          {"GET", "/", L::kAnonymous, GetRoot},
          {"GET", "/health", L::kAnonymous, GetHealth},
          {"GET", "/auth", L::kUser, AuthTest},
          {"POST", "/auth", L::kUser, AuthTest},
          {"GET", "/auth/test", L::kUser, AuthTest},
          {"POST", "/auth/test", L::kUser, AuthTest},
          {"GET", "/auth/role", L::kUser, GetAuthRole},
          {"POST", "/auth/authorize", L::kAnonymous, Authorize},
          {"POST", "/auth/update-password", L::kUser, UpdatePassword},
          {"POST", "/auth/update-password-no-auth", L::kAnonymous, UpdatePasswordNoAuth},
          {"GET", "/auth/ssh-keypair", L::kUser, GetSshKeypair},
          {"PATCH", "/auth/ssh-keypair", L::kUser, RenewSshKeypair},
          {"POST", "/auth/ssh-keypair", L::kUser, PutSshKeypair},
          {"POST", "/auth/signup", L::kAnonymous, SignUp},
      });
}

}  // namespace bai::manager
