// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/graphql/execute.h"

#include <optional>
#include <string>
#include <utility>

namespace bai::graphql {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

ordered_json ErrorJson(std::string const& message, std::vector<Location> const& locations,
                       ordered_json const* path) {
  ordered_json e = ordered_json::object();
  e["message"] = message;
  if (!locations.empty()) {
    e["locations"] = ordered_json::array();
    for (auto const& l : locations)
      e["locations"].push_back({{"line", l.line}, {"column", l.column}});
  }
  if (path != nullptr) e["path"] = *path;
  return e;
}

class Executor {
 public:
  explicit Executor(std::vector<ordered_json>& errors) : errors_(errors) {}

  // The completed value of `f` for `value`; nullopt: a null in a non-null position, to be
  // propagated to the parent (the error is already recorded).
  std::optional<ordered_json> Complete(PlannedField const& f, TypeRef const& type,
                                       json const& value, ordered_json& path) {
    if (value.is_null()) {
      if (!type.non_null) return ordered_json(nullptr);
      Fail(f, "Cannot return null for non-nullable field " + f.name + ".", path);
      return std::nullopt;
    }
    if (type.list) {
      if (!value.is_array()) {
        Fail(f, "Expected a list for field " + f.name + ".", path);
        return Nullable(type);
      }
      TypeRef item{type.name, type.item_non_null, false, false};
      ordered_json out = ordered_json::array();
      for (std::size_t i = 0; i < value.size(); ++i) {
        path.push_back(i);
        auto one = Complete(f, item, value[i], path);
        path.erase(path.size() - 1);
        if (!one) return Nullable(type);
        out.push_back(*std::move(one));
      }
      return out;
    }
    TypeDef const& t = *f.type;
    if (t.kind == TypeKind::kObject) {
      if (!value.is_object()) {
        Fail(f, "Expected an object for field " + f.name + ".", path);
        return Nullable(type);
      }
      auto object = Object(t, f.selections, value, path);
      if (!object) return Nullable(type);
      return object;
    }
    auto scalar = Serialize(t, value);
    if (!scalar) {
      Fail(f, "Field " + f.name + " cannot represent " + value.dump() + " as " + t.name + ".",
           path);
      return Nullable(type);
    }
    return scalar;
  }

  std::optional<ordered_json> Object(TypeDef const& t, std::vector<PlannedField> const& fields,
                                     json const& value, ordered_json& path) {
    ordered_json out = ordered_json::object();
    for (auto const& sub : fields) {
      path.push_back(sub.key);
      std::optional<ordered_json> v;
      if (sub.def == nullptr) {
        v = ordered_json(t.name);  // __typename
      } else {
        auto it = value.find(sub.name);
        static json const null_value;
        v = Complete(sub, sub.def->type, it == value.end() ? null_value : *it, path);
      }
      path.erase(path.size() - 1);
      if (!v) return std::nullopt;
      out[sub.key] = *std::move(v);
    }
    return out;
  }

  void Fail(PlannedField const& f, std::string const& message, ordered_json const& path) {
    errors_.push_back(ErrorJson(message, {f.location}, &path));
  }

 private:
  // Null when the position allows it, else propagate.
  static std::optional<ordered_json> Nullable(TypeRef const& type) {
    if (type.non_null) return std::nullopt;
    return ordered_json(nullptr);
  }

  static std::optional<ordered_json> Serialize(TypeDef const& t, json const& v) {
    std::string const& n = t.name;
    if (t.kind == TypeKind::kEnum) {
      if (!v.is_string()) return std::nullopt;
      for (auto const& e : t.values) {
        if (e == v.get_ref<std::string const&>()) return ordered_json(e);
      }
      return std::nullopt;
    }
    if (n == "Int" || n == "BigInt") {
      if (v.is_number_integer()) return ordered_json(v.get<std::int64_t>());
      if (v.is_number_float() && v.get<double>() == static_cast<double>(v.get<std::int64_t>())) {
        return ordered_json(v.get<std::int64_t>());
      }
      return std::nullopt;
    }
    if (n == "Float") {
      if (v.is_number()) return ordered_json(v.get<double>());
      return std::nullopt;
    }
    if (n == "Boolean") {
      if (v.is_boolean()) return ordered_json(v.get<bool>());
      return std::nullopt;
    }
    if (n == "JSONString") {
      return ordered_json(v.is_string() ? v.get<std::string>() : v.dump());
    }
    // String, ID, UUID, DateTime.
    if (v.is_string()) return ordered_json(v.get<std::string>());
    if (v.is_number() || v.is_boolean()) return ordered_json(v.dump());
    return std::nullopt;
  }

  std::vector<ordered_json>& errors_;
};

}  // namespace

ordered_json Execute(Plan const& plan, RootResolver const& resolve) {
  std::vector<ordered_json> errors;
  Executor ex(errors);
  ordered_json data = ordered_json::object();
  bool data_null = false;
  for (auto const& f : plan.fields) {
    ordered_json path = ordered_json::array({f.key});
    std::optional<ordered_json> v;
    if (f.def == nullptr) {
      v = ordered_json(plan.operation == "mutation" ? "Mutation" : "Query");
    } else {
      auto value = resolve(f);
      if (!value.ok()) {
        errors.push_back(ErrorJson(value.status().message(), {f.location}, &path));
        v = f.def->type.non_null ? std::nullopt : std::optional<ordered_json>(nullptr);
      } else {
        v = ex.Complete(f, f.def->type, *value, path);
      }
    }
    if (!v) {
      data_null = true;
      continue;
    }
    data[f.key] = *std::move(v);
  }
  ordered_json out = ordered_json::object();
  out["data"] = data_null ? ordered_json(nullptr) : std::move(data);
  if (!errors.empty()) out["errors"] = std::move(errors);
  return out;
}

ordered_json ErrorResponse(std::vector<Error> const& errors) {
  ordered_json out = ordered_json::object();
  out["data"] = nullptr;
  out["errors"] = ordered_json::array();
  for (auto const& e : errors) out["errors"].push_back(ErrorJson(e.message, e.locations, nullptr));
  return out;
}

}  // namespace bai::graphql
