// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/policies.h"

#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"
#include "libbai/util/text.h"
#include "server-reference/manager/state/store.h"

namespace bai::manager {

using nlohmann::json;
using server::SqlValue;

namespace {

enum class Type { kInt, kOptInt, kSlots, kOptSlots, kJson, kDefaultMode };

struct Field {
  char const* name;  ///< the input field and the column
  Type type;
};

struct KindSpec {
  char const* table;
  std::vector<Field> fields;
  /// Who uses a policy of this kind: a query returning a row while any does, and its name.
  char const* users_sql;
  char const* users;
};

KindSpec const& Spec(PolicyKind kind) {
  static KindSpec const kKeypair{"keypair_resource_policies",
                                 {{"default_for_unspecified", Type::kDefaultMode},
                                  {"total_resource_slots", Type::kSlots},
                                  {"max_session_lifetime", Type::kInt},
                                  {"max_concurrent_sessions", Type::kInt},
                                  {"max_concurrent_sftp_sessions", Type::kInt},
                                  {"max_containers_per_session", Type::kInt},
                                  {"idle_timeout", Type::kInt},
                                  {"allowed_vfolder_hosts", Type::kJson},
                                  {"max_pending_session_count", Type::kOptInt},
                                  {"max_pending_session_resource_slots", Type::kOptSlots},
                                  {"max_vfolder_count", Type::kInt},
                                  {"max_vfolder_size", Type::kInt},
                                  {"max_quota_scope_size", Type::kInt}},
                                 "SELECT 1 FROM keypairs WHERE resource_policy = ? LIMIT 1",
                                 "keypairs"};
  static KindSpec const kUser{"user_resource_policies",
                              {{"max_vfolder_count", Type::kInt},
                               {"max_quota_scope_size", Type::kInt},
                               {"max_session_count_per_model_session", Type::kInt},
                               {"max_customized_image_count", Type::kInt}},
                              "SELECT 1 FROM users WHERE resource_policy = ? LIMIT 1",
                              "users"};
  static KindSpec const kProject{
      "project_resource_policies",
      {{"max_vfolder_count", Type::kInt}, {"max_quota_scope_size", Type::kInt}},
      "SELECT 1 FROM groups WHERE resource_policy = ? LIMIT 1",
      "projects"};
  switch (kind) {
    case PolicyKind::kKeypair:
      return kKeypair;
    case PolicyKind::kUser:
      return kUser;
    case PolicyKind::kProject:
      break;
  }
  return kProject;
}

Status Bad(char const* field, std::string const& what) {
  return Status(StatusCode::kInvalidArgument, std::string(field) + ": " + what);
}

// JSONString inputs arrive as text (or, from lenient clients, as the value itself).
StatusOr<json> JsonOf(json const& v, char const* field) {
  if (!v.is_string()) return v;
  auto parsed = internal::ParseJson(v.get<std::string>());
  if (!parsed) return Bad(field, "not JSON");
  return *std::move(parsed);
}

json HostList(std::string const& text) {
  json hosts = json::array();
  std::string host;
  for (char c : text + ",") {
    if (c == ',') {
      if (!host.empty()) hosts.push_back(host);
      host.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c)) && c != '[' && c != ']' && c != '(' &&
               c != ')' && c != '\'' && c != '"') {
      host.push_back(c);
    }
  }
  return hosts;
}

StatusOr<SqlValue> Convert(Field const& f, json const& v) {
  switch (f.type) {
    case Type::kInt:
    case Type::kOptInt: {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
        return Bad(f.name, "a whole number, 0 or more");
      }
      return SqlValue(v.get<std::int64_t>());
    }
    case Type::kDefaultMode: {
      std::string mode = internal::AsciiUpper(v.is_string() ? v.get<std::string>() : "");
      if (mode != "LIMITED" && mode != "UNLIMITED") return Bad(f.name, "LIMITED or UNLIMITED");
      return SqlValue(mode);
    }
    case Type::kSlots:
    case Type::kOptSlots: {
      auto text = SlotMapInput(v, f.name);
      if (!text.ok()) return text.status();
      return SqlValue(*std::move(text));
    }
    case Type::kJson: {
      auto j = JsonOf(v, f.name);
      // 22.03's client sends allowed_vfolder_hosts as its CLI option's text, a host name:
      // read text that is not JSON as comma-separated host names.
      if (!j.ok() && v.is_string()) j = HostList(v.get<std::string>());
      if (!j.ok()) return j.status();
      if (!j->is_object() && !j->is_array()) return Bad(f.name, "a JSON object or list");
      return SqlValue(j->dump());
    }
  }
  return Bad(f.name, "unsupported");
}

protocol::KeypairResourcePolicy KeypairPolicyFromRow(server::SqlRow& r) {
  protocol::KeypairResourcePolicy p;
  p.name = r.TakeText(0);
  p.created_at = r.TakeText(1);
  p.default_for_unspecified = r.TakeText(2);
  p.total_resource_slots = r.TakeText(3);
  p.max_session_lifetime = r.Int(4);
  p.max_concurrent_sessions = r.Int(5);
  p.max_concurrent_sftp_sessions = r.Int(6);
  p.max_containers_per_session = r.Int(7);
  p.idle_timeout = r.Int(8);
  p.allowed_vfolder_hosts = r.TakeText(9);
  if (!r.IsNull(10)) p.max_pending_session_count = r.Int(10);
  p.max_pending_session_resource_slots = r.TakeOptText(11);
  p.max_vfolder_count = r.Int(12);
  p.max_vfolder_size = r.Int(13);
  p.max_quota_scope_size = r.Int(14);
  return p;
}

constexpr char kKeypairColumns[] =
    "p.name, p.created_at, p.default_for_unspecified, p.total_resource_slots, "
    "p.max_session_lifetime, p.max_concurrent_sessions, p.max_concurrent_sftp_sessions, "
    "p.max_containers_per_session, p.idle_timeout, p.allowed_vfolder_hosts, "
    "p.max_pending_session_count, p.max_pending_session_resource_slots, p.max_vfolder_count, "
    "p.max_vfolder_size, p.max_quota_scope_size";

}  // namespace

StatusOr<std::string> SlotMapInput(json const& value, std::string const& field) {
  auto j = JsonOf(value, field.c_str());
  if (!j.ok()) return j.status();
  if (!j->is_object()) return Bad(field.c_str(), "a JSON object of slot amounts");
  auto slots = internal::SlotsFromJson(*j);
  if (!slots.ok()) return Bad(field.c_str(), slots.status().message());
  return internal::SlotsToJson(*slots).dump();
}

StatusOr<PolicyValues> PolicyValuesFromInput(PolicyKind kind, json const& props) {
  PolicyValues out;
  if (!props.is_object()) return out;
  for (auto const& f : Spec(kind).fields) {
    auto it = props.find(f.name);
    if (it == props.end() || it->is_null()) continue;
    auto v = Convert(f, *it);
    if (!v.ok()) return v.status();
    out.emplace_back(f.name, *std::move(v));
  }
  return out;
}

StatusOr<std::vector<protocol::KeypairResourcePolicy>> PolicyStore::KeypairPolicies(
    std::optional<std::string> const& name) {
  std::string sql = std::string("SELECT ") + kKeypairColumns + " FROM keypair_resource_policies p";
  std::vector<SqlValue> params;
  if (name) {
    sql += " WHERE p.name = ?";
    params.emplace_back(*name);
  }
  auto rows = db_.Query(sql + " ORDER BY p.name", params);
  if (!rows.ok()) return rows.status();
  std::vector<protocol::KeypairResourcePolicy> out;
  for (auto& r : *rows) out.push_back(KeypairPolicyFromRow(r));
  return out;
}

StatusOr<std::optional<protocol::KeypairResourcePolicy>> PolicyStore::KeypairPolicyOf(
    std::string const& access_key) {
  auto rows = db_.Query(std::string("SELECT ") + kKeypairColumns +
                            " FROM keypair_resource_policies p JOIN keypairs k ON "
                            "k.resource_policy = p.name WHERE k.access_key = ?",
                        {access_key});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<protocol::KeypairResourcePolicy>();
  return std::optional<protocol::KeypairResourcePolicy>(KeypairPolicyFromRow(rows->front()));
}

StatusOr<std::vector<protocol::ScopeResourcePolicy>> PolicyStore::ScopePolicies(
    PolicyKind kind, std::optional<std::string> const& name) {
  bool user = kind == PolicyKind::kUser;
  std::string sql =
      std::string(
          "SELECT name, created_at, max_vfolder_count, "
          "max_quota_scope_size") +
      (user ? ", max_session_count_per_model_session, max_customized_image_count" : "") + " FROM " +
      Spec(kind).table;
  std::vector<SqlValue> params;
  if (name) {
    sql += " WHERE name = ?";
    params.emplace_back(*name);
  }
  auto rows = db_.Query(sql + " ORDER BY name", params);
  if (!rows.ok()) return rows.status();
  std::vector<protocol::ScopeResourcePolicy> out;
  for (auto& r : *rows) {
    protocol::ScopeResourcePolicy p;
    p.name = r.TakeText(0);
    p.created_at = r.TakeText(1);
    p.max_vfolder_count = r.Int(2);
    p.max_quota_scope_size = r.Int(3);
    if (user) {
      p.max_session_count_per_model_session = r.Int(4);
      p.max_customized_image_count = r.Int(5);
    }
    out.push_back(std::move(p));
  }
  return out;
}

Status PolicyStore::Create(PolicyKind kind, std::string const& name, PolicyValues const& values) {
  std::string columns = "name, created_at";
  std::string marks = "?, ?";
  std::vector<SqlValue> params{name, NowIso()};
  for (auto const& [column, value] : values) {
    columns += ", " + column;
    marks += ", ?";
    params.push_back(value);
  }
  auto r = db_.Exec(
      std::string("INSERT INTO ") + Spec(kind).table + " (" + columns + ") VALUES (" + marks + ")",
      params);
  if (!r.ok() && server::IsUniqueViolation(r.status())) {
    return Status(
        StatusCode::kAlreadyExists,
        "duplicate key value violates unique constraint: a policy named \"" + name + "\" exists");
  }
  return r.ok() ? Status() : r.status();
}

Status PolicyStore::Modify(PolicyKind kind, std::string const& name, PolicyValues const& values) {
  if (values.empty()) return Status(StatusCode::kInvalidArgument, "nothing to update");
  std::string sets;
  std::vector<SqlValue> params;
  for (auto const& [column, value] : values) {
    sets += (sets.empty() ? "" : ", ") + column + " = ?";
    params.push_back(value);
  }
  params.emplace_back(name);
  auto n = db_.Exec(std::string("UPDATE ") + Spec(kind).table + " SET " + sets + " WHERE name = ?",
                    params);
  if (!n.ok()) return n.status();
  return *n == 0 ? Status(StatusCode::kNotFound, "no such policy") : Status();
}

Status PolicyStore::Delete(PolicyKind kind, std::string const& name) {
  KindSpec const& spec = Spec(kind);
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto used = db.Query(spec.users_sql, {name});
    if (!used.ok()) return used.status();
    if (!used->empty()) {
      return refusal = Status(StatusCode::kFailedPrecondition,
                              std::string("integrity error: ") + spec.users +
                                  " still use the policy \"" + name + "\"");
    }
    auto n = db.Exec(std::string("DELETE FROM ") + spec.table + " WHERE name = ?", {name});
    if (!n.ok()) return n.status();
    if (*n == 0) return refusal = Status(StatusCode::kNotFound, "no such policy");
    return Status();
  });
  return refusal.ok() ? tx : refusal;
}

}  // namespace bai::manager
