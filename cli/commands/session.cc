// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/session.h"

#include "bai/session_client.h"

#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sodium.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <iterator>
#include <thread>

namespace bai::cli {

using nlohmann::json;

namespace {

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted = true; }

// Ctrl-C and SIGTERM set g_interrupted: the command cleans up (exit 130) instead of dying.
void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string RandomSuffix() {
  unsigned char raw[4];
  randombytes_buf(raw, sizeof raw);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// A job command failed around the job: report and return 125.
int JobError(Context& ctx, Status const& status) {
  if (ctx.json()) {
    ctx.out() << json{{"exit_code", kJobBaiError},
                      {"error",
                       {{"code", std::string(StatusCodeName(status.code()))},
                        {"message", status.message()},
                        {"type", status.error_info().type}}}}
                     .dump()
              << "\n";
  } else {
    ctx.err() << "error: " << status.message() << "\n" << FieldErrors(status.error_info());
  }
  return kJobBaiError;
}

// -r and -e into the request; a usage error is reported and returns kExitUsage.
int ApplyCommonOptions(RunOptions const& options, SessionCreateRequest& req, Context& ctx) {
  req.image = options.image;
  req.group = options.group;
  if (!options.scaling_group.empty()) req.scaling_group = options.scaling_group;
  for (auto const& r : options.resources) {
    if (auto s = protocol::ParseSlotAssignment(r, req.resources); !s.ok()) {
      ctx.err() << "error: -r " << r << ": " << s.message() << "\n";
      return kExitUsage;
    }
  }
  for (auto const& e : options.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      ctx.err() << "error: -e " << e << ": expected KEY=VALUE\n";
      return kExitUsage;
    }
    req.environ[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return 0;
}

int RunQuery(RunOptions const& options, Context& ctx) {
  SessionCreateRequest req;
  if (int usage = ApplyCommonOptions(options, req, ctx)) return usage;
  req.type = "interactive";
  bool anonymous = options.name.empty();
  req.name = anonymous ? "run-" + RandomSuffix() : options.name;
  req.reuse_if_exists = true;
  std::string code = *options.code;
  if (code == "-") code.assign(std::istreambuf_iterator<char>(std::cin), {});

  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  SessionClient sessions(*client);
  CatchInterrupts();

  auto created = sessions.Create(req);
  if (!created.ok()) return JobError(ctx, created.status());
  auto cleanup = [&] {
    if (anonymous) (void)sessions.Destroy(created->id);
  };
  // Created sessions answer once RUNNING; a queued one (busy cluster) is waited for.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(options.batch_timeout > 0 ? options.batch_timeout : 3600);
  std::string status = created->status;
  while (status != "RUNNING") {
    if (g_interrupted || std::chrono::steady_clock::now() > deadline) {
      cleanup();
      return g_interrupted ? static_cast<int>(kExitInterrupted) : static_cast<int>(kJobTimedOut);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto info = sessions.Info(created->id);
    if (!info.ok()) return JobError(ctx, info.status());
    status = info->status.text;
    auto st = info->status.status;
    if (protocol::IsTerminal(st) || st == protocol::SessionStatus::kError) {
      ctx.err() << "session " << created->name << " ended before it ran ("
                << (info->status_info.empty() ? status : info->status_info) << ")\n";
      return kJobNoExitCode;
    }
  }

  ExecuteStep step;
  step.mode = "query";
  step.code = code;
  json console = json::array();
  std::optional<std::int64_t> exit_code;
  while (true) {
    auto r = sessions.Execute(created->id, step);
    if (!r.ok()) {
      cleanup();
      return JobError(ctx, r.status());
    }
    for (auto const& [stream, text] : r->console) {
      if (ctx.json()) {
        console.push_back({stream, text});
      } else if (stream == "stderr") {
        ctx.err() << text << std::flush;
      } else if (stream == "stdout") {
        ctx.out() << text << std::flush;
      }
    }
    step.run_id = r->run_id;
    step.code.clear();
    if (r->status == "finished") {
      exit_code = r->exit_code;
      break;
    }
    if (g_interrupted) {
      cleanup();
      ctx.err() << "interrupted\n";
      return kExitInterrupted;
    }
    if (r->status == "waiting-input") {
      std::string line;
      if (!std::getline(std::cin, line)) line.clear();
      step.mode = "input";
      step.code = line;
    } else if (r->status == "continued") {
      step.mode = "continue";
    } else {
      // exec-timeout and other endings without an exit code
      break;
    }
  }
  cleanup();
  int rc = exit_code ? static_cast<int>(*exit_code & 255) : kJobNoExitCode;
  if (ctx.json()) {
    ctx.out() << json{{"session_id", created->id},
                      {"session_name", created->name},
                      {"reused", !created->created},
                      {"exit_code", rc},
                      {"console", console}}
                     .dump()
              << "\n";
  }
  return rc;
}

}  // namespace

int RunRun(RunOptions const& options, Context& ctx) {
  if (options.code && !options.command.empty()) {
    ctx.err() << "error: give either -c CODE or a command after --, not both\n";
    return kExitUsage;
  }
  if (options.code) return RunQuery(options, ctx);
  if (options.command.empty()) {
    ctx.err() << "error: nothing to run: give the command after --, e.g. bai run python -- "
                 "python3 train.py\n";
    return kExitUsage;
  }
  SessionCreateRequest req;
  if (int usage = ApplyCommonOptions(options, req, ctx)) return usage;
  req.type = "batch";
  req.startup_command = ShellJoin(options.command);
  req.name = options.name.empty() ? "run-" + RandomSuffix() : options.name;
  req.enqueue_only = true;
  req.reuse_if_exists = false;
  if (options.batch_timeout > 0) req.batch_timeout_seconds = options.batch_timeout;
  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  SessionClient sessions(*client);

  CatchInterrupts();

  auto created = sessions.Create(req);
  if (!created.ok()) return JobError(ctx, created.status());
  if (options.detach) {
    if (ctx.json()) {
      ctx.out() << json{{"session_id", created->id},
                        {"session_name", created->name},
                        {"status", created->status},
                        {"exit_code", 0}}
                       .dump()
                << "\n";
    } else {
      ctx.out() << created->id << "\n";
    }
    return 0;
  }
  if (ctx.stdout_tty()) ctx.err() << "session " << created->name << " queued\n";

  WaitOptions wait;
  wait.on_started = [&] {
    if (ctx.stdout_tty()) ctx.err() << "running…\n";
  };
  wait.cancelled = [] { return g_interrupted.load(); };
  auto final = sessions.WaitForEnd(created->id, wait);
  if (!final.ok() && final.status().code() == StatusCode::kCancelled) {
    (void)sessions.Destroy(created->id);
    ctx.err() << "interrupted; session " << created->name << " destroyed\n";
    return kExitInterrupted;
  }
  if (!final.ok()) return JobError(ctx, final.status());

  auto logs = sessions.Logs(created->id);
  int code = final->exit_code ? static_cast<int>(*final->exit_code & 255) : kJobNoExitCode;
  if (ctx.json()) {
    json out = {{"session_id", created->id}, {"session_name", created->name},
                {"status", final->status},   {"status_info", final->reason},
                {"exit_code", code},         {"logs", logs.ok() ? *logs : ""}};
    ctx.out() << out.dump() << "\n";
  } else {
    if (logs.ok()) ctx.out() << *logs;
    if (!final->exit_code) {
      ctx.err() << "session " << created->name << " ended without an exit code ("
                << (final->reason.empty() ? final->status : final->reason) << ")\n";
    }
  }
  return code;
}

int RunLogs(std::string const& session, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto logs = SessionClient(*client).Logs(session);
  if (!logs.ok()) return ReportError(ctx, logs.status());
  if (ctx.json()) {
    ctx.out() << json{{"session", session}, {"logs", *logs}}.dump() << "\n";
  } else {
    ctx.out() << *logs;
  }
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
    if (!status.ok()) {
      if (ctx.json()) {
        results.push_back({{"session", s}, {"ok", false}, {"error", status.message()}});
        if (code == 0) code = ExitCodeFor(status);
      } else {
        int c = ReportError(ctx, status);
        if (code == 0) code = c;
      }
      continue;
    }
    results.push_back({{"session", s}, {"ok", true}});
    if (!ctx.json() && ctx.stdout_tty()) ctx.out() << "destroyed " << s << "\n";
  }
  if (ctx.json()) ctx.out() << results.dump() << "\n";
  return code;
}

int RunSessionInfo(std::string const& session, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto info = SessionClient(*client).Info(session);
  if (!info.ok()) return ReportError(ctx, info.status());
  if (ctx.json()) {
    ctx.out() << info->raw_json << "\n";
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
  std::string slots;
  for (auto const& [k, v] : info->requested)
    slots += (slots.empty() ? "" : " ") + k + "=" + v.ToString();
  row("resources", slots);
  row("agent", info->agent_id.value_or(""));
  row("result", info->result);
  row("exit code", info->exit_code ? std::to_string(*info->exit_code) : "");
  row("created", info->created_at);
  row("terminated", info->terminated_at.value_or(""));
  return 0;
}

int RunSessionCommit(CommitOptions const& options, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient sessions(*client);
  auto started = sessions.Commit(options.session, options.filename);
  if (!started.ok()) return ReportError(ctx, started.status());
  if (!options.wait) {
    if (ctx.json()) {
      ctx.out() << json{{"task_id", started->task_id},
                        {"kernel", started->kernel_id},
                        {"path", started->path}}
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
  if (ctx.json()) {
    ctx.out() << json{{"task_id", started->task_id},
                      {"kernel", started->kernel_id},
                      {"path", started->path},
                      {"status", last->event},
                      {"message", last->message}}
                     .dump()
              << "\n";
  } else if (last->Succeeded()) {
    ctx.out() << started->path << "\n";
  }
  if (last->Succeeded()) return 0;
  ctx.err() << "error: the commit "
            << (last->event == "bgtask_cancelled" ? "was cancelled" : "failed")
            << (last->message.empty() ? "" : ": " + last->message) << "\n";
  return kExitError;
}

namespace {

constexpr char kSessionRef[] = "Session id, name or unique prefix";

void AddRun(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& o = set.Keep<RunOptions>();
  auto* run = parent.add_subcommand("run", description);
  run->add_option("IMAGE", o.image, "Image name or alias")->required();
  run->add_option("COMMAND", o.command, "The job's command, after --");
  run->add_option("-c,--code", o.code,
                  "Run CODE in the image's interpreter instead (query mode; '-' reads stdin)");
  run->add_option("--name", o.name, "Session name (default: run-XXXXXXXX)");
  // One value per flag, so `-r cpu=2 IMAGE` does not swallow the image.
  run->add_option("-r,--resource", o.resources, "Resource: SLOT=AMOUNT (repeatable)")
      ->allow_extra_args(false);
  run->add_option("-e,--env", o.env, "Environment variable KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--group", o.group, "Project (default: the configured group)");
  run->add_option("--scaling-group", o.scaling_group, "Resource group");
  run->add_option("--timeout", o.batch_timeout, "Stop the job after SECONDS")
      ->check(CLI::PositiveNumber);
  run->add_flag("--detach", o.detach, "Queue the job, print its session id, return");
  set.OnRun(run, [&o, &ctx = set.ctx()] { return RunRun(o, ctx); });
}

void AddLogs(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& session = set.Keep<std::string>();
  auto* logs = parent.add_subcommand("logs", description);
  logs->add_option("SESSION", session, kSessionRef)->required();
  set.OnRun(logs, [&session, &ctx = set.ctx()] { return RunLogs(session, ctx); });
}

void AddRm(CommandSet& set, CLI::App& parent, std::string const& description) {
  auto& sessions = set.Keep<std::vector<std::string>>();
  auto& forced = set.Keep<bool>();
  auto* rm = parent.add_subcommand("rm", description);
  rm->add_option("SESSION", sessions, "Session ids, names or unique prefixes")->required();
  rm->add_flag("--force", forced, "Destroy even if the kernel does not answer");
  set.OnRun(rm, [&sessions, &forced, &ctx = set.ctx()] { return RunRm(sessions, forced, ctx); });
}

void AddCommit(CommandSet& set, CLI::App& parent) {
  auto& o = set.Keep<CommitOptions>();
  auto* commit = parent.add_subcommand(
      "commit", "Archive a running session's files (/home/work, /tmp) into a tar on its agent");
  commit->add_option("SESSION", o.session, kSessionRef)->required();
  commit->add_option("--filename", o.filename, "Archive file name (default: SESSION-TIME.tar)");
  commit->add_flag("--wait", o.wait, "Wait until it is written; exit 1 if it failed");
  set.OnRun(commit, [&o, &ctx = set.ctx()] { return RunSessionCommit(o, ctx); });
}

}  // namespace

void AddSessionCommands(CommandSet& set) {
  CLI::App& root = set.root();
  AddRun(set, root,
         "Run a batch job and exit with its exit code: bai run IMAGE -- CMD ARG… (alias of "
         "`bai session run`)");
  AddLogs(set, root, "Print a session's output (alias of `bai session logs`)");
  AddRm(set, root, "Destroy sessions (alias of `bai session rm`)");

  auto* session = root.add_subcommand("session", "Compute sessions: run, info, logs, rm, commit");
  session->require_subcommand(1);
  AddRun(set, *session, "Run a batch job and exit with its exit code: IMAGE -- CMD ARG…");
  auto& info_session = set.Keep<std::string>();
  auto* info = session->add_subcommand("info", "Show a session");
  info->add_option("SESSION", info_session, kSessionRef)->required();
  set.OnRun(info, [&info_session, &ctx = set.ctx()] { return RunSessionInfo(info_session, ctx); });
  AddLogs(set, *session, "Print a session's output");
  AddRm(set, *session, "Destroy sessions");
  AddCommit(set, *session);
}

}  // namespace bai::cli
