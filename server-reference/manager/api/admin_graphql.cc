// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/api/admin_graphql.h"

#include "bai/protocol/errors.h"

#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"
#include "server-reference/manager/admin/roles.h"
#include "server-reference/manager/api/admin_fields.h"
#include "server-reference/manager/api/graphql_util.h"
#include "server-reference/manager/state/domains.h"
#include "server-reference/manager/state/groups.h"
#include "server-reference/manager/state/policies.h"

#include <algorithm>
#include <cctype>

namespace bai::manager {

namespace {

using graphql::PlannedField;
using nlohmann::json;

using admin::Given;
using admin::NoMatching;
using admin::Outcome;

bool ValidDomainName(std::string const& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// total_resource_slots (SlotMapInput); "" is no limit, as 22.03's client sends it.
StatusOr<std::string> SlotsText(json const& value) {
  if (value.is_string() && value.get<std::string>().empty()) return std::string("{}");
  return SlotMapInput(value, "total_resource_slots");
}

json GroupJson(protocol::Group const& g) {
  return internal::ParseJson(protocol::EncodeGroup(g)).value_or(json(nullptr));
}

json DomainJson(protocol::Domain const& d) {
  return internal::ParseJson(protocol::EncodeDomain(d)).value_or(json(nullptr));
}

class AdminResolver {
 public:
  AdminResolver(Identity const& who, server::Database& db)
      : who_(who), role_(admin::RoleOf(who)), db_(db), domains_(db), groups_(db) {}

  std::optional<StatusOr<json>> Resolve(PlannedField const& f) {
    if (f.name == "domain") return Domain(f);
    if (f.name == "domains") return Domains(f);
    if (f.name == "group") return Group(f);
    if (f.name == "groups" || f.name == "groups_by_name") return Groups(f);
    if (f.name == "create_domain") return CreateDomain(f);
    if (f.name == "modify_domain") return ModifyDomain(f);
    if (f.name == "delete_domain") return DeleteDomain(f);
    if (f.name == "purge_domain") return PurgeDomain(f);
    if (f.name == "create_group") return CreateGroup(f);
    if (f.name == "modify_group") return ModifyGroup(f);
    if (f.name == "delete_group") return DeleteGroup(f);
    if (f.name == "purge_group") return PurgeGroup(f);
    return std::nullopt;
  }

 private:
  static json Denied(PlannedField const& f) { return admin::Denied(f); }

  // Superadmins anywhere; admins within their own domain (24.09's privileged_mutation).
  bool MayManage(std::string const& domain) const {
    return role_ == admin::Role::kSuperadmin ||
           (role_ == admin::Role::kAdmin && domain == who_.domain);
  }

  // Superadmins see every project, admins their domain's, others those they belong to.
  StatusOr<bool> MaySee(protocol::Group const& g) {
    if (role_ == admin::Role::kSuperadmin) return true;
    if (g.domain_name != who_.domain) return false;
    if (role_ == admin::Role::kAdmin) return true;
    return Store(db_).IsMember(g.id, who_.user_id);
  }

  StatusOr<json> Group(PlannedField const& f) {
    auto g = groups_.Get(f.args.value("id", ""));
    if (!g.ok()) return g.status();
    if (!*g) return json(nullptr);
    auto visible = MaySee(**g);
    if (!visible.ok()) return visible.status();
    return *visible ? GroupJson(**g) : json(nullptr);
  }

  StatusOr<json> Groups(PlannedField const& f) {
    std::string domain = f.args.contains("domain_name") && f.args["domain_name"].is_string()
                             ? f.args["domain_name"].get<std::string>()
                             : std::string();
    if (role_ != admin::Role::kSuperadmin) {
      if (!domain.empty() && domain != who_.domain) return json::array();
      domain = who_.domain;
    }
    std::optional<bool> active;
    if (auto it = f.args.find("is_active"); it != f.args.end() && it->is_boolean()) {
      active = it->get<bool>();
    }
    auto list = groups_.List(domain, f.args.value("name", ""), active);
    if (!list.ok()) return list.status();
    json out = json::array();
    for (auto const& g : *list) {
      auto visible = MaySee(g);
      if (!visible.ok()) return visible.status();
      if (*visible) out.push_back(GroupJson(g));
    }
    return out;
  }

  StatusOr<json> CreateGroup(PlannedField const& f) {
    json const& props = f.args["props"];
    protocol::Group g;
    g.name = f.args.value("name", "");
    g.domain_name = props.value("domain_name", "");
    if (!MayManage(g.domain_name)) return Denied(f);
    if (!ValidDomainName(g.name)) {
      return Outcome(false, "invalid name: 1 to 64 letters, digits, '_', '-' or '.'");
    }
    if (auto const* v = Given(props, "type")) g.type = v->get<std::string>();
    if (g.type != "GENERAL" && g.type != "MODEL_STORE") {
      return Outcome(false, "type: GENERAL or MODEL_STORE");
    }
    if (auto const* v = Given(props, "description")) g.description = v->get<std::string>();
    if (auto const* v = Given(props, "is_active")) g.is_active = v->get<bool>();
    if (auto const* v = Given(props, "total_resource_slots")) {
      auto slots = SlotsText(*v);
      if (!slots.ok()) return Outcome(false, slots.status().message());
      g.total_resource_slots = *slots;
    }
    if (auto const* v = Given(props, "allowed_vfolder_hosts")) {
      g.allowed_vfolder_hosts = v->is_string() ? v->get<std::string>() : v->dump();
    }
    if (auto const* v = Given(props, "integration_id"); v && !v->get<std::string>().empty()) {
      g.integration_id = v->get<std::string>();
    }
    if (auto const* v = Given(props, "resource_policy")) g.resource_policy = v->get<std::string>();
    auto id = groups_.Create(g);
    if (id.status().code() == StatusCode::kAlreadyExists ||
        id.status().code() == StatusCode::kNotFound) {
      return json{
          {"ok", false}, {"msg", "integrity error: " + id.status().message()}, {"group", nullptr}};
    }
    if (!id.ok()) return id.status();
    auto made = groups_.Get(*id);
    if (!made.ok()) return made.status();
    return json{
        {"ok", true}, {"msg", "success"}, {"group", *made ? GroupJson(**made) : json(nullptr)}};
  }

  StatusOr<json> ModifyGroup(PlannedField const& f) {
    std::string id = f.args.value("gid", "");
    json const& props = f.args["props"];
    auto g = groups_.Get(id);
    if (!g.ok()) return g.status();
    if (!*g) return json{{"ok", false}, {"msg", "no such group"}, {"group", nullptr}};
    if (!MayManage((*g)->domain_name)) return Denied(f);
    GroupChanges c;
    if (auto const* v = Given(props, "name")) {
      if (!ValidDomainName(v->get<std::string>())) {
        return Outcome(false, "invalid name: 1 to 64 letters, digits, '_', '-' or '.'");
      }
      c.name = v->get<std::string>();
    }
    if (auto const* v = Given(props, "description")) c.description = v->get<std::string>();
    if (auto const* v = Given(props, "is_active")) c.is_active = v->get<bool>();
    if (auto const* v = Given(props, "domain_name")) {
      if (!MayManage(v->get<std::string>())) return Denied(f);
      c.domain_name = v->get<std::string>();
    }
    if (auto const* v = Given(props, "total_resource_slots")) {
      auto slots = SlotsText(*v);
      if (!slots.ok()) return Outcome(false, slots.status().message());
      c.total_resource_slots = *slots;
    }
    if (auto const* v = Given(props, "allowed_vfolder_hosts")) {
      c.allowed_vfolder_hosts = v->is_string() ? v->get<std::string>() : v->dump();
    }
    if (auto const* v = Given(props, "integration_id")) c.integration_id = v->get<std::string>();
    if (auto const* v = Given(props, "resource_policy")) c.resource_policy = v->get<std::string>();
    if (auto const* v = Given(props, "user_update_mode")) {
      c.user_update_mode = v->get<std::string>();
      if (c.user_update_mode != "add" && c.user_update_mode != "remove") {
        return Outcome(false, "invalid user_update_mode: add or remove");
      }
    }
    if (auto const* v = Given(props, "user_uuids"); v && !c.user_update_mode.empty()) {
      for (auto const& u : *v) {
        if (u.is_string()) c.user_uuids.push_back(u.get<std::string>());
      }
    }
    bool fields = c.name || c.description || c.is_active || c.domain_name ||
                  c.total_resource_slots || c.allowed_vfolder_hosts || c.integration_id ||
                  c.resource_policy;
    if (!fields && c.user_uuids.empty()) {
      return json{{"ok", false}, {"msg", "nothing to update"}, {"group", nullptr}};
    }
    auto s = groups_.Modify(id, c);
    if (s.code() == StatusCode::kNotFound) {
      return json{{"ok", false}, {"msg", "no such group"}, {"group", nullptr}};
    }
    if (s.code() == StatusCode::kAlreadyExists) {
      return json{{"ok", false}, {"msg", "integrity error: " + s.message()}, {"group", nullptr}};
    }
    if (s.code() == StatusCode::kInvalidArgument) {
      return json{{"ok", false}, {"msg", s.message()}, {"group", nullptr}};
    }
    if (!s.ok()) return s;
    auto now = groups_.Get(id);
    if (!now.ok()) return now.status();
    return json{{"ok", true}, {"msg", "success"}, {"group", *now ? GroupJson(**now) : json()}};
  }

  StatusOr<json> DeleteGroup(PlannedField const& f) {
    std::string id = f.args.value("gid", "");
    auto g = groups_.Get(id);
    if (!g.ok()) return g.status();
    if (!*g) return Outcome(false, NoMatching(f));
    if (!MayManage((*g)->domain_name)) return Denied(f);
    GroupChanges c;
    c.is_active = false;  // 24.09: inactive, its integration id cleared
    c.integration_id = "";
    if (auto s = groups_.Modify(id, c); !s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> PurgeGroup(PlannedField const& f) {
    std::string id = f.args.value("gid", "");
    auto g = groups_.Get(id);
    if (!g.ok()) return g.status();
    if (!*g) return Outcome(false, NoMatching(f));
    if (!MayManage((*g)->domain_name)) return Denied(f);
    auto s = groups_.Purge(id);
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> Domain(PlannedField const& f) {
    auto it = f.args.find("name");
    std::string name = it != f.args.end() && it->is_string() ? it->get<std::string>() : who_.domain;
    if (role_ != admin::Role::kSuperadmin && name != who_.domain) {
      return protocol::MakeProblemStatus(protocol::ProblemType::kObjectNotFound, "No such domain.");
    }
    auto d = domains_.Get(name);
    if (!d.ok()) return d.status();
    return *d ? DomainJson(**d) : json(nullptr);
  }

  StatusOr<json> Domains(PlannedField const& f) {
    if (role_ != admin::Role::kSuperadmin) {
      return protocol::MakeProblemStatus(protocol::ProblemType::kGenericForbidden,
                                         "Only superadmins may list domains.");
    }
    auto it = f.args.find("is_active");
    std::optional<bool> active;
    if (it != f.args.end() && it->is_boolean()) active = it->get<bool>();
    auto list = domains_.List(active);
    if (!list.ok()) return list.status();
    json out = json::array();
    for (auto const& d : *list) out.push_back(DomainJson(d));
    return out;
  }

  // The fields create_domain and modify_domain share, as changes; an error is the answer's msg.
  static StatusOr<DomainChanges> DomainProps(json const& props) {
    DomainChanges c;
    if (auto const* v = Given(props, "name")) {
      if (!ValidDomainName(v->get<std::string>())) {
        return Status(StatusCode::kInvalidArgument,
                      "invalid name: 1 to 64 letters, digits, '_', '-' or '.'");
      }
      c.name = v->get<std::string>();
    }
    if (auto const* v = Given(props, "description")) c.description = v->get<std::string>();
    if (auto const* v = Given(props, "is_active")) c.is_active = v->get<bool>();
    if (auto const* v = Given(props, "total_resource_slots")) {
      auto slots = SlotsText(*v);
      if (!slots.ok()) return slots.status();
      c.total_resource_slots = *slots;
    }
    if (auto const* v = Given(props, "allowed_vfolder_hosts")) {
      c.allowed_vfolder_hosts = v->is_string() ? v->get<std::string>() : v->dump();
    }
    if (auto const* v = Given(props, "allowed_docker_registries")) {
      c.allowed_docker_registries.emplace();
      for (auto const& r : *v) {
        if (r.is_string()) c.allowed_docker_registries->push_back(r.get<std::string>());
      }
    }
    if (auto const* v = Given(props, "integration_id")) c.integration_id = v->get<std::string>();
    return c;
  }

  StatusOr<json> CreateDomain(PlannedField const& f) {
    protocol::Domain d;
    d.name = f.args.value("name", "");
    if (!ValidDomainName(d.name)) {
      return Outcome(false, "invalid name: 1 to 64 letters, digits, '_', '-' or '.'");
    }
    auto c = DomainProps(f.args["props"]);
    if (!c.ok()) return Outcome(false, c.status().message());
    d.description = c->description.value_or("");
    d.is_active = c->is_active.value_or(true);
    d.total_resource_slots = c->total_resource_slots.value_or("{}");
    d.allowed_vfolder_hosts = c->allowed_vfolder_hosts.value_or("{}");
    d.allowed_docker_registries = c->allowed_docker_registries.value_or(std::vector<std::string>{});
    d.integration_id = c->integration_id;
    auto s = domains_.Create(d);
    if (s.code() == StatusCode::kAlreadyExists) {
      return json{{"ok", false}, {"msg", "integrity error: " + s.message()}, {"domain", nullptr}};
    }
    if (!s.ok()) return s;
    auto made = domains_.Get(d.name);
    if (!made.ok()) return made.status();
    return json{
        {"ok", true}, {"msg", "success"}, {"domain", *made ? DomainJson(**made) : json(nullptr)}};
  }

  StatusOr<json> ModifyDomain(PlannedField const& f) {
    std::string name = f.args.value("name", "");
    auto changes = DomainProps(f.args["props"]);
    if (!changes.ok()) return Outcome(false, changes.status().message());
    DomainChanges const& c = *changes;
    auto s = domains_.Modify(name, c);
    if (s.code() == StatusCode::kNotFound) {
      return json{{"ok", false}, {"msg", NoMatching(f)}, {"domain", nullptr}};
    }
    if (s.code() == StatusCode::kAlreadyExists) {
      return json{{"ok", false}, {"msg", "integrity error: " + s.message()}, {"domain", nullptr}};
    }
    if (!s.ok()) return s;
    auto now = domains_.Get(c.name.value_or(name));
    if (!now.ok()) return now.status();
    return json{{"ok", true}, {"msg", "success"}, {"domain", *now ? DomainJson(**now) : json()}};
  }

  StatusOr<json> DeleteDomain(PlannedField const& f) {
    DomainChanges c;
    c.is_active = false;  // 24.09: a soft delete
    auto s = domains_.Modify(f.args.value("name", ""), c);
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> PurgeDomain(PlannedField const& f) {
    auto s = domains_.Purge(f.args.value("name", ""));
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  Identity const& who_;
  admin::Role role_;
  server::Database& db_;
  DomainStore domains_;
  GroupStore groups_;
};

}  // namespace

std::optional<StatusOr<json>> ResolveAdminField(Identity const& who, server::Database& db,
                                                PlannedField const& f) {
  admin::Context ctx{who, admin::RoleOf(who), db};
  if (admin::IsMutation(f.name)) {
    // 24.09's GQLMutationUnfrozenRequiredMiddleware: no mutation while the manager is frozen.
    if (auto frozen = Store(db).RefuseWhileFrozen(); !frozen.ok()) return frozen;
    if (!admin::MayRun(ctx.role, f.name)) {
      if (admin::IsOwnKeypairChange(ctx, f)) return admin::ChangeOwnKeypair(ctx, f);
      if (admin::RefusedAsError(f.name)) {
        return StatusOr<json>(gql::Forbidden("no permission to execute " + f.key));
      }
      return admin::Denied(f);
    }
  }
  if (auto v = AdminResolver(who, db).Resolve(f)) return v;
  if (auto v = admin::ResolveUserField(ctx, f)) return v;
  if (auto v = admin::ResolveResourceField(ctx, f)) return v;
  if (auto v = admin::ResolveRegistryField(ctx, f)) return v;
  return admin::ResolvePolicyField(ctx, f);
}

}  // namespace bai::manager
