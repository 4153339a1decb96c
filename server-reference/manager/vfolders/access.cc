// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/vfolders/access.h"

#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

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

namespace {

constexpr char const* kAllPermissions[] = {
    "create-vfolder", "modify-vfolder", "delete-vfolder", "mount-in-session",
    "upload-file",    "download-file",  "invite-others",  "set-user-specific-permission"};

}  // namespace

std::optional<HostPermissions> AllowedHosts(std::vector<std::string> const& configs) {
  HostPermissions out;
  bool named = false;
  for (auto const& text : configs) {
    auto j = internal::ParseJson(text);
    if (!j) continue;
    if (j->is_array()) {
      for (auto const& host : *j) {
        if (!host.is_string()) continue;
        named = true;
        out[host.get<std::string>()].insert(std::begin(kAllPermissions), std::end(kAllPermissions));
      }
    } else if (j->is_object()) {
      for (auto const& [host, perms] : j->items()) {
        named = true;
        auto& set = out[host];
        if (!perms.is_array()) continue;
        for (auto const& p : perms) {
          if (p.is_string()) set.insert(p.get<std::string>());
        }
      }
    }
  }
  if (!named) return std::nullopt;
  return out;
}

std::string WhyHostRefused(std::optional<HostPermissions> const& allowed, std::string const& host,
                           std::string const& permission) {
  if (!allowed) return "";
  auto it = allowed->find(host);
  if (it == allowed->end()) {
    std::string hosts;
    for (auto const& [h, perms] : *allowed) hosts += (hosts.empty() ? "" : ", ") + h;
    return "The storage host '" + host +
           "' is not allowed to you (allowed_vfolder_hosts of your domain, projects and "
           "keypair policy: " +
           (hosts.empty() ? std::string("none") : hosts) + ").";
  }
  if (!it->second.count(permission)) {
    return "The permission '" + permission + "' on the storage host '" + host +
           "' is not allowed to you (allowed_vfolder_hosts).";
  }
  return "";
}

std::string WhyCountRefused(std::int64_t existing, std::int64_t max_count, bool project) {
  if (max_count <= 0 || existing < max_count) return "";
  return std::string("You cannot create more than ") + std::to_string(max_count) +
         (project ? " folders in this project (the project's resource policy, "
                  : " folders (your user resource policy, ") +
         "max_vfolder_count; " + std::to_string(existing) + " exist).";
}

}  // namespace bai::manager::vfolders
