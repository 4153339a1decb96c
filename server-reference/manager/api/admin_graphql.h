// SPDX-License-Identifier: Apache-2.0
#pragma once
// The administration part of /admin/gql (streams-admin-console.md §B): domain queries and the
// domain mutations, role-checked by admin/roles.h before they run.

#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/graphql/schema.h"
#include "server-reference/manager/state/store.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace bai::manager {

/// The value of root field `f` when it is an administration field (nullopt otherwise).
/// Mutations answer {ok, msg, …} as 24.09 does, never an error: a refused role gets
/// {ok: false, msg: "no permission to execute KEY"}.
std::optional<StatusOr<nlohmann::json>> ResolveAdminField(Identity const& who, server::Database& db,
                                                          graphql::PlannedField const& f);

}  // namespace bai::manager
