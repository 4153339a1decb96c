// SPDX-License-Identifier: Apache-2.0
#pragma once
// A GraphQL executable document (operations and fragments; October 2021 spec, §2) and its
// parser: a pure core with no I/O. The parser enforces hard limits while it reads, so a hostile
// document costs bounded time and stack, and answers a GraphQL error (message and location)
// rather than failing the request.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::graphql {

/// 1-based, in Unicode code points as the spec counts them (here: bytes of ASCII text).
struct Location {
  int line = 0;
  int column = 0;
};

/// An input value as written: a literal or a variable reference.
struct Value {
  enum class Kind { kVariable, kInt, kFloat, kString, kBoolean, kNull, kEnum, kList, kObject };
  Kind kind = Kind::kNull;
  /// kVariable: the name (no '$'); kInt, kFloat: the literal; kString: the decoded text;
  /// kEnum: the name.
  std::string text;
  bool boolean = false;
  std::vector<Value> items;        ///< kList; kObject: the field values
  std::vector<std::string> names;  ///< kObject: the field names, parallel to `items`
  Location location;
};

struct Argument {
  std::string name;
  Value value;
  Location location;
};

struct Directive {
  std::string name;
  std::vector<Argument> arguments;
  Location location;
};

/// One entry of a selection set.
struct Selection {
  enum class Kind { kField, kFragmentSpread, kInlineFragment };
  Kind kind = Kind::kField;
  std::string alias;           ///< kField: empty when none
  std::string name;            ///< kField: the field; kFragmentSpread: the fragment
  std::string type_condition;  ///< kInlineFragment: empty when none
  std::vector<Argument> arguments;
  std::vector<Directive> directives;
  std::vector<Selection> selections;
  Location location;

  /// The key of this field in the response.
  std::string const& ResponseKey() const { return alias.empty() ? name : alias; }
};

struct VariableDefinition {
  std::string name;  ///< without '$'
  std::string type;  ///< as written, normalised: "[String!]!"
  std::optional<Value> default_value;
  Location location;
};

struct Operation {
  std::string kind = "query";  ///< query, mutation or subscription
  std::string name;            ///< empty for an anonymous operation
  std::vector<VariableDefinition> variables;
  std::vector<Directive> directives;
  std::vector<Selection> selections;
  Location location;
};

struct Fragment {
  std::string name;
  std::string type_condition;
  std::vector<Directive> directives;
  std::vector<Selection> selections;
  Location location;
};

struct Document {
  std::vector<Operation> operations;
  std::vector<Fragment> fragments;
};

/// Bounds on what one document may cost. Exceeding one is an error naming the limit.
struct Limits {
  std::size_t max_bytes = 64 * 1024;  ///< the source text
  int max_depth = 16;                 ///< nested selection sets, lists and objects
  int max_selections = 1000;          ///< fields, spreads and inline fragments in all
  int max_aliases = 64;
  int max_tokens = 20000;
};

/// A GraphQL error as the response's `errors` carries it.
struct Error {
  std::string message;
  std::vector<Location> locations;
};

struct ParseResult {
  Document document;
  std::optional<Error> error;  ///< set: the document is unusable
  bool ok() const { return !error.has_value(); }
};

/// Parses an executable document. Type-system definitions (schema, type, …) are refused: this
/// server executes, it does not accept schema changes.
ParseResult Parse(std::string_view source, Limits const& limits = {});

}  // namespace bai::graphql
