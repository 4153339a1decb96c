// SPDX-License-Identifier: Apache-2.0
#include "libbai/protocol/graphql_adapt.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <utility>

namespace bai::graphql {

using nlohmann::json;

char const kIntrospectionQuery[] =
    "query BaiSchemaFacts { __schema { queryType { name } mutationType { name } types { name "
    "kind fields(includeDeprecated: true) { name args { name } type { name kind ofType { name "
    "kind ofType { name kind ofType { name kind } } } } } } } }";

namespace {

Status Malformed(std::string const& what) {
  return Status(StatusCode::kInternal, "malformed GraphQL introspection answer: " + what);
}

// The named type under list and non-null wrappers.
std::string NamedType(json const& type) {
  json const* t = &type;
  for (int depth = 0; depth < 8 && t->is_object(); ++depth) {
    if ((*t)["name"].is_string()) return (*t)["name"].get<std::string>();
    t = &(*t)["ofType"];
  }
  return "";
}

// ---- printing ---------------------------------------------------------------------------

void PrintValue(Value const& v, std::string& out) {
  switch (v.kind) {
    case Value::Kind::kVariable:
      out += "$" + v.text;
      return;
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kEnum:
      out += v.text;
      return;
    case Value::Kind::kString:
      out += json(v.text).dump();  // JSON's escapes are GraphQL's
      return;
    case Value::Kind::kBoolean:
      out += v.boolean ? "true" : "false";
      return;
    case Value::Kind::kNull:
      out += "null";
      return;
    case Value::Kind::kList:
      out += "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        PrintValue(v.items[i], out);
      }
      out += "]";
      return;
    case Value::Kind::kObject:
      out += "{";
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        out += (i ? ", " : "") + v.names[i] + ": ";
        PrintValue(v.items[i], out);
      }
      out += "}";
      return;
  }
}

void PrintArguments(std::vector<Argument> const& args, std::string& out) {
  if (args.empty()) return;
  out += "(";
  for (std::size_t i = 0; i < args.size(); ++i) {
    out += (i ? ", " : "") + args[i].name + ": ";
    PrintValue(args[i].value, out);
  }
  out += ")";
}

void PrintDirectives(std::vector<Directive> const& directives, std::string& out) {
  for (auto const& d : directives) {
    out += " @" + d.name;
    PrintArguments(d.arguments, out);
  }
}

void PrintSelections(std::vector<Selection> const& selections, std::string& out) {
  if (selections.empty()) return;
  out += " {";
  for (auto const& s : selections) {
    out += " ";
    switch (s.kind) {
      case Selection::Kind::kField:
        if (!s.alias.empty()) out += s.alias + ": ";
        out += s.name;
        PrintArguments(s.arguments, out);
        break;
      case Selection::Kind::kFragmentSpread:
        out += "..." + s.name;
        break;
      case Selection::Kind::kInlineFragment:
        out += "...";
        if (!s.type_condition.empty()) out += " on " + s.type_condition;
        break;
    }
    PrintDirectives(s.directives, out);
    PrintSelections(s.selections, out);
  }
  out += " }";
}

// ---- adapting -----------------------------------------------------------------------------

struct Adapter {
  SchemaFacts const& schema;
  Adapted& result;

  // Prunes `selections`, the selection set at `path` ("query:a.b"), as fields of `type` (empty
  // when not known); false when none is left.
  bool Prune(std::vector<Selection>& selections, std::string const& type, std::string const& path) {
    auto facts = type.empty() ? schema.types.end() : schema.types.find(type);
    auto lacks = schema.lacks.find(path);
    std::vector<Selection> kept;
    for (auto& s : selections) {
      if (s.kind == Selection::Kind::kFragmentSpread) {
        kept.push_back(std::move(s));
        continue;
      }
      if (s.kind == Selection::Kind::kInlineFragment) {
        std::string on = s.type_condition.empty() ? type : s.type_condition;
        if (Prune(s.selections, on, path)) kept.push_back(std::move(s));
        continue;
      }
      if (s.name.rfind("__", 0) == 0) {
        kept.push_back(std::move(s));  // meta fields
        continue;
      }
      std::string where = (type.empty() ? path : type) + "." + s.name;
      std::string field_path = path + (path.back() == ':' ? "" : ".") + s.name;
      if (lacks != schema.lacks.end() && lacks->second.count(s.name)) {
        result.dropped.push_back(where);
        continue;
      }
      FieldFacts const* known = nullptr;
      if (facts != schema.types.end()) {
        auto field = facts->second.find(s.name);
        if (field == facts->second.end()) {
          result.dropped.push_back(where);
          continue;
        }
        known = &field->second;
      }
      auto no_args = schema.lacks_args.find(field_path);
      std::vector<Argument> args;
      for (auto& a : s.arguments) {
        bool refused = (known && !known->args.count(a.name)) ||
                       (no_args != schema.lacks_args.end() && no_args->second.count(a.name));
        if (refused) {
          result.dropped.push_back(where + "(" + a.name + ")");
        } else {
          args.push_back(std::move(a));
        }
      }
      s.arguments = std::move(args);
      if (!s.selections.empty() &&
          !Prune(s.selections, known ? known->type : std::string(), field_path)) {
        result.dropped.push_back(where);
        continue;
      }
      kept.push_back(std::move(s));
    }
    selections = std::move(kept);
    return !selections.empty();
  }
};

// The quoted names of an error message, in order: 'a' or "a".
std::vector<std::string> QuotedNames(std::string const& message) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < message.size(); ++i) {
    char q = message[i];
    if (q != '\'' && q != '"') continue;
    auto end = message.find(q, i + 1);
    if (end == std::string::npos) break;
    out.push_back(message.substr(i + 1, end - i - 1));
    i = end;
  }
  return out;
}

// The selection or argument at `line`:`column` of `selections` (at `path`), recorded in
// `facts` as refused; false when nothing there.
bool LearnAt(std::vector<Selection> const& selections, std::string const& path, int line,
             int column, bool argument, SchemaFacts& facts) {
  for (auto const& s : selections) {
    std::string field_path = path + (path.back() == ':' ? "" : ".") + s.name;
    if (!argument && s.kind == Selection::Kind::kField && s.location.line == line &&
        s.location.column == column) {
      return facts.lacks[path].insert(s.name).second;
    }
    if (argument) {
      for (auto const& a : s.arguments) {
        if (a.location.line == line && a.location.column == column) {
          return facts.lacks_args[field_path].insert(a.name).second;
        }
      }
    }
    if (LearnAt(s.selections, s.kind == Selection::Kind::kField ? field_path : path, line, column,
                argument, facts)) {
      return true;
    }
  }
  return false;
}

void CollectVariables(Value const& v, std::set<std::string>& used) {
  if (v.kind == Value::Kind::kVariable) used.insert(v.text);
  for (auto const& item : v.items) CollectVariables(item, used);
}

void CollectVariables(std::vector<Selection> const& selections, std::set<std::string>& used) {
  for (auto const& s : selections) {
    for (auto const& a : s.arguments) CollectVariables(a.value, used);
    for (auto const& d : s.directives) {
      for (auto const& a : d.arguments) CollectVariables(a.value, used);
    }
    CollectVariables(s.selections, used);
  }
}

}  // namespace

StatusOr<SchemaFacts> ReadIntrospection(std::string_view data_json) {
  auto data = json::parse(data_json, nullptr, false);
  if (!data.is_object() || !data["__schema"].is_object()) return Malformed("no __schema");
  json const& schema = data["__schema"];
  SchemaFacts facts;
  if (schema["queryType"].is_object()) facts.query_type = NamedType(schema["queryType"]);
  if (schema["mutationType"].is_object()) facts.mutation_type = NamedType(schema["mutationType"]);
  if (!schema["types"].is_array()) return Malformed("no types");
  for (auto const& t : schema["types"]) {
    if (!t.is_object() || !t["name"].is_string() || !t["fields"].is_array()) continue;
    auto& fields = facts.types[t["name"].get<std::string>()];
    for (auto const& f : t["fields"]) {
      if (!f.is_object() || !f["name"].is_string()) continue;
      FieldFacts ff;
      ff.type = NamedType(f["type"]);
      if (f["args"].is_array()) {
        for (auto const& a : f["args"]) {
          if (a.is_object() && a["name"].is_string()) ff.args.insert(a["name"].get<std::string>());
        }
      }
      fields[f["name"].get<std::string>()] = std::move(ff);
    }
  }
  if (facts.types.find(facts.query_type) == facts.types.end()) {
    return Malformed("the query type " + facts.query_type + " is not among the types");
  }
  return facts;
}

std::string EncodeSchemaFacts(SchemaFacts const& facts) {
  // {"query": "Queries", "mutation": "Mutations", "types": {"T": {"f": ["Type", "arg", …]}}}
  json types = json::object();
  for (auto const& [name, fields] : facts.types) {
    json fs = json::object();
    for (auto const& [field, f] : fields) {
      json entry = json::array({f.type});
      for (auto const& a : f.args) entry.push_back(a);
      fs[field] = std::move(entry);
    }
    types[name] = std::move(fs);
  }
  json lacks = json::object(), lacks_args = json::object();
  for (auto const& [path, names] : facts.lacks) lacks[path] = names;
  for (auto const& [path, names] : facts.lacks_args) lacks_args[path] = names;
  json lacks_input = json::object();
  for (auto const& [type, names] : facts.lacks_input) lacks_input[type] = names;
  return json{{"query", facts.query_type},
              {"mutation", facts.mutation_type},
              {"types", types},
              {"lacks", lacks},
              {"lacks_args", lacks_args},
              {"lacks_input", lacks_input}}
      .dump();
}

StatusOr<SchemaFacts> DecodeSchemaFacts(std::string_view json_text) {
  auto j = json::parse(json_text, nullptr, false);
  if (!j.is_object() || !j["types"].is_object() || !j["query"].is_string()) {
    return Status(StatusCode::kInvalidArgument, "not an encoded schema");
  }
  SchemaFacts facts;
  facts.query_type = j["query"].get<std::string>();
  facts.mutation_type = j.value("mutation", "Mutation");
  for (auto const& [name, fields] : j["types"].items()) {
    if (!fields.is_object()) return Status(StatusCode::kInvalidArgument, "not an encoded schema");
    auto& out = facts.types[name];
    for (auto const& [field, entry] : fields.items()) {
      if (!entry.is_array() || entry.empty() || !entry[0].is_string()) {
        return Status(StatusCode::kInvalidArgument, "not an encoded schema");
      }
      FieldFacts f;
      f.type = entry[0].get<std::string>();
      for (std::size_t i = 1; i < entry.size(); ++i) {
        if (entry[i].is_string()) f.args.insert(entry[i].get<std::string>());
      }
      out[field] = std::move(f);
    }
  }
  for (auto [key, target] : {std::pair{"lacks", &facts.lacks},
                             {"lacks_args", &facts.lacks_args},
                             {"lacks_input", &facts.lacks_input}}) {
    if (!j.contains(key) || !j[key].is_object()) continue;
    for (auto const& [path, names] : j[key].items()) {
      if (!names.is_array()) continue;
      for (auto const& n : names) {
        if (n.is_string()) (*target)[path].insert(n.get<std::string>());
      }
    }
  }
  return facts;
}

StatusOr<Adapted> AdaptToSchema(std::string_view query, SchemaFacts const& schema) {
  auto parsed = Parse(query);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidArgument, "GraphQL: " + parsed.error->message);
  }
  Adapted result;
  Adapter adapter{schema, result};
  for (auto& op : parsed.document.operations) {
    std::string const& root = op.kind == "mutation" ? schema.mutation_type : schema.query_type;
    if (!adapter.Prune(op.selections, root, op.kind + ":")) {
      std::string lacks;
      for (auto const& d : result.dropped) lacks += (lacks.empty() ? "" : ", ") + d;
      return Status(StatusCode::kUnimplemented, "this server's schema has none of it (" + lacks +
                                                    "); a newer Backend.AI has it");
    }
    std::set<std::string> used;
    CollectVariables(op.selections, used);
    for (auto const& d : op.directives) {
      for (auto const& a : d.arguments) CollectVariables(a.value, used);
    }
    std::vector<VariableDefinition> vars;
    for (auto& v : op.variables) {
      std::string named;
      for (char ch : v.type) {
        if (ch != '[' && ch != ']' && ch != '!') named += ch;
      }
      if (used.count(v.name)) result.variable_types[v.name] = named;
      if (used.count(v.name)) {
        vars.push_back(std::move(v));
      } else {
        result.dropped_variables.push_back(v.name);
      }
    }
    op.variables = std::move(vars);
  }
  for (auto& f : parsed.document.fragments) {
    adapter.Prune(f.selections, f.type_condition, "fragment:" + f.name);
  }
  result.query = Print(parsed.document);
  return result;
}

std::string AdaptVariables(std::string const& variables_json, Adapted const& adapted,
                           SchemaFacts const& schema) {
  if (variables_json.empty()) return variables_json;
  auto vars = json::parse(variables_json, nullptr, false);
  if (!vars.is_object()) return variables_json;
  for (auto const& v : adapted.dropped_variables) vars.erase(v);
  for (auto const& [name, type] : adapted.variable_types) {
    auto lacks = schema.lacks_input.find(type);
    if (lacks == schema.lacks_input.end() || !vars.contains(name) || !vars[name].is_object()) {
      continue;
    }
    for (auto const& field : lacks->second) vars[name].erase(field);
  }
  return vars.dump();
}

bool LearnFromErrors(std::string_view query, std::vector<QueryError> const& errors,
                     SchemaFacts& facts) {
  if (errors.empty()) return false;
  auto parsed = Parse(query);
  if (!parsed.ok()) return false;
  for (auto const& e : errors) {
    // "Variable '$props' got invalid value {…}; Field 'f' is not defined by type 'T'."
    auto at = e.message.find("; Field ");
    if (e.message.rfind("Variable ", 0) == 0 && at != std::string::npos &&
        e.message.find(" is not defined by type ", at) != std::string::npos) {
      auto names = QuotedNames(e.message.substr(at));
      if (names.size() < 2 || !facts.lacks_input[names[1]].insert(names[0]).second) return false;
      continue;
    }
    bool field = e.message.rfind("Cannot query field", 0) == 0;
    bool argument = e.message.rfind("Unknown argument", 0) == 0;
    if ((!field && !argument) || e.line <= 0 || QuotedNames(e.message).empty()) return false;
    bool learnt = false;
    for (auto const& op : parsed.document.operations) {
      learnt = learnt || LearnAt(op.selections, op.kind + ":", e.line, e.column, argument, facts);
    }
    if (!learnt) return false;
  }
  return true;
}

std::string Print(Document const& document) {
  std::string out;
  for (auto const& op : document.operations) {
    if (!out.empty()) out += " ";
    out += op.kind;
    if (!op.name.empty()) out += " " + op.name;
    if (!op.variables.empty()) {
      out += "(";
      for (std::size_t i = 0; i < op.variables.size(); ++i) {
        auto const& v = op.variables[i];
        out += (i ? ", $" : "$") + v.name + ": " + v.type;
        if (v.default_value) {
          out += " = ";
          PrintValue(*v.default_value, out);
        }
      }
      out += ")";
    }
    PrintDirectives(op.directives, out);
    PrintSelections(op.selections, out);
  }
  for (auto const& f : document.fragments) {
    if (!out.empty()) out += " ";
    out += "fragment " + f.name + " on " + f.type_condition;
    PrintDirectives(f.directives, out);
    PrintSelections(f.selections, out);
  }
  return out;
}

}  // namespace bai::graphql
