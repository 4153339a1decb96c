// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/vfolders/access.h"

namespace bai::manager::vfolders {

using protocol::VFolderOwnership;
using protocol::VFolderPermission;

Access Decide(FolderFacts const& folder, CallerFacts const& caller) {
  if (folder.ownership == VFolderOwnership::kUser) {
    if (!caller.user_id.empty() && caller.user_id == folder.user_id) {
      return {Relation::kOwner, VFolderPermission::kReadWriteDelete};
    }
    if (caller.shared) return {Relation::kInvited, *caller.shared};
    if (caller.role == "superadmin") return {Relation::kAdmin, VFolderPermission::kReadWriteDelete};
    return {};
  }
  if (caller.role == "superadmin" || (caller.role == "admin" && caller.domain == folder.domain)) {
    return {Relation::kAdmin, VFolderPermission::kReadWriteDelete};
  }
  if (caller.groups.count(folder.group_id) && caller.domain == folder.domain) {
    return {Relation::kMember, caller.shared.value_or(folder.permission)};
  }
  return {};
}

}  // namespace bai::manager::vfolders
