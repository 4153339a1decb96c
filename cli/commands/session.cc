// SPDX-License-Identifier: Apache-2.0
// The `session` noun: registration of every verb and its root aliases, and the verbs that read
// or change one session (info, ls, logs, events, history, rm, rename, restart, commit). The
// verbs that start or follow work are in session_jobs.cc.
#include "cli/commands/session.h"

#include "bai/session_client.h"

#include "cli/commands/session_util.h"
#include "cli/commands/vfolder.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

namespace bai::cli {

using nlohmann::json;

namespace {

// A minilang string literal.
std::string Quoted(std::string const& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Where the last `n` lines of `text` begin.
std::size_t TailStart(std::string const& text, long long n) {
  if (n <= 0) return text.size();
  std::size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  while (n > 0 && pos > 0) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return 0;
    --n;
  }
  return n > 0 ? 0 : pos + 1;
}

// The last `n` lines of an output, each chunk keeping its stream.
std::vector<std::pair<std::string, std::string>> TailChunks(
    std::vector<std::pair<std::string, std::string>> const& chunks, long long n) {
  std::string text;
  for (auto const& [stream, data] : chunks) text += data;
  std::size_t start = TailStart(text, n);
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  for (auto const& [stream, data] : chunks) {
    std::size_t end = at + data.size();
    if (end > start) out.emplace_back(stream, data.substr(start > at ? start - at : 0));
    at = end;
  }
  return out;
}

}  // namespace

int RunList(ListOptions const& options, Context& ctx) {
  SessionListOptions list;
  list.statuses = options.statuses;
  if (list.statuses.empty() && !options.all) {
    list.statuses = {"PENDING", "SCHEDULED",  "PULLING",          "PREPARING",
                     "RUNNING", "RESTARTING", "RUNNING_DEGRADED", "TERMINATING"};
  }
  if (!options.name.empty()) list.filter = "name ilike " + Quoted("%" + options.name + "%");
  if (!options.filter.empty()) {
    list.filter =
        list.filter.empty() ? options.filter : "(" + list.filter + ") & (" + options.filter + ")";
  }
  list.order = options.order;
  list.page_size = 1000;  // the server's largest page: one request for most lists
  if (options.limit) list.limit = *options.limit;
  if (!options.access_key.empty()) list.access_key = options.access_key;
  list.with_usage = options.usage;
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto pages = SessionClient(*client).List(list);
  std::vector<SessionListItem> items;
  while (!pages.done()) {
    auto page = pages.Next();
    if (!page.ok()) return ReportError(ctx, page.status());
    for (auto& i : *page) items.push_back(std::move(i));
  }
  if (ctx.json()) {
    json out = json::array();
    for (auto const& s : items) {
      json item = ItemJson(s);
      if (options.usage) item["use"] = UseJson(s.use);
      out.push_back(std::move(item));
    }
    ctx.out() << json{{"items", std::move(out)},
                      {"total_count", pages.total_count()},
                      {"exit_code", 0}}
                     .dump()
              << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows{
      {"NAME", "ID", "STATUS", "TYPE", "IMAGE", "CREATED", "RESOURCES", "INFO"}};
  if (options.usage) rows[0].insert(rows[0].begin() + 7, "USE");
  for (auto const& s : items) {
    std::string type = s.type;
    std::transform(type.begin(), type.end(), type.begin(), ::tolower);
    rows.push_back({s.name, s.id.substr(0, 8), s.status.text, type, s.image,
                    s.created_at.substr(0, 19), HumanSlots(s.requested.value_or(s.occupied)),
                    s.exit_code ? "exit " + std::to_string(*s.exit_code) : s.status_info});
    if (options.usage) rows.back().insert(rows.back().begin() + 7, UseText(s.use));
  }
  if (items.empty()) {
    if (ctx.stdout_tty()) ctx.err() << "no sessions\n";
    return 0;
  }
  PrintTable(ctx, rows);
  if (static_cast<std::int64_t>(items.size()) < pages.total_count()) {
    ctx.err() << items.size() << " of " << pages.total_count() << " sessions shown\n";
  }
  return 0;
}

int RunLogs(LogsOptions const& options, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient sessions(*client);
  auto logs = sessions.Output(options.session);
  if (!logs.ok()) return ReportError(ctx, logs.status());
  auto chunks = options.tail ? TailChunks(logs->chunks, *options.tail) : logs->chunks;
  // The job's stdout on stdout; its stderr, and bai's notices (where the middle of a long
  // output was dropped), on stderr.
  auto print = [&ctx](std::string const& stream, std::string const& text) {
    (stream == "stdout" ? ctx.out() : ctx.err()) << text << std::flush;
  };
  if (!options.follow) {
    if (ctx.json()) {
      std::string merged, out_text, err_text;
      json notices = json::array();
      for (auto const& [stream, text] : chunks) {
        merged += text;
        if (stream == "stdout") out_text += text;
        if (stream == "stderr") err_text += text;
        if (stream == "notice") notices.push_back(text);
      }
      json j = {{"session", options.session},
                {"logs", merged},
                {"stdout", out_text},
                {"stderr", err_text},
                {"notices", notices},
                {"truncated", logs->truncated},
                {"exit_code", 0}};
      ctx.out() << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
      for (auto const& [stream, text] : chunks) print(stream, text);
    }
    return 0;
  }
  // Follow: once it runs, its output as it is produced, until it ends.
  CatchInterrupts();
  for (auto const& [stream, text] : chunks) print(stream, text);
  auto info = sessions.Info(options.session);
  if (!info.ok()) return ReportError(ctx, info.status());
  if (info->status.status == protocol::SessionStatus::kPending ||
      info->status.status == protocol::SessionStatus::kScheduled) {
    WaitOptions wait;
    wait.until_running = true;
    wait.cancelled = [] { return Interrupted(); };
    auto running = sessions.WaitForEnd(info->id, wait);
    if (!running.ok()) {
      return Interrupted() ? static_cast<int>(kExitInterrupted)
                           : ReportError(ctx, running.status());
    }
  }
  auto followed = FollowToEnd(sessions, info->id, print, logs->next_offset);
  if (followed.interrupted) return kExitInterrupted;
  if (!followed.error.ok()) return ReportError(ctx, followed.error);
  return 0;
}

namespace {

// sessionId → session_id: the server's event fields (camelCase, as 24.09 sends them) in the
// CLI's spelling.
std::string SnakeCase(std::string const& key) {
  std::string out;
  for (char c : key) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty() && out.back() != '_') out.push_back('_');
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// One `session events` line: output_schema::kEvent first, then the rest of what the server
// said, snake_case.
json EventLine(SessionEvent const& e) {
  json line = {{"event", e.name},
               {"id", e.session_id},
               {"name", e.session_name},
               {"reason", e.reason ? json(*e.reason) : json(nullptr)},
               {"exit_code", e.exit_code ? json(*e.exit_code) : json(nullptr)}};
  json raw = json::parse(e.raw_json, nullptr, false);
  if (raw.is_object()) {
    for (auto const& [key, value] : raw.items()) {
      std::string k = SnakeCase(key);
      if (k == "session_id" || k == "session_name" || line.contains(k)) continue;
      line[k] = value;
    }
  }
  return line;
}

}  // namespace

int RunEvents(std::string const& session, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient sessions(*client);
  SessionEventFilter filter;
  if (!session.empty()) {
    auto info = sessions.Info(session);
    if (!info.ok()) return ReportError(ctx, info.status());
    filter.session_id = info->id;
  }
  CatchInterrupts();
  bool lines = ctx.json() || !ctx.stdout_tty();
  auto st = sessions.WatchEvents(
      filter,
      [&](SessionEvent const& e) {
        if (lines) {
          ctx.out() << EventLine(e).dump(-1, ' ', false, json::error_handler_t::replace) << "\n"
                    << std::flush;
        } else {
          ctx.out() << e.name << "  " << e.session_name
                    << (e.reason ? "  " + *e.reason : std::string())
                    << (e.exit_code ? "  exit " + std::to_string(*e.exit_code) : std::string())
                    << "\n"
                    << std::flush;
        }
        return !Interrupted();
      },
      {}, [] { return !Interrupted(); });
  if (Interrupted()) return kExitInterrupted;
  if (!st.ok()) return ReportError(ctx, st);
  return 0;
}

int RunRm(std::vector<std::string> const& sessions, bool forced, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient api(*client);
  int code = 0;
  json results = json::array();
  for (auto const& s : sessions) {
    auto status = api.Destroy(s, forced);
    if (status.code() == StatusCode::kNotFound) {
      // Already ended: the goal of `rm` holds, so cleanup traps (`trap 'bai rm x' EXIT`) pass.
      // Only an exact name or id counts; an unknown session is still "not found" (5).
      auto info = api.Info(s);
      if (info.ok() && protocol::IsTerminal(info->status.status) &&
          (info->name == s || info->id == s)) {
        if (!ctx.json()) {
          ctx.err() << "bai: " << s << " has already ended (" << info->status.text << ")\n";
        }
        results.push_back({{"session", s}, {"ok", true}, {"already_ended", true}});
        continue;
      }
    }
    if (!status.ok()) {
      int c = ExitCodeFor(status);
      if (ctx.json()) {
        results.push_back({{"session", s}, {"ok", false}, {"error", status.message()}});
      } else {
        ReportError(ctx, status);
      }
      if (code == 0) code = c;
      continue;
    }
    results.push_back({{"session", s}, {"ok", true}});
    if (!ctx.json() && ctx.stdout_tty()) ctx.out() << "destroyed " << s << "\n";
  }
  if (ctx.json()) ctx.out() << json{{"sessions", results}, {"exit_code", code}}.dump() << "\n";
  return code;
}

// What a running session uses now: its list row with its kernels' live_stat (nothing when the
// manager has none, or is one whose list cannot say).
std::optional<protocol::SessionUse> CurrentUse(Client const& client, SessionInfo const& info) {
  if (info.status.text != "RUNNING") return std::nullopt;
  SessionListOptions list;
  list.filter = "id == " + Quoted(info.id);
  list.limit = 1;
  list.with_usage = true;
  SessionPages pages(client, list);
  auto page = pages.Next();
  if (!page.ok() || page->empty()) return std::nullopt;
  return page->front().use;
}

int RunSessionInfo(std::string const& session, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto info = SessionClient(*client).Info(session);
  if (!info.ok()) return ReportError(ctx, info.status());
  auto use = CurrentUse(*client, *info);
  if (ctx.json()) {
    json j = InfoJson(*info);
    j["use"] = UseJson(use);
    j["exit_code"] = 0;
    ctx.out() << j.dump() << "\n";
    return 0;
  }
  auto row = [&](char const* k, std::string const& v) {
    ctx.out() << k << std::string(14 - std::string(k).size(), ' ') << (v.empty() ? "-" : v) << "\n";
  };
  row("id", info->id);
  row("name", info->name);
  row("status", info->status.text);
  row("status info", info->status_info);
  row("type", info->type);
  row("image", info->image);
  row("resources", HumanSlots(info->requested));
  if (info->status.text == "RUNNING") row("use", UseText(use));
  row("agent", info->agent_id.value_or(""));
  std::string devices;
  for (auto const& d : info->attached_devices) {
    devices += (devices.empty() ? "" : ", ") + d.device_id + " " + d.slot + "=" +
               HumanSlotAmount(d.slot, d.amount);
  }
  row("devices", devices);
  if (info->kernel_setup) {
    auto const& k = *info->kernel_setup;
    row("network", k.network == "bridge" ? "bridge (an address of its own, NAT to the outside)"
                                         : k.network + " (loopback only)");
    row("scratch", HumanBytes(static_cast<double>(k.home_bytes)) + " /home/work, " +
                       HumanBytes(static_cast<double>(k.tmp_bytes)) + " /tmp, " +
                       (k.scratch == "disk" ? "on the agent's disk (a quota)"
                                            : "in memory (counts against its memory limit)"));
  }
  row("result", info->result);
  row("exit code", info->exit_code ? std::to_string(*info->exit_code) : "");
  row("created", info->created_at);
  row("terminated", info->terminated_at.value_or(""));
  return 0;
}

int RunHistory(std::string const& session, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto history = SessionClient(*client).StatusHistory(session);
  if (!history.ok()) return ReportError(ctx, history.status());
  std::vector<std::pair<std::string, std::string>> rows;
  for (auto const& [status, when] : *history) rows.emplace_back(when, status);
  std::sort(rows.begin(), rows.end());
  if (ctx.json()) {
    json out = json::array();
    for (auto const& [when, status] : rows) out.push_back({{"status", status}, {"at", when}});
    ctx.out() << json{{"history", out}, {"exit_code", 0}}.dump() << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> table{{"STATUS", "AT"}};
  for (auto const& [when, status] : rows) table.push_back({status, when});
  PrintTable(ctx, table);
  return 0;
}

int RunRename(std::string const& session, std::string const& new_name, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  if (auto st = SessionClient(*client).Rename(session, new_name); !st.ok()) {
    return ReportError(ctx, st);
  }
  if (ctx.json()) ctx.out() << json{{"session", new_name}, {"exit_code", 0}}.dump() << "\n";
  return 0;
}

int RunRestart(std::string const& session, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  if (auto st = SessionClient(*client).Restart(session); !st.ok()) return ReportError(ctx, st);
  // A new container: what the kernel kept in /home/work (a tmpfs) is gone; say so every time.
  ctx.err() << "session " << session
            << " restarted: /home/work starts empty again; files in mounted folders are kept\n";
  if (ctx.json()) ctx.out() << json{{"session", session}, {"exit_code", 0}}.dump() << "\n";
  return 0;
}

int RunSessionCommit(CommitOptions const& options, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient sessions(*client);
  auto started = sessions.Commit(options.session, options.filename, options.folder);
  if (!started.ok()) return ReportError(ctx, started.status());
  if (!options.wait) {
    if (ctx.json()) {
      ctx.out() << json{{"task_id", started->task_id},
                        {"kernel", started->kernel_id},
                        {"path", started->path},
                        {"exit_code", 0}}
                       .dump()
                << "\n";
    } else {
      ctx.out() << "task  " << started->task_id << "\npath  " << started->path << "\n";
    }
    return 0;
  }
  auto last = sessions.FollowTask(started->task_id, [&](TaskProgress const& p) {
    if (!p.Finished() && !p.message.empty()) ctx.err() << p.message << "\n";
  });
  if (!last.ok()) return ReportError(ctx, last.status());
  int code = last->Succeeded() ? kExitOk : kExitError;
  if (ctx.json()) {
    ctx.out() << json{{"task_id", started->task_id}, {"kernel", started->kernel_id},
                      {"path", started->path},       {"status", last->event},
                      {"message", last->message},    {"exit_code", code}}
                     .dump()
              << "\n";
  } else if (last->Succeeded()) {
    ctx.out() << started->path << "\n";
  }
  if (last->Succeeded()) return 0;
  ctx.err() << "error: the commit "
            << (last->event == "bgtask_cancelled" ? "was cancelled" : "failed")
            << (last->message.empty() ? "" : ": " + last->message) << "\n";
  return code;
}

// ---- registration ---------------------------------------------------------------------------

namespace {

constexpr char kSessionRef[] = "Session id, name or unique prefix";

void AddSpecFlags(CLI::App* cmd, SpecOptions& o) {
  cmd->add_option("IMAGE", o.image, "Image name or alias")->required();
  cmd->add_option("--name", o.name, "Session name");
  // One value per flag, so `-r cpu=2 IMAGE` does not swallow the image.
  cmd->add_option("-r,--resource", o.resources, "Resource: SLOT=AMOUNT (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("-e,--env", o.env, "Environment variable KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("-m,--mount", o.mounts, "Mount a vfolder: NAME[:PATH][:ro] (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--group", o.group, "Project (default: the configured group)");
  cmd->add_option("--scaling-group", o.scaling_group, "Resource group");
  cmd->add_option("--tag", o.tag, "A free-form tag");
  cmd->add_option("--bootstrap-script", o.bootstrap_file,
                  "A script the kernel runs in /home/work before it starts (its output goes to "
                  "bai logs; default: your stored one, see bai api GET "
                  "/user-config/bootstrap-script)");
  cmd->add_option("--priority", o.priority, "Queue priority 0–100 (default 10)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--preopen", o.preopen,
                  "A container port to reach as an app with bai app (repeatable; 1025–65534)")
      ->check(CLI::Range(1025, 65534));
  cmd->add_option("--network", o.network,
                  "The kernel's network: bridge (an address of its own, NAT to the outside) or "
                  "none (loopback only); default: the agent's (bridge unless configured)")
      ->check(CLI::IsMember({"bridge", "none"}));
  cmd->add_option("--depends", o.depends, "Start after this session succeeded (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--starts-at", o.starts_at, "Start at a time (RFC 3339) or after a delay (30m)");
  cmd->add_option("--timeout", o.timeout, "Stop the job after this long (30s, 5m, 1h)");
  cmd->add_option("--max-wait", o.max_wait, "Give up if it has not started after this long");
}

void AddRun(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& o = set.Keep<RunOptions>();
  auto* run = parent.add_subcommand("run", description);
  if (set.names_only()) return;
  AddSpecFlags(run, o);
  run->add_option("COMMAND", o.command,
                  "The job's command, after -- (none: the image's own Entrypoint and Cmd)");
  run->add_option("-c,--code", o.code,
                  "Run CODE in the image's interpreter instead (query mode; '-' reads stdin)");
  run->add_flag("--detach", o.detach, "Queue the job, print its session id, return");
  set.OnRun(run, [&o, &ctx = set.ctx()] { return RunRun(o, ctx); });
}

void AddExec(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& o = set.Keep<ExecOptions>();
  auto* exec = parent.add_subcommand("exec", description);
  if (set.names_only()) return;
  exec->add_option("SESSION", o.session, kSessionRef)->required();
  exec->add_option("COMMAND", o.command, "The command, after --");
  exec->add_flag("-i,--interactive", o.interactive,
                 "With -t: your keys go to the command (-it, as docker exec); without -t stdin "
                 "reaches the command anyway");
  exec->add_flag("-t,--tty", o.tty,
                 "Run it on a terminal in the container, as bai shell does (needs one here: "
                 "window size, Ctrl-C to the command, ~. detaches, its exit code)");
  exec->add_flag("-n,--no-stdin", o.no_stdin,
                 "Do not pass stdin to the command (as ssh -n; e.g. in a while-read loop)");
  set.OnRun(exec, [&o, &ctx = set.ctx()] { return RunExec(o, ctx); });
}

void AddShell(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& o = set.Keep<ShellOptions>();
  auto* shell = parent.add_subcommand("shell", description);
  if (set.names_only()) return;
  shell->add_option("SESSION", o.session, kSessionRef)->required();
  shell->footer(
      "A login shell in the session's container as its work user, on a real terminal: the "
      "window size follows yours, Ctrl-C goes to the remote program, `~.` at the start of a "
      "line detaches, and bai exits with the shell's exit code. Needs a terminal: for scripts, "
      "use bai exec SESSION -- CMD.");
  set.OnRun(shell, [&o, &ctx = set.ctx()] { return RunShell(o, ctx); });
}

void AddApp(CommandSet& set, CLI::App& parent) {
  auto& o = set.Keep<AppOptions>();
  auto* app = parent.add_subcommand(
      "app", "Reach an app of a running session (Jupyter, an HTTP service…) at a local port");
  if (set.names_only()) return;
  app->add_option("SESSION", o.session, kSessionRef);
  app->add_option("APP", o.app, "The app's name (bai app ls SESSION)");
  app->add_option("-b,--bind", o.bind, "Local [HOST:]PORT to listen on (default 127.0.0.1:8080)");
  app->add_option("--arg", o.arguments, "An argument for the app: \"--option value\" (repeatable)");
  app->add_option("-e,--env", o.envs, "An environment variable for the app: KEY=VALUE");
  app->footer(
      "Each connection to the local port is carried to the app inside the session over a "
      "WebSocket of its own through the manager (nothing of the kernel listens anywhere else). "
      "The app is started first when it is not running. Ctrl-C stops the tunnel.");
  auto& ls_session = set.Keep<AppOptions>();
  auto* ls = app->add_subcommand("ls", "List a session's apps");
  ls->add_option("SESSION", ls_session.session, kSessionRef)->required();
  set.OnRun(ls, [&ls_session, &ctx = set.ctx()] { return RunAppList(ls_session, ctx); });
  auto& stop_app = set.Keep<AppOptions>();
  auto* stop = app->add_subcommand("stop", "End an app's service (the next tunnel starts it)");
  stop->add_option("SESSION", stop_app.session, kSessionRef)->required();
  stop->add_option("APP", stop_app.app, "The app's name (bai app ls)")->required();
  set.OnRun(stop, [&stop_app, &ctx = set.ctx()] { return RunAppStop(stop_app, ctx); });
  set.OnRunDefault(app, [&o, &ctx = set.ctx()] {
    if (o.session.empty() || o.app.empty()) {
      ctx.err() << "error: bai app SESSION APP [-b [HOST:]PORT], or bai app ls SESSION\n";
      return static_cast<int>(kExitUsage);
    }
    return RunApp(o, ctx);
  });
}

void AddList(CommandSet& set, CLI::App& parent, std::string const& name,
             std::string const& description) {
  auto& o = set.Keep<ListOptions>();
  auto* ls = parent.add_subcommand(name, description);
  if (set.names_only()) return;
  ls->add_option("--status", o.statuses, "Only these statuses (repeatable; RUNNING,PENDING)")
      ->delimiter(',')
      ->allow_extra_args(false);
  ls->add_flag("-a,--all", o.all, "Ended sessions too");
  ls->add_option("--name", o.name, "Names containing this text");
  ls->add_option("--filter", o.filter,
                 "Backend.AI filter: 'image like \"python%\" & priority > 5'");
  ls->add_option("--order", o.order, "Order: -created_at, +name, … (default: newest first)");
  ls->add_option("--limit", o.limit, "At most this many")->check(CLI::PositiveNumber);
  ls->add_option("--access-key", o.access_key, "Admins: another keypair's sessions");
  ls->add_flag("-u,--usage", o.usage,
               "What each uses now (CPU over the last interval, memory of its limit, GPU "
               "memory) beside what it asked for");
  set.OnRun(ls, [&o, &ctx = set.ctx()] { return RunList(o, ctx); });
}

void AddLogs(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& o = set.Keep<LogsOptions>();
  auto* logs = parent.add_subcommand("logs", description);
  if (set.names_only()) return;
  logs->add_option("SESSION", o.session, kSessionRef)->required();
  logs->add_flag("-f,--follow", o.follow, "Keep printing new output until the session ends");
  logs->add_option("--tail", o.tail, "Only the last N lines")->check(CLI::NonNegativeNumber);
  set.OnRun(logs, [&o, &ctx = set.ctx()] { return RunLogs(o, ctx); });
}

void AddRm(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& sessions = set.Keep<std::vector<std::string>>();
  auto& forced = set.Keep<bool>();
  auto* rm = parent.add_subcommand("rm", description);
  if (set.names_only()) return;
  rm->add_option("SESSION", sessions, "Session ids, names or unique prefixes")->required();
  rm->add_flag("--force", forced, "Destroy even if the kernel does not answer");
  set.OnRun(rm, [&sessions, &forced, &ctx = set.ctx()] { return RunRm(sessions, forced, ctx); });
}

void AddWait(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& o = set.Keep<WaitCommandOptions>();
  auto* wait = parent.add_subcommand("wait", description);
  if (set.names_only()) return;
  wait->add_option("SESSION", o.sessions, "Session ids, names or unique prefixes")->required();
  wait->add_option("--for", o.until, "running or done (default: done)")
      ->check(CLI::IsMember({"running", "done"}));
  wait->add_option("--timeout", o.timeout, "Give up after this long (30s, 5m, 1h)");
  set.OnRun(wait, [&o, &ctx = set.ctx()] { return RunWait(o, ctx); });
}

// A verb taking one session.
void AddOneSession(CommandSet& set, CLI::App& parent, char const* name, char const* description,
                   int (*run)(std::string const&, Context&)) {
  auto& session = set.Keep<std::string>();
  auto* cmd = parent.add_subcommand(name, description);
  cmd->add_option("SESSION", session, kSessionRef)->required();
  set.OnRun(cmd, [&session, run, &ctx = set.ctx()] { return run(session, ctx); });
}

void AddCreate(CommandSet& set, CLI::App& parent) {
  auto& o = set.Keep<CreateOptions>();
  auto* create = parent.add_subcommand(
      "create", "Start a session and print its id (waits until it runs unless --no-wait)");
  AddSpecFlags(create, o);
  create->add_option("--type", o.type, "interactive or batch (default: interactive)")
      ->check(CLI::IsMember({"interactive", "batch"}));
  create->add_option("--startup-command", o.startup_command, "The batch job's command line");
  create->add_flag("--no-wait", o.no_wait, "Return once it is queued");
  create->add_flag("--dry-run", o.dry_run, "Say whether it would fit now; create nothing");
  create->add_flag("--reuse", o.reuse,
                   "If a session of this --name runs the same image, take it as it is (its own "
                   "resources and environment); without it an existing name is refused (6)");
  set.OnRun(create, [&o, &ctx = set.ctx()] { return RunCreate(o, ctx); });
}

void AddRename(CommandSet& set, CLI::App& parent) {
  auto& names = set.Keep<std::pair<std::string, std::string>>();
  auto* rename = parent.add_subcommand("rename", "Rename a running session");
  rename->add_option("SESSION", names.first, kSessionRef)->required();
  rename->add_option("NEW_NAME", names.second, "The new name")->required();
  set.OnRun(rename,
            [&names, &ctx = set.ctx()] { return RunRename(names.first, names.second, ctx); });
}

void AddCommit(CommandSet& set, CLI::App& parent) {
  auto& o = set.Keep<CommitOptions>();
  auto* commit = parent.add_subcommand(
      "commit",
      "Archive a running session's files (/home/work, /tmp) into a tar: in a folder with "
      "--folder (fetch it with `bai cp FOLDER:FILE .`, delete it with `bai vfolder rm-files`), "
      "else on its agent");
  commit->add_option("SESSION", o.session, kSessionRef)->required();
  commit->add_option("--filename", o.filename,
                     "Archive file name (default: SESSION-TIME-TASK.tar)");
  commit->add_option("--folder", o.folder,
                     "A virtual folder of the session's owner to write it into (writable)");
  commit->add_flag("--wait", o.wait, "Wait until it is written; exit 1 if it failed");
  set.OnRun(commit, [&o, &ctx = set.ctx()] { return RunSessionCommit(o, ctx); });
}

void AddEvents(CommandSet& set, CLI::App& parent) {
  auto& session = set.Keep<std::string>();
  auto* events = parent.add_subcommand(
      "events", "Follow session events (all of yours, or one session's); NDJSON when piped");
  events->add_option("SESSION", session, kSessionRef);
  set.OnRun(events, [&session, &ctx = set.ctx()] { return RunEvents(session, ctx); });
}

}  // namespace

void AddSessionCommands(CommandSet& set) {
  CLI::App& root = set.root();
  AddRun(set, root, "Run a batch job, exit with its exit code (alias of `bai session run`)");
  AddList(set, root, "ps", "List sessions (alias of `bai session ls`)");
  AddExec(set, root, "Run a command in a running session (alias of `bai session exec`)");
  AddShell(set, root, "Open a terminal in a running session (alias of `bai session shell`)");
  AddApp(set, root);
  AddLogs(set, root,
          "Print a session's output: its stdout on stdout, its stderr on stderr (alias of `bai "
          "session logs`)");
  AddRm(set, root, "Destroy sessions (alias of `bai session rm`)");
  AddWait(set, root, "Wait for sessions to run or end (alias of `bai session wait`)");

  auto* session = root.add_subcommand(
      "session",
      "Compute sessions: create, run, exec, shell, ls, info, logs, events, wait, history, rename, "
      "restart, rm, commit, cp, files");
  if (set.names_only()) return;
  session->require_subcommand(1);
  AddCreate(set, *session);
  AddRun(set, *session, "Run a batch job and exit with its exit code: IMAGE -- CMD ARG…");
  AddExec(set, *session, "Run a command in a running session: SESSION -- CMD ARG…");
  AddShell(set, *session, "Open a terminal in a running session (a login shell)");
  AddList(set, *session, "ls", "List sessions: active ones, or --all");
  AddOneSession(set, *session, "info", "Show a session", RunSessionInfo);
  AddLogs(set, *session,
          "Print a session's output: its stdout on stdout, its stderr on stderr; past the agent's "
          "log limit, its head and tail with a notice where the middle was dropped");
  AddEvents(set, *session);
  AddWait(set, *session, "Wait for sessions to run (--for running) or end (--for done)");
  AddOneSession(set, *session, "history", "When a session entered each status", RunHistory);
  AddRename(set, *session);
  AddOneSession(
      set, *session, "restart",
      "Restart a session's kernel (same spec, fresh process): /home/work starts empty again, "
      "mounted folders keep their files",
      RunRestart);
  AddRm(set, *session, "Destroy sessions (one already ending counts as destroyed)");
  AddCommit(set, *session);
  AddSessionFileCommands(set, *session);
}

}  // namespace bai::cli
