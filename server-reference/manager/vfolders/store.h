// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/vfolder_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"
#include "server-reference/manager/graphql/minilang.h"
#include "server-reference/manager/vfolders/access.h"

#include <cstdint>
#include <map>
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
  protocol::VFolderStatus status = protocol::VFolderStatus::kReady;
  std::string created_at;
  std::string last_used;
  std::int64_t max_size = 0;   ///< the folder's own quota in bytes (0: none)
  std::int64_t max_files = 0;  ///< and in files (0: none)
};

/// A folder the caller reaches, and how.
struct VisibleFolder {
  FolderRecord folder;
  Access access;
};

/// One row of `vfolder_invitations`, with the folder's name: the wire type itself (its id a
/// dashed UUID).
using InvitationRecord = protocol::VFolderInvitation;

/// A user granted a permission on a folder (an accepted invitation or a project share).
struct GrantRecord {
  std::string user_id;
  std::string email;
  std::string permission;
};

/// A user found by email.
struct UserRef {
  std::string user_id;
  std::string email;
  std::string domain;
};

/// Emails of users and names of projects, by id (for listings).
struct OwnerNames {
  std::map<std::string, std::string> user_emails;
  std::map<std::string, std::string> group_names;
};

/// Typed statements over the vfolder tables; each is one statement or one transaction.
class FolderStore {
 public:
  explicit FolderStore(server::Database& db) : db_(db) {}

  /// The allowed_vfolder_hosts settings that apply to a caller: its domain's, its projects'
  /// and its keypair policy's (JSON text each; AllowedHosts merges them).
  StatusOr<std::vector<std::string>> HostSettingsOf(std::string const& domain,
                                                    std::string const& user_id,
                                                    std::string const& access_key);
  /// An owner's live folders (not in the trash or gone) and its resource policy's
  /// max_vfolder_count (0: none); `project`: the owner is a project (group id), else a user.
  StatusOr<std::pair<std::int64_t, std::int64_t>> CountAndLimit(bool project,
                                                                std::string const& owner_id);

  /// Adds a folder unless its owner (the user, or the project) already has a live one (not in
  /// the trash or gone) of that name: kAlreadyExists then.
  Status Insert(FolderRecord const& folder);
  StatusOr<std::optional<FolderRecord>> Get(std::string const& id);
  /// Names of the sessions not yet ended that mount the folder `id` (any owner's).
  StatusOr<std::vector<std::string>> MountedBy(std::string const& id);
  /// Folders a user may reach by name: their own, those shared with them, their projects', and
  /// for admins the project folders of `domain` (every folder for a superadmin); trash included.
  StatusOr<std::vector<FolderRecord>> Reachable(std::string const& user_id, std::string const& role,
                                                std::string const& domain);
  /// The folders `caller` reaches (Reachable) with what Decide says, the trash included, those
  /// gone for good left out; `caller.groups` and `caller.shared` are filled here (two queries
  /// for the whole list).
  StatusOr<std::vector<VisibleFolder>> Visible(CallerFacts caller);
  /// Ids of folders matching a compiled GraphQL filter over FolderListColumns, in `order`.
  StatusOr<std::vector<std::string>> Matching(std::string const& where,
                                              std::vector<server::SqlValue> params,
                                              std::string const& order);

  StatusOr<OwnerNames> Names(std::vector<VisibleFolder> const& folders);

  // -- sharing --
  /// Users by email; unknown emails are left out.
  StatusOr<std::vector<UserRef>> UsersByEmail(std::vector<std::string> const& emails);
  Status AddInvitation(InvitationRecord const& inv);
  StatusOr<std::optional<InvitationRecord>> Invitation(std::string const& id);
  /// Pending invitations to `email` (or, with `sent`, from `email`), oldest first.
  StatusOr<std::vector<InvitationRecord>> PendingInvitations(std::string const& email, bool sent);
  /// A pending invitation of `invitee` to the folder, if any.
  StatusOr<bool> HasPendingInvitation(std::string const& folder_id, std::string const& invitee);
  /// Moves a pending invitation to `state` (and `permission` when given); false when it is no
  /// longer pending.
  StatusOr<bool> SetInvitation(std::string const& id, std::string const& state,
                               std::optional<std::string> permission = std::nullopt);
  /// Accepts a pending invitation: its state and the invitee's grant in one transaction.
  StatusOr<bool> AcceptInvitation(InvitationRecord const& inv, std::string const& user_id);
  /// Gives `user_id` `permission` on the folder (replacing a grant they had).
  Status Grant(std::string const& folder_id, std::string const& user_id,
               std::string const& permission);
  /// Takes a grant away; false when there was none.
  StatusOr<bool> Revoke(std::string const& folder_id, std::string const& user_id);
  StatusOr<std::vector<GrantRecord>> Grants(std::string const& folder_id);
  Status SetStatus(std::string const& id, protocol::VFolderStatus status);
  /// kAlreadyExists when the owner has another live folder called `name`.
  Status Rename(std::string const& id, std::string const& name);
  Status SetOptions(std::string const& id, std::optional<bool> cloneable,
                    std::optional<std::string> permission);
  Status Remove(std::string const& id);

  /// A quota scope's limit in bytes (0: none): its owner's resource policy's
  /// max_quota_scope_size (user_resource_policies or project_resource_policies).
  StatusOr<std::int64_t> ScopeQuota(std::string const& scope_id);
  /// A folder's own quota (0: none).
  Status SetQuota(std::string const& id, std::int64_t max_bytes, std::int64_t max_files);

 private:
  server::Database& db_;
};

/// The fields GraphQL's vfolder lists filter and order by (Matching's columns).
graphql::ColumnMap const& FolderListColumns();
/// A folder id as stored (32 lowercase hex digits) from any spelling: dashes and case dropped.
std::string FolderIdHex(std::string const& id);
/// In the trash (delete-pending) or on its way out.
inline bool InTrash(FolderRecord const& f) {
  using S = protocol::VFolderStatus;
  return f.status == S::kDeletePending || f.status == S::kDeleteOngoing ||
         f.status == S::kDeleteComplete || f.status == S::kDeleteError;
}

/// A new folder id: a random (version 4) UUID as 32 hex digits.
std::string NewFolderId();
/// "0123…" → "01234567-89ab-…" (GraphQL's form).
std::string DashedUuid(std::string const& hex32);
/// The storage scope directory name for a quota scope id: "user:<uuid>" → "user-<32 hex>".
std::string ScopeDirectory(std::string const& quota_scope_id);

}  // namespace bai::manager::vfolders
