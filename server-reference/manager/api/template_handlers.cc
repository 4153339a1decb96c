// SPDX-License-Identifier: Apache-2.0
// Session templates (PROTOCOL.md §9): `/template/session` create, list, get, update, delete, and
// the body create-from-template makes. A template belongs to its owner (the caller, or the
// keypair an admin names with owner_access_key) in a project of the owner's domain; its owner,
// the domain's admins and superadmins read, change, delete and start it. 24.09 lists every
// user's templates to everyone; bai lists one's own (all=true: an admin's domain, a
// superadmin's everything).
#include "bai/protocol/admin_wire.h"
#include "bai/protocol/errors.h"

#include "server-reference/common/wire/yaml_json.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/templates.h"
#include "server-reference/manager/templates/session_template.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;

namespace {

Status NotFound() {
  return MakeProblemStatus(ProblemType::kObjectNotFound, "No such task template.");
}

Status Invalid(Status const& s) {
  return MakeProblemStatus(ProblemType::kInvalidApiParams, s.message());
}

// Whose templates a request acts for: the caller, or the keypair its owner_access_key names.
StatusOr<Identity> Owner(RequestContext& ctx, Params& p) {
  auto owner = p.String({"owner_access_key", "ownerAccessKey"});
  if (auto st = p.Check(); !st.ok()) return st;
  if (!owner || *owner == ctx.identity->access_key) return *ctx.identity;
  auto kp = ActFor(*ctx.identity, ctx.store, *owner);
  if (!kp.ok()) return kp.status();
  return kp->identity;
}

// Whether `who` may read and change `t`: its owner, its domain's admins, superadmins.
bool Reaches(Identity const& who, Identity const& owner, TemplateRecord const& t) {
  if (t.user_uuid == owner.user_id || t.user_uuid == who.user_id) return true;
  return who.IsSuperadmin() || (who.IsAdmin() && t.domain_name == who.domain);
}

// An active template the caller reaches; 404 for one it does not (nothing about others leaks).
StatusOr<TemplateRecord> Find(RequestContext& ctx, Identity const& owner, std::string const& id) {
  TemplateStore store(ctx.store.db());
  auto t = store.Get(id);
  if (!t.ok()) return t.status();
  if (!*t || !Reaches(*ctx.identity, owner, **t)) return NotFound();
  return **t;
}

// The project a template goes in: `group` (default "default") of the owner's domain, which
// the owner must belong to (superadmins: any project of that domain).
StatusOr<std::string> ProjectOf(RequestContext& ctx, Params& p, Identity const& owner) {
  auto group = p.String({"group", "groupName", "group_name"}).value_or("default");
  auto domain = p.String({"domain", "domainName", "domain_name"});
  if (auto st = p.Check(); !st.ok()) return st;
  if (domain && *domain != owner.domain) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such domain.");
  }
  return ctx.store.ResolveProject(owner.domain, owner.user_id, group, ctx.identity->IsSuperadmin());
}

std::string NewId() {
  std::string id = GenerateUuid();
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  return id;
}

// POST /template/session
StatusOr<HttpResponse> Create(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto payload = p->String({"payload"}, true);
  auto owner = Owner(ctx, *p);
  if (!owner.ok()) return owner.status();
  auto group_id = ProjectOf(ctx, *p, *owner);
  if (!group_id.ok()) return group_id.status();
  auto parsed = templates::ParsePayload(*payload);
  if (!parsed.ok()) return Invalid(parsed.status());
  if (auto frozen = ctx.store.RefuseWhileFrozen(); !frozen.ok()) return frozen;
  TemplateStore store(ctx.store.db());
  json answers = json::array();
  for (auto const& e : parsed->entries) {
    TemplateRecord t;
    t.id = NewId();
    t.name = e.name;
    t.created_at = NowIso();
    t.domain_name = owner->domain;
    t.group_id = *group_id;
    t.user_uuid = owner->user_id;
    t.template_json = e.body.dump();
    if (auto st = store.Insert(t); !st.ok()) return st;
    answers.push_back({{"id", t.id}, {"user", t.user_uuid}});
  }
  return JsonResponse(parsed->one_answer ? answers.back() : answers);
}

// GET /template/session
StatusOr<HttpResponse> List(RequestContext& ctx) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  bool all = p->Bool({"all"}).value_or(false);
  auto group = p->String({"group_id", "groupId"});
  if (auto st = p->Check(); !st.ok()) return st;
  Identity const& who = *ctx.identity;
  if (all && !who.IsAdmin()) {
    return MakeProblemStatus(ProblemType::kGenericForbidden,
                             "Only admins list other users' templates (all=true).");
  }
  std::optional<std::string> user, domain;
  if (!all) user = who.user_id;
  if (all && !who.IsSuperadmin()) domain = who.domain;
  TemplateStore store(ctx.store.db());
  auto rows = store.List(user, domain);
  if (!rows.ok()) return std::move(rows).status();
  std::vector<protocol::SessionTemplateInfo> out;
  for (auto const& t : *rows) {
    if (group && t.group_id != *group) continue;
    protocol::SessionTemplateInfo i;
    i.id = t.id;
    i.name = t.name;
    i.created_at = t.created_at;
    i.is_owner = t.user_uuid == who.user_id;
    i.user = t.user_uuid;
    i.group = t.group_id;
    i.user_email = t.user_email;
    i.group_name = t.group_name;
    i.domain_name = t.domain_name;
    i.template_json = t.template_json;
    out.push_back(std::move(i));
  }
  return HttpResponse::Json(200, protocol::EncodeSessionTemplates(out));
}

// GET /template/session/{id}?format=json|yaml
StatusOr<HttpResponse> Get(RequestContext& ctx) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  auto format = p->String({"format"}).value_or("json");
  if (format != "json" && format != "yaml")
    p->Fail("format", "format should be \"yaml\" or \"json\"");
  auto owner = Owner(ctx, *p);
  if (!owner.ok()) return owner.status();
  auto t = Find(ctx, *owner, ctx.params.at("id"));
  if (!t.ok()) return t.status();
  json body = json::parse(t->template_json, nullptr, false);
  json answer = {{"template", body.is_discarded() ? json::object() : body},
                 {"name", t->name},
                 {"user_uuid", t->user_uuid},
                 {"group_id", t->group_id},
                 {"domain_name", t->domain_name}};
  if (format == "json") return JsonResponse(answer);
  HttpResponse r;
  r.content_type = "text/yaml; charset=utf-8";
  r.body = server::ToYaml(answer);
  return r;
}

// PUT /template/session/{id}
StatusOr<HttpResponse> Put(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto payload = p->String({"payload"}, true);
  bool moves = p->Raw({"group", "groupName", "group_name"}) != nullptr;
  auto owner = Owner(ctx, *p);
  if (!owner.ok()) return owner.status();
  auto t = Find(ctx, *owner, ctx.params.at("id"));
  if (!t.ok()) return t.status();
  auto parsed = templates::ParsePayload(*payload);
  if (!parsed.ok()) return Invalid(parsed.status());
  if (parsed->entries.size() != 1) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "An update takes one template; this payload has " +
                                 std::to_string(parsed->entries.size()) + ".");
  }
  if (moves) {  // to another project only when the request names one
    Identity holder = *owner;
    holder.user_id = t->user_uuid;
    auto group_id = ProjectOf(ctx, *p, holder);
    if (!group_id.ok()) return group_id.status();
    t->group_id = *group_id;
  }
  if (auto frozen = ctx.store.RefuseWhileFrozen(); !frozen.ok()) return frozen;
  t->name = parsed->entries.front().name;
  t->template_json = parsed->entries.front().body.dump();
  TemplateStore store(ctx.store.db());
  if (auto st = store.Update(*t); !st.ok())
    return st.code() == StatusCode::kNotFound ? NotFound() : st;
  return JsonResponse({{"success", true}});
}

// DELETE /template/session/{id}
StatusOr<HttpResponse> Delete(RequestContext& ctx) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return std::move(p).status();
  auto owner = Owner(ctx, *p);
  if (!owner.ok()) return owner.status();
  auto t = Find(ctx, *owner, ctx.params.at("id"));
  if (!t.ok()) return t.status();
  if (auto frozen = ctx.store.RefuseWhileFrozen(); !frozen.ok()) return frozen;
  TemplateStore store(ctx.store.db());
  if (auto st = store.Deactivate(t->id); !st.ok()) {
    return st.code() == StatusCode::kNotFound ? NotFound() : st;
  }
  return JsonResponse({{"success", true}});
}

}  // namespace

StatusOr<json> TemplateCreationBody(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto id = p->String({"template_id", "templateId"}, true);
  auto owner = Owner(ctx, *p);
  if (!owner.ok()) return owner.status();
  auto t = Find(ctx, *owner, *id);
  if (!t.ok()) return t.status();
  json raw = json::parse(t->template_json, nullptr, false);
  auto checked = templates::CheckTaskTemplate(raw, "template");
  if (!checked.ok()) return Invalid(checked.status());
  templates::Origin origin;
  origin.domain_name = t->domain_name;
  origin.group_name = t->group_name;
  auto body = templates::CreationRequest(*checked, origin, p->values());
  if (!body.ok()) {
    if (body.status().code() == StatusCode::kUnimplemented) {
      return MakeProblemStatus(ProblemType::kNotImplemented, body.status().message());
    }
    return Invalid(body.status());
  }
  return body;
}

void RegisterTemplateRoutes(ManagerApi& api) {
  using L = AuthLevel;
  api.Add("POST", "/template/session", L::kUser, Guarded(&Create));
  api.Add("GET", "/template/session", L::kUser, Guarded(&List));
  api.Add("GET", "/template/session/{id}", L::kUser, Guarded(&Get));
  api.Add("PUT", "/template/session/{id}", L::kUser, Guarded(&Put));
  api.Add("DELETE", "/template/session/{id}", L::kUser, Guarded(&Delete));
}

}  // namespace bai::manager
