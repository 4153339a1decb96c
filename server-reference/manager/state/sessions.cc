// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/sessions.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/columns.h"
#include "server-reference/manager/state/error_logs.h"

#include <nlohmann/json.hpp>

#include <chrono>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::SqlExecutor;
using server::SqlOptional;
using server::SqlRow;
using server::SqlValue;

namespace {

constexpr char kColumns[] =
    "id, seq, name, access_key, user_id, domain_name, group_id, scaling_group, type, image, "
    "architecture, cluster_size, status, status_info, status_history, requested_slots, agent_id, "
    "environ, mounts, mount_map, resource_opts, startup_command, bootstrap_script, tag, priority, "
    "starts_at, batch_timeout, dependencies, callback_url, result, exit_code, created_at, "
    "terminated_at, agent_list, vfolder_mounts, service_ports, network";
// What reads select: the inserted columns plus counters the manager keeps (never inserted).
std::string const& ReadColumns() {
  static std::string const kRead =
      std::string(kColumns) + ", num_queries, device_allocations, kernel_setup";
  return kRead;
}

// Taken by every insert into the queue (server::LockScopes): positions come from MAX(seq).
constexpr char kQueueScope[] = "session-queue";

constexpr char kActive[] = "status NOT IN ('TERMINATED', 'CANCELLED')";

std::string MountsColumn(std::vector<SessionMount> const& mounts) {
  nlohmann::json out = nlohmann::json::array();
  for (auto const& m : mounts) {
    out.push_back({{"name", m.name},
                   {"vfolder_id", m.vfolder_id},
                   {"host_path", m.host_path},
                   {"kernel_path", m.kernel_path},
                   {"permission", m.permission}});
  }
  return out.dump();
}

std::vector<SessionMount> MountsFromColumn(std::string_view text) {
  std::vector<SessionMount> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (auto const& m : j) {
    if (!m.is_object()) continue;
    out.push_back({m.value("name", ""), m.value("vfolder_id", ""), m.value("host_path", ""),
                   m.value("kernel_path", ""), m.value("permission", "ro")});
  }
  return out;
}

}  // namespace

namespace {

// Moves the row's text out: each row becomes one record.
SessionRecord FromRow(SqlRow& r) {
  SessionRecord s;
  std::size_t i = 0;
  s.id = r.TakeText(i++);
  s.seq = r.Int(i++);
  s.name = r.TakeText(i++);
  s.access_key = r.TakeText(i++);
  s.user_id = r.TakeText(i++);
  s.domain_name = r.TakeText(i++);
  s.group_id = r.TakeText(i++);
  s.scaling_group = r.TakeText(i++);
  s.type = r.TakeText(i++);
  s.image = r.TakeText(i++);
  s.architecture = r.TakeText(i++);
  s.cluster_size = static_cast<int>(r.Int(i++));
  s.status = protocol::ParseSessionStatus(r.Text(i++)).status;
  s.status_info = r.TakeText(i++);
  s.status_history = MapFromColumn(r.Text(i++));
  s.requested = SlotsFromColumn(r.Text(i++));
  s.agent_id = r.TakeOptText(i++);
  s.environ = MapFromColumn(r.Text(i++));
  s.mounts = ListFromColumn(r.Text(i++));
  s.mount_map = MapFromColumn(r.Text(i++));
  s.resource_opts = MapFromColumn(r.Text(i++));
  s.startup_command = r.TakeOptText(i++);
  s.bootstrap_script = r.TakeOptText(i++);
  s.tag = r.TakeOptText(i++);
  s.priority = static_cast<int>(r.Int(i++));
  s.starts_at = r.TakeOptText(i++);
  if (!r.IsNull(i)) s.batch_timeout = r.Int(i);
  ++i;
  s.dependencies = ListFromColumn(r.Text(i++));
  s.callback_url = r.TakeOptText(i++);
  s.result = r.TakeText(i++);
  if (!r.IsNull(i)) s.exit_code = r.Int(i);
  ++i;
  s.created_at = r.TakeText(i++);
  s.terminated_at = r.TakeOptText(i++);
  s.agent_list = ListFromColumn(r.Text(i++));
  s.vfolder_mounts = MountsFromColumn(r.Text(i++));
  // Most sessions have no apps until they run: no parse on the scheduler's reads then.
  if (auto text = r.Text(i++); text != "[]") {
    if (auto apps = protocol::DecodeApps(text); apps.ok()) s.service_ports = std::move(*apps);
  }
  s.network = r.TakeText(i++);
  s.num_queries = r.Int(i++);
  s.devices = AllocationsFromColumn(r.Text(i++));
  if (!r.IsNull(i)) s.kernel_setup = KernelSetupFromColumn(r.Text(i));
  ++i;
  return s;
}

// Every row as a record.
StatusOr<std::vector<SessionRecord>> Records(StatusOr<std::vector<SqlRow>> rows) {
  if (!rows.ok()) return std::move(rows).status();
  std::vector<SessionRecord> out;
  out.reserve(rows->size());
  for (auto& r : *rows) out.push_back(FromRow(r));
  return out;
}

Status InsertEvent(SqlExecutor& tx, SessionRecord const& s, std::string const& name,
                   std::optional<std::string> const& reason, std::optional<std::int64_t> exit_code,
                   std::string const& now) {
  auto r = tx.Exec(
      "INSERT INTO events (name, session_id, session_name, access_key, domain_name, group_id, "
      "reason, exit_code, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {name, s.id, s.name, s.access_key, s.domain_name, s.group_id, SqlOptional(reason),
       SqlOptional(exit_code), now});
  return r.ok() ? Status() : r.status();
}

bool LooksLikeUuid(std::string const& s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = s[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string EscapeLike(std::string const& s) {
  std::string out;
  for (char c : s) {
    if (c == '%' || c == '_' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// The session columns qualified with the list query's alias: "s.id, s.seq, …".
std::string const& ListColumns() {
  static std::string const kList = [] {
    std::string out;
    std::string_view cols = ReadColumns();
    while (!cols.empty()) {
      auto comma = cols.find(", ");
      out += (out.empty() ? "s." : ", s.") + std::string(cols.substr(0, comma));
      cols = comma == std::string_view::npos ? std::string_view() : cols.substr(comma + 2);
    }
    return out;
  }();
  return kList;
}

constexpr char kListFrom[] =
    " FROM sessions s LEFT JOIN users u ON u.uuid = s.user_id "
    "LEFT JOIN groups g ON g.id = s.group_id";

constexpr char kKernelColumns[] =
    "k.id, k.session_id, k.agent_id, k.cluster_role, k.cluster_idx, k.status, k.status_info, "
    "k.container_id, k.exit_code, k.created_at, k.terminated_at, "
    "(SELECT st.live_stat FROM sessions st WHERE st.id = k.session_id), "
    "(SELECT st.last_stat FROM sessions st WHERE st.id = k.session_id)";

KernelRecord KernelFromRow(SqlRow& r) {
  KernelRecord k;
  k.id = r.TakeText(0);
  k.session_id = r.TakeText(1);
  k.agent_id = r.TakeOptText(2);
  k.cluster_role = r.TakeText(3);
  k.cluster_idx = static_cast<int>(r.Int(4));
  k.status = r.TakeText(5);
  k.status_info = r.TakeText(6);
  k.container_id = r.TakeOptText(7);
  if (!r.IsNull(8)) k.exit_code = r.Int(8);
  k.created_at = r.TakeText(9);
  k.terminated_at = r.TakeOptText(10);
  k.live_stat = r.TakeOptText(11);
  k.last_stat = r.TakeOptText(12);
  return k;
}

std::string Where(ListQuery const& q) {
  std::string out;
  for (auto const& w : q.where) out += (out.empty() ? " WHERE " : " AND ") + w;
  return out;
}

// "?, ?, ?" for n values.
std::string Placeholders(std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += i ? ", ?" : "?";
  return out;
}

// One page and the total of a list query: `select` is "SELECT cols FROM …".
template <class Row, class Convert>
StatusOr<Page<Row>> QueryPage(server::Database& db, std::string const& select,
                              std::string const& from, ListQuery const& q,
                              std::string const& default_order, Convert convert) {
  std::string where = Where(q);
  std::vector<SqlValue> params = q.params;
  params.emplace_back(q.limit);
  params.emplace_back(q.offset);
  std::string order = q.order.empty() ? default_order : q.order + ", " + default_order;
  auto rows = db.Query(select + from + where + " ORDER BY " + order + " LIMIT ? OFFSET ?", params);
  if (!rows.ok()) return std::move(rows).status();
  Page<Row> page;
  page.rows.reserve(rows->size());
  for (auto& r : *rows) page.rows.push_back(convert(r));
  // A short first page is the whole list: no second statement.
  if (q.offset == 0 && static_cast<std::int64_t>(page.rows.size()) < q.limit) {
    page.total = static_cast<std::int64_t>(page.rows.size());
    return page;
  }
  auto count = db.Query("SELECT COUNT(*)" + from + where, q.params);
  if (!count.ok()) return std::move(count).status();
  page.total = (*count)[0].Int(0);
  return page;
}

}  // namespace

graphql::ColumnMap const& SessionListColumns() {
  using K = graphql::ColumnSpec::Kind;
  static graphql::ColumnMap const* const kColumns = [] {
    std::vector<std::string> statuses;
    for (int i = static_cast<int>(protocol::SessionStatus::kPending);
         i <= static_cast<int>(protocol::SessionStatus::kRescheduling); ++i) {
      statuses.emplace_back(protocol::ToString(static_cast<protocol::SessionStatus>(i)));
    }
    return new graphql::ColumnMap{
        {"id", {"s.id", K::kText, {}}},
        {"session_id", {"s.id", K::kText, {}}},
        {"type", {"s.type", K::kEnum, {"interactive", "batch", "inference", "system"}}},
        {"name", {"s.name", K::kText, {}}},
        {"priority", {"s.priority", K::kInt, {}}},
        {"image", {"s.image", K::kText, {}}},
        {"architecture", {"s.architecture", K::kText, {}}},
        {"agent_ids", {"s.agent_id", K::kText, {}}},
        {"agent_id", {"s.agent_id", K::kText, {}}},
        {"agents", {"s.agent_id", K::kText, {}}},
        {"domain_name", {"s.domain_name", K::kText, {}}},
        {"group_name", {"g.name", K::kText, {}}},
        {"group_id", {"s.group_id", K::kText, {}}},
        {"user_email", {"u.email", K::kText, {}}},
        {"user_id", {"s.user_id", K::kText, {}}},
        {"full_name", {"u.full_name", K::kText, {}}},
        {"access_key", {"s.access_key", K::kText, {}}},
        {"scaling_group", {"s.scaling_group", K::kText, {}}},
        {"cluster_size", {"s.cluster_size", K::kInt, {}}},
        {"status", {"s.status", K::kEnum, statuses}},
        {"status_info", {"s.status_info", K::kText, {}}},
        {"result", {"s.result", K::kEnum, {"undefined", "success", "failure"}}},
        {"created_at", {"s.created_at", K::kTime, {}}},
        {"terminated_at", {"s.terminated_at", K::kTime, {}}},
        {"starts_at", {"s.starts_at", K::kTime, {}}},
        {"startup_command", {"s.startup_command", K::kText, {}}},
        {"tag", {"s.tag", K::kText, {}}},
        {"exit_code", {"s.exit_code", K::kInt, {}}},
    };
  }();
  return *kColumns;
}

graphql::ColumnMap const& KernelListColumns() {
  using K = graphql::ColumnSpec::Kind;
  static graphql::ColumnMap const kColumns{
      {"id", {"k.id", K::kText, {}}},
      {"agent", {"k.agent_id", K::kText, {}}},
      {"cluster_idx", {"k.cluster_idx", K::kInt, {}}},
      {"cluster_role", {"k.cluster_role", K::kText, {}}},
      {"status",
       {"k.status",
        K::kEnum,
        {"PENDING", "SCHEDULED", "PREPARING", "RUNNING", "TERMINATING", "TERMINATED", "ERROR",
         "CANCELLED"}}},
      {"status_info", {"k.status_info", K::kText, {}}},
      {"created_at", {"k.created_at", K::kTime, {}}},
      {"terminated_at", {"k.terminated_at", K::kTime, {}}},
  };
  return kColumns;
}

StatusOr<Page<SessionListRow>> SessionStore::List(ListQuery const& q) {
  static std::string const select =
      "SELECT " + ListColumns() +
      ", COALESCE(u.email, ''), COALESCE(u.full_name, ''), COALESCE(g.name, ''), "
      "COALESCE((SELECT k.id FROM kernels k WHERE k.session_id = s.id AND "
      "k.cluster_role = 'main'), '')";
  static std::size_t const extra = [] {
    std::size_t n = 1;
    for (char c : ReadColumns()) n += c == ',';
    return n;
  }();
  return QueryPage<SessionListRow>(db_, select, kListFrom, q, "s.seq DESC", [](SqlRow& r) {
    SessionListRow row;
    row.session = FromRow(r);
    row.user_email = r.TakeText(extra);
    row.full_name = r.TakeText(extra + 1);
    row.group_name = r.TakeText(extra + 2);
    row.main_kernel_id = r.TakeText(extra + 3);
    return row;
  });
}

StatusOr<std::vector<SessionRecord>> SessionStore::GetMany(std::vector<std::string> const& ids) {
  if (ids.empty()) return std::vector<SessionRecord>();
  std::vector<SqlValue> params(ids.begin(), ids.end());
  return Records(db_.Query(
      "SELECT " + ReadColumns() + " FROM sessions WHERE id IN (" + Placeholders(ids.size()) + ")",
      params));
}

StatusOr<std::vector<KernelRecord>> SessionStore::Kernels(
    std::vector<std::string> const& session_ids) {
  std::vector<KernelRecord> out;
  if (session_ids.empty()) return out;
  std::vector<SqlValue> params(session_ids.begin(), session_ids.end());
  auto rows = db_.Query(std::string("SELECT ") + kKernelColumns +
                            " FROM kernels k WHERE k.session_id IN (" +
                            Placeholders(session_ids.size()) + ") ORDER BY k.cluster_idx",
                        params);
  if (!rows.ok()) return std::move(rows).status();
  for (auto& r : *rows) out.push_back(KernelFromRow(r));
  return out;
}

StatusOr<Page<KernelRecord>> SessionStore::ListKernels(ListQuery const& q) {
  return QueryPage<KernelRecord>(db_, std::string("SELECT ") + kKernelColumns, " FROM kernels k", q,
                                 "k.cluster_idx, k.id", KernelFromRow);
}

Status SessionStore::Create(SessionRecord& s,
                            std::function<Status(server::SqlExecutor&)> const& admit) {
  std::string now = NowIso();
  s.created_at = now;
  s.status = protocol::SessionStatus::kPending;
  s.status_history = {{std::string(protocol::ToString(s.status)), now}};
  // The next queue position is read, then written: under the queue's scope.
  return db_.Transaction({kQueueScope}, [&](SqlExecutor& tx) -> Status {
    if (admit) {
      if (auto refused = admit(tx); !refused.ok()) return refused;
    }
    auto seq = tx.Query("SELECT COALESCE(MAX(seq), 0) + 1 FROM sessions");
    if (!seq.ok()) return seq.status();
    s.seq = (*seq)[0].Int(0);
    auto r = tx.Exec(
        std::string("INSERT INTO sessions (") + kColumns +
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {s.id,
         s.seq,
         s.name,
         s.access_key,
         s.user_id,
         s.domain_name,
         s.group_id,
         s.scaling_group,
         s.type,
         s.image,
         s.architecture,
         static_cast<std::int64_t>(s.cluster_size),
         std::string(protocol::ToString(s.status)),
         s.status_info,
         MapColumn(s.status_history),
         SlotsColumn(s.requested),
         SqlOptional(s.agent_id),
         MapColumn(s.environ),
         ListColumn(s.mounts),
         MapColumn(s.mount_map),
         MapColumn(s.resource_opts),
         SqlOptional(s.startup_command),
         SqlOptional(s.bootstrap_script),
         SqlOptional(s.tag),
         static_cast<std::int64_t>(s.priority),
         SqlOptional(s.starts_at),
         SqlOptional(s.batch_timeout),
         ListColumn(s.dependencies),
         SqlOptional(s.callback_url),
         s.result,
         SqlOptional(s.exit_code),
         s.created_at,
         SqlOptional(s.terminated_at),
         ListColumn(s.agent_list),
         MountsColumn(s.vfolder_mounts),
         protocol::EncodeApps(s.service_ports),
         s.network});
    if (!r.ok()) return r.status();
    auto k = tx.Exec(
        "INSERT INTO kernels (id, session_id, cluster_role, cluster_idx, status, created_at) "
        "VALUES (?, ?, 'main', 1, 'PENDING', ?)",
        {GenerateUuid(), s.id, now});
    if (!k.ok()) return k.status();
    return InsertEvent(tx, s, "session_enqueued", std::nullopt, std::nullopt, now);
  });
}

StatusOr<std::optional<SessionRecord>> SessionStore::Get(std::string const& id) {
  auto rows = db_.Query("SELECT " + ReadColumns() + " FROM sessions WHERE id = ?", {id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<SessionRecord>();
  return std::optional<SessionRecord>(FromRow((*rows)[0]));
}

StatusOr<std::vector<SessionRecord>> SessionStore::ActiveByName(std::string const& owner,
                                                                std::string const& name) {
  return Records(db_.Query(
      "SELECT " + ReadColumns() + " FROM sessions WHERE access_key = ? AND name = ? AND " + kActive,
      {owner, name}));
}

StatusOr<SessionRecord> SessionStore::Resolve(std::string const& ref, std::string const& owner,
                                              bool allow_dead, bool destructive) {
  // Built once: this runs on every session request.
  static std::string const select =
      "SELECT " + ReadColumns() + " FROM sessions WHERE access_key = ?";
  static std::string const by_id = select + " AND id = ?";
  static std::string const by_name_any = select + " AND name = ? ORDER BY seq DESC";
  static std::string const by_name_alive =
      select + " AND name = ? AND " + kActive + " ORDER BY seq DESC";
  static std::string const by_prefix = select +
                                       " AND (id LIKE ? ESCAPE '\\' OR name LIKE ? ESCAPE '\\')" +
                                       " AND " + kActive + " ORDER BY seq";
  static std::string const by_id_prefix =
      select + " AND id LIKE ? ESCAPE '\\' AND " + kActive + " ORDER BY seq";
  std::vector<SessionRecord> found;
  if (LooksLikeUuid(ref)) {
    // An exact id is unambiguous, so it also finds a session that has ended (our extension:
    // clients can read a finished job's result and exit code).
    auto rows = Records(db_.Query(by_id, {owner, ref}));
    if (!rows.ok()) return std::move(rows).status();
    found = *std::move(rows);
  }
  if (found.empty()) {
    // Newest first, so that with allow_dead the latest session of a reused name wins.
    auto rows = Records(db_.Query(allow_dead ? by_name_any : by_name_alive, {owner, ref}));
    if (!rows.ok()) return std::move(rows).status();
    found = *std::move(rows);
    if (found.size() > 1 && allow_dead) found.resize(1);
  }
  if (found.empty() && !ref.empty()) {
    auto pattern = EscapeLike(ref) + "%";
    auto rows = destructive ? Records(db_.Query(by_id_prefix, {owner, pattern}))
                            : Records(db_.Query(by_prefix, {owner, pattern, pattern}));
    if (!rows.ok()) return std::move(rows).status();
    found = *std::move(rows);
    if (destructive && ref.size() < kMinDestructivePrefix) found.clear();
  }
  if (found.empty()) {
    return MakeProblemStatus(ProblemType::kObjectNotFound,
                             destructive
                                 ? "No such session (this takes a full name, or an id or "
                                   "its first " +
                                       std::to_string(kMinDestructivePrefix) + "+ characters)."
                                 : std::string("No such session."));
  }
  if (found.size() > 1) {
    json matches = json::array();
    for (auto const& s : found) {
      matches.push_back({{"id", s.id},
                         {"name", s.name},
                         {"status", std::string(protocol::ToString(s.status))},
                         {"created_at", s.created_at}});
    }
    return MakeProblemStatus(ProblemType::kTooManySessionsMatched,
                             "\"" + ref + "\" matches " + std::to_string(found.size()) +
                                 " sessions; use more of the id or name",
                             json{{"matches", matches}}.dump());
  }
  return std::move(found[0]);
}

StatusOr<bool> TransitionIn(SqlExecutor& tx, std::string const& id, protocol::SessionStatus from,
                            protocol::SessionStatus to, TransitionDetails const& details) {
  if (!protocol::CanTransition(from, to)) {
    return Status(StatusCode::kInternal, "illegal session transition " +
                                             std::string(protocol::ToString(from)) + " → " +
                                             std::string(protocol::ToString(to)));
  }
  auto rows = tx.Query("SELECT " + ReadColumns() + " FROM sessions WHERE id = ?", {id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return false;
  auto s = FromRow((*rows)[0]);
  if (s.status != from) return false;
  std::string now = NowIso();
  auto history = s.status_history;
  history[std::string(protocol::ToString(to))] = now;
  bool terminal = protocol::IsTerminal(to);
  std::string to_text(protocol::ToString(to));
  auto r = tx.Exec(
      "UPDATE sessions SET status = ?, status_info = ?, status_history = ?, "
      "agent_id = COALESCE(?, agent_id), result = COALESCE(?, result), "
      "exit_code = COALESCE(?, exit_code), terminated_at = COALESCE(?, terminated_at) "
      "WHERE id = ? AND status = ?",
      {to_text, details.status_info, MapColumn(history), SqlOptional(details.agent_id),
       SqlOptional(details.result), SqlOptional(details.exit_code),
       terminal ? SqlValue(now) : SqlValue(nullptr), id, std::string(protocol::ToString(from))});
  if (!r.ok()) return std::move(r).status();
  if (*r == 0) return false;
  auto k = tx.Exec(
      "UPDATE kernels SET status = ?, status_info = ?, agent_id = COALESCE(?, agent_id), "
      "terminated_at = COALESCE(?, terminated_at) WHERE session_id = ?",
      {to_text, details.status_info, SqlOptional(details.agent_id),
       terminal ? SqlValue(now) : SqlValue(nullptr), id});
  if (!k.ok()) return std::move(k).status();
  if (!details.event.empty()) {
    auto e = InsertEvent(tx, s, details.event, details.reason, details.exit_code, now);
    if (!e.ok()) return e;
  }
  if (to == protocol::SessionStatus::kError) {
    // Filed with the transition: the owner (and their admins) find it in /logs/error.
    ErrorLogEntry entry;
    entry.created_at = now;
    entry.source = "kernel";
    entry.user_uuid = s.user_id;
    entry.message =
        "Session " + s.name + " (" + id + ") failed: " +
        (details.status_info.empty() ? std::string("no reason given") : details.status_info);
    nlohmann::json env = {{"session_id", id}, {"session_name", s.name}, {"image", s.image}};
    if (auto agent = details.agent_id ? details.agent_id : s.agent_id) env["agent_id"] = *agent;
    entry.context_env = env.dump();
    if (auto st = InsertErrorLog(tx, std::move(entry)); !st.ok()) return st;
  }
  return true;
}

StatusOr<bool> SessionStore::Transition(std::string const& id, protocol::SessionStatus from,
                                        protocol::SessionStatus to,
                                        TransitionDetails const& details) {
  bool changed = false;
  auto status = db_.Transaction([&](SqlExecutor& tx) -> Status {
    auto r = TransitionIn(tx, id, from, to, details);
    if (!r.ok()) return r.status();
    changed = *r;
    return Status();
  });
  if (!status.ok()) return status;
  return changed;
}

Status SessionStore::SetStatusInfo(std::string const& id, std::string const& status_info) {
  auto r = db_.Exec("UPDATE sessions SET status_info = ? WHERE id = ? AND status_info <> ?",
                    {status_info, id, status_info});
  return r.ok() ? Status() : r.status();
}

Status SessionStore::RecordEvent(SessionRecord const& session, std::string const& name,
                                 std::string const& reason) {
  return InsertEvent(db_, session, name, reason, std::nullopt, NowIso());
}

Status SessionStore::Rename(std::string const& id, std::string const& name) {
  auto r = db_.Exec("UPDATE sessions SET name = ? WHERE id = ?", {name, id});
  return r.ok() ? Status() : r.status();
}

StatusOr<std::string> SessionStore::MainKernelLogs(std::string const& session_id) {
  auto rows = db_.Query("SELECT logs FROM kernels WHERE session_id = ? AND cluster_role = 'main'",
                        {session_id});
  if (!rows.ok()) return std::move(rows).status();
  return rows->empty() ? std::string() : (*rows)[0].Text(0);
}

StatusOr<std::string> SessionStore::MainKernelId(std::string const& session_id) {
  auto rows = db_.Query("SELECT id FROM kernels WHERE session_id = ? AND cluster_role = 'main'",
                        {session_id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return MakeProblemStatus(ProblemType::kObjectNotFound, "No main kernel.");
  return (*rows)[0].Text(0);
}

StatusOr<std::optional<std::string>> SessionStore::SessionOfKernel(std::string const& kernel_id) {
  auto rows = db_.Query("SELECT session_id FROM kernels WHERE id = ?", {kernel_id});
  if (!rows.ok()) return std::move(rows).status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>((*rows)[0].Text(0));
}

Status SessionStore::SetServicePorts(std::string const& id,
                                     std::vector<protocol::ServicePort> const& ports) {
  return db_
      .Exec("UPDATE sessions SET service_ports = ? WHERE id = ?", {protocol::EncodeApps(ports), id})
      .status();
}

Status SessionStore::SetKernelSetup(std::string const& id, protocol::KernelSetup const& setup) {
  return db_
      .Exec("UPDATE sessions SET kernel_setup = ? WHERE id = ?", {KernelSetupColumn(setup), id})
      .status();
}

Status SessionStore::SetLiveStats(std::string const& agent_id,
                                  std::map<std::string, std::string> const& stats) {
  if (stats.empty()) return Status();
  return db_.Transaction([&](SqlExecutor& tx) -> Status {
    for (auto const& [id, stat] : stats) {
      auto r = tx.Exec(
          "UPDATE sessions SET live_stat = ? WHERE id = ? AND agent_id = ? AND "
          "terminated_at IS NULL",
          {stat, id, agent_id});
      if (!r.ok()) return r.status();
    }
    return Status();
  });
}

Status SessionStore::SetLastStat(std::string const& id, std::optional<std::string> const& stat) {
  return db_
      .Exec("UPDATE sessions SET last_stat = COALESCE(?, last_stat, live_stat) WHERE id = ?",
            {stat ? SqlValue(*stat) : SqlValue(nullptr), id})
      .status();
}

StatusOr<std::vector<UsageRecord>> SessionStore::Usage(UsageQuery const& q) {
  static std::size_t const extra = [] {
    std::size_t n = 1;
    for (char c : ReadColumns()) n += c == ',';
    return n;
  }();
  std::string sql = "SELECT " + ListColumns() +
                    ", COALESCE(u.email, ''), COALESCE(u.full_name, ''), COALESCE(g.name, ''), "
                    "COALESCE((SELECT k.id FROM kernels k WHERE k.session_id = s.id AND "
                    "k.cluster_role = 'main'), ''), COALESCE(s.last_stat, s.live_stat, '')" +
                    std::string(kListFrom) +
                    " WHERE s.created_at < ? AND (s.terminated_at IS NULL OR s.terminated_at >= ?)";
  std::vector<SqlValue> params{q.end, q.start};
  if (q.group_id) {
    sql += " AND s.group_id = ?";
    params.emplace_back(*q.group_id);
  }
  if (q.user_id) {
    sql += " AND s.user_id = ?";
    params.emplace_back(*q.user_id);
  }
  sql += " ORDER BY s.created_at, s.seq";
  auto rows = db_.Query(sql, params);
  if (!rows.ok()) return std::move(rows).status();
  std::vector<UsageRecord> out;
  out.reserve(rows->size());
  for (auto& r : *rows) {
    UsageRecord u;
    u.row.session = FromRow(r);
    u.row.user_email = r.TakeText(extra);
    u.row.full_name = r.TakeText(extra + 1);
    u.row.group_name = r.TakeText(extra + 2);
    u.row.main_kernel_id = r.TakeText(extra + 3);
    u.stat = r.TakeText(extra + 4);
    out.push_back(std::move(u));
  }
  return out;
}

Status SessionStore::CountQuery(std::string const& id) {
  return db_.Exec("UPDATE sessions SET num_queries = num_queries + 1 WHERE id = ?", {id}).status();
}

StatusOr<std::vector<std::string>> SessionStore::GroupsWithPending() {
  auto rows = db_.Query("SELECT DISTINCT scaling_group FROM sessions WHERE status = 'PENDING'");
  if (!rows.ok()) return std::move(rows).status();
  std::vector<std::string> out;
  for (auto const& r : *rows) out.push_back(r.Text(0));
  return out;
}

StatusOr<std::vector<SessionRecord>> SessionStore::RunningBatchesWithTimeout() {
  return Records(db_.Query("SELECT " + ReadColumns() +
                           " FROM sessions WHERE status = 'RUNNING' AND type = 'batch' AND "
                           "batch_timeout IS NOT NULL"));
}

StatusOr<std::vector<EventRecord>> SessionStore::EventsAfter(std::int64_t seq, int limit) {
  auto rows = db_.Query(
      "SELECT seq, name, session_id, session_name, kernel_id, access_key, domain_name, group_id, "
      "reason, exit_code FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
      {seq, static_cast<std::int64_t>(limit)});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<EventRecord> out;
  for (auto const& r : *rows) {
    EventRecord e;
    e.seq = r.Int(0);
    e.name = r.Text(1);
    e.session_id = r.Text(2);
    e.session_name = r.Text(3);
    e.kernel_id = r.OptText(4);
    e.access_key = r.Text(5);
    e.domain_name = r.Text(6);
    e.group_id = r.Text(7);
    e.reason = r.OptText(8);
    if (!r.IsNull(9)) e.exit_code = r.Int(9);
    out.push_back(std::move(e));
  }
  return out;
}

StatusOr<std::int64_t> SessionStore::LastEventSeq() {
  auto rows = db_.Query("SELECT COALESCE(MAX(seq), 0) FROM events");
  if (!rows.ok()) return std::move(rows).status();
  return (*rows)[0].Int(0);
}

namespace {

std::int64_t AgeMs(SessionRecord const& s) {
  auto start = protocol::ParseHttpDate(s.created_at);
  if (!start) return 0;
  std::optional<protocol::HttpDate> end;
  if (s.terminated_at) end = protocol::ParseHttpDate(*s.terminated_at);
  std::int64_t end_secs = end ? end->unix_seconds
                              : std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
  return std::max<std::int64_t>(0, end_secs - start->unix_seconds) * 1000;
}

}  // namespace

protocol::SessionInfo InfoOf(SessionRecord const& s) {
  protocol::SessionInfo info;
  info.id = s.id;
  info.name = s.name;
  info.status = {s.status, std::string(protocol::ToString(s.status))};
  info.status_info = s.status_info;
  info.type = s.type;
  info.image = s.image;
  info.result = s.result;
  info.exit_code = s.exit_code;
  info.agent_id = s.agent_id;
  info.requested = s.requested;
  if (s.agent_id) info.occupied = s.requested;
  info.created_at = s.created_at;
  info.terminated_at = s.terminated_at;
  info.domain_name = s.domain_name;
  info.group_id = s.group_id;
  info.user_id = s.user_id;
  info.architecture = s.architecture;
  info.tag = s.tag;
  info.scaling_group = s.scaling_group;
  info.environ = s.environ;
  info.resource_opts = s.resource_opts;
  info.status_history = s.status_history;
  info.age_ms = AgeMs(s);
  info.num_queries = s.num_queries;
  info.startup_command = s.startup_command;
  info.priority = s.priority;
  for (auto const& d : s.devices)
    info.attached_devices.push_back({"cuda", d.uuid, d.slot, d.amount});
  info.service_ports = s.service_ports;
  info.kernel_setup = s.kernel_setup;
  return info;
}

}  // namespace bai::manager
