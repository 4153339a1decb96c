// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/admin/roles.h"

#include <array>
#include <initializer_list>
#include <utility>

namespace bai::manager::admin {

namespace {

struct Rule {
  std::string_view mutation;
  bool admin;  ///< admins may too (else superadmins only)
  /// Its payload has no {ok, msg}: a refusal is a GraphQL error (the registry mutations).
  bool refused_as_error = false;
};

// 24.09.14 models/*.py, each mutation class's allowed_roles.
constexpr std::array kRules{
    Rule{"create_domain", false},
    Rule{"modify_domain", false},
    Rule{"delete_domain", false},
    Rule{"purge_domain", false},
    Rule{"create_group", true},
    Rule{"modify_group", true},
    Rule{"delete_group", true},
    Rule{"purge_group", true},
    Rule{"create_user", false},
    Rule{"modify_user", false},
    Rule{"delete_user", false},
    Rule{"purge_user", false},
    Rule{"create_keypair", false},
    Rule{"modify_keypair", false},
    Rule{"delete_keypair", false},
    Rule{"create_keypair_resource_policy", false},
    Rule{"modify_keypair_resource_policy", false},
    Rule{"delete_keypair_resource_policy", false},
    Rule{"create_user_resource_policy", false},
    Rule{"modify_user_resource_policy", false},
    Rule{"delete_user_resource_policy", false},
    Rule{"create_project_resource_policy", false},
    Rule{"modify_project_resource_policy", false},
    Rule{"delete_project_resource_policy", false},
    Rule{"create_resource_preset", false},
    Rule{"modify_resource_preset", false},
    Rule{"delete_resource_preset", false},
    Rule{"create_scaling_group", false},
    Rule{"modify_scaling_group", false},
    Rule{"delete_scaling_group", false},
    Rule{"associate_scaling_group_with_domain", false},
    Rule{"disassociate_scaling_group_with_domain", false},
    Rule{"associate_scaling_group_with_user_group", false},
    Rule{"disassociate_scaling_group_with_user_group", false},
    Rule{"associate_scaling_group_with_keypair", false},
    Rule{"disassociate_scaling_group_with_keypair", false},
    Rule{"associate_scaling_groups_with_domain", false},
    Rule{"disassociate_scaling_groups_with_domain", false},
    Rule{"associate_scaling_groups_with_user_group", false},
    Rule{"disassociate_scaling_groups_with_user_group", false},
    Rule{"associate_scaling_groups_with_keypair", false},
    Rule{"disassociate_scaling_groups_with_keypair", false},
    Rule{"disassociate_all_scaling_groups_with_domain", false},
    Rule{"disassociate_all_scaling_groups_with_group", false},
    Rule{"modify_agent", false},
    Rule{"alias_image", false},
    Rule{"dealias_image", false},
    Rule{"rescan_images", false},
    // 24.09 lets users forget their own customized images; bai has none, so superadmins only.
    Rule{"forget_image", false},
    Rule{"forget_image_by_id", false},
    Rule{"clear_images", false},
    Rule{"purge_images", false, true},
    Rule{"create_container_registry", false, true},
    Rule{"modify_container_registry", false, true},
    Rule{"delete_container_registry", false, true},
    Rule{"create_container_registry_node", false, true},
    Rule{"modify_container_registry_node", false, true},
    Rule{"delete_container_registry_node", false, true},
};

}  // namespace

Role RoleOf(Identity const& who) {
  if (who.IsSuperadmin()) return Role::kSuperadmin;
  if (who.IsAdmin()) return Role::kAdmin;
  if (who.role == "monitor") return Role::kMonitor;
  return Role::kUser;
}

bool IsMutation(std::string_view field) {
  for (auto const& r : kRules) {
    if (r.mutation == field) return true;
  }
  return false;
}

bool RefusedAsError(std::string_view mutation) {
  for (auto const& r : kRules) {
    if (r.mutation == mutation) return r.refused_as_error;
  }
  return false;
}

bool MayRun(Role role, std::string_view mutation) {
  for (auto const& r : kRules) {
    if (r.mutation != mutation) continue;
    return role == Role::kSuperadmin || (r.admin && role == Role::kAdmin);
  }
  return false;
}

}  // namespace bai::manager::admin
