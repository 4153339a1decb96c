// SPDX-License-Identifier: Apache-2.0
#pragma once
// Inside /admin/gql's administration part: what the per-area resolvers (admin_graphql.cc:
// domains and projects; admin_users.cc: users and keypairs; admin_policies.cc: resource
// policies) share. Each area answers its fields and nullopt for the rest; the role table
// (admin/roles.h) has already allowed a mutation before its area sees it.

#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/admin/roles.h"
#include "server-reference/manager/graphql/schema.h"
#include "server-reference/manager/state/store.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace bai::manager::admin {

struct Context {
  Identity const& who;
  Role role;
  server::Database& db;
};

using FieldResult = std::optional<StatusOr<nlohmann::json>>;

/// {ok, msg}
inline nlohmann::json Outcome(bool ok, std::string msg) {
  return nlohmann::json{{"ok", ok}, {"msg", std::move(msg)}};
}

/// {ok, msg, item: null}: a refused mutation that names an item field.
inline nlohmann::json Refused(std::string msg, char const* item) {
  return nlohmann::json{{"ok", false}, {"msg", std::move(msg)}, {item, nullptr}};
}

/// 24.09's privilege middleware's answer.
inline nlohmann::json Denied(graphql::PlannedField const& f) {
  return Outcome(false, "no permission to execute " + f.key);
}

/// 24.09's "no matching <mutation class>" (simple_db_mutate): the field's name without its
/// underscores, as graphene names the class ("modify_user" → "no matching modifyuser").
inline std::string NoMatching(graphql::PlannedField const& f) {
  std::string cls;
  for (char c : f.name) {
    if (c != '_') cls.push_back(c);
  }
  return "no matching " + cls;
}

/// A given, non-null input field.
inline nlohmann::json const* Given(nlohmann::json const& props, char const* name) {
  auto it = props.find(name);
  return it == props.end() || it->is_null() ? nullptr : &*it;
}

FieldResult ResolveUserField(Context const& ctx, graphql::PlannedField const& f);

/// The most keypairs a user makes for themselves (bai's self-service; superadmins are not
/// bound by it).
inline constexpr std::size_t kMaxOwnKeypairs = 10;
/// bai's self-service beyond 24.09's roles (`bai keypair`): a user or an admin may create a
/// keypair for their own email and delete their own keypairs.
bool IsOwnKeypairChange(Context const& ctx, graphql::PlannedField const& f);
/// Such a change: the new key gets the signing key's policy and rate limit, never admin
/// rights; the main key and the signing key are not deleted; another user's key is
/// "no matching", as one that does not exist.
StatusOr<nlohmann::json> ChangeOwnKeypair(Context const& ctx, graphql::PlannedField const& f);
FieldResult ResolvePolicyField(Context const& ctx, graphql::PlannedField const& f);
FieldResult ResolveResourceField(Context const& ctx, graphql::PlannedField const& f);
/// Container registries (admin_registries.cc), the superadmin's.
FieldResult ResolveRegistryField(Context const& ctx, graphql::PlannedField const& f);

}  // namespace bai::manager::admin
