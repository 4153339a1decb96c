// SPDX-License-Identifier: Apache-2.0
#pragma once
// Administration's wire types (streams-admin-console.md §B): what the manager's GraphQL answers
// for domains and a mutation's payload, one definition for the manager that writes them and the
// SDK that reads them.

#include "bai/export.h"
#include "bai/status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// A domain, as 24.09's `Domain` object.
struct Domain {
  std::string name;
  std::string description;
  bool is_active = true;
  std::string created_at;                    ///< RFC 3339
  std::string modified_at;                   ///< RFC 3339
  std::string total_resource_slots = "{}";   ///< JSON object text: slot → amount
  std::string allowed_vfolder_hosts = "{}";  ///< JSON text: host → permissions (or a list)
  std::vector<std::string> allowed_docker_registries;
  std::optional<std::string> integration_id;
  std::vector<std::string> scaling_groups;  ///< the resource groups associated with it
};

/// A project ("group"), as 24.09's `Group` object.
struct Group {
  std::string id;  ///< UUID
  std::string name;
  std::string description;
  bool is_active = true;
  std::string created_at;
  std::string modified_at;
  std::string domain_name;
  std::string type = "GENERAL";
  std::string total_resource_slots = "{}";
  std::string allowed_vfolder_hosts = "{}";
  std::optional<std::string> integration_id;
  std::string resource_policy = "default";
  std::vector<std::string> scaling_groups;
};

BAI_EXPORT std::string EncodeGroup(Group const& group);
BAI_EXPORT StatusOr<Group> DecodeGroup(std::string_view json);

/// The JSON object text of a domain (24.09's field names; JSONString fields as text).
BAI_EXPORT std::string EncodeDomain(Domain const& domain);
BAI_EXPORT StatusOr<Domain> DecodeDomain(std::string_view json);

/// A classic mutation's answer (`{ok, msg, …}`): "success", "no matching <mutation>",
/// "integrity error: …", "no permission to execute <field>".
struct MutationResult {
  bool ok = false;
  std::string msg;
};

}  // namespace bai::protocol
