// SPDX-License-Identifier: Apache-2.0
// Container registries in /admin/gql (issue 46; 24.09's container_registry.py): the legacy
// ContainerRegistry by hostname and the ContainerRegistryNode by id, queries and mutations,
// all the superadmin's. A password is taken, kept, and answered as "*****".
#include "server-reference/manager/api/admin_fields.h"
#include "server-reference/manager/api/graphql_util.h"
#include "server-reference/manager/state/registries.h"

namespace bai::manager::admin {

namespace {

using graphql::PlannedField;
using nlohmann::json;

std::optional<std::string> OptString(json const& props, char const* name) {
  json const* v = Given(props, name);
  if (v == nullptr) return std::nullopt;
  return v->is_string() ? v->get<std::string>() : v->dump();
}

std::optional<bool> OptBool(json const& props, char const* name) {
  json const* v = Given(props, name);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

// The fields a create or modify gives: the node forms' arguments, or the legacy `props`
// (whose `project` is a list: its first).
RegistryChange ChangeOf(json const& in) {
  RegistryChange c;
  c.url = OptString(in, "url");
  c.registry_name = OptString(in, "registry_name");
  c.type = OptString(in, "type");
  if (json const* p = Given(in, "project")) {
    if (p->is_array()) {
      c.project = p->empty() || !(*p)[0].is_string() ? "" : (*p)[0].get<std::string>();
    } else if (p->is_string()) {
      c.project = p->get<std::string>();
    }
  }
  c.username = OptString(in, "username");
  c.password = OptString(in, "password");
  c.ssl_verify = OptBool(in, "ssl_verify");
  c.is_global = OptBool(in, "is_global");
  return c;
}

Status AsGraphqlError(Status const& s) {
  if (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kAlreadyExists) {
    return gql::Invalid(s.message());
  }
  return s;
}

class RegistryFields {
 public:
  explicit RegistryFields(Context const& ctx) : ctx_(ctx), store_(ctx.db) {}

  FieldResult Resolve(PlannedField const& f) {
    static constexpr char const* kFields[] = {"container_registry",
                                              "container_registries",
                                              "container_registry_node",
                                              "container_registry_nodes",
                                              "create_container_registry",
                                              "modify_container_registry",
                                              "delete_container_registry",
                                              "create_container_registry_node",
                                              "modify_container_registry_node",
                                              "delete_container_registry_node"};
    if (std::find(std::begin(kFields), std::end(kFields), f.name) == std::end(kFields)) {
      return std::nullopt;
    }
    // The mutations' role check came first (ResolveAdminField); the queries' is here.
    if (ctx_.role != Role::kSuperadmin) {
      return StatusOr<json>(gql::Forbidden("Only superadmins may see container registries."));
    }
    if (f.name == "container_registries" || f.name == "container_registry") return Legacy(f);
    if (f.name == "container_registry_node") return Node(f);
    if (f.name == "container_registry_nodes") return Nodes();
    if (f.name == "create_container_registry") return LegacyCreate(f);
    if (f.name == "modify_container_registry") return LegacyModify(f);
    if (f.name == "delete_container_registry") return LegacyDelete(f);
    if (f.name == "create_container_registry_node") return NodeCreate(f);
    if (f.name == "modify_container_registry_node") return NodeModify(f);
    return NodeDelete(f);
  }

 private:
  StatusOr<json> Legacy(PlannedField const& f) {
    auto all = store_.List();
    if (!all.ok()) return all.status();
    std::string hostname = gql::ArgString(f, "hostname");
    json out = json::array();
    for (auto const& r : *all) {
      if (f.name == "container_registry" && r.registry_name != hostname) continue;
      out.push_back(LegacyRegistryObject(r));
    }
    if (f.name == "container_registries") return out;
    return out.empty() ? json(nullptr) : out[0];
  }

  StatusOr<json> Node(PlannedField const& f) {
    auto r = store_.Get(gql::ArgString(f, "id"));
    if (!r.ok()) return r.status();
    return *r ? RegistryNodeObject(**r) : json(nullptr);
  }

  StatusOr<json> Nodes() {
    auto all = store_.List();
    if (!all.ok()) return all.status();
    json edges = json::array();
    for (auto const& r : *all) edges.push_back({{"node", RegistryNodeObject(r)}, {"cursor", r.id}});
    json page = {{"hasNextPage", false},
                 {"hasPreviousPage", false},
                 {"startCursor", edges.empty() ? json(nullptr) : edges.front()["cursor"]},
                 {"endCursor", edges.empty() ? json(nullptr) : edges.back()["cursor"]}};
    return json{{"count", edges.size()}, {"edges", edges}, {"pageInfo", page}};
  }

  // The legacy row of `hostname` (its first project's).
  StatusOr<ContainerRegistry> ByHostname(std::string const& hostname) {
    auto rows = store_.ByName(hostname);
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return gql::Invalid("no such container registry: " + hostname);
    return rows->front();
  }

  StatusOr<json> LegacyCreate(PlannedField const& f) {
    RegistryChange c = ChangeOf(f.args["props"]);
    c.registry_name = gql::ArgString(f, "hostname");
    auto r = store_.Create(c);
    if (!r.ok()) return AsGraphqlError(r.status());
    return json{{"container_registry", LegacyRegistryObject(*r)}};
  }

  StatusOr<json> LegacyModify(PlannedField const& f) {
    auto have = ByHostname(gql::ArgString(f, "hostname"));
    if (!have.ok()) return have.status();
    auto r = store_.Modify(have->id, ChangeOf(f.args["props"]));
    if (!r.ok()) return AsGraphqlError(r.status());
    return json{{"container_registry", LegacyRegistryObject(*r)}};
  }

  StatusOr<json> LegacyDelete(PlannedField const& f) {
    auto have = ByHostname(gql::ArgString(f, "hostname"));
    if (!have.ok()) return have.status();
    auto gone = store_.Delete(have->id);
    if (!gone.ok()) return gone.status();
    return json{{"container_registry", LegacyRegistryObject(*have)}};
  }

  StatusOr<json> NodeCreate(PlannedField const& f) {
    auto r = store_.Create(ChangeOf(f.args));
    if (!r.ok()) return AsGraphqlError(r.status());
    return json{{"container_registry", RegistryNodeObject(*r)}};
  }

  StatusOr<json> NodeModify(PlannedField const& f) {
    auto r = store_.Modify(gql::ArgString(f, "id"), ChangeOf(f.args));
    if (r.status().code() == StatusCode::kNotFound) return gql::Invalid(r.status().message());
    if (!r.ok()) return AsGraphqlError(r.status());
    return json{{"container_registry", RegistryNodeObject(*r)}};
  }

  StatusOr<json> NodeDelete(PlannedField const& f) {
    std::string id = gql::ArgString(f, "id");
    auto have = store_.Get(id);
    if (!have.ok()) return have.status();
    if (!*have) return gql::Invalid("no container registry " + id);
    auto gone = store_.Delete(id);
    if (!gone.ok()) return gone.status();
    return json{{"container_registry", RegistryNodeObject(**have)}};
  }

  Context const& ctx_;
  RegistryStore store_;
};

}  // namespace

FieldResult ResolveRegistryField(Context const& ctx, PlannedField const& f) {
  return RegistryFields(ctx).Resolve(f);
}

}  // namespace bai::manager::admin
