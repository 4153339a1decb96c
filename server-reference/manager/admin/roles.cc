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
};

// 24.09.14 models/*.py, each mutation class's allowed_roles.
constexpr std::array kRules{
    Rule{"create_domain", false}, Rule{"modify_domain", false}, Rule{"delete_domain", false},
    Rule{"purge_domain", false},  Rule{"create_group", true},   Rule{"modify_group", true},
    Rule{"delete_group", true},   Rule{"purge_group", true},
};

}  // namespace

Role RoleOf(Identity const& who) {
  if (who.IsSuperadmin()) return Role::kSuperadmin;
  if (who.IsAdmin()) return Role::kAdmin;
  if (who.role == "monitor") return Role::kMonitor;
  return Role::kUser;
}

bool MayRun(Role role, std::string_view mutation) {
  for (auto const& r : kRules) {
    if (r.mutation != mutation) continue;
    return role == Role::kSuperadmin || (r.admin && role == Role::kAdmin);
  }
  return false;
}

}  // namespace bai::manager::admin
