// SPDX-License-Identifier: Apache-2.0
#pragma once
// Execution of a prepared Plan (spec §6): root fields are resolved by the caller; their values
// (objects as JSON objects keyed by field name) are completed against the plan — projected to
// the selected fields under their response keys, scalars serialised as the schema says, nulls
// in non-null positions turned into located errors that null the nearest nullable parent.

#include "bai/status.h"

#include "server-reference/manager/graphql/schema.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <vector>

namespace bai::graphql {

/// Resolves one root field from its plan (arguments coerced, sub-selections known, so a
/// resolver fetches only what is selected). An error becomes a GraphQL error at that field.
using RootResolver = std::function<StatusOr<nlohmann::json>(PlannedField const&)>;

/// The standard response: `{"data": …}` plus `"errors"` when there are any.
nlohmann::ordered_json Execute(Plan const& plan, RootResolver const& resolve);

/// The response for a request refused before execution (syntax or validation errors):
/// `{"data": null, "errors": [...]}`.
nlohmann::ordered_json ErrorResponse(std::vector<Error> const& errors);

}  // namespace bai::graphql
