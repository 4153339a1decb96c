// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/vfolders/store.h"

#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/manager/state/store.h"

#include <algorithm>
#include <cctype>

namespace bai::manager::vfolders {
namespace {

constexpr char kColumns[] =
    "id, name, host, quota_scope_id, usage_mode, permission, ownership_type, "
    "COALESCE(user_id, ''), COALESCE(group_id, ''), creator, domain_name, cloneable, status, "
    "created_at, COALESCE(last_used, ''), max_size, max_files";

FolderRecord FromRow(server::SqlRow& r) {
  FolderRecord f;
  f.id = r.TakeText(0);
  f.name = r.TakeText(1);
  f.host = r.TakeText(2);
  f.quota_scope_id = r.TakeText(3);
  f.usage_mode = r.TakeText(4);
  f.permission = r.TakeText(5);
  f.ownership_type = r.TakeText(6);
  f.user_id = r.TakeText(7);
  f.group_id = r.TakeText(8);
  f.creator = r.TakeText(9);
  f.domain = r.TakeText(10);
  f.cloneable = r.Bool(11);
  // A status this build does not know (a newer manager's) reads as an error, never as ready.
  f.status = protocol::ParseVFolderStatus(r.TakeText(12)).value_or(protocol::VFolderStatus::kError);
  f.created_at = r.TakeText(13);
  f.last_used = r.TakeText(14);
  f.max_size = r.Int(15);
  f.max_files = r.Int(16);
  return f;
}

server::SqlValue OrNull(std::string const& s) {
  if (s.empty()) return nullptr;
  return s;
}

// Live folders (not in the trash, not gone) of the same owner with that name.
StatusOr<bool> NameTaken(server::SqlExecutor& tx, FolderRecord const& f, std::string const& name) {
  auto rows = tx.Query(
      "SELECT COUNT(*) FROM vfolders WHERE name = ? AND id != ? AND status NOT LIKE 'delete-%' AND "
      "(CASE WHEN ? = 'user' THEN user_id = ? ELSE group_id = ? END)",
      {name, f.id, f.ownership_type, f.user_id, f.group_id});
  if (!rows.ok()) return rows.status();
  return (*rows)[0].Int(0) > 0;
}

Status Taken(std::string const& name) {
  return Status(StatusCode::kAlreadyExists, "a folder called '" + name + "' already exists");
}

}  // namespace

std::string NewFolderId() {
  std::string id = server::agent_protocol::MakeNonce();
  id[12] = '4';
  id[16] = "89ab"[id[16] % 4];
  return id;
}

std::string FolderIdHex(std::string const& id) {
  std::string out;
  for (char c : id) {
    if (c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string DashedUuid(std::string const& h) {
  if (h.size() != 32) return h;
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

std::string ScopeDirectory(std::string const& quota_scope_id) {
  auto colon = quota_scope_id.find(':');
  std::string kind = quota_scope_id.substr(0, colon);
  std::string id;
  for (char c : quota_scope_id.substr(colon + 1)) {
    if (c != '-') id += c;
  }
  return kind + "-" + id;
}

Status FolderStore::Insert(FolderRecord const& f) {
  return db_.Transaction({"vfolders"}, [&](server::SqlExecutor& tx) -> Status {
    auto taken = NameTaken(tx, f, f.name);
    if (!taken.ok()) return taken.status();
    if (*taken) return Taken(f.name);
    auto r = tx.Exec(
        "INSERT INTO vfolders (id, name, host, quota_scope_id, usage_mode, permission, "
        "ownership_type, user_id, group_id, creator, domain_name, cloneable, status, created_at, "
        "max_size, max_files) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {f.id, f.name, f.host, f.quota_scope_id, f.usage_mode, f.permission, f.ownership_type,
         OrNull(f.user_id), OrNull(f.group_id), f.creator, f.domain,
         std::int64_t{f.cloneable ? 1 : 0}, std::string(protocol::ToString(f.status)), f.created_at,
         f.max_size, f.max_files});
    return r.ok() ? Status() : r.status();
  });
}

StatusOr<std::vector<std::string>> FolderStore::MountedBy(std::string const& id) {
  // The mounts column is our own JSON (no spaces); ids are hex, so LIKE sees no wildcard.
  auto rows = db_.Query(
      "SELECT name FROM sessions WHERE status NOT IN ('TERMINATED', 'CANCELLED') AND "
      "vfolder_mounts LIKE ? ORDER BY name",
      {"%\"vfolder_id\":\"" + id + "\"%"});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (auto const& r : *rows) out.push_back(r.Text(0));
  return out;
}

StatusOr<std::optional<FolderRecord>> FolderStore::Get(std::string const& id) {
  auto rows = db_.Query(std::string("SELECT ") + kColumns + " FROM vfolders WHERE id = ?", {id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<FolderRecord>();
  return std::optional<FolderRecord>(FromRow((*rows)[0]));
}

StatusOr<std::vector<FolderRecord>> FolderStore::Reachable(std::string const& user_id,
                                                           std::string const& role,
                                                           std::string const& domain) {
  std::string sql = std::string("SELECT ") + kColumns +
                    " FROM vfolders WHERE user_id = ? OR id IN (SELECT vfolder_id FROM "
                    "vfolder_permissions WHERE user_id = ?) OR group_id IN (SELECT group_id FROM "
                    "association_groups_users WHERE user_id = ?)";
  std::vector<server::SqlValue> params{user_id, user_id, user_id};
  if (role == "superadmin") {
    sql += " OR 1 = 1";
  } else if (role == "admin") {
    sql += " OR (ownership_type = 'group' AND domain_name = ?)";
    params.emplace_back(domain);
  }
  sql += " ORDER BY created_at, id";
  auto rows = db_.Query(sql, params);
  if (!rows.ok()) return rows.status();
  std::vector<FolderRecord> out;
  out.reserve(rows->size());
  for (auto& r : *rows) out.push_back(FromRow(r));
  return out;
}

StatusOr<std::vector<VisibleFolder>> FolderStore::Visible(CallerFacts caller) {
  auto all = Reachable(caller.user_id, caller.role, caller.domain);
  if (!all.ok()) return all.status();
  auto groups = db_.Query("SELECT group_id FROM association_groups_users WHERE user_id = ?",
                          {caller.user_id});
  if (!groups.ok()) return groups.status();
  for (auto& r : *groups) caller.groups.insert(r.TakeText(0));
  auto grants = db_.Query(
      "SELECT vfolder_id, permission FROM vfolder_permissions WHERE user_id = ?", {caller.user_id});
  if (!grants.ok()) return grants.status();
  std::map<std::string, std::string> shared;
  for (auto& r : *grants) shared[r.TakeText(0)] = r.TakeText(1);
  std::vector<VisibleFolder> out;
  for (auto& f : *all) {
    if (f.status == protocol::VFolderStatus::kDeleteComplete) continue;
    FolderFacts facts;
    facts.ownership = f.ownership_type == "group" ? protocol::VFolderOwnership::kGroup
                                                  : protocol::VFolderOwnership::kUser;
    facts.user_id = f.user_id;
    facts.group_id = f.group_id;
    facts.domain = f.domain;
    facts.permission = protocol::ParseVFolderPermission(f.permission)
                           .value_or(protocol::VFolderPermission::kReadOnly);
    auto grant = shared.find(f.id);
    caller.shared.reset();
    if (grant != shared.end()) caller.shared = protocol::ParseVFolderPermission(grant->second);
    Access access = Decide(facts, caller);
    if (!access.ok()) continue;
    out.push_back({std::move(f), access});
  }
  return out;
}

StatusOr<std::vector<std::string>> FolderStore::Matching(std::string const& where,
                                                         std::vector<server::SqlValue> params,
                                                         std::string const& order) {
  std::string sql =
      "SELECT v.id FROM vfolders v LEFT JOIN users u ON u.uuid = v.user_id LEFT JOIN groups g "
      "ON g.id = v.group_id";
  if (!where.empty()) sql += " WHERE " + where;
  sql += " ORDER BY " + (order.empty() ? std::string("v.created_at, v.id") : order);
  auto rows = db_.Query(sql, std::move(params));
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (auto& r : *rows) out.push_back(r.TakeText(0));
  return out;
}

graphql::ColumnMap const& FolderListColumns() {
  using K = graphql::ColumnSpec::Kind;
  static graphql::ColumnMap const* const kColumns = new graphql::ColumnMap{
      {"id", {"v.id", K::kText, {}}},
      {"name", {"v.name", K::kText, {}}},
      {"host", {"v.host", K::kText, {}}},
      {"quota_scope_id", {"v.quota_scope_id", K::kText, {}}},
      {"usage_mode", {"v.usage_mode", K::kEnum, {"general", "model", "data"}}},
      {"permission", {"v.permission", K::kEnum, {"ro", "rw", "wd"}}},
      {"ownership_type", {"v.ownership_type", K::kEnum, {"user", "group"}}},
      {"user", {"v.user_id", K::kText, {}}},
      {"user_email", {"u.email", K::kText, {}}},
      {"group", {"v.group_id", K::kText, {}}},
      {"group_name", {"g.name", K::kText, {}}},
      {"creator", {"v.creator", K::kText, {}}},
      {"domain_name", {"v.domain_name", K::kText, {}}},
      {"cloneable", {"v.cloneable", K::kBool, {}}},
      {"status",
       {"v.status",
        K::kEnum,
        {"ready", "performing", "cloning", "mounted", "error", "delete-pending", "delete-ongoing",
         "delete-complete", "delete-error"}}},
      {"created_at", {"v.created_at", K::kTime, {}}},
      {"last_used", {"v.last_used", K::kTime, {}}},
  };
  return *kColumns;
}

StatusOr<OwnerNames> FolderStore::Names(std::vector<VisibleFolder> const& folders) {
  OwnerNames out;
  for (auto const& v : folders) {
    auto const& f = v.folder;
    if (!f.user_id.empty() && !out.user_emails.count(f.user_id)) {
      auto rows = db_.Query("SELECT email FROM users WHERE uuid = ?", {f.user_id});
      if (!rows.ok()) return rows.status();
      out.user_emails[f.user_id] = rows->empty() ? "" : (*rows)[0].TakeText(0);
    }
    if (!f.group_id.empty() && !out.group_names.count(f.group_id)) {
      auto rows = db_.Query("SELECT name FROM groups WHERE id = ?", {f.group_id});
      if (!rows.ok()) return rows.status();
      out.group_names[f.group_id] = rows->empty() ? "" : (*rows)[0].TakeText(0);
    }
  }
  return out;
}

StatusOr<std::vector<UserRef>> FolderStore::UsersByEmail(std::vector<std::string> const& emails) {
  std::vector<UserRef> out;
  for (auto const& email : emails) {
    auto rows = db_.Query("SELECT uuid, email, domain_name FROM users WHERE email = ?", {email});
    if (!rows.ok()) return rows.status();
    if (rows->empty()) continue;
    auto& r = (*rows)[0];
    out.push_back({r.TakeText(0), r.TakeText(1), r.TakeText(2)});
  }
  return out;
}

namespace {

constexpr char kInvitationColumns[] =
    "i.id, i.vfolder_id, v.name, i.inviter, i.invitee, i.permission, i.state, i.created_at, "
    "i.modified_at FROM vfolder_invitations i JOIN vfolders v ON v.id = i.vfolder_id";

InvitationRecord InvitationFromRow(server::SqlRow& r) {
  InvitationRecord i;
  i.id = r.TakeText(0);
  i.vfolder_id = r.TakeText(1);
  i.vfolder_name = r.TakeText(2);
  i.inviter = r.TakeText(3);
  i.invitee = r.TakeText(4);
  i.permission = r.TakeText(5);
  i.state = r.TakeText(6);
  i.created_at = r.TakeText(7);
  i.modified_at = r.TakeText(8);
  return i;
}

}  // namespace

Status FolderStore::AddInvitation(InvitationRecord const& i) {
  auto r = db_.Exec(
      "INSERT INTO vfolder_invitations (id, vfolder_id, inviter, invitee, permission, state, "
      "created_at, modified_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
      {i.id, i.vfolder_id, i.inviter, i.invitee, i.permission, NowIso(), NowIso()});
  return r.ok() ? Status() : r.status();
}

StatusOr<std::optional<InvitationRecord>> FolderStore::Invitation(std::string const& id) {
  auto rows = db_.Query(std::string("SELECT ") + kInvitationColumns + " WHERE i.id = ?", {id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<InvitationRecord>();
  return std::optional<InvitationRecord>(InvitationFromRow((*rows)[0]));
}

StatusOr<std::vector<InvitationRecord>> FolderStore::PendingInvitations(std::string const& email,
                                                                        bool sent) {
  std::string sql = std::string("SELECT ") + kInvitationColumns +
                    " WHERE i.state = 'pending' AND " + (sent ? "i.inviter = ?" : "i.invitee = ?") +
                    " AND v.status NOT LIKE 'delete-%' ORDER BY i.created_at, i.id";
  auto rows = db_.Query(sql, {email});
  if (!rows.ok()) return rows.status();
  std::vector<InvitationRecord> out;
  for (auto& r : *rows) out.push_back(InvitationFromRow(r));
  return out;
}

StatusOr<bool> FolderStore::HasPendingInvitation(std::string const& folder_id,
                                                 std::string const& invitee) {
  auto rows = db_.Query(
      "SELECT COUNT(*) FROM vfolder_invitations WHERE vfolder_id = ? AND invitee = ? AND "
      "state = 'pending'",
      {folder_id, invitee});
  if (!rows.ok()) return rows.status();
  return (*rows)[0].Int(0) > 0;
}

StatusOr<bool> FolderStore::SetInvitation(std::string const& id, std::string const& state,
                                          std::optional<std::string> permission) {
  auto r = permission
               ? db_.Exec(
                     "UPDATE vfolder_invitations SET state = ?, permission = ?, modified_at = ? "
                     "WHERE id = ? AND state = 'pending'",
                     {state, *permission, NowIso(), id})
               : db_.Exec(
                     "UPDATE vfolder_invitations SET state = ?, modified_at = ? WHERE id = ? AND "
                     "state = 'pending'",
                     {state, NowIso(), id});
  if (!r.ok()) return r.status();
  return *r > 0;
}

StatusOr<bool> FolderStore::AcceptInvitation(InvitationRecord const& inv,
                                             std::string const& user_id) {
  bool accepted = false;
  auto s = db_.Transaction({"vfolder_invitations", "vfolder_permissions"},
                           [&](server::SqlExecutor& tx) -> Status {
                             auto r = tx.Exec(
                                 "UPDATE vfolder_invitations SET state = 'accepted', "
                                 "modified_at = ? WHERE id = ? AND state = 'pending'",
                                 {NowIso(), inv.id});
                             if (!r.ok()) return r.status();
                             if (*r == 0) return Status();
                             auto g = tx.Exec(
                                 "INSERT INTO vfolder_permissions (vfolder_id, user_id, "
                                 "permission) VALUES (?, ?, ?) ON CONFLICT (vfolder_id, user_id) "
                                 "DO UPDATE SET permission = excluded.permission",
                                 {inv.vfolder_id, user_id, inv.permission});
                             if (!g.ok()) return g.status();
                             accepted = true;
                             return Status();
                           });
  if (!s.ok()) return s;
  return accepted;
}

Status FolderStore::Grant(std::string const& folder_id, std::string const& user_id,
                          std::string const& permission) {
  auto r = db_.Exec(
      "INSERT INTO vfolder_permissions (vfolder_id, user_id, permission) VALUES (?, ?, ?) "
      "ON CONFLICT (vfolder_id, user_id) DO UPDATE SET permission = excluded.permission",
      {folder_id, user_id, permission});
  return r.ok() ? Status() : r.status();
}

StatusOr<bool> FolderStore::Revoke(std::string const& folder_id, std::string const& user_id) {
  auto r = db_.Exec("DELETE FROM vfolder_permissions WHERE vfolder_id = ? AND user_id = ?",
                    {folder_id, user_id});
  if (!r.ok()) return r.status();
  return *r > 0;
}

StatusOr<std::vector<GrantRecord>> FolderStore::Grants(std::string const& folder_id) {
  auto rows = db_.Query(
      "SELECT p.user_id, u.email, p.permission FROM vfolder_permissions p JOIN users u ON "
      "u.uuid = p.user_id WHERE p.vfolder_id = ? ORDER BY u.email",
      {folder_id});
  if (!rows.ok()) return rows.status();
  std::vector<GrantRecord> out;
  for (auto& r : *rows) out.push_back({r.TakeText(0), r.TakeText(1), r.TakeText(2)});
  return out;
}

Status FolderStore::SetStatus(std::string const& id, protocol::VFolderStatus status) {
  auto r = db_.Exec("UPDATE vfolders SET status = ? WHERE id = ?",
                    {std::string(protocol::ToString(status)), id});
  return r.ok() ? Status() : r.status();
}

Status FolderStore::Rename(std::string const& id, std::string const& name) {
  return db_.Transaction({"vfolders"}, [&](server::SqlExecutor& tx) -> Status {
    auto rows = tx.Query(std::string("SELECT ") + kColumns + " FROM vfolders WHERE id = ?", {id});
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return Status(StatusCode::kNotFound, "no such folder");
    auto f = FromRow((*rows)[0]);
    auto taken = NameTaken(tx, f, name);
    if (!taken.ok()) return taken.status();
    if (*taken) return Taken(name);
    auto r = tx.Exec("UPDATE vfolders SET name = ? WHERE id = ?", {name, id});
    return r.ok() ? Status() : r.status();
  });
}

Status FolderStore::SetOptions(std::string const& id, std::optional<bool> cloneable,
                               std::optional<std::string> permission) {
  if (cloneable) {
    auto r = db_.Exec("UPDATE vfolders SET cloneable = ? WHERE id = ?",
                      {std::int64_t{*cloneable ? 1 : 0}, id});
    if (!r.ok()) return r.status();
  }
  if (permission) {
    auto r = db_.Exec("UPDATE vfolders SET permission = ? WHERE id = ?", {*permission, id});
    if (!r.ok()) return r.status();
  }
  return Status();
}

Status FolderStore::Remove(std::string const& id) {
  auto r = db_.Exec("DELETE FROM vfolders WHERE id = ?", {id});
  return r.ok() ? Status() : r.status();
}

StatusOr<std::int64_t> FolderStore::ScopeQuota(std::string const& scope_id) {
  std::int64_t max_bytes = 0;
  // The owner's resource policy's max_quota_scope_size (0: no cap).
  bool project = scope_id.rfind("project:", 0) == 0;
  bool user = scope_id.rfind("user:", 0) == 0;
  if (project || user) {
    std::string owner = scope_id.substr(scope_id.find(':') + 1);
    auto cap = db_.Query(
        project ? "SELECT p.max_quota_scope_size FROM groups g JOIN project_resource_policies p "
                  "ON p.name = g.resource_policy WHERE g.id = ?"
                : "SELECT p.max_quota_scope_size FROM users u JOIN user_resource_policies p ON "
                  "p.name = u.resource_policy WHERE u.uuid = ?",
        {owner});
    if (!cap.ok()) return cap.status();
    max_bytes = cap->empty() ? 0 : cap->front().Int(0);
  }
  return max_bytes;
}

Status FolderStore::SetQuota(std::string const& id, std::int64_t max_bytes,
                             std::int64_t max_files) {
  auto r = db_.Exec("UPDATE vfolders SET max_size = ?, max_files = ? WHERE id = ?",
                    {max_bytes, max_files, id});
  return r.ok() ? Status() : r.status();
}

StatusOr<std::vector<std::string>> FolderStore::HostSettingsOf(std::string const& domain,
                                                               std::string const& user_id,
                                                               std::string const& access_key) {
  std::vector<std::string> configs;
  for (auto const& [sql, key] : std::vector<std::pair<char const*, std::string>>{
           {"SELECT allowed_vfolder_hosts FROM domains WHERE name = ?", domain},
           {"SELECT g.allowed_vfolder_hosts FROM groups g JOIN association_groups_users a ON "
            "a.group_id = g.id WHERE a.user_id = ?",
            user_id},
           {"SELECT p.allowed_vfolder_hosts FROM keypairs k JOIN keypair_resource_policies p ON "
            "p.name = k.resource_policy WHERE k.access_key = ?",
            access_key}}) {
    auto rows = db_.Query(sql, {key});
    if (!rows.ok()) return rows.status();
    for (auto const& r : *rows) configs.push_back(r.Text(0));
  }
  return configs;
}

StatusOr<std::pair<std::int64_t, std::int64_t>> FolderStore::CountAndLimit(
    bool project, std::string const& owner_id) {
  auto limit = db_.Query(
      project ? "SELECT p.max_vfolder_count FROM groups g JOIN project_resource_policies p ON "
                "p.name = g.resource_policy WHERE g.id = ?"
              : "SELECT p.max_vfolder_count FROM users u JOIN user_resource_policies p ON p.name "
                "= u.resource_policy WHERE u.uuid = ?",
      {owner_id});
  if (!limit.ok()) return limit.status();
  std::int64_t max = limit->empty() ? 0 : std::max<std::int64_t>(limit->front().Int(0), 0);
  if (max == 0) return std::pair<std::int64_t, std::int64_t>{0, 0};
  auto count = db_.Query(project ? "SELECT COUNT(*) FROM vfolders WHERE group_id = ? AND status "
                                   "NOT LIKE 'delete-%'"
                                 : "SELECT COUNT(*) FROM vfolders WHERE user_id = ? AND status NOT "
                                   "LIKE 'delete-%'",
                         {owner_id});
  if (!count.ok()) return count.status();
  return std::pair<std::int64_t, std::int64_t>{count->front().Int(0), max};
}

}  // namespace bai::manager::vfolders
