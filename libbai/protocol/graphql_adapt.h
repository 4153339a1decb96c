// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a server's GraphQL schema has, and a query cut down to it (issue 44; docs/adr/0024).
// Backend.AI's schema changes between releases: 23.09 has no ComputeSession.exit_code nor
// requested_slots, no KeyPair.modified_at, no Group.type; 24.09 has them. bai writes its queries
// for the newest schema; before one goes to a server, AdaptToSchema drops each field the server's
// type lacks, each argument its field does not take and each variable no longer used, so the
// server never refuses a query for a field it does not have, and the answer simply lacks it
// (decoders read it as absent). Pure: no I/O; the schema comes from the server's own
// introspection (kIntrospectionQuery), read by ReadIntrospection.

#include "bai/status.h"

#include "libbai/protocol/graphql_document.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace bai::graphql {

/// A field of an object type: the named type it returns (lists and non-null unwrapped) and the
/// arguments it takes.
struct FieldFacts {
  std::string type;
  std::set<std::string> args;
  bool operator==(FieldFacts const&) const = default;
};

/// The object and interface types of a schema with their fields, and its root types' names.
/// Either read whole from introspection (`types`), or learnt from the server's refusals where
/// introspection is off (Backend.AI turns it off outside debug mode): `lacks`, by the path of a
/// selection set ("query:compute_session_list.items"), the fields the server refused there, and
/// `lacks_args`, by a field's path ("query:compute_session_list"), the arguments it refused.
struct SchemaFacts {
  std::string query_type = "Query";
  std::string mutation_type = "Mutation";
  std::map<std::string, std::map<std::string, FieldFacts>> types;
  std::map<std::string, std::set<std::string>> lacks;
  std::map<std::string, std::set<std::string>> lacks_args;
  /// Input object type → fields it does not define (learnt from "Variable '$v' got invalid
  /// value …; Field 'f' is not defined by type 'T'."): taken out of variables' values.
  std::map<std::string, std::set<std::string>> lacks_input;
  bool operator==(SchemaFacts const&) const = default;
};

/// One refusal of a query: its message and where in the query it points (1-based; 0: nowhere).
struct QueryError {
  std::string message;
  int line = 0;
  int column = 0;
};

/// Learns from the GraphQL errors refusing `query` what the server lacks: a field ("Cannot query
/// field 'f' on type 'T'.", graphql-core 3 in 23.09 and later; 'Cannot query field "f" on type
/// "T".' in graphql-core 2, 22.03) or an argument ("Unknown argument …"), found in the query by
/// the error's location. True when every error was one of those and each taught something new:
/// the query, adapted again, can be sent again.
bool LearnFromErrors(std::string_view query, std::vector<QueryError> const& errors,
                     SchemaFacts& facts);

/// The introspection query whose `data` ReadIntrospection reads (object and interface types,
/// deprecated fields included, three levels of list/non-null wrapping).
extern char const kIntrospectionQuery[];

/// The facts of an introspection answer's `data` object (JSON text).
StatusOr<SchemaFacts> ReadIntrospection(std::string_view data_json);

/// Compact JSON of the facts, for the profile cache, and back.
std::string EncodeSchemaFacts(SchemaFacts const& facts);
StatusOr<SchemaFacts> DecodeSchemaFacts(std::string_view json_text);

/// A query as it goes to a server, and what was taken out of it.
struct Adapted {
  std::string query;
  std::vector<std::string> dropped;            ///< "Type.field", "Type.field(arg)"
  std::vector<std::string> dropped_variables;  ///< names, without '$'
  /// Each variable kept and its named type (list and non-null marks removed).
  std::map<std::string, std::string> variable_types;
};

/// `variables_json` (an object) for the adapted query: dropped variables removed, and keys an
/// input object type is known to lack (SchemaFacts::lacks_input) taken out of the values of
/// variables of that type (one level: bai's mutations pass flat `props` objects).
std::string AdaptVariables(std::string const& variables_json, Adapted const& adapted,
                           SchemaFacts const& schema);

/// `query` with what `schema` lacks taken out (see the file comment). A field whose selections
/// all went goes too; a query left with nothing is an error naming what the server lacks.
/// Fields of types the schema does not describe are kept as written.
StatusOr<Adapted> AdaptToSchema(std::string_view query, SchemaFacts const& schema);

/// A document as GraphQL text (one line; what Parse reads back to the same document).
std::string Print(Document const& document);

}  // namespace bai::graphql
