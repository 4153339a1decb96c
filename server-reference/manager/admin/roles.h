// SPDX-License-Identifier: Apache-2.0
#pragma once
// Who may run which administration mutation: 24.09's `allowed_roles`, one table (pure; the
// GraphQL shell asks before it runs a mutation, and answers {ok: false, msg: "no permission to
// execute FIELD"} as 24.09's privilege middleware does).

#include "server-reference/manager/state/store.h"

#include <string_view>

namespace bai::manager::admin {

enum class Role { kMonitor, kUser, kAdmin, kSuperadmin };

/// A caller's role for administration: superadmin; admin (by role, or an admin keypair);
/// monitor; user.
Role RoleOf(Identity const& who);

/// Whether the table names `field` (a mutation of administration).
bool IsMutation(std::string_view field);

/// Whether a refusal of `mutation` is a GraphQL error, its payload having no {ok, msg}.
bool RefusedAsError(std::string_view mutation);

/// Whether `role` may run `mutation` (a field of the Mutations type); unknown mutations: nobody.
bool MayRun(Role role, std::string_view mutation);

}  // namespace bai::manager::admin
