// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/admin_wire.h"

#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

namespace bai::protocol {

using json = nlohmann::json;

std::string EncodeDomain(Domain const& d) {
  json j = {{"name", d.name},
            {"description", d.description},
            {"is_active", d.is_active},
            {"created_at", d.created_at},
            {"modified_at", d.modified_at.empty() ? json(nullptr) : json(d.modified_at)},
            {"total_resource_slots", d.total_resource_slots},
            {"allowed_vfolder_hosts", d.allowed_vfolder_hosts},
            {"allowed_docker_registries", d.allowed_docker_registries},
            {"integration_id", d.integration_id ? json(*d.integration_id) : json(nullptr)},
            {"scaling_groups", d.scaling_groups}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string EncodeGroup(Group const& g) {
  json j = {{"id", g.id},
            {"name", g.name},
            {"description", g.description},
            {"is_active", g.is_active},
            {"created_at", g.created_at},
            {"modified_at", g.modified_at.empty() ? json(nullptr) : json(g.modified_at)},
            {"domain_name", g.domain_name},
            {"type", g.type},
            {"total_resource_slots", g.total_resource_slots},
            {"allowed_vfolder_hosts", g.allowed_vfolder_hosts},
            {"integration_id", g.integration_id ? json(*g.integration_id) : json(nullptr)},
            {"resource_policy", g.resource_policy},
            {"scaling_groups", g.scaling_groups}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<Group> DecodeGroup(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return Status(StatusCode::kInvalidArgument, "a group: not an object");
  auto str = [&](char const* key) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) return std::string();
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  Group g;
  g.id = str("id");
  g.name = str("name");
  g.description = str("description");
  g.is_active = j->value("is_active", true);
  g.created_at = str("created_at");
  g.modified_at = str("modified_at");
  g.domain_name = str("domain_name");
  if (auto t = str("type"); !t.empty()) g.type = t;
  g.total_resource_slots = str("total_resource_slots");
  g.allowed_vfolder_hosts = str("allowed_vfolder_hosts");
  if (auto it = j->find("integration_id"); it != j->end() && it->is_string()) {
    g.integration_id = it->get<std::string>();
  }
  if (auto p = str("resource_policy"); !p.empty()) g.resource_policy = p;
  if (auto it = j->find("scaling_groups"); it != j->end() && it->is_array()) {
    for (auto const& v : *it) {
      if (v.is_string()) g.scaling_groups.push_back(v.get<std::string>());
    }
  }
  if (g.id.empty() || g.name.empty()) {
    return Status(StatusCode::kInvalidArgument, "a group without an id or a name");
  }
  return g;
}

StatusOr<Domain> DecodeDomain(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return Status(StatusCode::kInvalidArgument, "a domain: not an object");
  Domain d;
  auto str = [&](char const* key) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) return std::string();
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  d.name = str("name");
  d.description = str("description");
  d.is_active = j->value("is_active", true);
  d.created_at = str("created_at");
  d.modified_at = str("modified_at");
  d.total_resource_slots = str("total_resource_slots");
  d.allowed_vfolder_hosts = str("allowed_vfolder_hosts");
  for (char const* key : {"allowed_docker_registries", "scaling_groups"}) {
    auto& out =
        std::string(key) == "scaling_groups" ? d.scaling_groups : d.allowed_docker_registries;
    if (auto it = j->find(key); it != j->end() && it->is_array()) {
      for (auto const& v : *it) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
  }
  if (auto it = j->find("integration_id"); it != j->end() && it->is_string()) {
    d.integration_id = it->get<std::string>();
  }
  if (d.name.empty()) return Status(StatusCode::kInvalidArgument, "a domain without a name");
  return d;
}

}  // namespace bai::protocol
