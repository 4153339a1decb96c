// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/api/api.h"

#include "bai/protocol/api_version.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/resource.h"

#include "libbai/internal/json_codec.h"
#include "server-reference/common/agent_protocol.h"
#include "server-reference/common/problem.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/scheduler/scheduling.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;

namespace {

json SlotsJson(std::string const& text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return json::object();
  // Slot maps carry strings on the wire.
  json out = json::object();
  for (auto& [k, v] : j->items()) out[k] = v.is_string() ? v : json(v.dump());
  return out;
}

}  // namespace

HttpResponse ManagerApi::TooManyLogins(std::int64_t retry_after_seconds, std::string message) {
  auto r = ProblemResponse(MakeProblemStatus(ProblemType::kRateLimitExceeded, std::move(message)));
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  return r;
}

StatusOr<HttpResponse> ManagerApi::Login(std::string const& domain, std::string const& username,
                                         std::string const& password, bool& mismatch) {
  auto login = store_.FindLogin(domain, username);
  if (!login.ok()) return std::move(login).status();
  // The same answer for an unknown user and a wrong password.
  if (!*login) SpendPasswordCheck(password);
  if (!*login || !VerifyPassword((*login)->password_hash, password)) {
    mismatch = true;
    return MakeProblemStatus(ProblemType::kAuthFailed, "User credential mismatch.");
  }
  if ((*login)->status != "active") {
    return MakeProblemStatus(ProblemType::kAuthFailed,
                             "The user account is " + (*login)->status + ".");
  }
  auto keypair = store_.ActiveKeypairOf((*login)->user_id);
  if (!keypair.ok()) return std::move(keypair).status();
  if (!*keypair) return MakeProblemStatus(ProblemType::kAuthFailed, "No API keypairs found.");
  return JsonResponse({{"data",
                        {{"access_key", (*keypair)->first},
                         {"secret_key", (*keypair)->second},
                         {"role", (*login)->role},
                         {"status", (*login)->status}}}});
}

std::optional<HttpResponse> ManagerApi::OnPasswordPool(
    std::shared_ptr<server::Exchange> const& exchange,
    std::vector<std::pair<std::string, std::string>> headers, std::function<HttpResponse()> work) {
  bool queued =
      password_pool_.TrySubmit([exchange, headers = std::move(headers), work = std::move(work)] {
        auto response = work();
        for (auto const& h : headers) response.headers.push_back(h);
        exchange->Respond(std::move(response));
      });
  if (!queued) return TooManyLogins(1, "Too many password checks in progress; retry shortly.");
  return std::nullopt;
}

ManagerApi::ManagerApi(Store& store, ApiOptions options)
    : store_(store),
      options_(std::move(options)),
      login_throttle_(options_.login_limits),
      password_pool_(options_.password_workers, options_.password_queue) {
  if (!options_.clock) options_.clock = [] { return std::chrono::system_clock::now(); };
  AddRoutes();
}

void ManagerApi::Handle(std::shared_ptr<server::Exchange> const& exchange) {
  auto const& req = exchange->request();
  if (auto version = req.Header("x-backendai-version")) {
    if (!protocol::IsAcceptedApiVersion(*version)) {
      auto r = ProblemResponse(
          MakeProblemStatus(ProblemType::kGenericBadRequest, "Unsupported API version."));
      exchange->Respond(std::move(r));
      return;
    }
  }
  router_.Dispatch(exchange);
}

void ManagerApi::Add(std::string method, std::string const& pattern, AuthLevel level,
                     SyncHandler handler) {
  AddAsync(std::move(method), pattern, level,
           [handler = std::move(handler)](RequestContext& ctx,
                                          std::shared_ptr<server::Exchange> const&) {
             return std::optional<HttpResponse>(handler(ctx));
           });
}

void ManagerApi::AddAsync(std::string method, std::string const& pattern, AuthLevel level,
                          AsyncHandler handler) {
  router_.Add(std::move(method), pattern,
              [this, level, handler = std::move(handler)](
                  std::shared_ptr<server::Exchange> exchange, server::PathParams const& params) {
                auto const& req = exchange->request();
                std::shared_ptr<KeypairRecord const> keypair;
                RateLimiter::Result limit{true, 1000, 1000};
                std::optional<HttpResponse> response;
                if (level != AuthLevel::kAnonymous) {
                  auto now = options_.clock();
                  auto who = Authenticate(req, store_, keypairs_, level, now);
                  if (!who.ok()) {
                    response = ProblemResponse(who.status());
                  } else {
                    keypair = *std::move(who);
                    limit = limiter_.Hit(keypair->identity.access_key, keypair->identity.rate_limit,
                                         now);
                    if (!limit.allowed) {
                      response = ProblemResponse(MakeProblemStatus(
                          ProblemType::kRateLimitExceeded,
                          "Over " + std::to_string(limit.limit) + " requests in 900 seconds."));
                    }
                  }
                }
                RequestContext ctx{req, params, keypair ? &keypair->identity : nullptr, store_, {}};
                ctx.response_headers = {{"X-RateLimit-Limit", std::to_string(limit.limit)},
                                        {"X-RateLimit-Remaining", std::to_string(limit.remaining)},
                                        {"X-RateLimit-Window", "900"}};
                if (!response) {
                  response = handler(ctx, exchange);
                  if (!response) return;  // the handler answers later
                }
                for (auto& h : ctx.response_headers) response->headers.push_back(h);
                exchange->Respond(*std::move(response));
              });
}

void ManagerApi::AddAgentRoutes(AgentRegistry& agents, std::string cluster_secret) {
  AddAsync("GET", server::agent_protocol::kPath, AuthLevel::kAnonymous,
           [this, &agents, secret = std::move(cluster_secret)](
               RequestContext& ctx,
               std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
             auto header = ctx.request.Header("x-bai-agent-auth");
             if (!header) {
               return ProblemResponse(
                   MakeProblemStatus(ProblemType::kAuthFailed, "Agent credentials required."));
             }
             auto id =
                 server::agent_protocol::VerifyAuth(std::string(*header), secret, options_.clock());
             if (!id.ok()) return ProblemResponse(id.status());
             if (!exchange->IsWebSocketUpgrade()) {
               return ProblemResponse(MakeProblemStatus(ProblemType::kGenericBadRequest,
                                                        "Expected a WebSocket upgrade."));
             }
             exchange->AcceptWebSocket(agents.Handlers(*id));
             return std::nullopt;
           });
}

void ManagerApi::AddRoutes() {
  using L = AuthLevel;

  Add("GET", "/", L::kAnonymous, [this](RequestContext&) {
    return JsonResponse({{"version", protocol::kCurrentApiVersion.ToString()},
                         {"manager", options_.manager_version}});
  });

  // Liveness and database reachability, for process supervisors and load balancers.
  Add("GET", "/health", L::kAnonymous, [](RequestContext& ctx) {
    auto probe = ctx.store.db().Query("SELECT 1");
    if (!probe.ok()) {
      return JsonResponse({{"status", "unhealthy"}, {"database", probe.status().message()}}, 503);
    }
    return JsonResponse({{"status", "ok"}, {"database", ctx.store.db().Backend()}});
  });

  auto auth_test = [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto p = Params::From(ctx.request);
      if (!p.ok()) return std::move(p).status();
      auto echo = p->String({"echo"}, true);
      if (auto s = p->Check(); !s.ok()) return s;
      return JsonResponse({{"authorized", "yes"}, {"echo", *echo}});
    });
  };
  for (char const* path : {"/auth", "/auth/test"}) {
    Add("GET", path, L::kUser, auth_test);
    Add("POST", path, L::kUser, auth_test);
  }

  // Password login. Throttled per client address and per account before any work; the Argon2
  // check runs on the password pool, never on an I/O thread.
  AddAsync(
      "POST", "/auth/authorize", L::kAnonymous,
      [this](RequestContext& ctx,
             std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
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
        std::string account = *domain + "\n" + *username;
        {
          std::lock_guard<std::mutex> lock(login_mu_);
          auto d = login_throttle_.Admit(ctx.request.peer_address, account, options_.clock());
          if (!d.allowed) {
            return TooManyLogins(d.retry_after_seconds, "Too many login attempts; retry in " +
                                                            std::to_string(d.retry_after_seconds) +
                                                            " seconds.");
          }
        }
        return OnPasswordPool(
            exchange, ctx.response_headers,
            [this, account, domain = *domain, username = *username, password = *password] {
              bool mismatch = false;
              auto response = Guard([&] { return Login(domain, username, password, mismatch); });
              std::lock_guard<std::mutex> lock(login_mu_);
              if (mismatch) {
                login_throttle_.Failed(account, options_.clock());
              } else if (response.status == 200) {
                login_throttle_.Succeeded(account);
              }
              return response;
            });
      });

  // Off unless configured (Backend.AI leaves it to a hook plugin; an open manager should not let
  // anyone in by default).
  AddAsync(
      "POST", "/auth/signup", L::kAnonymous,
      [this](RequestContext& ctx,
             std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
        if (!options_.allow_signup) {
          return ProblemResponse(
              MakeProblemStatus(ProblemType::kGenericForbidden,
                                "Signup is disabled on this manager (auth.allow_signup)."));
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
        return OnPasswordPool(
            exchange, ctx.response_headers,
            [this, domain = *domain, email = *email, password = *password,
             username = username.value_or(*email), full_name] {
              return Guard([&]() -> StatusOr<HttpResponse> {
                auto hash = HashPassword(password);
                if (!hash.ok()) return std::move(hash).status();
                auto keys = store_.SignUp(domain, email, username, *hash, full_name);
                if (!keys.ok()) return std::move(keys).status();
                return JsonResponse({{"access_key", keys->first}, {"secret_key", keys->second}},
                                    201);
              });
            });
      });

  Add("GET", "/auth/role", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
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
          return MakeProblemStatus(ProblemType::kObjectNotFound,
                                   "No such user group (or project).");
        auto member = ctx.store.IsMember(**id, who.user_id);
        if (!member.ok()) return std::move(member).status();
        if (*member) out["group_role"] = "user";
      }
      return JsonResponse(out);
    });
  });

  Add("GET", "/config/resource-slots", L::kAnonymous, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto types = ctx.store.ClusterSlotTypes();
      if (!types.ok()) return std::move(types).status();
      return JsonResponse(json(*types));
    });
  });

  Add("GET", "/resource/presets", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto presets = ctx.store.ListPresets();
      if (!presets.ok()) return std::move(presets).status();
      json list = json::array();
      for (auto const& p : *presets) {
        list.push_back(
            {{"name", p.name},
             {"resource_slots", SlotsJson(p.resource_slots)},
             {"shared_memory", p.shared_memory ? json(*p.shared_memory) : json(nullptr)}});
      }
      return JsonResponse({{"presets", list}});
    });
  });

  Add("POST", "/resource/check-presets", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto p = Params::From(ctx.request);
      if (!p.ok()) return std::move(p).status();
      auto sg = p->String({"scaling_group", "scalingGroup"});
      std::string group = p->String({"group", "group_name", "groupName"}).value_or("default");
      if (auto s = p->Check(); !s.ok()) return s;
      auto gid = ctx.store.FindGroup(ctx.identity->domain, group);
      if (!gid.ok()) return std::move(gid).status();
      if (!*gid) {
        return MakeProblemStatus(ProblemType::kInvalidApiParams,
                                 "Unknown user group (or project): " + group);
      }
      auto allowed = ctx.store.AllowedScalingGroups(*ctx.identity, group);
      if (!allowed.ok()) return std::move(allowed).status();
      std::vector<std::string> groups = *allowed;
      if (sg) {
        if (std::find(groups.begin(), groups.end(), *sg) == groups.end()) {
          return MakeProblemStatus(ProblemType::kInvalidApiParams,
                                   "Unknown or not allowed resource group: " + *sg);
        }
        groups = {*sg};
      }
      auto presets = ctx.store.ListPresets();
      if (!presets.ok()) return std::move(presets).status();
      std::vector<std::array<std::string, 3>> list;
      for (auto const& preset : *presets) {
        list.push_back({preset.name, preset.resource_slots, preset.shared_memory.value_or("")});
      }
      auto result = CheckPresets(ctx.store.db(), ctx.identity->access_key, groups, list);
      if (!result.ok()) return std::move(result).status();
      return JsonResponse(json::parse(*result));
    });
  });

  Add("GET", "/scaling-groups", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto p = Params::From(ctx.request);
      if (!p.ok()) return std::move(p).status();
      auto group = p->String({"group", "group_id", "group_name"});
      if (auto s = p->Check(); !s.ok()) return s;
      if (group) {
        auto id = ctx.store.FindGroup(ctx.identity->domain, *group);
        if (!id.ok()) return std::move(id).status();
        if (!*id)
          return MakeProblemStatus(ProblemType::kObjectNotFound,
                                   "No such user group (or project).");
      }
      auto names = ctx.store.AllowedScalingGroups(*ctx.identity, group.value_or(""));
      if (!names.ok()) return std::move(names).status();
      json list = json::array();
      for (auto const& n : *names) list.push_back({{"name", n}});
      return JsonResponse({{"scaling_groups", list}});
    });
  });

  Add("GET", "/manager/status", L::kUser, [this](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto status = ctx.store.GetSetting("status");
      if (!status.ok()) return std::move(status).status();
      auto active = ctx.store.ActiveSessionCount();
      if (!active.ok()) return std::move(active).status();
      std::string s = status->value_or("running");
      json node = {{"id", "bai-manager"},
                   {"num_proc", 1},
                   {"service_addr", nullptr},
                   {"heartbeat_timeout", 15.0},
                   {"ssl_enabled", false},
                   {"active_sessions", *active},
                   {"status", s},
                   {"version", options_.manager_version},
                   {"api_version", protocol::kCurrentApiVersion.ToString()}};
      return JsonResponse(
          {{"nodes", json::array({node})}, {"status", s}, {"active_sessions", *active}});
    });
  });

  Add("PUT", "/manager/status", L::kSuperadmin, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto p = Params::From(ctx.request);
      if (!p.ok()) return std::move(p).status();
      auto status = p->String({"status"}, true);
      if (status && *status != "running" && *status != "frozen") {
        p->Fail("status", "must be \"running\" or \"frozen\"");
      }
      if (auto s = p->Check(); !s.ok()) return s;
      if (auto s = ctx.store.SetSetting("status", *status); !s.ok()) return s;
      return HttpResponse::NoContent();
    });
  });

  Add("GET", "/manager/announcement", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto text = ctx.store.GetSetting("announcement");
      if (!text.ok()) return std::move(text).status();
      return JsonResponse(
          {{"enabled", text->has_value() && !(*text)->empty()}, {"message", text->value_or("")}});
    });
  });

  Add("POST", "/manager/announcement", L::kSuperadmin, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto p = Params::From(ctx.request);
      if (!p.ok()) return std::move(p).status();
      auto enabled = p->Bool({"enabled"});
      auto message = p->String({"message"});
      if (!enabled) p->Fail("enabled", "required");
      if (auto s = p->Check(); !s.ok()) return s;
      auto s = ctx.store.SetSetting("announcement", *enabled ? message.value_or("") : "");
      if (!s.ok()) return s;
      return HttpResponse::NoContent();
    });
  });

  Add("GET", "/user-config/bootstrap-script", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto script = ctx.store.GetBootstrapScript(ctx.identity->access_key);
      if (!script.ok()) return std::move(script).status();
      return JsonResponse(json(*script));
    });
  });

  Add("POST", "/user-config/bootstrap-script", L::kUser, [](RequestContext& ctx) {
    return Guard([&]() -> StatusOr<HttpResponse> {
      auto p = Params::From(ctx.request);
      if (!p.ok()) return std::move(p).status();
      auto script = p->String({"script"}, true);
      if (script && script->size() > 64 * 1024) p->Fail("script", "longer than 64 KiB");
      if (auto s = p->Check(); !s.ok()) return s;
      if (auto s = ctx.store.SetBootstrapScript(ctx.identity->access_key, *script); !s.ok())
        return s;
      return HttpResponse::NoContent();
    });
  });
}

}  // namespace bai::manager
