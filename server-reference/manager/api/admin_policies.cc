// SPDX-License-Identifier: Apache-2.0
// The three kinds of resource policies in /admin/gql (24.09's keypair, user and project
// resource policy queries and mutations; streams-admin-console.md §B.2).
#include "libbai/protocol/wire_json.h"
#include "server-reference/manager/api/admin_fields.h"
#include "server-reference/manager/api/graphql_util.h"
#include "server-reference/manager/state/policies.h"

namespace bai::manager::admin {

namespace {

using graphql::PlannedField;
using nlohmann::json;

struct KindName {
  std::string_view prefix;  ///< "keypair", "user", "project"
  PolicyKind kind;
};

constexpr KindName kKinds[] = {{"keypair", PolicyKind::kKeypair},
                               {"user", PolicyKind::kUser},
                               {"project", PolicyKind::kProject}};

// "create_user_resource_policy" → (create, user)
bool Split(std::string const& field, std::string& verb, KindName& kind) {
  static constexpr std::string_view kSuffix = "_resource_policy";
  for (auto const& k : kKinds) {
    for (std::string_view v : {"create", "modify", "delete"}) {
      if (field == std::string(v) + "_" + std::string(k.prefix) + std::string(kSuffix)) {
        verb = v;
        kind = k;
        return true;
      }
    }
  }
  return false;
}

class PolicyFields {
 public:
  explicit PolicyFields(Context const& ctx) : ctx_(ctx), store_(ctx.db) {}

  FieldResult Resolve(PlannedField const& f) {
    for (auto const& k : kKinds) {
      std::string one = std::string(k.prefix) + "_resource_policy";
      if (f.name == one) return One(f, k.kind);
      if (f.name == one.substr(0, one.size() - 1) + "ies") return All(k.kind);
    }
    std::string verb;
    KindName kind{};
    if (!Split(f.name, verb, kind)) return std::nullopt;
    if (verb == "create") return Create(f, kind.kind);
    if (verb == "modify") return Modify(f, kind.kind);
    return Delete(f, kind.kind);
  }

 private:
  static json Object(protocol::KeypairResourcePolicy const& p) {
    return internal::KeypairResourcePolicyToJson(p);
  }
  static json Object(protocol::ScopeResourcePolicy const& p, PolicyKind kind) {
    return internal::ScopeResourcePolicyToJson(p, kind == PolicyKind::kUser);
  }

  // The named policy; without a name, the caller's own (keypair: their keypair's; user: their
  // user's).
  StatusOr<json> One(PlannedField const& f, PolicyKind kind) {
    std::string name = gql::ArgString(f, "name");
    if (kind == PolicyKind::kKeypair) {
      if (name.empty()) {
        auto mine = store_.KeypairPolicyOf(ctx_.who.access_key);
        if (!mine.ok()) return mine.status();
        return *mine ? Object(**mine) : json(nullptr);
      }
      auto list = store_.KeypairPolicies(name);
      if (!list.ok()) return list.status();
      return list->empty() ? json(nullptr) : Object(list->front());
    }
    if (name.empty() && kind == PolicyKind::kUser) {
      auto mine = Store(ctx_.db).UserResourcePolicy(ctx_.who.user_id);
      if (!mine.ok()) return mine.status();
      if (!*mine) return json(nullptr);
      name = **mine;
    }
    auto list = store_.ScopePolicies(kind, name);
    if (!list.ok()) return list.status();
    return list->empty() ? json(nullptr) : Object(list->front(), kind);
  }

  // Every policy for admins; users see their own keypair's and user's (24.09; projects' are
  // admins' only).
  StatusOr<json> All(PolicyKind kind) {
    bool admin = ctx_.role == Role::kSuperadmin || ctx_.role == Role::kAdmin;
    json out = json::array();
    if (kind == PolicyKind::kKeypair) {
      if (!admin) {
        auto mine = store_.KeypairPolicyOf(ctx_.who.access_key);
        if (!mine.ok()) return mine.status();
        if (*mine) out.push_back(Object(**mine));
        return out;
      }
      auto list = store_.KeypairPolicies();
      if (!list.ok()) return list.status();
      for (auto const& p : *list) out.push_back(Object(p));
      return out;
    }
    if (!admin && kind == PolicyKind::kProject) {
      return gql::Forbidden("Only admins may list project resource policies.");
    }
    std::optional<std::string> name;
    if (!admin) {
      auto mine = Store(ctx_.db).UserResourcePolicy(ctx_.who.user_id);
      if (!mine.ok()) return mine.status();
      if (!*mine) return out;
      name = **mine;
    }
    auto list = store_.ScopePolicies(kind, name);
    if (!list.ok()) return list.status();
    for (auto const& p : *list) out.push_back(Object(p, kind));
    return out;
  }

  StatusOr<json> Create(PlannedField const& f, PolicyKind kind) {
    std::string name = gql::ArgString(f, "name");
    if (name.empty() || name.size() > 256) {
      return Refused("invalid name: 1 to 256 characters", "resource_policy");
    }
    auto values = PolicyValuesFromInput(kind, f.args["props"]);
    if (!values.ok()) return Refused(values.status().message(), "resource_policy");
    auto s = store_.Create(kind, name, *values);
    if (s.code() == StatusCode::kAlreadyExists) {
      return Refused("integrity error: " + s.message(), "resource_policy");
    }
    if (!s.ok()) return s;
    json made;
    if (kind == PolicyKind::kKeypair) {
      auto list = store_.KeypairPolicies(name);
      if (!list.ok()) return list.status();
      made = list->empty() ? json(nullptr) : Object(list->front());
    } else {
      auto list = store_.ScopePolicies(kind, name);
      if (!list.ok()) return list.status();
      made = list->empty() ? json(nullptr) : Object(list->front(), kind);
    }
    return json{{"ok", true}, {"msg", "success"}, {"resource_policy", made}};
  }

  StatusOr<json> Modify(PlannedField const& f, PolicyKind kind) {
    auto values = PolicyValuesFromInput(kind, f.args["props"]);
    if (!values.ok()) return Outcome(false, values.status().message());
    if (values->empty()) return Outcome(false, "nothing to update");
    auto s = store_.Modify(kind, gql::ArgString(f, "name"), *values);
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> Delete(PlannedField const& f, PolicyKind kind) {
    auto s = store_.Delete(kind, gql::ArgString(f, "name"));
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  Context const& ctx_;
  PolicyStore store_;
};

}  // namespace

FieldResult ResolvePolicyField(Context const& ctx, PlannedField const& f) {
  return PolicyFields(ctx).Resolve(f);
}

}  // namespace bai::manager::admin
