// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/vfolders/store.h"

#include "server-reference/common/agent_protocol.h"

namespace bai::manager::vfolders {
namespace {

constexpr char kColumns[] =
    "id, name, host, quota_scope_id, usage_mode, permission, ownership_type, "
    "COALESCE(user_id, ''), COALESCE(group_id, ''), creator, domain_name, cloneable, status, "
    "created_at, COALESCE(last_used, '')";

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
  f.status = r.TakeText(12);
  f.created_at = r.TakeText(13);
  f.last_used = r.TakeText(14);
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
        "ownership_type, user_id, group_id, creator, domain_name, cloneable, status, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {f.id, f.name, f.host, f.quota_scope_id, f.usage_mode, f.permission, f.ownership_type,
         OrNull(f.user_id), OrNull(f.group_id), f.creator, f.domain,
         std::int64_t{f.cloneable ? 1 : 0}, f.status, f.created_at});
    return r.ok() ? Status() : r.status();
  });
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

StatusOr<std::optional<std::string>> FolderStore::SharedPermission(std::string const& folder_id,
                                                                   std::string const& user_id) {
  auto rows =
      db_.Query("SELECT permission FROM vfolder_permissions WHERE vfolder_id = ? AND user_id = ?",
                {folder_id, user_id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

StatusOr<std::vector<std::string>> FolderStore::Groups(std::string const& user_id) {
  auto rows =
      db_.Query("SELECT group_id FROM association_groups_users WHERE user_id = ?", {user_id});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (auto& r : *rows) out.push_back(r.TakeText(0));
  return out;
}

Status FolderStore::SetStatus(std::string const& id, std::string const& status) {
  auto r = db_.Exec("UPDATE vfolders SET status = ? WHERE id = ?", {status, id});
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

StatusOr<std::pair<std::int64_t, std::int64_t>> FolderStore::Quota(std::string const& scope_id) {
  auto rows =
      db_.Query("SELECT max_bytes, max_files FROM quota_scopes WHERE scope_id = ?", {scope_id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::pair<std::int64_t, std::int64_t>{0, 0};
  return std::pair<std::int64_t, std::int64_t>{(*rows)[0].Int(0), (*rows)[0].Int(1)};
}

Status FolderStore::SetQuota(std::string const& scope_id, std::int64_t max_bytes,
                             std::int64_t max_files) {
  auto r = db_.Exec(
      "INSERT INTO quota_scopes (scope_id, max_bytes, max_files) VALUES (?, ?, ?) "
      "ON CONFLICT (scope_id) DO UPDATE SET max_bytes = excluded.max_bytes, "
      "max_files = excluded.max_files",
      {scope_id, max_bytes, max_files});
  return r.ok() ? Status() : r.status();
}

}  // namespace bai::manager::vfolders
