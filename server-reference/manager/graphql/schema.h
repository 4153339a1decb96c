// SPDX-License-Identifier: Apache-2.0
#pragma once
// The type system the engine executes against (a pure description: types, fields, arguments),
// and Prepare: validation of a parsed document against it, with the request's variables, into a
// Plan that execution walks. Prepare answers every error the spec's validation names for the
// parts we support (unknown types, fields and arguments; argument and variable types; missing
// required arguments; sub-selections on leaves and their absence on objects; fragments that are
// unknown, unused, cyclic or spread on the wrong type; conflicting response keys; undefined and
// unused variables) and enforces the limits again after fragment expansion.

#include "libbai/protocol/graphql_document.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::graphql {

/// A type as written in a schema or a variable definition: `Name`, `Name!`, `[Name]`,
/// `[Name!]!` (one level of list is all this schema uses).
struct TypeRef {
  std::string name;
  bool non_null = false;
  bool list = false;
  bool item_non_null = false;

  /// Nullopt for anything else (nested lists, bad syntax).
  static std::optional<TypeRef> Parse(std::string_view text);
  std::string ToString() const;
};

struct InputValueDef {
  std::string name;
  TypeRef type;
  std::optional<nlohmann::json> default_value;
};

struct FieldDef {
  std::string name;
  TypeRef type;
  std::vector<InputValueDef> args;
};

enum class TypeKind { kScalar, kEnum, kObject, kInputObject };

struct TypeDef {
  TypeKind kind = TypeKind::kScalar;
  std::string name;
  std::vector<FieldDef> fields;       ///< kObject
  std::vector<std::string> values;    ///< kEnum
  std::vector<InputValueDef> inputs;  ///< kInputObject

  FieldDef const* Field(std::string_view field_name) const;
};

/// The types of one schema. Scalars known to the engine: Int (32-bit), Float, String, Boolean,
/// ID, and BigInt, UUID, DateTime, JSONString as Backend.AI defines them.
class Schema {
 public:
  Schema();
  /// Adds an object type from a compact definition: fields as "name: Type" or
  /// "name(arg: Type = default, …): Type", defaults written as JSON.
  Schema& Object(std::string name, std::vector<std::string> const& fields);
  /// Adds fields to an object type defined before (one area's mutations into `Mutations`).
  Schema& Extend(std::string_view name, std::vector<std::string> const& fields);
  Schema& Enum(std::string name, std::vector<std::string> values);
  /// Adds an input object type (mutations' `props`): fields as "name: Type" or
  /// "name: Type = default" (JSON). Coerced values carry every given field and the defaulted
  /// ones; an absent field without a default stays absent (resolvers tell "not given").
  Schema& Input(std::string name, std::vector<std::string> const& fields);

  TypeDef const* Find(std::string_view name) const;
  std::string query_type = "Query";
  std::string mutation_type;  ///< empty: mutations are refused

 private:
  std::map<std::string, TypeDef, std::less<>> types_;
};

/// A field to execute, fragments expanded and merged: what resolvers see.
struct PlannedField {
  std::string key;  ///< the response key (alias or name)
  std::string name;
  FieldDef const* def = nullptr;  ///< null for __typename
  TypeDef const* type = nullptr;  ///< the named type of the result
  nlohmann::json args;            ///< every declared argument given or defaulted, coerced
  std::vector<PlannedField> selections;
  Location location;

  /// The selected sub-field called `field_name` (under any alias), if any.
  PlannedField const* Find(std::string_view field_name) const;
  bool Selects(std::string_view field_name) const { return Find(field_name) != nullptr; }
};

struct Plan {
  std::string operation = "query";
  std::vector<PlannedField> fields;
};

struct Prepared {
  Plan plan;
  std::vector<Error> errors;
  /// Selections visited while validating and planning: linear in the document's size, plus at
  /// most 4 × Limits::max_selections for fragment expansion (a property the tests check).
  std::int64_t work = 0;
  bool ok() const { return errors.empty(); }
};

/// Validates `document` against `schema` for the operation named `operation_name` (empty: the
/// only one), coercing `variables` (a JSON object or null).
Prepared Prepare(Document const& document, Schema const& schema, nlohmann::json const& variables,
                 std::string_view operation_name, Limits const& limits = {});

}  // namespace bai::graphql
