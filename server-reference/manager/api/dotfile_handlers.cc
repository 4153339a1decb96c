// SPDX-License-Identifier: Apache-2.0
// Dotfiles (PROTOCOL.md §9): /user-config/dotfiles (the caller's keypair, or the one an admin
// names with owner_access_key), /group-config/dotfiles (a project's: its domain's admins write,
// its members read) and /domain-config/dotfiles (a domain's: superadmins and its admins write,
// its users read). The agent writes them into every new kernel's /home/work.
#include "bai/protocol/admin_wire.h"
#include "bai/protocol/errors.h"

#include "server-reference/common/http/problem.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/dotfiles.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;

namespace {

// The store's refusals in 24.09's words and types.
Status Refusal(Status const& s) {
  return server::ProblemFor(
      s, {{{StatusCode::kNotFound}, ProblemType::kObjectNotFound, "", "No such dotfile."},
          {{StatusCode::kAlreadyExists},
           ProblemType::kGenericBadRequest,
           "",
           "Dotfile already exists."},
          {{StatusCode::kResourceExhausted},
           ProblemType::kGenericBadRequest,
           "Dotfile creation has failed: "},
          {{StatusCode::kInvalidArgument}, ProblemType::kInvalidApiParams}});
}

struct Target {
  DotfileScope scope;
  std::string owner;
};

// Whose dotfiles a request names, and whether the caller may read (`write` false) or change
// them. Refusals: 403 for a caller without the right, 404 for what it may not know about.
StatusOr<Target> Resolve(RequestContext& ctx, Params& p, DotfileScope scope, bool write) {
  Identity const& who = *ctx.identity;
  if (scope == DotfileScope::kKeypair) {
    auto owner = p.String({"owner_access_key", "ownerAccessKey", "onwer_access_key"});
    if (auto s = p.Check(); !s.ok()) return s;
    if (!owner || *owner == who.access_key) return Target{scope, who.access_key};
    auto kp = ActFor(who, ctx.store, *owner);
    if (!kp.ok()) return kp.status();
    return Target{scope, *owner};
  }
  if (scope == DotfileScope::kDomain) {
    auto domain = p.String({"domain"}, true);
    if (auto s = p.Check(); !s.ok()) return s;
    if (!who.IsSuperadmin() && *domain != who.domain) {
      return MakeProblemStatus(ProblemType::kGenericForbidden,
                               "Only superadmins reach another domain's dotfiles.");
    }
    if (write && !who.IsAdmin()) {
      return MakeProblemStatus(ProblemType::kGenericForbidden,
                               "Only admins change a domain's dotfiles.");
    }
    return Target{scope, *domain};
  }
  auto group = p.String({"group", "groupId", "group_id"}, true);
  auto domain = p.String({"domain"});
  if (auto s = p.Check(); !s.ok()) return s;
  // By id anywhere a superadmin looks; by name within the given (or the caller's) domain.
  auto found = ctx.store.FindGroupAnywhere(*group, domain.value_or(who.domain));
  if (!found.ok()) return std::move(found).status();
  if (!*found || (!who.IsSuperadmin() && (*found)->second != who.domain)) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such user group (or project).");
  }
  std::string id = (*found)->first;
  if (write && !who.IsAdmin()) {
    return MakeProblemStatus(ProblemType::kGenericForbidden,
                             "Only admins change a project's dotfiles.");
  }
  if (!write && !who.IsAdmin()) {
    auto member = ctx.store.IsMember(id, who.user_id);
    if (!member.ok()) return member.status();
    if (!*member) {
      return MakeProblemStatus(ProblemType::kGenericForbidden,
                               "Users cannot access group dotfiles of other groups");
    }
  }
  return Target{scope, id};
}

StatusOr<HttpResponse> Write(RequestContext& ctx, DotfileScope scope, bool replace) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  protocol::Dotfile d;
  d.path = p->String({"path"}, true).value_or("");
  d.data = p->String({"data"}, true).value_or("");
  d.permission = p->String({"permission", "perm"}, true).value_or("");
  if (d.data.size() > protocol::kMaxDotfileBytes) p->Fail("data", "at most 64 KiB");
  auto target = Resolve(ctx, *p, scope, true);
  if (!target.ok()) return target.status();
  if (auto s = ctx.store.RefuseWhileFrozen(); !s.ok()) return s;
  DotfileStore store(ctx.store.db());
  if (auto s = store.Put(target->scope, target->owner, d, replace); !s.ok()) return Refusal(s);
  return JsonResponse(json::object());
}

StatusOr<HttpResponse> Read(RequestContext& ctx, DotfileScope scope) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto path = p->String({"path"});
  auto target = Resolve(ctx, *p, scope, false);
  if (!target.ok()) return target.status();
  DotfileStore store(ctx.store.db());
  auto all = store.List(target->scope, target->owner);
  if (!all.ok()) return std::move(all).status();
  if (!path) return HttpResponse::Json(200, protocol::EncodeDotfiles(*all));
  std::string wanted = *path;
  if (wanted.rfind("/home/work/", 0) == 0) wanted = wanted.substr(11);
  for (auto const& d : *all) {
    if (d.path == wanted) return HttpResponse::Json(200, protocol::EncodeDotfile(d));
  }
  return Refusal(Status(StatusCode::kNotFound, ""));
}

StatusOr<HttpResponse> Remove(RequestContext& ctx, DotfileScope scope) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  auto path = p->String({"path"}, true);
  auto target = Resolve(ctx, *p, scope, true);
  if (!target.ok()) return target.status();
  if (auto s = ctx.store.RefuseWhileFrozen(); !s.ok()) return s;
  DotfileStore store(ctx.store.db());
  if (auto s = store.Delete(target->scope, target->owner, *path); !s.ok()) return Refusal(s);
  return JsonResponse({{"success", true}});
}

}  // namespace

void RegisterDotfileRoutes(ManagerApi& api) {
  using L = AuthLevel;
  for (auto [prefix, scope] : {std::pair{"/user-config", DotfileScope::kKeypair},
                               std::pair{"/group-config", DotfileScope::kGroup},
                               std::pair{"/domain-config", DotfileScope::kDomain}}) {
    std::string path = std::string(prefix) + "/dotfiles";
    api.Add("POST", path, L::kUser, [scope](RequestContext& ctx) {
      return Guard([&] { return Write(ctx, scope, false); });
    });
    api.Add("PATCH", path, L::kUser, [scope](RequestContext& ctx) {
      return Guard([&] { return Write(ctx, scope, true); });
    });
    api.Add("GET", path, L::kUser,
            [scope](RequestContext& ctx) { return Guard([&] { return Read(ctx, scope); }); });
    api.Add("DELETE", path, L::kUser,
            [scope](RequestContext& ctx) { return Guard([&] { return Remove(ctx, scope); }); });
  }
}

}  // namespace bai::manager
