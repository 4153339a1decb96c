// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/database.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bai::manager::vfolders {

/// One row of `vfolders`.
struct FolderRecord {
  std::string id;  ///< 32 hex digits
  std::string name;
  std::string host;            ///< PROXY:VOLUME
  std::string quota_scope_id;  ///< "user:<uuid>" or "project:<uuid>"
  std::string usage_mode = "general";
  std::string permission = "rw";
  std::string ownership_type = "user";
  std::string user_id;   ///< "" for project folders
  std::string group_id;  ///< "" for user folders
  std::string creator;   ///< email
  std::string domain;
  bool cloneable = false;
  std::string status = "ready";
  std::string created_at;
  std::string last_used;
};

/// Typed statements over the vfolder tables; each is one statement or one transaction.
class FolderStore {
 public:
  explicit FolderStore(server::Database& db) : db_(db) {}

  /// Adds a folder unless its owner (the user, or the project) already has a live one (not in
  /// the trash or gone) of that name: kAlreadyExists then.
  Status Insert(FolderRecord const& folder);
  StatusOr<std::optional<FolderRecord>> Get(std::string const& id);
  /// Folders a user may reach by name: their own, those shared with them, their projects', and
  /// for admins the project folders of `domain` (every folder for a superadmin); trash included.
  StatusOr<std::vector<FolderRecord>> Reachable(std::string const& user_id, std::string const& role,
                                                std::string const& domain);
  /// What an invitation or a project share grants `user_id` on the folder.
  StatusOr<std::optional<std::string>> SharedPermission(std::string const& folder_id,
                                                        std::string const& user_id);
  /// The projects `user_id` belongs to.
  StatusOr<std::vector<std::string>> Groups(std::string const& user_id);
  Status SetStatus(std::string const& id, std::string const& status);
  /// kAlreadyExists when the owner has another live folder called `name`.
  Status Rename(std::string const& id, std::string const& name);
  Status SetOptions(std::string const& id, std::optional<bool> cloneable,
                    std::optional<std::string> permission);
  Status Remove(std::string const& id);

  /// A quota scope's limits (0: none); bytes, files.
  StatusOr<std::pair<std::int64_t, std::int64_t>> Quota(std::string const& scope_id);
  Status SetQuota(std::string const& scope_id, std::int64_t max_bytes, std::int64_t max_files);

 private:
  server::Database& db_;
};

/// A new folder id: a random (version 4) UUID as 32 hex digits.
std::string NewFolderId();
/// "0123…" → "01234567-89ab-…" (GraphQL's form).
std::string DashedUuid(std::string const& hex32);
/// The storage scope directory name for a quota scope id: "user:<uuid>" → "user-<32 hex>".
std::string ScopeDirectory(std::string const& quota_scope_id);

}  // namespace bai::manager::vfolders
