// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/sessions.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"

#include "libbai/internal/json_codec.h"
#include "server-reference/manager/state/bootstrap.h"

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::SqlExecutor;
using server::SqlRow;
using server::SqlValue;

namespace {

constexpr char kColumns[] =
    "id, seq, name, access_key, user_id, domain_name, group_id, scaling_group, type, image, "
    "architecture, cluster_size, status, status_info, status_history, requested_slots, agent_id, "
    "environ, mounts, mount_map, resource_opts, startup_command, bootstrap_script, tag, priority, "
    "starts_at, batch_timeout, dependencies, callback_url, result, exit_code, created_at, "
    "terminated_at, agent_list";
// What reads select: the inserted columns plus counters the manager keeps (never inserted).
std::string const& ReadColumns() {
  static std::string const kRead = std::string(kColumns) + ", num_queries";
  return kRead;
}

// Taken by every insert into the queue (server::LockScopes): positions come from MAX(seq).
constexpr char kQueueScope[] = "session-queue";

constexpr char kActive[] = "status NOT IN ('TERMINATED', 'CANCELLED')";

SqlValue Opt(std::optional<std::string> const& v) { return v ? SqlValue(*v) : SqlValue(nullptr); }
SqlValue Opt(std::optional<std::int64_t> const& v) { return v ? SqlValue(*v) : SqlValue(nullptr); }

}  // namespace

std::vector<std::string> AgentListOf(std::string const& json_text) {
  std::vector<std::string> out;
  auto j = internal::ParseJson(json_text);
  if (!j || !j->is_array()) return out;
  for (auto const& item : *j) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

namespace {

// Moves the row's text out: each row becomes one record.
SessionRecord FromRow(SqlRow&& r) {
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
  s.status = r.TakeText(i++);
  s.status_info = r.TakeText(i++);
  s.status_history = r.TakeText(i++);
  // Kept as text: reads only pass it on, so parsing it on every GET would be wasted work.
  s.requested_json = r.TakeText(i++);
  s.agent_id = r.TakeOptText(i++);
  s.environ = r.TakeText(i++);
  s.mounts = r.TakeText(i++);
  s.mount_map = r.TakeText(i++);
  s.resource_opts = r.TakeText(i++);
  s.startup_command = r.TakeOptText(i++);
  s.bootstrap_script = r.TakeOptText(i++);
  s.tag = r.TakeOptText(i++);
  s.priority = static_cast<int>(r.Int(i++));
  s.starts_at = r.TakeOptText(i++);
  if (!r.IsNull(i)) s.batch_timeout = r.Int(i);
  ++i;
  s.dependencies = r.TakeText(i++);
  s.callback_url = r.TakeOptText(i++);
  s.result = r.TakeText(i++);
  if (!r.IsNull(i)) s.exit_code = r.Int(i);
  ++i;
  s.created_at = r.TakeText(i++);
  s.terminated_at = r.TakeOptText(i++);
  s.agent_list = AgentListOf(r.Text(i++));
  s.num_queries = r.Int(i++);
  return s;
}

Status InsertEvent(SqlExecutor& tx, SessionRecord const& s, std::string const& name,
                   std::optional<std::string> const& reason, std::optional<std::int64_t> exit_code,
                   std::string const& now) {
  auto r = tx.Exec(
      "INSERT INTO events (name, session_id, session_name, access_key, domain_name, group_id, "
      "reason, exit_code, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {name, s.id, s.name, s.access_key, s.domain_name, s.group_id, Opt(reason), Opt(exit_code),
       now});
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

}  // namespace

Status SessionStore::Create(SessionRecord& s) {
  std::string now = NowIso();
  s.created_at = now;
  s.status = "PENDING";
  s.status_history = json{{"PENDING", now}}.dump();
  s.requested_json = internal::SlotsToJson(s.requested).dump();
  // The next queue position is read, then written: under the queue's scope.
  return db_.Transaction({kQueueScope}, [&](SqlExecutor& tx) -> Status {
    auto seq = tx.Query("SELECT COALESCE(MAX(seq), 0) + 1 FROM sessions");
    if (!seq.ok()) return seq.status();
    s.seq = (*seq)[0].Int(0);
    auto r = tx.Exec(
        std::string("INSERT INTO sessions (") + kColumns +
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
         s.status,
         s.status_info,
         s.status_history,
         s.requested_json,
         Opt(s.agent_id),
         s.environ,
         s.mounts,
         s.mount_map,
         s.resource_opts,
         Opt(s.startup_command),
         Opt(s.bootstrap_script),
         Opt(s.tag),
         static_cast<std::int64_t>(s.priority),
         Opt(s.starts_at),
         Opt(s.batch_timeout),
         s.dependencies,
         Opt(s.callback_url),
         s.result,
         Opt(s.exit_code),
         s.created_at,
         Opt(s.terminated_at),
         nlohmann::json(s.agent_list).dump()});
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
  return std::optional<SessionRecord>(FromRow(std::move((*rows)[0])));
}

StatusOr<std::vector<SessionRecord>> SessionStore::ActiveByName(std::string const& owner,
                                                                std::string const& name) {
  auto rows = db_.Query(
      "SELECT " + ReadColumns() + " FROM sessions WHERE access_key = ? AND name = ? AND " + kActive,
      {owner, name});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<SessionRecord> out;
  for (auto& r : *rows) out.push_back(FromRow(std::move(r)));
  return out;
}

StatusOr<SessionRecord> SessionStore::Resolve(std::string const& ref, std::string const& owner,
                                              bool allow_dead) {
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
  auto pick = [](StatusOr<std::vector<SqlRow>> rows) -> StatusOr<std::vector<SessionRecord>> {
    if (!rows.ok()) return std::move(rows).status();
    std::vector<SessionRecord> out;
    out.reserve(rows->size());
    for (auto& r : *rows) out.push_back(FromRow(std::move(r)));
    return out;
  };
  std::vector<SessionRecord> found;
  if (LooksLikeUuid(ref)) {
    // An exact id is unambiguous, so it also finds a session that has ended (our extension:
    // clients can read a finished job's result and exit code).
    auto rows = pick(db_.Query(by_id, {owner, ref}));
    if (!rows.ok()) return std::move(rows).status();
    found = *std::move(rows);
  }
  if (found.empty()) {
    // Newest first, so that with allow_dead the latest session of a reused name wins.
    auto rows = pick(db_.Query(allow_dead ? by_name_any : by_name_alive, {owner, ref}));
    if (!rows.ok()) return std::move(rows).status();
    found = *std::move(rows);
    if (found.size() > 1 && allow_dead) found.resize(1);
  }
  if (found.empty() && !ref.empty()) {
    auto pattern = EscapeLike(ref) + "%";
    auto rows = pick(db_.Query(by_prefix, {owner, pattern, pattern}));
    if (!rows.ok()) return std::move(rows).status();
    found = *std::move(rows);
  }
  if (found.empty()) return MakeProblemStatus(ProblemType::kObjectNotFound, "No such session.");
  if (found.size() > 1) {
    json matches = json::array();
    for (auto const& s : found) {
      matches.push_back(
          {{"id", s.id}, {"name", s.name}, {"status", s.status}, {"created_at", s.created_at}});
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
  auto s = FromRow(std::move((*rows)[0]));
  if (s.status != protocol::ToString(from)) return false;
  std::string now = NowIso();
  auto history = internal::ParseJson(s.status_history).value_or(json::object());
  if (!history.is_object()) history = json::object();
  history[std::string(protocol::ToString(to))] = now;
  bool terminal = protocol::IsTerminal(to);
  std::string to_text(protocol::ToString(to));
  auto r = tx.Exec(
      "UPDATE sessions SET status = ?, status_info = ?, status_history = ?, "
      "agent_id = COALESCE(?, agent_id), result = COALESCE(?, result), "
      "exit_code = COALESCE(?, exit_code), terminated_at = COALESCE(?, terminated_at) "
      "WHERE id = ? AND status = ?",
      {to_text, details.status_info, history.dump(), Opt(details.agent_id), Opt(details.result),
       Opt(details.exit_code), terminal ? SqlValue(now) : SqlValue(nullptr), id,
       std::string(protocol::ToString(from))});
  if (!r.ok()) return std::move(r).status();
  if (*r == 0) return false;
  auto k = tx.Exec(
      "UPDATE kernels SET status = ?, status_info = ?, agent_id = COALESCE(?, agent_id), "
      "terminated_at = COALESCE(?, terminated_at) WHERE session_id = ?",
      {to_text, details.status_info, Opt(details.agent_id),
       terminal ? SqlValue(now) : SqlValue(nullptr), id});
  if (!k.ok()) return std::move(k).status();
  if (!details.event.empty()) {
    auto e = InsertEvent(tx, s, details.event, details.reason, details.exit_code, now);
    if (!e.ok()) return e;
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

// Which bytes JSON strings must escape: control characters, '"' and '\\'.
constexpr std::array<bool, 256> kNeedsEscape = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['"'] = true;
  t['\\'] = true;
  return t;
}();

void AppendString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the pending stretch that needs no escaping
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (!kNeedsEscape[u]) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (u) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
        out.append(esc, sizeof esc);
      }
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

// Writes one "key": value pair; values are strings, raw JSON text, or null.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_.push_back('{'); }
  void Str(std::string_view key, std::string_view value) {
    Key(key);
    AppendString(out_, value);
  }
  void OptStr(std::string_view key, std::optional<std::string> const& value) {
    if (value) {
      Str(key, *value);
    } else {
      Raw(key, "null");
    }
  }
  // `json_text` must be valid JSON written by this manager.
  void Raw(std::string_view key, std::string_view json_text) {
    Key(key);
    out_ += json_text;
  }
  void Int(std::string_view key, std::int64_t value) { Raw(key, std::to_string(value)); }
  void Close() { out_.push_back('}'); }

 private:
  // Keys are our own literals, which never need escaping.
  void Key(std::string_view key) {
    out_ += first_ ? "\"" : ",\"";
    first_ = false;
    out_ += key;
    out_ += "\":";
  }
  std::string& out_;
  bool first_ = true;
};

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

std::string SessionInfoJson(SessionRecord const& s) {
  // Written directly, not through a JSON tree: clients poll this while they wait, and the
  // stored JSON columns are already serialised.
  std::string const& slots = s.requested_json;
  std::string out;
  out.reserve(1536);
  ObjectWriter w(out);
  w.Str("sessionId", s.id);
  w.Str("sessionName", s.name);
  w.Str("domainName", s.domain_name);
  w.Str("groupId", s.group_id);
  w.Str("userId", s.user_id);
  w.Str("lang", s.image);
  w.Str("image", s.image);
  w.Str("architecture", s.architecture);
  w.Str("registry", "");
  w.OptStr("tag", s.tag);
  w.Str("type", s.type);
  w.Str("scalingGroup", s.scaling_group);
  w.OptStr("agentId", s.agent_id);
  w.Raw("containerId", "null");
  // JSON objects, not Python str() renderings (a deliberate improvement over 24.09).
  w.Raw("occupiedSlots", s.agent_id ? slots : "{}");
  w.Raw("occupyingSlots", s.agent_id ? slots : "{}");
  w.Raw("requestedSlots", slots);
  w.Raw("occupiedShares", "{}");
  w.Raw("environ", s.environ);
  w.Raw("resourceOpts", s.resource_opts);
  w.Str("status", s.status);
  w.Str("statusInfo", s.status_info);
  w.Raw("statusData", "{}");
  w.Raw("statusHistory", s.status_history);
  w.Str("result", s.result);
  if (s.exit_code) {
    w.Int("exitCode", *s.exit_code);
  } else {
    w.Raw("exitCode", "null");
  }
  w.Int("age", AgeMs(s));
  w.Str("creationTime", s.created_at);
  w.OptStr("terminationTime", s.terminated_at);
  w.Int("numQueriesExecuted", s.num_queries);
  w.Raw("lastStat", "{}");
  w.Raw("idleChecks", "{}");
  w.OptStr("startupCommand", s.startup_command);
  w.Int("priority", s.priority);
  w.Close();
  return out;
}

}  // namespace bai::manager
