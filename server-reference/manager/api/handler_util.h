// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/errors.h"
#include "bai/status.h"

#include "server-reference/common/http/http.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/manager/api/api.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/state/sessions.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace bai::manager {

/// A JSON response.
inline server::HttpResponse JsonResponse(nlohmann::json const& body, int status = 200) {
  return server::HttpResponse::Json(status, body.dump());
}

/// Runs `body` (returning StatusOr<HttpResponse>), turning an error into its problem response.
template <typename F>
server::HttpResponse Guard(F&& body) {
  StatusOr<server::HttpResponse> r = body();
  if (!r.ok()) return server::ProblemResponse(r.status());
  return *std::move(r);
}

/// A named handler returning StatusOr<HttpResponse>, as a SyncHandler (errors become problem
/// responses).
inline SyncHandler Guarded(StatusOr<server::HttpResponse> (*handler)(RequestContext&)) {
  return [handler](RequestContext& ctx) { return Guard([&] { return handler(ctx); }); };
}

/// The exchange an asynchronous handler may answer later (RespondLate).
using LateExchange = std::shared_ptr<server::Exchange>;

/// A handler as a named function over `Env`, what its area's handlers share (stores, the agent
/// registry, a login gate). A synchronous one answers now; an error status becomes its problem
/// response.
template <class Env>
using SyncOf = StatusOr<server::HttpResponse> (*)(Env&, RequestContext&);
/// An asynchronous one answers now, or returns nullopt after arranging to answer the exchange
/// later (from an agent's reply, a pool, a WebSocket upgrade).
template <class Env>
using AsyncOf = std::optional<server::HttpResponse> (*)(Env&, RequestContext&, LateExchange const&);

/// One row of an area's route table.
template <class Env>
struct Route {
  char const* method;
  char const* pattern;
  AuthLevel level;
  std::variant<SyncOf<Env>, AsyncOf<Env>> handler;
  /// A synchronous handler whose work may take long: run on the slow-work pool
  /// (ManagerApi::AddPooled).
  bool pooled = false;
};

/// Adds an area's route table; the routes share `env` and keep it alive.
template <class Env>
void AddRoutes(ManagerApi& api, std::shared_ptr<Env> const& env,
               std::initializer_list<Route<Env>> routes) {
  for (auto const& r : routes) {
    if (auto const* sync = std::get_if<SyncOf<Env>>(&r.handler)) {
      SyncHandler h = [env, f = *sync](RequestContext& ctx) {
        return Guard([&] { return f(*env, ctx); });
      };
      r.pooled ? api.AddPooled(r.method, r.pattern, r.level, std::move(h))
               : api.Add(r.method, r.pattern, r.level, std::move(h));
    } else {
      api.AddAsync(r.method, r.pattern, r.level,
                   [env, f = std::get<AsyncOf<Env>>(r.handler)](RequestContext& ctx,
                                                                LateExchange const& exchange) {
                     return f(*env, ctx, exchange);
                   });
    }
  }
}

/// The rank of a role for acting on others: superadmin 3, admin (by role or keypair flag) 2,
/// anyone else 1.
inline int RoleRank(Identity const& id) { return id.IsSuperadmin() ? 3 : id.IsAdmin() ? 2 : 1; }

/// Whether `who` may act for the keypair `owner` (a session created, seen or ended for it):
/// superadmins anywhere, admins within their own domain and never for a keypair of a higher
/// role (a domain admin acting as the superadmin was an escalation); the owner's keypair when
/// so. Anyone else gets 403; an admin naming a keypair of another domain gets the same 404 as
/// for one that does not exist, so nothing about other domains leaks.
inline StatusOr<KeypairRecord> ActFor(Identity const& who, Store& store, std::string const& owner) {
  if (!who.IsAdmin()) {
    return protocol::MakeProblemStatus(protocol::ProblemType::kGenericForbidden,
                                       "Only admins may act for another keypair.");
  }
  auto kp = store.FindKeypair(owner);
  if (!kp.ok()) return kp.status();
  if (!*kp || (!who.IsSuperadmin() && (*kp)->identity.domain != who.domain)) {
    return protocol::MakeProblemStatus(protocol::ProblemType::kObjectNotFound, "No such keypair.");
  }
  if (RoleRank((*kp)->identity) > RoleRank(who)) {
    return protocol::MakeProblemStatus(protocol::ProblemType::kGenericForbidden,
                                       "Admins may not act for a keypair of a higher role.");
  }
  return **kp;
}

/// The keypair whose sessions a request acts on: the caller's own, or the one its
/// `owner_access_key` names (query, or the JSON body), as ActFor allows.
inline StatusOr<std::string> ActingAccessKey(RequestContext& ctx) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return p.status();
  auto owner = p->String({"owner_access_key", "ownerAccessKey"});
  if (auto st = p->Check(); !st.ok()) return st;
  if (!owner || *owner == ctx.identity->access_key) return ctx.identity->access_key;
  auto kp = ActFor(*ctx.identity, ctx.store, *owner);
  if (!kp.ok()) return kp.status();
  return *owner;
}

/// The session `{id}` among those the caller may act on (ActingAccessKey); `allow_dead` also
/// finds ended ones.
inline StatusOr<SessionRecord> ResolveSession(SessionStore& sessions, RequestContext& ctx,
                                              bool allow_dead, bool destructive = false) {
  auto key = ActingAccessKey(ctx);
  if (!key.ok()) return key.status();
  return sessions.Resolve(ctx.params.at("id"), *key, allow_dead, destructive);
}

/// A session that can take kernel commands: RUNNING on an agent (else 400 invalid-api-params).
inline StatusOr<SessionRecord> ResolveRunning(SessionStore& sessions, RequestContext& ctx,
                                              bool destructive = false) {
  auto s = ResolveSession(sessions, ctx, false, destructive);
  if (!s.ok()) return s.status();
  if (s->status != protocol::SessionStatus::kRunning || !s->agent_id) {
    return protocol::MakeProblemStatus(
        protocol::ProblemType::kInvalidApiParams,
        "The session is " + std::string(protocol::ToString(s->status)) + ", not RUNNING.");
  }
  return s;
}

/// Answers a request whose handler returned before the agent did, with its X-RateLimit-*
/// headers.
inline void RespondLate(server::Exchange& exchange,
                        std::vector<std::pair<std::string, std::string>> const& headers,
                        server::HttpResponse r) {
  for (auto const& h : headers) r.headers.push_back(h);
  exchange.Respond(std::move(r));
}

/// Why an agent request did not succeed, in words: the transport's error, the agent's `msg`
/// (`fallback` when it gave none), or a malformed reply.
template <class Reply>
std::string AgentFailure(StatusOr<std::string> const& result, StatusOr<Reply> const& reply,
                         std::string const& fallback) {
  if (!result.ok()) return result.status().message();
  if (!reply.ok()) return "malformed agent reply: " + reply.status().message();
  return reply->msg.empty() ? fallback : reply->msg;
}

}  // namespace bai::manager
