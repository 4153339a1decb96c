// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/users.h"

#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/columns.h"
#include "server-reference/manager/state/store.h"

#include <map>

namespace bai::manager {

using server::SqlValue;

namespace {

// A keypair's rate limit when create_user makes it (24.09's DEFAULT_KEYPAIR_RATE_LIMIT).
constexpr std::int64_t kDefaultRateLimit = 10000;

// The user's main keypair: the one named, else the first (admin keys first, then the oldest).
constexpr char kMainKey[] =
    "COALESCE(u.main_access_key, (SELECT mk.access_key FROM keypairs mk WHERE mk.user_id = "
    "u.uuid ORDER BY mk.is_admin DESC, mk.created_at, mk.access_key LIMIT 1))";

std::string const& UserColumns() {
  static std::string const kColumns =
      std::string(
          "u.uuid, u.username, u.email, u.need_password_change, u.full_name, u.description, "
          "u.status, u.status_info, u.created_at, u.modified_at, u.domain_name, u.role, "
          "u.resource_policy, u.allowed_client_ip, u.totp_activated, u.sudo_session_enabled, ") +
      kMainKey;
  return kColumns;
}

protocol::User UserFromRow(server::SqlRow& r) {
  protocol::User u;
  u.uuid = r.TakeText(0);
  u.username = r.TakeText(1);
  u.email = r.TakeText(2);
  u.need_password_change = r.Bool(3);
  u.full_name = r.TakeText(4);
  u.description = r.TakeText(5);
  u.status = r.TakeText(6);
  u.is_active = u.status == "active";
  u.status_info = r.TakeText(7);
  u.created_at = r.TakeText(8);
  u.modified_at = r.IsNull(9) ? u.created_at : r.TakeText(9);
  u.domain_name = r.TakeText(10);
  u.role = r.TakeText(11);
  u.resource_policy = r.TakeText(12);
  u.allowed_client_ip = ListFromColumn(r.Text(13));
  u.totp_activated = r.Bool(14);
  u.sudo_session_enabled = r.Bool(15);
  u.main_access_key = r.TakeText(16);
  return u;
}

// The projects of each user in `users`, by name.
Status AddGroups(server::SqlExecutor& db, std::vector<protocol::User>& users) {
  if (users.empty()) return Status();
  std::string marks;
  std::vector<SqlValue> ids;
  for (auto const& u : users) {
    marks += marks.empty() ? "?" : ", ?";
    ids.emplace_back(u.uuid);
  }
  auto rows = db.Query(
      "SELECT a.user_id, g.id, g.name FROM association_groups_users a JOIN groups g ON g.id = "
      "a.group_id WHERE a.user_id IN (" +
          marks + ") ORDER BY g.name",
      ids);
  if (!rows.ok()) return rows.status();
  std::map<std::string, std::vector<protocol::GroupRef>> by_user;
  for (auto& r : *rows) by_user[r.Text(0)].push_back({r.TakeText(1), r.TakeText(2)});
  for (auto& u : users) {
    if (auto it = by_user.find(u.uuid); it != by_user.end()) u.groups = it->second;
  }
  return Status();
}

std::string const& KeypairColumns() {
  static std::string const kColumns =
      "k.access_key, k.secret_key, u.email, u.uuid, u.full_name, k.is_active, k.is_admin, "
      "k.resource_policy, k.created_at, k.modified_at, k.last_used, k.rate_limit, "
      "k.ssh_public_key, u.domain_name";
  return kColumns;
}

protocol::KeyPair KeypairFromRow(server::SqlRow& r) {
  protocol::KeyPair k;
  k.access_key = r.TakeText(0);
  k.secret_key = r.TakeText(1);
  k.user_id = r.TakeText(2);
  k.user = r.TakeText(3);
  k.full_name = r.TakeText(4);
  k.is_active = r.Bool(5);
  k.is_admin = r.Bool(6);
  k.resource_policy = r.TakeText(7);
  k.created_at = r.TakeText(8);
  k.modified_at = r.IsNull(9) ? k.created_at : r.TakeText(9);
  k.last_used = r.TakeText(10);
  k.rate_limit = r.Int(11);
  k.ssh_public_key = r.TakeText(12);
  k.domain_name = r.TakeText(13);
  return k;
}

std::string Where(ListQuery const& q) {
  std::string sql;
  for (auto const& w : q.where) sql += (sql.empty() ? " WHERE (" : " AND (") + w + ")";
  return sql;
}

// A page of `from`'s rows: the count over every page, then the window's rows.
template <class Row, class FromRow>
StatusOr<Page<Row>> PageOf(server::SqlExecutor& db, std::string const& columns,
                           std::string const& from, ListQuery const& q,
                           std::string const& default_order, FromRow from_row) {
  Page<Row> page;
  auto count = db.Query("SELECT COUNT(*) FROM " + from + Where(q), q.params);
  if (!count.ok()) return count.status();
  page.total = count->front().Int(0);
  if (q.limit == 0) return page;
  auto params = q.params;
  params.emplace_back(q.limit);
  params.emplace_back(q.offset);
  auto rows = db.Query("SELECT " + columns + " FROM " + from + Where(q) + " ORDER BY " +
                           (q.order.empty() ? default_order : q.order) + " LIMIT ? OFFSET ?",
                       params);
  if (!rows.ok()) return rows.status();
  for (auto& r : *rows) page.rows.push_back(from_row(r));
  return page;
}

Status NoPolicy(char const* kind, std::string const& name) {
  return Status(StatusCode::kInvalidArgument,
                std::string("no ") + kind + " resource policy \"" + name + "\"");
}

Status ActiveSessions(server::SqlExecutor& db, char const* column, std::string const& key,
                      std::string message) {
  auto rows = db.Query(std::string("SELECT 1 FROM sessions WHERE ") + column +
                           " = ? AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR') LIMIT 1",
                       {key});
  if (!rows.ok()) return rows.status();
  return rows->empty() ? Status() : Status(StatusCode::kFailedPrecondition, std::move(message));
}

// Joins `user` to the projects of `ids` that are in `domain` (others are skipped, as in 24.09).
Status Join(server::SqlExecutor& db, std::string const& user, std::string const& domain,
            std::vector<std::string> const& ids) {
  for (auto const& id : ids) {
    auto r = db.Exec(
        "INSERT INTO association_groups_users (group_id, user_id) SELECT id, ? FROM groups "
        "WHERE id = ? AND domain_name = ? ON CONFLICT DO NOTHING",
        {user, id, domain});
    if (!r.ok()) return r.status();
  }
  return Status();
}

}  // namespace

// -- users --

graphql::ColumnMap const& UserStore::Columns() {
  using K = graphql::ColumnSpec::Kind;
  static auto const* const kMap = new graphql::ColumnMap{
      {"uuid", {"u.uuid", K::kText, {}}},
      {"username", {"u.username", K::kText, {}}},
      {"email", {"u.email", K::kText, {}}},
      {"full_name", {"u.full_name", K::kText, {}}},
      {"description", {"u.description", K::kText, {}}},
      {"need_password_change", {"u.need_password_change", K::kBool, {}}},
      {"status", {"u.status", K::kEnum, {"active", "inactive", "deleted", "before-verification"}}},
      {"status_info", {"u.status_info", K::kText, {}}},
      {"domain_name", {"u.domain_name", K::kText, {}}},
      {"role", {"u.role", K::kEnum, {"superadmin", "admin", "user", "monitor"}}},
      {"resource_policy", {"u.resource_policy", K::kText, {}}},
      {"created_at", {"u.created_at", K::kTime, {}}},
      {"modified_at", {"COALESCE(u.modified_at, u.created_at)", K::kTime, {}}},
  };
  return *kMap;
}

StatusOr<std::optional<protocol::User>> UserStore::One(char const* where,
                                                       std::string const& value) {
  auto rows =
      db_.Query("SELECT " + UserColumns() + " FROM users u WHERE " + where + " = ?", {value});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<protocol::User>();
  std::vector<protocol::User> one{UserFromRow(rows->front())};
  if (auto s = AddGroups(db_, one); !s.ok()) return s;
  return std::optional<protocol::User>(std::move(one.front()));
}

StatusOr<std::optional<protocol::User>> UserStore::ByEmail(std::string const& email) {
  return One("u.email", email);
}

StatusOr<std::optional<protocol::User>> UserStore::ByUuid(std::string const& uuid) {
  return One("u.uuid", uuid);
}

StatusOr<Page<protocol::User>> UserStore::List(ListQuery const& q) {
  auto page = PageOf<protocol::User>(db_, UserColumns(), "users u", q, "u.created_at, u.email",
                                     UserFromRow);
  if (!page.ok()) return page;
  if (auto s = AddGroups(db_, page->rows); !s.ok()) return s;
  return page;
}

StatusOr<std::pair<protocol::User, protocol::KeyPair>> UserStore::Create(NewUser const& n) {
  protocol::User u = n.user;
  u.uuid = GenerateUuid();
  u.created_at = NowIso();
  auto [access_key, secret_key] = GenerateKeypair();
  u.main_access_key = access_key;
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    if (auto s = server::ExpectRow(
            db, "SELECT 1 FROM domains WHERE name = ?", {u.domain_name},
            Status(StatusCode::kNotFound, "no such domain \"" + u.domain_name + "\""));
        !s.ok()) {
      return refusal = s;
    }
    if (auto s = server::ExpectRow(db, "SELECT 1 FROM user_resource_policies WHERE name = ?",
                                   {u.resource_policy}, NoPolicy("user", u.resource_policy));
        !s.ok()) {
      return refusal = s;
    }
    auto taken = db.Query("SELECT email, username FROM users WHERE email = ? OR username = ?",
                          {u.email, u.username});
    if (!taken.ok()) return taken.status();
    if (!taken->empty()) {
      bool email = taken->front().Text(0) == u.email;
      return refusal = Status(StatusCode::kAlreadyExists,
                              "duplicate key value violates unique constraint: " +
                                  std::string(email ? "the email \"" + u.email
                                                    : "the username \"" + u.username) +
                                  "\" is taken");
    }
    auto r = db.Exec(
        "INSERT INTO users (uuid, username, email, password_hash, need_password_change, "
        "full_name, description, status, status_info, domain_name, role, resource_policy, "
        "allowed_client_ip, totp_activated, sudo_session_enabled, main_access_key, created_at, "
        "modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'admin-requested', ?, ?, ?, ?, ?, ?, ?, ?, "
        "?)",
        {u.uuid, u.username, u.email, n.password_hash, server::SqlBool(u.need_password_change),
         u.full_name, u.description, u.status, u.domain_name, u.role, u.resource_policy,
         u.allowed_client_ip.empty() ? SqlValue(nullptr)
                                     : SqlValue(ListColumn(u.allowed_client_ip)),
         server::SqlBool(u.totp_activated), server::SqlBool(u.sudo_session_enabled), access_key,
         u.created_at, u.created_at});
    if (!r.ok()) return r.status();
    bool admin = u.role == "admin" || u.role == "superadmin";
    r = db.Exec(
        "INSERT INTO keypairs (access_key, secret_key, user_id, is_active, is_admin, "
        "resource_policy, rate_limit, created_at, modified_at) VALUES (?, ?, ?, ?, ?, 'default', "
        "?, ?, ?)",
        {access_key, secret_key, u.uuid, server::SqlBool(u.status == "active"),
         server::SqlBool(admin), kDefaultRateLimit, u.created_at, u.created_at});
    if (!r.ok()) return r.status();
    auto ids = n.group_ids;
    auto store = db.Query("SELECT id FROM groups WHERE domain_name = ? AND type = 'MODEL_STORE'",
                          {u.domain_name});
    if (!store.ok()) return store.status();
    for (auto const& row : *store) ids.push_back(row.Text(0));
    return Join(db, u.uuid, u.domain_name, ids);
  });
  if (!refusal.ok()) return refusal;
  if (!tx.ok()) return tx;
  auto user = ByEmail(u.email);
  if (!user.ok()) return user.status();
  auto keypair = KeypairStore(db_).Get(access_key);
  if (!keypair.ok()) return keypair.status();
  if (!*user || !*keypair) return Status(StatusCode::kInternal, "the new user vanished");
  return std::pair{**std::move(user), **std::move(keypair)};
}

Status UserStore::Modify(std::string const& email, UserChanges const& c) {
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto rows =
        db.Query("SELECT uuid, domain_name, role, status FROM users WHERE email = ?", {email});
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return refusal = Status(StatusCode::kNotFound, "no such user");
    std::string uuid = rows->front().Text(0);
    std::string old_domain = rows->front().Text(1);
    std::string old_role = rows->front().Text(2);
    std::string old_status = rows->front().Text(3);
    if (c.main_access_key) {
      auto owner =
          db.Query("SELECT user_id FROM keypairs WHERE access_key = ?", {*c.main_access_key});
      if (!owner.ok()) return owner.status();
      if (owner->empty()) {
        return refusal = Status(StatusCode::kInvalidArgument,
                                "Cannot set non-existing access key as the main access key.");
      }
      if (owner->front().Text(0) != uuid) {
        return refusal = Status(StatusCode::kInvalidArgument,
                                "Cannot set another user's access key as the main access key.");
      }
    }
    if (c.domain_name) {
      if (auto s = server::ExpectRow(
              db, "SELECT 1 FROM domains WHERE name = ?", {*c.domain_name},
              Status(StatusCode::kInvalidArgument, "no such domain \"" + *c.domain_name + "\""));
          !s.ok()) {
        return refusal = s;
      }
    }
    if (c.resource_policy) {
      if (auto s = server::ExpectRow(db, "SELECT 1 FROM user_resource_policies WHERE name = ?",
                                     {*c.resource_policy}, NoPolicy("user", *c.resource_policy));
          !s.ok()) {
        return refusal = s;
      }
    }
    std::string now = NowIso();
    std::string sets = "modified_at = ?";
    std::vector<SqlValue> params{now};
    auto set = [&](char const* column, SqlValue value) {
      sets += std::string(", ") + column + " = ?";
      params.push_back(std::move(value));
    };
    if (c.username) set("username", *c.username);
    if (c.password_hash) {
      set("password_hash", *c.password_hash);
      set("password_changed_at", now);
    }
    if (c.need_password_change)
      set("need_password_change", server::SqlBool(*c.need_password_change));
    if (c.full_name) set("full_name", *c.full_name);
    if (c.description) set("description", *c.description);
    if (c.status) {
      set("status", *c.status);
      if (*c.status != old_status) set("status_info", std::string("admin-requested"));
    }
    if (c.domain_name) set("domain_name", *c.domain_name);
    if (c.role) set("role", *c.role);
    if (c.allowed_client_ip) {
      set("allowed_client_ip", c.allowed_client_ip->empty()
                                   ? SqlValue(nullptr)
                                   : SqlValue(ListColumn(*c.allowed_client_ip)));
    }
    if (c.totp_activated) set("totp_activated", server::SqlBool(*c.totp_activated));
    if (c.resource_policy) set("resource_policy", *c.resource_policy);
    if (c.sudo_session_enabled)
      set("sudo_session_enabled", server::SqlBool(*c.sudo_session_enabled));
    if (c.main_access_key) set("main_access_key", *c.main_access_key);
    params.push_back(uuid);
    auto n = db.Exec("UPDATE users SET " + sets + " WHERE uuid = ?", params);
    if (!n.ok()) {
      if (server::IsUniqueViolation(n.status())) {
        return refusal = Status(StatusCode::kAlreadyExists,
                                "duplicate key value violates unique constraint: the username \"" +
                                    c.username.value_or("") + "\" is taken");
      }
      return n.status();
    }
    // A role change moves the keypairs with it (24.09's ModifyUser).
    if (c.role && *c.role != old_role) {
      bool admin = *c.role == "admin" || *c.role == "superadmin";
      auto keys = db.Query(
          "SELECT access_key, is_admin, is_active FROM keypairs WHERE user_id = ? "
          "ORDER BY is_admin DESC, is_active DESC, created_at",
          {uuid});
      if (!keys.ok()) return keys.status();
      if (admin && !keys->empty()) {
        auto r = db.Exec(
            "UPDATE keypairs SET is_admin = 1, is_active = 1, modified_at = ? WHERE "
            "user_id = ?",
            {now, uuid});
        if (!r.ok()) return r.status();
      } else if (!admin) {
        for (std::size_t i = 0; i < keys->size(); ++i) {
          auto const& k = (*keys)[i];
          char const* sql = nullptr;
          if (i == 0) {
            sql = "UPDATE keypairs SET is_admin = 0, modified_at = ? WHERE access_key = ?";
          } else if (k.Bool(1) && k.Bool(2)) {
            sql = "UPDATE keypairs SET is_active = 0, modified_at = ? WHERE access_key = ?";
          }
          if (!sql) continue;
          auto r = db.Exec(sql, {now, k.Text(0)});
          if (!r.ok()) return r.status();
        }
      }
    }
    std::string domain = c.domain_name.value_or(old_domain);
    if (c.group_ids || domain != old_domain) {
      auto r = db.Exec("DELETE FROM association_groups_users WHERE user_id = ?", {uuid});
      if (!r.ok()) return r.status();
    }
    if (c.group_ids) return Join(db, uuid, domain, *c.group_ids);
    return Status();
  });
  return refusal.ok() ? tx : refusal;
}

Status UserStore::SoftDelete(std::string const& email) {
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    std::string now = NowIso();
    auto n = db.Exec(
        "UPDATE users SET status = 'deleted', status_info = 'admin-requested', modified_at = ? "
        "WHERE email = ?",
        {now, email});
    if (!n.ok()) return n.status();
    if (*n == 0) return refusal = Status(StatusCode::kNotFound, "no such user");
    auto r = db.Exec(
        "UPDATE keypairs SET is_active = 0, modified_at = ? WHERE user_id = (SELECT uuid FROM "
        "users WHERE email = ?)",
        {now, email});
    return r.ok() ? Status() : r.status();
  });
  return refusal.ok() ? tx : refusal;
}

Status UserStore::Purge(std::string const& email) {
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto rows = db.Query("SELECT uuid FROM users WHERE email = ?", {email});
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return refusal = Status(StatusCode::kNotFound, "no such user");
    std::string uuid = rows->front().Text(0);
    if (auto s = ActiveSessions(db, "user_id", uuid,
                                "User has some active kernels. Terminate them first.");
        !s.ok()) {
      return refusal = s;
    }
    auto folders = db.Query("SELECT name FROM vfolders WHERE user_id = ? LIMIT 1", {uuid});
    if (!folders.ok()) return folders.status();
    if (!folders->empty()) {
      return refusal = Status(StatusCode::kFailedPrecondition,
                              "The user still owns virtual folders (" + folders->front().Text(0) +
                                  "): delete them first (bai never deletes data as a side "
                                  "effect).");
    }
    std::vector<std::pair<char const*, std::vector<SqlValue>>> steps = {
        {"DELETE FROM sessions WHERE user_id = ? OR access_key IN (SELECT access_key FROM "
         "keypairs WHERE user_id = ?)",
         {uuid, uuid}},
        {"DELETE FROM vfolder_invitations WHERE inviter = ? OR invitee = ?", {email, email}},
        {"DELETE FROM keypairs WHERE user_id = ?", {uuid}},
        {"DELETE FROM users WHERE uuid = ?", {uuid}},
    };
    for (auto& [sql, params] : steps) {
      if (auto n = db.Exec(sql, params); !n.ok()) return n.status();
    }
    return Status();
  });
  return refusal.ok() ? tx : refusal;
}

// -- keypairs --

graphql::ColumnMap const& KeypairStore::Columns() {
  using K = graphql::ColumnSpec::Kind;
  static auto const* const kMap = new graphql::ColumnMap{
      {"access_key", {"k.access_key", K::kText, {}}},
      {"user_id", {"u.email", K::kText, {}}},
      {"email", {"u.email", K::kText, {}}},
      {"full_name", {"u.full_name", K::kText, {}}},
      {"is_active", {"k.is_active", K::kBool, {}}},
      {"is_admin", {"k.is_admin", K::kBool, {}}},
      {"resource_policy", {"k.resource_policy", K::kText, {}}},
      {"rate_limit", {"k.rate_limit", K::kInt, {}}},
      {"created_at", {"k.created_at", K::kTime, {}}},
      {"modified_at", {"COALESCE(k.modified_at, k.created_at)", K::kTime, {}}},
      {"last_used", {"k.last_used", K::kTime, {}}},
  };
  return *kMap;
}

StatusOr<std::optional<protocol::KeyPair>> KeypairStore::Get(std::string const& access_key) {
  auto rows = db_.Query("SELECT " + KeypairColumns() +
                            " FROM keypairs k JOIN users u ON u.uuid = k.user_id WHERE "
                            "k.access_key = ?",
                        {access_key});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<protocol::KeyPair>();
  return std::optional<protocol::KeyPair>(KeypairFromRow(rows->front()));
}

StatusOr<Page<protocol::KeyPair>> KeypairStore::List(ListQuery const& q) {
  return PageOf<protocol::KeyPair>(db_, KeypairColumns(),
                                   "keypairs k JOIN users u ON u.uuid = k.user_id", q,
                                   "k.created_at, k.access_key", KeypairFromRow);
}

StatusOr<protocol::KeyPair> KeypairStore::Create(std::string const& email,
                                                 KeypairChanges const& c) {
  auto [access_key, secret_key] = GenerateKeypair();
  std::string policy = c.resource_policy.value_or("default");
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    auto user = db.Query("SELECT uuid FROM users WHERE email = ?", {email});
    if (!user.ok()) return user.status();
    if (user->empty()) {
      return refusal = Status(StatusCode::kNotFound, "no user with the email \"" + email + "\"");
    }
    if (auto s = server::ExpectRow(db, "SELECT 1 FROM keypair_resource_policies WHERE name = ?",
                                   {policy}, NoPolicy("keypair", policy));
        !s.ok()) {
      return refusal = s;
    }
    std::string now = NowIso();
    auto r = db.Exec(
        "INSERT INTO keypairs (access_key, secret_key, user_id, is_active, is_admin, "
        "resource_policy, rate_limit, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
        "?)",
        {access_key, secret_key, user->front().Text(0), server::SqlBool(c.is_active.value_or(true)),
         server::SqlBool(c.is_admin.value_or(false)), policy,
         c.rate_limit.value_or(kDefaultRateLimit), now, now});
    return r.ok() ? Status() : r.status();
  });
  if (!refusal.ok()) return refusal;
  if (!tx.ok()) return tx;
  auto made = Get(access_key);
  if (!made.ok()) return made.status();
  if (!*made) return Status(StatusCode::kInternal, "the new keypair vanished");
  return **std::move(made);
}

Status KeypairStore::Modify(std::string const& access_key, KeypairChanges const& c) {
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    if (c.resource_policy) {
      if (auto s = server::ExpectRow(db, "SELECT 1 FROM keypair_resource_policies WHERE name = ?",
                                     {*c.resource_policy}, NoPolicy("keypair", *c.resource_policy));
          !s.ok()) {
        return refusal = s;
      }
    }
    std::string sets = "modified_at = ?";
    std::vector<SqlValue> params{NowIso()};
    auto set = [&](char const* column, SqlValue value) {
      sets += std::string(", ") + column + " = ?";
      params.push_back(std::move(value));
    };
    if (c.is_active) set("is_active", server::SqlBool(*c.is_active));
    if (c.is_admin) set("is_admin", server::SqlBool(*c.is_admin));
    if (c.resource_policy) set("resource_policy", *c.resource_policy);
    if (c.rate_limit) set("rate_limit", *c.rate_limit);
    params.push_back(access_key);
    auto n = db.Exec("UPDATE keypairs SET " + sets + " WHERE access_key = ?", params);
    if (!n.ok()) return n.status();
    if (*n == 0) return refusal = Status(StatusCode::kNotFound, "no such keypair");
    return Status();
  });
  return refusal.ok() ? tx : refusal;
}

Status KeypairStore::Delete(std::string const& access_key) {
  Status refusal;
  auto tx = db_.Transaction([&](server::SqlExecutor& db) -> Status {
    if (auto s = server::ExpectRow(db, "SELECT 1 FROM keypairs WHERE access_key = ?", {access_key},
                                   Status(StatusCode::kNotFound, "no such keypair"));
        !s.ok()) {
      return refusal = s;
    }
    auto main =
        db.Query(std::string("SELECT 1 FROM users u WHERE ") + kMainKey + " = ?", {access_key});
    if (!main.ok()) return main.status();
    if (!main->empty()) {
      return refusal = Status(StatusCode::kFailedPrecondition,
                              "the keypair is used as main access key by any user");
    }
    auto sessions = db.Query("SELECT COUNT(*) FROM sessions WHERE access_key = ?", {access_key});
    if (!sessions.ok()) return sessions.status();
    if (auto count = sessions->front().Int(0); count > 0) {
      return refusal = Status(StatusCode::kFailedPrecondition,
                              "integrity error: " + std::to_string(count) +
                                  " sessions on record were made with the keypair; deactivate it "
                                  "instead");
    }
    auto n = db.Exec("DELETE FROM keypairs WHERE access_key = ?", {access_key});
    return n.ok() ? Status() : n.status();
  });
  return refusal.ok() ? tx : refusal;
}

void UserStore::WhereMemberOf(ListQuery& q, std::string const& group_id) {
  q.where.push_back(
      "EXISTS (SELECT 1 FROM association_groups_users a WHERE a.user_id = u.uuid AND "
      "a.group_id = ?)");
  q.params.emplace_back(group_id);
}

StatusOr<std::map<std::string, std::int64_t>> KeypairStore::ActiveSessionCounts(
    std::vector<std::string> const& access_keys) {
  std::map<std::string, std::int64_t> used;
  if (access_keys.empty()) return used;
  std::string marks;
  std::vector<server::SqlValue> keys;
  for (auto const& k : access_keys) {
    marks += marks.empty() ? "?" : ", ?";
    keys.emplace_back(k);
  }
  auto rows = db_.Query("SELECT access_key, COUNT(*) FROM sessions WHERE access_key IN (" + marks +
                            ") AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR') GROUP BY "
                            "access_key",
                        keys);
  if (!rows.ok()) return rows.status();
  for (auto const& r : *rows) used[r.Text(0)] = r.Int(1);
  return used;
}

}  // namespace bai::manager
