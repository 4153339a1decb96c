// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/store.h"

#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/resource.h"

#include "libbai/util/json_parse.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/columns.h"

#include <chrono>
#include <ctime>

namespace bai::manager {

using server::SqlValue;

std::string IsoTime(std::chrono::system_clock::time_point t) { return protocol::FormatRfc3339(t); }

std::string NowIso() { return IsoTime(std::chrono::system_clock::now()); }

StatusOr<std::pair<std::string, std::string>> Store::SignUp(std::string const& domain,
                                                            std::string const& email,
                                                            std::string const& username,
                                                            std::string const& password_hash,
                                                            std::string const& full_name) {
  auto keys = GenerateKeypair();
  std::string user_id = GenerateUuid();
  std::string now = NowIso();
  Status refusal;  // a client error found inside the transaction
  auto s = db_.Transaction([&](server::SqlExecutor& tx) -> Status {
    auto d = tx.Query("SELECT 1 FROM domains WHERE name = ? AND is_active = 1", {domain});
    if (!d.ok()) return d.status();
    if (d->empty()) {
      refusal = protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams,
                                            "No such domain: " + domain);
      return refusal;
    }
    auto taken =
        tx.Query("SELECT email FROM users WHERE email = ? OR username = ?", {email, username});
    if (!taken.ok()) return taken.status();
    if (!taken->empty()) {
      // One answer whichever is taken: a refusal must not tell which emails have accounts.
      refusal = protocol::MakeProblemStatus(
          protocol::ProblemType::kInvalidApiParams,
          "Cannot sign up with this email and username; if you have an account, log in.");
      return refusal;
    }
    for (auto const& [sql, params] : std::vector<std::pair<std::string, std::vector<SqlValue>>>{
             {"INSERT INTO users (uuid, username, email, password_hash, full_name, role, status, "
              "domain_name, created_at) VALUES (?, ?, ?, ?, ?, 'user', 'active', ?, ?)",
              {user_id, username, email, password_hash, full_name, domain, now}},
             {"INSERT INTO association_groups_users (group_id, user_id) "
              "SELECT id, ? FROM groups WHERE domain_name = ? AND name = 'default'",
              {user_id, domain}},
             {"INSERT INTO keypairs (access_key, secret_key, user_id, is_active, is_admin, "
              "resource_policy, rate_limit, created_at) VALUES (?, ?, ?, 1, 0, 'default', 1000, ?)",
              {keys.first, keys.second, user_id, now}},
         }) {
      if (auto r = tx.Exec(sql, params); !r.ok()) return r.status();
    }
    return Status();
  });
  if (!refusal.ok()) return refusal;
  if (!s.ok()) return s;
  return keys;
}

namespace {

// The allowed_client_ip column, parsed once: no value, null or [] allow any address; a value
// that is not a list of strings reads as {""}, which admits none.
std::vector<std::string> AllowedAddresses(std::string const& text) {
  auto j = internal::ParseJson(text);
  if (!j || j->is_null()) return {};
  if (!j->is_array()) return {""};
  std::vector<std::string> out;
  for (auto const& item : *j) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  if (out.empty() && !j->empty()) return {""};
  return out;
}

}  // namespace

StatusOr<std::optional<KeypairRecord>> Store::FindKeypair(std::string const& access_key) {
  auto rows = db_.Query(
      "SELECT k.access_key, k.secret_key, k.is_active, k.is_admin, k.rate_limit, u.uuid, "
      "u.email, u.role, u.status, u.domain_name, u.allowed_client_ip "
      "FROM keypairs k JOIN users u ON k.user_id = u.uuid WHERE k.access_key = ?",
      {access_key});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<KeypairRecord>();
  auto const& r = (*rows)[0];
  KeypairRecord k;
  k.identity.access_key = r.Text(0);
  k.secret_key = r.Text(1);
  k.keypair_active = r.Bool(2);
  k.identity.is_admin = r.Bool(3);
  k.identity.rate_limit = r.Int(4);
  k.identity.user_id = r.Text(5);
  k.identity.email = r.Text(6);
  k.identity.role = r.Text(7);
  k.user_status = r.Text(8);
  k.identity.domain = r.Text(9);
  if (auto allowed = r.OptText(10)) k.allowed_client_ip = AllowedAddresses(*allowed);
  return std::optional<KeypairRecord>(std::move(k));
}

StatusOr<std::optional<KeypairDetails>> Store::FindKeypairDetails(std::string const& access_key) {
  auto kp = FindKeypair(access_key);
  if (!kp.ok()) return std::move(kp).status();
  if (!*kp) return std::optional<KeypairDetails>();
  auto rows = db_.Query(
      "SELECT u.full_name, k.resource_policy, k.created_at, k.bootstrap_script "
      "FROM keypairs k JOIN users u ON k.user_id = u.uuid WHERE k.access_key = ?",
      {access_key});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<KeypairDetails>();
  auto& r = (*rows)[0];
  return std::optional<KeypairDetails>(
      KeypairDetails{**std::move(kp), r.TakeText(0), r.TakeText(1), r.TakeText(2), r.TakeText(3)});
}

StatusOr<std::vector<ScalingGroupRecord>> Store::ScalingGroups() {
  auto rows = db_.Query(
      "SELECT name, description, is_active, is_public, scheduler, scheduler_opts, created_at, "
      "driver_opts, wsproxy_addr, wsproxy_api_token, use_host_network "
      "FROM scaling_groups ORDER BY name");
  if (!rows.ok()) return std::move(rows).status();
  std::vector<ScalingGroupRecord> out;
  for (auto& r : *rows) {
    out.push_back({r.TakeText(0), r.TakeText(1), r.Bool(2), r.Bool(3), r.TakeText(4), r.TakeText(5),
                   r.TakeText(6), r.TakeText(7), r.TakeOptText(8), r.TakeOptText(9), r.Bool(10)});
  }
  return out;
}

StatusOr<std::optional<LoginRecord>> Store::FindLogin(std::string const& domain,
                                                      std::string const& username) {
  auto rows = db_.Query(
      "SELECT uuid, password_hash, role, status FROM users "
      "WHERE domain_name = ? AND (username = ? OR email = ?)",
      {domain, username, username});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<LoginRecord>();
  auto const& r = (*rows)[0];
  return std::optional<LoginRecord>(LoginRecord{r.Text(0), r.Text(1), r.Text(2), r.Text(3)});
}

StatusOr<std::optional<std::pair<std::string, std::string>>> Store::ActiveKeypairOf(
    std::string const& user_id) {
  auto rows = db_.Query(
      "SELECT k.access_key, k.secret_key FROM keypairs k JOIN users u ON u.uuid = k.user_id "
      "WHERE k.user_id = ? AND k.is_active = 1 "
      "ORDER BY CASE WHEN k.access_key = u.main_access_key THEN 0 ELSE 1 END, "
      "k.is_admin DESC, k.created_at ASC LIMIT 1",
      {user_id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::pair<std::string, std::string>>();
  return std::optional<std::pair<std::string, std::string>>(
      std::make_pair((*rows)[0].Text(0), (*rows)[0].Text(1)));
}

Status Store::RefuseWhileFrozen() {
  auto status = GetSetting("status");
  if (!status.ok()) return status.status();
  if (status->value_or("running") != "frozen") return Status();
  return protocol::MakeProblemStatus(
      protocol::ProblemType::kServerFrozen,
      "The manager is frozen for maintenance: try again once it is unfrozen.");
}

StatusOr<std::vector<PresetRecord>> Store::ListPresets() {
  auto rows =
      db_.Query("SELECT name, resource_slots, shared_memory FROM resource_presets ORDER BY name");
  if (!rows.ok()) return std::move(rows).status();
  std::vector<PresetRecord> out;
  for (auto const& r : *rows) {
    out.push_back({r.Text(0), SlotsFromColumn(r.Text(1)), r.OptText(2)});
  }
  return out;
}

StatusOr<std::optional<std::string>> Store::FindGroup(std::string const& domain,
                                                      std::string const& name_or_id) {
  auto rows = db_.Query(
      "SELECT id FROM groups WHERE domain_name = ? AND (id = ? OR name = ?) AND is_active = 1",
      {domain, name_or_id, name_or_id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

StatusOr<std::string> Store::SetPasswordHash(std::string const& user_id, std::string const& hash) {
  std::string now = NowIso();
  auto w = db_.Exec(
      "UPDATE users SET password_hash = ?, need_password_change = 0, password_changed_at = ? "
      "WHERE uuid = ?",
      {hash, now, user_id});
  if (!w.ok()) return std::move(w).status();
  return now;
}

StatusOr<std::optional<std::string>> Store::SshPublicKey(std::string const& access_key) {
  auto rows = db_.Query("SELECT ssh_public_key FROM keypairs WHERE access_key = ?", {access_key});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty() || (*rows)[0].IsNull(0)) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

Status Store::SetSshKeypair(std::string const& access_key, std::string const& public_key,
                            std::string const& private_key) {
  return db_
      .Exec("UPDATE keypairs SET ssh_public_key = ?, ssh_private_key = ? WHERE access_key = ?",
            {public_key, private_key, access_key})
      .status();
}

StatusOr<std::optional<std::string>> Store::UserResourcePolicy(std::string const& user_id) {
  auto rows = db_.Query("SELECT resource_policy FROM users WHERE uuid = ?", {user_id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

StatusOr<std::optional<std::pair<std::string, std::string>>> Store::FindGroupAnywhere(
    std::string const& id_or_name, std::string const& domain) {
  auto rows =
      db_.Query("SELECT id, domain_name FROM groups WHERE id = ? OR (name = ? AND domain_name = ?)",
                {id_or_name, id_or_name, domain});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::pair<std::string, std::string>>();
  return std::optional<std::pair<std::string, std::string>>(
      std::pair{(*rows)[0].Text(0), (*rows)[0].Text(1)});
}

StatusOr<bool> Store::AgentKnown(std::string const& agent_id) {
  auto rows = db_.Query("SELECT 1 FROM agents WHERE id = ?", {agent_id});
  if (!rows.ok()) return std::move(rows).status();
  return !rows->empty();
}

StatusOr<std::int64_t> Store::SchemaVersion() {
  auto rows = db_.Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!rows.ok()) return std::move(rows).status();
  return rows->empty() ? 0 : (*rows)[0].Int(0);
}

StatusOr<bool> Store::IsMember(std::string const& group_id, std::string const& user_id) {
  auto rows = db_.Query("SELECT 1 FROM association_groups_users WHERE group_id = ? AND user_id = ?",
                        {group_id, user_id});
  if (!rows.ok()) return std::move(rows).status();
  return !rows->empty();
}

StatusOr<std::vector<std::pair<std::string, std::string>>> Store::ProjectsOf(
    std::string const& domain, std::string const& user_id) {
  auto rows = db_.Query(
      "SELECT g.id, g.name FROM groups g JOIN association_groups_users a ON a.group_id = g.id "
      "WHERE g.domain_name = ? AND a.user_id = ? AND g.is_active = 1 ORDER BY g.name",
      {domain, user_id});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& r : *rows) out.emplace_back(r.Text(0), r.Text(1));
  return out;
}

StatusOr<std::string> Store::ResolveProject(std::string const& domain, std::string const& user_id,
                                            std::string const& requested, bool superadmin) {
  std::string name = requested.empty() ? "default" : requested;
  auto id = FindGroup(domain, name);
  if (!id.ok()) return id.status();
  if (*id) {
    if (superadmin) return **id;
    auto member = IsMember(**id, user_id);
    if (!member.ok()) return member.status();
    if (*member) return **id;
  }
  auto mine = ProjectsOf(domain, user_id);
  if (!mine.ok()) return mine.status();
  if (name == "default" && mine->size() == 1) return mine->front().first;
  std::string names;
  for (auto const& [pid, pname] : *mine) names += (names.empty() ? "" : ", ") + pname;
  return protocol::MakeProblemStatus(
      protocol::ProblemType::kObjectNotFound,
      "No such user group (or project). " +
          (mine->empty() ? "You are in no project of the domain " + domain +
                               ": ask an administrator to add you to one."
                         : "Yours: " + names +
                               " (name one: bai's --project NAME, or `bai config set group NAME` "
                               "for a profile)."));
}

StatusOr<std::vector<std::string>> Store::AllowedScalingGroups(Identity const& who,
                                                               std::string const& group) {
  std::string sql =
      "SELECT name FROM scaling_groups WHERE is_active = 1 AND name IN ("
      " SELECT scaling_group FROM sgroups_for_domains WHERE domain = ?"
      " UNION SELECT scaling_group FROM sgroups_for_keypairs WHERE access_key = ?"
      " UNION SELECT sg.scaling_group FROM sgroups_for_groups sg"
      "  JOIN association_groups_users a ON a.group_id = sg.group_id"
      "  JOIN groups g ON g.id = sg.group_id"
      "  WHERE a.user_id = ? AND (? = '' OR g.id = ? OR g.name = ?)"
      ") ORDER BY name";
  auto rows = db_.Query(sql, {who.domain, who.access_key, who.user_id, group, group, group});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<std::string> out;
  for (auto const& r : *rows) out.push_back(r.Text(0));
  return out;
}

StatusOr<std::map<std::string, std::string>> Store::ClusterSlotTypes() {
  std::map<std::string, std::string> out = {{"cpu", "count"}, {"mem", "bytes"}};
  auto rows = db_.Query("SELECT slot_types FROM agents WHERE status IN ('ALIVE', 'LOST')");
  if (!rows.ok()) return std::move(rows).status();
  for (auto const& r : *rows) {
    auto j = internal::ParseJson(r.Text(0));
    if (!j || !j->is_object()) continue;
    for (auto const& [name, type] : j->items()) {
      if (type.is_string() && protocol::ParseSlotType(type.get<std::string>())) {
        out.emplace(name, type.get<std::string>());
      }
    }
  }
  return out;
}

StatusOr<std::int64_t> Store::ActiveSessionCount() {
  auto rows =
      db_.Query("SELECT COUNT(*) FROM sessions WHERE status NOT IN ('TERMINATED', 'CANCELLED')");
  if (!rows.ok()) return std::move(rows).status();
  return (*rows)[0].Int(0);
}

StatusOr<std::optional<std::string>> Store::GetSetting(std::string const& key) {
  auto rows = db_.Query("SELECT value FROM manager_settings WHERE key = ?", {key});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

Status Store::SetSetting(std::string const& key, std::string const& value) {
  auto r = db_.Exec(
      "INSERT INTO manager_settings (key, value) VALUES (?, ?) "
      "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      {key, value});
  return r.ok() ? Status() : r.status();
}

StatusOr<std::string> Store::GetBootstrapScript(std::string const& access_key) {
  auto rows = db_.Query("SELECT bootstrap_script FROM keypairs WHERE access_key = ?", {access_key});
  if (!rows.ok()) return std::move(rows).status();
  return rows->empty() ? std::string() : (*rows)[0].Text(0);
}

Status Store::SetBootstrapScript(std::string const& access_key, std::string const& script) {
  auto r = db_.Exec("UPDATE keypairs SET bootstrap_script = ? WHERE access_key = ?",
                    {script, access_key});
  return r.ok() ? Status() : r.status();
}

Status Store::Ping() {
  auto r = db_.Query("SELECT 1");
  return r.ok() ? Status() : r.status();
}

StatusOr<std::map<std::string, std::pair<std::int64_t, std::int64_t>>> Store::AddRequestCounts(
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> const& counts,
    std::int64_t window_start, std::int64_t window_seconds) {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> totals;
  auto s = db_.Transaction([&](server::SqlExecutor& tx) -> Status {
    for (auto const& [key, wc] : counts) {
      auto r = tx.Exec(
          "INSERT INTO rate_limit_windows (access_key, window_start, count) VALUES (?, ?, ?) "
          "ON CONFLICT (access_key, window_start) DO UPDATE SET "
          "count = rate_limit_windows.count + excluded.count",
          {key, wc.first, wc.second});
      if (!r.ok()) return r.status();
    }
    auto rows = tx.Query(
        "SELECT access_key, window_start, count FROM rate_limit_windows WHERE window_start >= ?",
        {window_start - window_seconds});
    if (!rows.ok()) return rows.status();
    for (auto const& row : *rows) {
      auto& tot = totals[row.Text(0)];
      (row.Int(1) == window_start ? tot.first : tot.second) = row.Int(2);
    }
    return tx
        .Exec("DELETE FROM rate_limit_windows WHERE window_start < ?",
              {window_start - window_seconds})
        .status();
  });
  if (!s.ok()) return s;
  return totals;
}

char const kHoldingStatuses[] =
    "('SCHEDULED', 'PULLING', 'PREPARING', 'RUNNING', 'RESTARTING', 'RUNNING_DEGRADED', "
    "'TERMINATING')";

std::string SchedulingScope(std::string const& scaling_group) {
  return "scheduling:" + scaling_group;
}

}  // namespace bai::manager
