// SPDX-License-Identifier: Apache-2.0
// The type system and the validator (spec §5), a pure core: documents and variables in, a Plan
// or located errors out.
#include "server-reference/manager/graphql/schema.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

namespace bai::graphql {

using nlohmann::json;

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool IsName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

// Splits "a: X, b: [Y] = [1, 2]" at the commas outside brackets and quotes.
std::vector<std::string_view> SplitTopLevel(std::string_view s) {
  std::vector<std::string_view> parts;
  int nesting = 0;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++nesting;
    } else if (c == ']' || c == '}') {
      --nesting;
    } else if (c == ',' && nesting == 0) {
      parts.push_back(Trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!Trim(s.substr(start)).empty()) parts.push_back(Trim(s.substr(start)));
  return parts;
}

// A schema definition is ours, so a malformed one is a programming error found by any test.
[[noreturn]] void BadDefinition(std::string_view what) {
  throw std::logic_error("bad GraphQL schema definition: " + std::string(what));
}

// "name: Type" or "name: Type = <JSON default>" (an argument, or an input object's field);
// `whole` is the definition it came from, for the error.
InputValueDef ParseInputValueDef(std::string_view text, std::string_view whole) {
  InputValueDef a;
  std::size_t c = text.find(':');
  if (c == std::string_view::npos) BadDefinition(whole);
  a.name = std::string(Trim(text.substr(0, c)));
  std::string_view rest = text.substr(c + 1);
  std::size_t eq = rest.find('=');
  auto type = TypeRef::Parse(Trim(rest.substr(0, eq)));
  if (!type || !IsName(a.name)) BadDefinition(whole);
  a.type = *type;
  if (eq != std::string_view::npos) a.default_value = json::parse(Trim(rest.substr(eq + 1)));
  return a;
}

FieldDef ParseFieldDef(std::string_view text) {
  FieldDef f;
  std::size_t open = text.find('(');
  std::size_t colon;
  if (open != std::string_view::npos) {
    std::size_t close = text.rfind(')');
    if (close == std::string_view::npos || close < open) BadDefinition(text);
    f.name = std::string(Trim(text.substr(0, open)));
    for (auto arg : SplitTopLevel(text.substr(open + 1, close - open - 1))) {
      f.args.push_back(ParseInputValueDef(arg, text));
    }
    colon = text.find(':', close);
  } else {
    colon = text.find(':');
    f.name = std::string(Trim(text.substr(0, colon)));
  }
  if (colon == std::string_view::npos || !IsName(f.name)) BadDefinition(text);
  auto type = TypeRef::Parse(Trim(text.substr(colon + 1)));
  if (!type) BadDefinition(text);
  f.type = *type;
  return f;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool FitsInt32(json const& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= 0x7fffffffULL;
  if (v.is_number_integer()) {
    auto n = v.get<std::int64_t>();
    return n >= std::numeric_limits<std::int32_t>::min() &&
           n <= std::numeric_limits<std::int32_t>::max();
  }
  return false;
}

bool IsDigits(std::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsStringLike(std::string_view scalar) {
  return scalar == "String" || scalar == "UUID" || scalar == "DateTime" || scalar == "JSONString" ||
         scalar == "ID";
}

}  // namespace

// ---- types ----------------------------------------------------------------------------------

std::optional<TypeRef> TypeRef::Parse(std::string_view text) {
  TypeRef t;
  text = Trim(text);
  if (!text.empty() && text.back() == '!') {
    t.non_null = true;
    text = Trim(text.substr(0, text.size() - 1));
  }
  if (!text.empty() && text.front() == '[') {
    if (text.back() != ']') return std::nullopt;
    t.list = true;
    text = Trim(text.substr(1, text.size() - 2));
    if (!text.empty() && text.back() == '!') {
      t.item_non_null = true;
      text = Trim(text.substr(0, text.size() - 1));
    }
  }
  if (!IsName(text)) return std::nullopt;
  t.name = std::string(text);
  return t;
}

std::string TypeRef::ToString() const {
  std::string s = name;
  if (list) s = "[" + s + (item_non_null ? "!" : "") + "]";
  if (non_null) s += "!";
  return s;
}

FieldDef const* TypeDef::Field(std::string_view field_name) const {
  for (auto const& f : fields) {
    if (f.name == field_name) return &f;
  }
  return nullptr;
}

Schema::Schema() {
  for (char const* name :
       {"Int", "Float", "String", "Boolean", "ID", "BigInt", "UUID", "DateTime", "JSONString"}) {
    types_.emplace(name, TypeDef{TypeKind::kScalar, name, {}, {}, {}});
  }
}

Schema& Schema::Object(std::string name, std::vector<std::string> const& fields) {
  TypeDef t{TypeKind::kObject, name, {}, {}, {}};
  for (auto const& f : fields) t.fields.push_back(ParseFieldDef(f));
  types_[std::move(name)] = std::move(t);
  return *this;
}

Schema& Schema::Extend(std::string_view name, std::vector<std::string> const& fields) {
  auto it = types_.find(name);
  if (it == types_.end()) return Object(std::string(name), fields);
  for (auto const& f : fields) it->second.fields.push_back(ParseFieldDef(f));
  return *this;
}

Schema& Schema::Input(std::string name, std::vector<std::string> const& fields) {
  TypeDef t{TypeKind::kInputObject, name, {}, {}, {}};
  for (auto const& text : fields) t.inputs.push_back(ParseInputValueDef(text, text));
  types_[std::move(name)] = std::move(t);
  return *this;
}

Schema& Schema::Enum(std::string name, std::vector<std::string> values) {
  types_[name] = TypeDef{TypeKind::kEnum, name, {}, std::move(values), {}};
  return *this;
}

TypeDef const* Schema::Find(std::string_view name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : &it->second;
}

PlannedField const* PlannedField::Find(std::string_view field_name) const {
  for (auto const& f : selections) {
    if (f.name == field_name) return &f;
  }
  return nullptr;
}

// ---- validation -----------------------------------------------------------------------------

namespace {

class Preparer {
 public:
  Preparer(Document const& doc, Schema const& schema, Limits const& limits)
      : doc_(doc), schema_(schema), limits_(limits) {}

  Prepared Run(json const& variables, std::string_view operation_name) {
    Operation const* op = SelectOperation(operation_name);
    CheckFragments();
    if (op == nullptr || !errors_.empty()) return Done();
    out_.plan.operation = op->kind;
    TypeDef const* root = RootType(*op);
    if (root == nullptr) return Done();
    DefineVariables(*op, variables);
    CheckVariableUse(*op);
    if (!errors_.empty()) return Done();
    CollectFields(*root, op->selections, out_.plan.fields, 1);
    return Done();
  }

 private:
  Prepared Done() {
    out_.work = work_;
    out_.errors = std::move(errors_);
    if (!out_.errors.empty()) out_.plan.fields.clear();
    return std::move(out_);
  }

  void Fail(std::string message, Location where) {
    errors_.push_back(Error{std::move(message), {where}});
  }
  void Fail(std::string message) { errors_.push_back(Error{std::move(message), {}}); }

  // -- operations and fragments --

  Operation const* SelectOperation(std::string_view name) {
    auto const& ops = doc_.operations;
    if (ops.empty()) {
      Fail("The document contains no operation.");
      return nullptr;
    }
    std::set<std::string> seen;
    for (auto const& op : ops) {
      if (op.name.empty() && ops.size() > 1) {
        Fail("This anonymous operation must be the only defined operation.", op.location);
      } else if (!op.name.empty() && !seen.insert(op.name).second) {
        Fail("There can be only one operation named " + Quote(op.name) + ".", op.location);
      }
    }
    if (name.empty()) {
      if (ops.size() == 1) return &ops.front();
      Fail("Must provide operation name if query contains multiple operations.");
      return nullptr;
    }
    for (auto const& op : ops) {
      if (op.name == name) return &op;
    }
    Fail("Unknown operation named " + Quote(name) + ".");
    return nullptr;
  }

  Fragment const* FindFragment(std::string_view name) const {
    for (auto const& f : doc_.fragments) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  // Unique names, known type conditions, known spreads, no cycles, none unused (spec §5.5).
  void CheckFragments() {
    std::set<std::string> names;
    for (auto const& f : doc_.fragments) {
      if (!names.insert(f.name).second) {
        Fail("There can be only one fragment named " + Quote(f.name) + ".", f.location);
      }
      CheckTypeCondition(f.type_condition, f.location);
    }
    std::set<std::string> used;
    for (auto const& op : doc_.operations) MarkSpreads(op.selections, used);
    for (auto const& f : doc_.fragments) {
      if (!used.count(f.name)) Fail("Fragment " + Quote(f.name) + " is never used.", f.location);
      std::vector<std::string> path{f.name};
      if (Cycles(f, path)) break;
    }
  }

  void CheckTypeCondition(std::string const& name, Location where) {
    if (name.empty()) return;
    TypeDef const* t = schema_.Find(name);
    if (t == nullptr) {
      Fail("Unknown type " + Quote(name) + ".", where);
    } else if (t->kind != TypeKind::kObject) {
      Fail("Fragment cannot condition on non composite type " + Quote(name) + ".", where);
    }
  }

  // Every fragment reachable from `sels`, reporting unknown spreads once each.
  void MarkSpreads(std::vector<Selection> const& sels, std::set<std::string>& used) {
    for (auto const& s : sels) {
      ++work_;
      if (s.kind == Selection::Kind::kFragmentSpread) {
        if (used.count(s.name)) continue;
        Fragment const* f = FindFragment(s.name);
        if (f == nullptr) {
          Fail("Unknown fragment " + Quote(s.name) + ".", s.location);
          used.insert(s.name);
          continue;
        }
        used.insert(s.name);
        MarkSpreads(f->selections, used);
      } else {
        if (s.kind == Selection::Kind::kInlineFragment) {
          CheckTypeCondition(s.type_condition, s.location);
        }
        MarkSpreads(s.selections, used);
      }
    }
  }

  bool Cycles(Fragment const& f, std::vector<std::string>& path) {
    return SpreadsCycle(f.selections, path);
  }
  bool SpreadsCycle(std::vector<Selection> const& sels, std::vector<std::string>& path) {
    for (auto const& s : sels) {
      ++work_;
      if (s.kind != Selection::Kind::kFragmentSpread) {
        if (SpreadsCycle(s.selections, path)) return true;
        continue;
      }
      for (auto const& p : path) {
        if (p == s.name) {
          Fail("Cannot spread fragment " + Quote(s.name) + " within itself.", s.location);
          return true;
        }
      }
      // A fragment explored once without a cycle has none below it: each is explored once,
      // so the check is linear in the document (the shape F_i { ...F_{i-1} ...F_{i-1} } was
      // exponential without this).
      if (acyclic_.count(s.name)) continue;
      Fragment const* next = FindFragment(s.name);
      if (next == nullptr || path.size() > 64) continue;
      path.push_back(s.name);
      bool cycle = SpreadsCycle(next->selections, path);
      path.pop_back();
      if (cycle) return true;
      acyclic_.insert(s.name);
    }
    return false;
  }

  TypeDef const* RootType(Operation const& op) {
    if (op.kind == "subscription") {
      Fail("Subscriptions are not supported; follow events on /events/session instead.",
           op.location);
      return nullptr;
    }
    std::string const& name = op.kind == "mutation" ? schema_.mutation_type : schema_.query_type;
    TypeDef const* t = name.empty() ? nullptr : schema_.Find(name);
    if (t == nullptr) Fail("Schema is not configured for " + op.kind + "s.", op.location);
    return t;
  }

  // -- variables --

  void DefineVariables(Operation const& op, json const& given) {
    if (!given.is_null() && !given.is_object()) {
      Fail("Variables must be given as a JSON object.");
      return;
    }
    for (auto const& v : op.variables) {
      if (vars_.count(v.name)) {
        Fail("There can be only one variable named " + Quote("$" + v.name) + ".", v.location);
        continue;
      }
      auto type = TypeRef::Parse(v.type);
      TypeDef const* named = type ? schema_.Find(type->name) : nullptr;
      if (named == nullptr || named->kind == TypeKind::kObject) {
        Fail("Variable " + Quote("$" + v.name) + " cannot be of type " + Quote(v.type) +
                 ": it is not a known input type.",
             v.location);
        continue;
      }
      Variable var{*type, std::nullopt};
      std::string what = "Variable " + Quote("$" + v.name);
      auto it = given.is_object() ? given.find(v.name) : given.end();
      if (given.is_object() && it != given.end()) {
        var.value = CoerceJson(*it, *type, what, v.location);
      } else if (v.default_value) {
        bool bad = false;
        var.value = CoerceValue(*v.default_value, *type, what + " default", bad);
      } else if (type->non_null) {
        Fail(what + " of required type " + Quote(v.type) + " was not provided.", v.location);
      }
      vars_.emplace(v.name, std::move(var));
    }
  }

  void CheckVariableUse(Operation const& op) {
    std::set<std::string> used;
    std::set<std::string> visited;
    UsedVariables(op.selections, op.directives, used, visited);
    for (auto const& v : op.variables) {
      if (!used.count(v.name))
        Fail("Variable " + Quote("$" + v.name) + " is never used.", v.location);
    }
  }

  void UsedIn(Value const& v, std::set<std::string>& used) {
    if (v.kind == Value::Kind::kVariable) used.insert(v.text);
    for (auto const& item : v.items) UsedIn(item, used);
  }
  void UsedVariables(std::vector<Selection> const& sels, std::vector<Directive> const& directives,
                     std::set<std::string>& used, std::set<std::string>& visited) {
    for (auto const& d : directives) {
      for (auto const& a : d.arguments) UsedIn(a.value, used);
    }
    for (auto const& s : sels) {
      ++work_;
      for (auto const& a : s.arguments) UsedIn(a.value, used);
      UsedVariables(s.selections, s.directives, used, visited);
      if (s.kind == Selection::Kind::kFragmentSpread && visited.insert(s.name).second) {
        if (Fragment const* f = FindFragment(s.name)) {
          UsedVariables(f->selections, f->directives, used, visited);
        }
      }
    }
  }

  // -- input coercion (spec §3.5, §5.6) --

  static constexpr char kInvalid[] = "\x01invalid";
  static json Invalid() { return json(kInvalid); }
  static bool IsInvalid(json const& v) {
    return v.is_string() && v.get_ref<std::string const&>() == kInvalid;
  }

  std::optional<json> CoerceJson(json const& v, TypeRef const& type, std::string const& what,
                                 Location where) {
    json out = CoerceJsonValue(v, type, what, where);
    if (IsInvalid(out)) return std::nullopt;
    return out;
  }

  json CoerceJsonValue(json const& v, TypeRef const& type, std::string const& what,
                       Location where) {
    if (v.is_null()) {
      if (!type.non_null) return nullptr;
      Fail(what + " of non-null type " + Quote(type.ToString()) + " must not be null.", where);
      return Invalid();
    }
    if (type.list) {
      TypeRef item{type.name, type.item_non_null, false, false};
      json out = json::array();
      if (!v.is_array()) {
        out.push_back(CoerceJsonValue(v, item, what, where));
      } else {
        for (auto const& e : v) out.push_back(CoerceJsonValue(e, item, what, where));
      }
      for (auto const& e : out) {
        if (IsInvalid(e)) return Invalid();
      }
      return out;
    }
    TypeDef const* t = schema_.Find(type.name);
    std::string const& n = type.name;
    if (t != nullptr && t->kind == TypeKind::kInputObject) {
      if (!v.is_object()) {
        Fail(what + " got invalid value " + v.dump() + "; expected type " + Quote(type.ToString()) +
                 ".",
             where);
        return Invalid();
      }
      json out = json::object();
      bool bad = false;
      for (auto const& [key, value] : v.items()) {
        if (!InputField(*t, key)) {
          Fail(what + " got invalid value " + v.dump() + "; field " + Quote(key) +
                   " is not defined by type " + Quote(t->name) + ".",
               where);
          bad = true;
        }
      }
      for (auto const& in : t->inputs) {
        auto it = v.find(in.name);
        if (it == v.end()) {
          if (in.default_value) {
            out[in.name] = *in.default_value;
          } else if (in.type.non_null) {
            Fail(what + " got invalid value " + v.dump() + "; field " +
                     Quote(t->name + "." + in.name) + " of required type " +
                     Quote(in.type.ToString()) + " was not provided.",
                 where);
            bad = true;
          }
          continue;
        }
        json one = CoerceJsonValue(*it, in.type, what + " field " + Quote(in.name), where);
        if (IsInvalid(one)) bad = true;
        out[in.name] = std::move(one);
      }
      return bad ? Invalid() : out;
    }
    bool ok = false;
    json out = v;
    if (t != nullptr && t->kind == TypeKind::kEnum) {
      ok = v.is_string() && IsEnumValue(*t, v.get_ref<std::string const&>());
    } else if (n == "Int") {
      ok = FitsInt32(v);
    } else if (n == "BigInt") {
      ok = v.is_number_integer() || (v.is_string() && IsDigits(v.get_ref<std::string const&>()));
      if (ok && v.is_string())
        out = std::strtoll(v.get_ref<std::string const&>().c_str(), nullptr, 10);
    } else if (n == "Float") {
      ok = v.is_number();
      if (ok) out = v.get<double>();
    } else if (n == "Boolean") {
      ok = v.is_boolean();
    } else if (n == "ID") {
      ok = v.is_string() || v.is_number_integer();
      if (ok && !v.is_string()) out = v.dump();
    } else if (n == "JSONString") {
      ok = true;
      if (!v.is_string()) out = v.dump();
    } else if (IsStringLike(n)) {
      ok = v.is_string();
    }
    if (ok) return out;
    Fail(
        what + " got invalid value " + v.dump() + "; expected type " + Quote(type.ToString()) + ".",
        where);
    return Invalid();
  }

  static InputValueDef const* InputField(TypeDef const& t, std::string_view name) {
    for (auto const& in : t.inputs) {
      if (in.name == name) return &in;
    }
    return nullptr;
  }

  static bool IsEnumValue(TypeDef const& t, std::string const& s) {
    for (auto const& e : t.values) {
      if (e == s) return true;
    }
    return false;
  }

  // A literal or variable as an argument of `type`; nullopt: absent (an unset variable), or an
  // error already reported (`bad` set).
  std::optional<json> CoerceValue(Value const& v, TypeRef const& type, std::string const& what,
                                  bool& bad) {
    if (v.kind == Value::Kind::kVariable) {
      auto it = vars_.find(v.text);
      if (it == vars_.end()) {
        Fail("Variable " + Quote("$" + v.text) + " is not defined.", v.location);
        bad = true;
        return std::nullopt;
      }
      TypeRef const& vt = it->second.type;
      bool compatible = vt.name == type.name && vt.list == type.list &&
                        (!type.non_null || vt.non_null || it->second.value.has_value()) &&
                        (!type.item_non_null || vt.item_non_null || !vt.list);
      // A non-list variable may feed a list position (input coercion wraps it).
      if (!compatible && vt.name == type.name && !vt.list && type.list) {
        compatible = !type.non_null || vt.non_null;
      }
      if (!compatible) {
        Fail("Variable " + Quote("$" + v.text) + " of type " + Quote(vt.ToString()) +
                 " used in position expecting type " + Quote(type.ToString()) + ".",
             v.location);
        bad = true;
        return std::nullopt;
      }
      if (!it->second.value) return std::nullopt;
      if (type.list && !vt.list) return json::array({*it->second.value});
      return it->second.value;
    }
    if (v.kind == Value::Kind::kNull) {
      if (!type.non_null) return json(nullptr);
      Fail(what + " of type " + Quote(type.ToString()) + " must not be null.", v.location);
      bad = true;
      return std::nullopt;
    }
    if (type.list) {
      TypeRef item{type.name, type.item_non_null, false, false};
      json out = json::array();
      if (v.kind != Value::Kind::kList) {
        auto one = CoerceValue(v, item, what, bad);
        if (!bad) out.push_back(one ? *one : json(nullptr));
        return out;
      }
      for (auto const& e : v.items) {
        auto one = CoerceValue(e, item, what, bad);
        if (bad) return std::nullopt;
        out.push_back(one ? *one : json(nullptr));
      }
      return out;
    }
    if (TypeDef const* t = schema_.Find(type.name);
        t != nullptr && t->kind == TypeKind::kInputObject) {
      if (v.kind != Value::Kind::kObject) {
        Fail(what + " has an invalid value; expected type " + Quote(type.ToString()) + ".",
             v.location);
        bad = true;
        return std::nullopt;
      }
      json out = json::object();
      for (std::size_t i = 0; i < v.names.size(); ++i) {
        InputValueDef const* in = InputField(*t, v.names[i]);
        if (in == nullptr) {
          Fail("Field " + Quote(v.names[i]) + " is not defined by type " + Quote(t->name) + ".",
               v.items[i].location);
          bad = true;
          continue;
        }
        if (out.contains(in->name)) {
          Fail("There can be only one input field named " + Quote(in->name) + ".",
               v.items[i].location);
          bad = true;
          continue;
        }
        auto one =
            CoerceValue(v.items[i], in->type, "Field " + Quote(t->name + "." + in->name), bad);
        if (bad) continue;
        if (one) out[in->name] = *one;  // an unset variable: absent
      }
      for (auto const& in : t->inputs) {
        if (out.contains(in.name)) continue;
        if (in.default_value) {
          out[in.name] = *in.default_value;
        } else if (in.type.non_null) {
          Fail("Field " + Quote(t->name + "." + in.name) + " of required type " +
                   Quote(in.type.ToString()) + " was not provided.",
               v.location);
          bad = true;
        }
      }
      if (bad) return std::nullopt;
      return out;
    }
    if (auto scalar = CoerceScalarLiteral(v, type)) return scalar;
    Fail(what + " has an invalid value" +
             (v.kind == Value::Kind::kString ? " " + json(v.text).dump() : std::string()) +
             "; expected type " + Quote(type.ToString()) + ".",
         v.location);
    bad = true;
    return std::nullopt;
  }

  std::optional<json> CoerceScalarLiteral(Value const& v, TypeRef const& type) {
    TypeDef const* t = schema_.Find(type.name);
    std::string const& n = type.name;
    using K = Value::Kind;
    if (t != nullptr && t->kind == TypeKind::kEnum) {
      if (v.kind == K::kEnum && IsEnumValue(*t, v.text)) return json(v.text);
      return std::nullopt;
    }
    if (n == "Int" || n == "BigInt") {
      if (v.kind == K::kString && n == "BigInt" && IsDigits(v.text)) {
        return json(std::strtoll(v.text.c_str(), nullptr, 10));
      }
      if (v.kind != K::kInt || !IsDigits(v.text)) return std::nullopt;
      json n64 = std::strtoll(v.text.c_str(), nullptr, 10);
      if (n == "Int" && !FitsInt32(n64)) return std::nullopt;
      return n64;
    }
    if (n == "Float") {
      if (v.kind != K::kInt && v.kind != K::kFloat) return std::nullopt;
      return json(std::strtod(v.text.c_str(), nullptr));
    }
    if (n == "Boolean")
      return v.kind == K::kBoolean ? std::optional<json>(v.boolean) : std::nullopt;
    if (n == "ID" && v.kind == K::kInt) return json(v.text);
    if (IsStringLike(n) && v.kind == K::kString) return json(v.text);
    return std::nullopt;
  }

  // -- selections --

  // Whether @skip / @include let the selection through.
  bool Included(std::vector<Directive> const& directives) {
    bool include = true;
    for (auto const& d : directives) {
      if (d.name != "skip" && d.name != "include") {
        Fail("Unknown directive " + Quote("@" + d.name) + ".", d.location);
        continue;
      }
      bool bad = false;
      std::optional<json> cond;
      for (auto const& a : d.arguments) {
        if (a.name != "if") {
          Fail("Unknown argument " + Quote(a.name) + " on directive " + Quote("@" + d.name) + ".",
               a.location);
          continue;
        }
        cond = CoerceValue(a.value, TypeRef{"Boolean", true, false, false},
                           "Argument \"if\" of @" + d.name, bad);
      }
      if (!cond && !bad) {
        Fail("Directive " + Quote("@" + d.name) +
                 " argument \"if\" of type \"Boolean!\" is required, but it was not provided.",
             d.location);
      }
      if (cond && cond->is_boolean() && cond->get<bool>() == (d.name == "skip")) include = false;
    }
    return include;
  }

  void CollectFields(TypeDef const& type, std::vector<Selection> const& sels,
                     std::vector<PlannedField>& out, int depth) {
    if (depth > limits_.max_depth) {
      if (!depth_reported_) {
        Fail("The query is nested deeper than " + std::to_string(limits_.max_depth) +
             " levels once its fragments are expanded.");
      }
      depth_reported_ = true;
      return;
    }
    for (auto const& s : sels) {
      if (planned_ > limits_.max_selections) return;
      // Every selection visited counts, also those @skip drops or that only spread fragments:
      // expansion is bounded even when it plans no field.
      ++work_;
      if (++visited_ > kVisitBudget * limits_.max_selections) {
        Fail("The query is too complex: more than " +
             std::to_string(kVisitBudget * limits_.max_selections) +
             " selections once its fragments are expanded.");
        planned_ = limits_.max_selections + 1;
        return;
      }
      if (!Included(s.directives)) continue;
      switch (s.kind) {
        case Selection::Kind::kField: {
          if (++planned_ > limits_.max_selections) {
            Fail("The query selects more than " + std::to_string(limits_.max_selections) +
                 " fields once its fragments are expanded.");
            return;
          }
          if (auto f = PlanField(type, s, depth)) Merge(out, *std::move(f));
          break;
        }
        case Selection::Kind::kFragmentSpread: {
          Fragment const* f = FindFragment(s.name);
          if (f == nullptr || expanding_.count(s.name)) break;  // reported by CheckFragments
          if (!SpreadFits(type, f->type_condition, s.name, s.location)) break;
          if (!Included(f->directives)) break;
          expanding_.insert(s.name);
          CollectFields(type, f->selections, out, depth);
          expanding_.erase(s.name);
          break;
        }
        case Selection::Kind::kInlineFragment:
          if (SpreadFits(type, s.type_condition, "", s.location)) {
            CollectFields(type, s.selections, out, depth);
          }
          break;
      }
    }
  }

  bool SpreadFits(TypeDef const& type, std::string const& condition, std::string const& name,
                  Location where) {
    if (condition.empty() || condition == type.name) return true;
    if (schema_.Find(condition) == nullptr) return false;  // reported by CheckFragments
    Fail((name.empty() ? std::string("Fragment") : "Fragment " + Quote(name)) +
             " cannot be spread here as objects of type " + Quote(type.name) +
             " can never be of type " + Quote(condition) + ".",
         where);
    return false;
  }

  std::optional<PlannedField> PlanField(TypeDef const& parent, Selection const& s, int depth) {
    PlannedField f;
    f.key = s.ResponseKey();
    f.name = s.name;
    f.location = s.location;
    f.args = json::object();
    if (s.name == "__typename") {
      f.type = schema_.Find("String");
      if (!s.arguments.empty() || !s.selections.empty()) {
        Fail("Field \"__typename\" takes no arguments or sub-selections.", s.location);
        return std::nullopt;
      }
      return f;
    }
    f.def = parent.Field(s.name);
    if (f.def == nullptr) {
      Fail("Cannot query field " + Quote(s.name) + " on type " + Quote(parent.name) + ".",
           s.location);
      return std::nullopt;
    }
    f.type = schema_.Find(f.def->type.name);
    if (!PlanArguments(parent, s, f)) return std::nullopt;
    if (f.type->kind == TypeKind::kObject) {
      if (s.selections.empty()) {
        Fail("Field " + Quote(s.name) + " of type " + Quote(f.def->type.ToString()) +
                 " must have a selection of subfields.",
             s.location);
        return std::nullopt;
      }
      CollectFields(*f.type, s.selections, f.selections, depth + 1);
    } else if (!s.selections.empty()) {
      Fail("Field " + Quote(s.name) + " must not have a selection since type " +
               Quote(f.def->type.ToString()) + " has no subfields.",
           s.location);
      return std::nullopt;
    }
    return f;
  }

  bool PlanArguments(TypeDef const& parent, Selection const& s, PlannedField& f) {
    bool ok = true;
    std::set<std::string> given;
    for (auto const& a : s.arguments) {
      InputValueDef const* def = nullptr;
      for (auto const& d : f.def->args) {
        if (d.name == a.name) def = &d;
      }
      if (def == nullptr) {
        Fail("Unknown argument " + Quote(a.name) + " on field " +
                 Quote(parent.name + "." + s.name) + ".",
             a.location);
        ok = false;
        continue;
      }
      if (!given.insert(a.name).second) {
        Fail("There can be only one argument named " + Quote(a.name) + ".", a.location);
        ok = false;
        continue;
      }
      bool bad = false;
      auto v = CoerceValue(a.value, def->type,
                           "Argument " + Quote(a.name) + " of field " + Quote(s.name), bad);
      if (bad) {
        ok = false;
      } else if (v) {
        f.args[a.name] = *std::move(v);
      }
    }
    for (auto const& d : f.def->args) {
      if (f.args.contains(d.name)) continue;
      if (d.default_value) {
        f.args[d.name] = *d.default_value;
      } else if (d.type.non_null && !given.count(d.name)) {
        Fail("Field " + Quote(s.name) + " argument " + Quote(d.name) + " of type " +
                 Quote(d.type.ToString()) + " is required, but it was not provided.",
             s.location);
        ok = false;
      } else if (d.type.non_null) {
        Fail("Field " + Quote(s.name) + " argument " + Quote(d.name) + " of type " +
                 Quote(d.type.ToString()) + " was given an unset variable.",
             s.location);
        ok = false;
      }
    }
    return ok;
  }

  // Adds `f` under its response key; a field already there must be the same field with the
  // same arguments, and their sub-selections merge (spec §5.3.2).
  void Merge(std::vector<PlannedField>& out, PlannedField f) {
    for (auto& have : out) {
      if (have.key != f.key) continue;
      if (have.name != f.name || have.args != f.args) {
        Fail("Fields " + Quote(f.key) +
                 " conflict because they select different fields or "
                 "arguments; use different aliases on the fields to fetch both.",
             f.location);
        return;
      }
      for (auto& sub : f.selections) Merge(have.selections, std::move(sub));
      return;
    }
    out.push_back(std::move(f));
  }

  struct Variable {
    TypeRef type;
    std::optional<json> value;  ///< nullopt: not provided and no default
  };

  Document const& doc_;
  Schema const& schema_;
  Limits limits_;
  Prepared out_;
  std::vector<Error> errors_;
  std::map<std::string, Variable> vars_;
  std::set<std::string> expanding_;
  std::set<std::string> acyclic_;
  static constexpr int kVisitBudget = 4;
  int planned_ = 0;
  int visited_ = 0;
  std::int64_t work_ = 0;
  bool depth_reported_ = false;
};

}  // namespace

Prepared Prepare(Document const& document, Schema const& schema, json const& variables,
                 std::string_view operation_name, Limits const& limits) {
  return Preparer(document, schema, limits).Run(variables, operation_name);
}

}  // namespace bai::graphql
