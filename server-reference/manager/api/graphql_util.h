// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the resolvers of /admin/gql share: argument reading, the window and the filter/order of
// paginated lists, and the errors they answer (GraphQL errors, never 5xx).

#include "bai/protocol/errors.h"

#include "server-reference/manager/graphql/minilang.h"
#include "server-reference/manager/graphql/schema.h"
#include "server-reference/manager/state/page.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace bai::manager::gql {

inline constexpr std::int64_t kMaxPageSize = 1000;

inline Status Forbidden(std::string message) {
  return protocol::MakeProblemStatus(protocol::ProblemType::kGenericForbidden, std::move(message));
}
inline Status Invalid(std::string message) {
  return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams, std::move(message));
}

/// A string argument; "" when absent, null or not a string.
inline std::string ArgString(graphql::PlannedField const& f, char const* name) {
  auto it = f.args.find(name);
  return it != f.args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A boolean argument, when given.
inline std::optional<bool> ArgBool(graphql::PlannedField const& f, char const* name) {
  auto it = f.args.find(name);
  if (it == f.args.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

/// `limit` and `offset` into `q`: 0 ≤ limit ≤ kMaxPageSize, offset ≥ 0.
inline Status Window(graphql::PlannedField const& f, ListQuery& q) {
  q.limit = f.args.value("limit", std::int64_t{0});
  q.offset = f.args.value("offset", std::int64_t{0});
  if (q.limit < 0 || q.limit > kMaxPageSize) {
    return Invalid("limit must be between 0 and " + std::to_string(kMaxPageSize) + ".");
  }
  if (q.offset < 0) return Invalid("offset must not be negative.");
  return {};
}

/// `filter` and `order` (the mini-language) over `columns`, into `q`.
inline Status FilterAndOrder(graphql::PlannedField const& f, graphql::ColumnMap const& columns,
                             ListQuery& q) {
  if (auto filter = ArgString(f, "filter"); !filter.empty()) {
    auto c = graphql::CompileFilter(filter, columns);
    if (!c.ok()) return c.status();
    q.where.push_back(c->sql);
    for (auto& p : c->params) q.params.push_back(std::move(p));
  }
  if (auto order = ArgString(f, "order"); !order.empty()) {
    auto o = graphql::CompileOrder(order, columns);
    if (!o.ok()) return o.status();
    q.order = *std::move(o);
  }
  return {};
}

/// Adds one condition with its value.
inline void Where(ListQuery& q, std::string condition, server::SqlValue value) {
  q.where.push_back(std::move(condition));
  q.params.push_back(std::move(value));
}

}  // namespace bai::manager::gql
