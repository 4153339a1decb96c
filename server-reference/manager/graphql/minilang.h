// SPDX-License-Identifier: Apache-2.0
#pragma once
// Backend.AI's query mini-language for the `filter` and `order` arguments of paginated GraphQL
// lists, compiled to SQL over a fixed column map: names resolve only through the map and every
// value becomes a bound parameter, so nothing the client writes is spliced into SQL. A pure
// core (no database).
//
// filter:  expr := '!' expr | NAME OP value | expr ('&' | '|') expr | '(' expr ')'
//          OP := == != > >= < <= contains in isnot is like ilike
//          value := "string" | number | true | false | null | '[' value, … ']'
//          '&' and '|' bind equally and group to the right, as in Backend.AI
//          (`a & b | c` is `a & (b | c)`); use parentheses to say otherwise.
// order:   [+|-]NAME (',' [+|-]NAME)*   ('+' ascending, the default)

#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace bai::graphql {

/// A filterable, orderable field: its SQL expression and how values compare with it.
struct ColumnSpec {
  enum class Kind { kText, kInt, kTime, kEnum, kBool };
  std::string sql;  ///< a column or expression of the caller's query, e.g. "s.name"
  Kind kind = Kind::kText;
  /// kEnum: the stored spellings; a value matches one ignoring case ("running" is RUNNING).
  std::vector<std::string> values;
};

using ColumnMap = std::map<std::string, ColumnSpec, std::less<>>;

/// A WHERE condition with `?` placeholders and their values, in order.
struct SqlCondition {
  std::string sql;
  std::vector<server::SqlValue> params;
};

/// Bounds that keep a hostile expression cheap.
inline constexpr std::size_t kMaxExpressionBytes = 4096;
inline constexpr int kMaxExpressionDepth = 32;

/// Compiles a filter expression. Errors (400 invalid-api-params) name the position and what
/// was expected, an unknown field, or a value of the wrong kind.
StatusOr<SqlCondition> CompileFilter(std::string_view expression, ColumnMap const& columns);

/// Compiles an order expression to an ORDER BY list ("s.name ASC, s.created_at DESC").
StatusOr<std::string> CompileOrder(std::string_view expression, ColumnMap const& columns);

}  // namespace bai::graphql
