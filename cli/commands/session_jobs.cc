// SPDX-License-Identifier: Apache-2.0
// The session commands that start or follow work: run, create, exec, wait.
#include "bai/protocol/session_status.h"
#include "bai/session_client.h"

#include "cli/commands/session.h"
#include "cli/commands/session_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <nlohmann/json.hpp>
#include <poll.h>
#include <sodium.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

namespace bai::cli {

using nlohmann::json;

namespace {

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

// Whether something was piped in for the job: data waiting on a stdin that is not a terminal
// (an empty pipe, /dev/null or a closed stdin are fine: a CI runner's stdin is one of those).
bool StdinHasData(Context& ctx) {
  if (ctx.stdin_tty()) return false;
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return false;
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) != 0) return false;
  if (S_ISREG(st.st_mode)) return st.st_size > 0;
  if (S_ISCHR(st.st_mode)) return false;  // /dev/null and other devices
  int pending = 0;
  return ::ioctl(STDIN_FILENO, FIONREAD, &pending) == 0 && pending > 0;
}

// The spec flags into the request, and --max-wait (seconds, 0 = none) into `max_wait` when
// given; a usage error is reported and returns kExitUsage.
int ApplySpec(SpecOptions const& o, SessionCreateRequest& req, Context& ctx,
              std::int64_t* max_wait = nullptr) {
  req.image = o.image;
  req.name = o.name;
  req.group = o.group;
  if (!o.scaling_group.empty()) req.scaling_group = o.scaling_group;
  if (!o.tag.empty()) req.tag = o.tag;
  req.priority = o.priority;
  req.dependencies = o.depends;
  req.preopen_ports = o.preopen;
  req.network = o.network;
  if (!o.starts_at.empty()) req.starts_at = o.starts_at;
  for (auto const& r : o.resources) {
    if (auto s = protocol::ParseSlotAssignment(r, req.resources); !s.ok()) {
      ctx.err() << "error: -r " << r << ": " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (!ReadEnvFlags(ctx, o.env, req.environ)) return kExitUsage;
  for (auto const& m : o.mounts) {
    // VFOLDER[:PATH][:ro|:rw|:wd]
    std::string name = m.substr(0, m.find(':'));
    std::string rest = m.size() > name.size() ? m.substr(name.size() + 1) : "";
    std::string mode;
    auto is_mode = [](std::string const& s) { return s == "ro" || s == "rw" || s == "wd"; };
    if (is_mode(rest)) {
      mode = rest;
      rest.clear();
    } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
      mode = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
    if (name.empty() || (!mode.empty() && !is_mode(mode))) {
      ctx.err() << "error: -m " << m << ": expected VFOLDER[:PATH][:ro|rw|wd]\n";
      return kExitUsage;
    }
    req.mounts.push_back(name);
    if (!rest.empty()) req.mount_map[name] = rest;
    if (!mode.empty()) req.mount_permissions[name] = mode;
  }
  if (!o.bootstrap_file.empty()) {
    std::ifstream in(o.bootstrap_file, std::ios::binary);
    std::string text(std::istreambuf_iterator<char>(in), {});
    if (!in && !in.eof()) {
      ctx.err() << "error: --bootstrap-script " << o.bootstrap_file << ": cannot read it\n";
      return kExitUsage;
    }
    req.bootstrap_script = std::move(text);
  }
  if (!o.timeout.empty()) {
    auto seconds = DurationFlag(ctx, "--timeout", o.timeout);
    if (!seconds) return kExitUsage;
    req.batch_timeout_seconds = *seconds;
  }
  if (max_wait != nullptr && !o.max_wait.empty()) {
    auto seconds = DurationFlag(ctx, "--max-wait", o.max_wait);
    if (!seconds) return kExitUsage;
    *max_wait = *seconds;
  }
  return 0;
}

// Creates the session and says so on stderr at once ("session NAME (ID) queued"), so that an
// interrupted command leaves a session one can find. Failures are reported as job errors.
struct Created {
  std::optional<SessionClient> sessions;
  SessionCreateResult session;
  int error = 0;  ///< the exit code when it failed
};

Created CreateAndSay(Context& ctx, SessionCreateRequest const& req, char const* state) {
  Created out;
  auto client = ctx.MakeClient();
  if (!client.ok()) return out.error = JobError(ctx, client.status()), out;
  out.sessions.emplace(*client);
  CatchInterrupts();
  auto created = out.sessions->Create(req);
  if (!created.ok()) return out.error = JobError(ctx, created.status()), out;
  out.session = *std::move(created);
  ctx.err() << "session " << out.session.name << " (" << out.session.id << ") " << state << "\n";
  return out;
}

// Says on stderr why a session waits: once, and again each time the reason changes; while its
// image is pulled, how far (a bar redrawn on a terminal, a line per change when piped) with the
// rate and the time left.
struct WaitReporter {
  Context& ctx;
  std::string last;
  std::optional<protocol::PullInfo> first_pull;
  std::chrono::steady_clock::time_point pull_start;
  bool drawn = false;

  void Pull(protocol::PullInfo const& p) {
    auto now = std::chrono::steady_clock::now();
    if (!first_pull || first_pull->image != p.image) {
      first_pull = p;
      pull_start = now;
    }
    double elapsed = std::chrono::duration<double>(now - pull_start).count();
    double rate = elapsed > 0.5 ? static_cast<double>(p.done - first_pull->done) / elapsed : 0;
    double pct =
        p.total > 0 ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total) : 100.0;
    std::string tail = rate > 0 ? "  " + HumanBytes(rate) + "/s" : "";
    if (rate > 0 && p.total > p.done) {
      tail += "  ETA " + HumanSeconds(static_cast<double>(p.total - p.done) / rate);
    }
    char line[512];
    std::snprintf(line, sizeof line, "pulling %s %5.1f%%  %s / %s%s", p.image.c_str(), pct,
                  HumanBytes(static_cast<double>(p.done)).c_str(),
                  HumanBytes(static_cast<double>(p.total)).c_str(), tail.c_str());
    if (::isatty(STDERR_FILENO)) {
      ctx.err() << "\r" << line << "\x1b[K" << (p.done >= p.total ? "\n" : "") << std::flush;
      drawn = p.done < p.total;
    } else {
      ctx.err() << line << "\n";
    }
  }

  void operator()(SessionInfo const& info) {
    bool changed = info.status_info != last;
    if (info.status.status == protocol::SessionStatus::kPreparing && changed) {
      last = info.status_info;
      if (auto pull = protocol::DecodePullInfo(info.status_info)) Pull(*pull);
      return;
    }
    if (drawn && info.status.status != protocol::SessionStatus::kPreparing) {
      ctx.err() << "\n";
      drawn = false;
    }
    if (info.status.status != protocol::SessionStatus::kPending) return;
    if (info.status_info.empty() || info.status_info == last) return;
    last = info.status_info;
    ctx.err() << (info.status_info.rfind("waiting", 0) == 0 ? "" : "waiting: ") << info.status_info
              << "\n";
  }
};

// Waits for `id` to run or end; 0 when it runs. `max_wait` (seconds, 0 = none) bounds the time
// it may wait to start; past it the session is destroyed.
struct StartWait {
  std::optional<SessionEnd> end;  ///< set when it ended instead of running
  Status error;
  bool timed_out = false;
  bool interrupted = false;
};

StartWait WaitToStart(SessionClient const& sessions, std::string const& id, std::int64_t max_wait,
                      Context& ctx) {
  StartWait out;
  WaitReporter report{ctx, "", std::nullopt, {}, false};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(max_wait);
  WaitOptions wait;
  wait.until_running = true;
  wait.poll_interval = std::chrono::milliseconds(1000);
  wait.on_info = [&report](SessionInfo const& info) { report(info); };
  wait.cancelled = [&] {
    out.timed_out = max_wait > 0 && std::chrono::steady_clock::now() > deadline;
    out.interrupted = Interrupted();
    return out.timed_out || out.interrupted;
  };
  auto r = sessions.WaitForEnd(id, wait);
  if (!r.ok()) {
    if (r.status().code() != StatusCode::kCancelled) out.error = r.status();
    return out;
  }
  if (r->status != "RUNNING") out.end = *r;
  return out;
}

int RunQuery(RunOptions const& options, Context& ctx) {
  SessionCreateRequest req;
  if (int usage = ApplySpec(options, req, ctx)) return usage;
  req.type = "interactive";
  bool anonymous = options.name.empty();
  req.name = anonymous ? "run-" + RandomSuffix() : options.name;
  req.reuse_if_exists = true;
  req.enqueue_only = true;
  std::string code = *options.code;
  if (code == "-") code.assign(std::istreambuf_iterator<char>(ctx.in()), {});

  auto made = CreateAndSay(ctx, req, req.reuse_if_exists ? "ready" : "created");
  if (made.error) return made.error;
  SessionClient const& sessions = *made.sessions;
  auto const* created = &made.session;
  auto cleanup = [&] {
    if (anonymous) (void)sessions.Destroy(created->id);
  };
  if (created->status != "RUNNING") {
    auto started = WaitToStart(sessions, created->id, 0, ctx);
    if (started.interrupted) {
      cleanup();
      return kExitInterrupted;
    }
    if (!started.error.ok()) return JobError(ctx, started.error);
    if (started.end) {
      ctx.err() << "session " << created->name << " ended before it ran ("
                << (started.end->reason.empty() ? started.end->status : started.end->reason)
                << ")\n";
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
    if (Interrupted()) {
      cleanup();
      ctx.err() << "interrupted\n";
      return kExitInterrupted;
    }
    if (r->status == "waiting-input") {
      std::string line;
      if (!std::getline(ctx.in(), line)) line.clear();
      step.mode = "input";
      step.code = line;
    } else if (r->status == "continued") {
      step.mode = "continue";
    } else {
      break;  // exec-timeout and other endings without an exit code
    }
  }
  cleanup();
  int rc = exit_code ? static_cast<int>(*exit_code & 255) : kJobNoExitCode;
  if (ctx.json()) {
    ctx.out() << json{{"id", created->id},
                      {"name", created->name},
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
  if (StdinHasData(ctx)) {
    ctx.err() << "error: bai run does not pass stdin to a batch job; put the input in a file the "
                 "job reads (a vfolder), or use `bai run -c -` to send code on stdin\n";
    return kExitUsage;
  }
  SessionCreateRequest req;
  std::int64_t max_wait = 0;
  if (int usage = ApplySpec(options, req, ctx, &max_wait)) return usage;
  req.type = "batch";
  // Without a command the image's own runs (its Entrypoint and Cmd; refused by the agent, in
  // words, when it names none).
  if (!options.command.empty()) req.startup_command = ShellJoin(options.command);
  if (req.name.empty()) req.name = "run-" + RandomSuffix();
  req.enqueue_only = true;
  req.reuse_if_exists = false;
  auto made = CreateAndSay(ctx, req, "queued");
  if (made.error) return made.error;
  SessionClient const& sessions = *made.sessions;
  auto const* created = &made.session;
  if (options.detach) {
    if (ctx.json()) {
      ctx.out() << json{{"id", created->id},
                        {"name", created->name},
                        {"status", created->status},
                        {"exit_code", 0}}
                       .dump()
                << "\n";
    } else {
      ctx.out() << created->id << "\n";
    }
    return 0;
  }

  auto destroy = [&](char const* why) {
    (void)sessions.Destroy(created->id);
    ctx.err() << why << "; session " << created->name << " destroyed\n";
  };
  auto started = WaitToStart(sessions, created->id, max_wait, ctx);
  if (started.interrupted) return destroy("interrupted"), kExitInterrupted;
  if (started.timed_out) return destroy("it did not start within --max-wait"), kJobTimedOut;
  if (!started.error.ok()) return JobError(ctx, started.error);
  if (ctx.stdout_tty() && !started.end) ctx.err() << "running…\n";
  // The job's output as it is produced: its stdout on stdout, its stderr (and bai's notices)
  // on stderr; kept for -o json.
  std::string out_text, err_text;
  auto followed =
      FollowToEnd(sessions, created->id, [&](std::string const& stream, std::string const& text) {
        bool is_out = stream == "stdout";
        if (ctx.json()) {
          (is_out ? out_text : err_text) += text;
        } else {
          (is_out ? ctx.out() : ctx.err()) << text << std::flush;
        }
      });
  if (followed.interrupted) return destroy("interrupted"), kExitInterrupted;
  if (!followed.error.ok()) return JobError(ctx, followed.error);
  SessionEnd const& end = *followed.end;
  int code = end.exit_code ? static_cast<int>(*end.exit_code & 255) : kJobNoExitCode;
  if (ctx.json()) {
    json out = {{"id", created->id},         {"name", created->name}, {"status", end.status},
                {"status_info", end.reason}, {"stdout", out_text},    {"stderr", err_text},
                {"exit_code", code}};
    ctx.out() << out.dump() << "\n";
  } else if (!end.exit_code) {
    ctx.err() << "session " << created->name << " ended without an exit code ("
              << (end.reason.empty() ? end.status : end.reason) << ")\n";
  }
  return code;
}

int RunCreate(CreateOptions const& options, Context& ctx) {
  SessionCreateRequest req;
  std::int64_t max_wait = 0;
  if (int usage = ApplySpec(options, req, ctx, &max_wait)) return usage;
  req.type = options.type;
  if (!options.startup_command.empty()) req.startup_command = options.startup_command;
  req.enqueue_only = true;
  // Reuse only when asked: a silent reuse ignored the new -e and -r and said "created".
  req.reuse_if_exists = options.reuse;
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient sessions(*client);
  if (options.dry_run) {
    auto fit = sessions.CheckFit(req);
    if (!fit.ok()) return ReportError(ctx, fit.status());
    if (ctx.json()) {
      ctx.out() << json{{"fits", fit->fits},
                        {"reason", fit->reason},
                        {"exit_code", fit->fits ? 0 : 1}}
                       .dump()
                << "\n";
    } else {
      ctx.out() << (fit->fits ? "fits: " : "does not fit: ") << fit->reason << "\n";
    }
    return fit->fits ? kExitOk : kExitError;
  }
  CatchInterrupts();
  auto created = sessions.Create(req);
  if (!created.ok()) {
    int rc = ReportError(ctx, created.status());
    if (created.status().code() == StatusCode::kAlreadyExists && !ctx.json()) {
      ctx.err() << "hint: --reuse takes the running session as it is; or choose another --name\n";
    }
    return rc;
  }
  if (!created->created) {
    ctx.err() << "session " << created->name << " (" << created->id
              << ") reused as it is: --reuse keeps its own resources and environment\n";
  } else {
    ctx.err() << "session " << created->name << " (" << created->id << ") "
              << (options.no_wait ? "queued" : "created") << "\n";
  }
  std::string status = created->status;
  if (!options.no_wait && status != "RUNNING") {
    auto started = WaitToStart(sessions, created->id, max_wait, ctx);
    if (started.interrupted) {
      ctx.err() << "interrupted; session " << created->name << " left as it is\n";
      return kExitInterrupted;
    }
    if (started.timed_out) {
      (void)sessions.Destroy(created->id);
      ctx.err() << "error: it did not start within --max-wait; session destroyed\n";
      return kExitTimeout;
    }
    if (!started.error.ok()) return ReportError(ctx, started.error);
    status = started.end ? started.end->status : "RUNNING";
    if (started.end) {
      ctx.err() << "error: session " << created->name << " ended before it ran ("
                << (started.end->reason.empty() ? started.end->status : started.end->reason)
                << ")\n";
    }
  }
  bool failed = status != "RUNNING" && !options.no_wait;
  if (ctx.json()) {
    ctx.out() << json{{"id", created->id},
                      {"name", created->name},
                      {"status", status},
                      {"reused", !created->created},
                      {"exit_code", failed ? kExitError : kExitOk}}
                     .dump()
              << "\n";
  } else {
    ctx.out() << created->id << "\n";
  }
  return failed ? kExitError : kExitOk;
}

int RunExec(ExecOptions const& options, Context& ctx) {
  if (options.command.empty()) {
    ctx.err() << "error: nothing to run: give the command after --, e.g. bai exec SESSION -- ls\n";
    return kExitUsage;
  }
  if (options.tty) {
    if (!ctx.stdin_tty()) {
      ctx.err() << "error: -t needs a terminal, and stdin is not one; drop -t to run on pipes "
                   "(piped stdin still reaches the command)\n";
      return kExitUsage;
    }
    return RunTerminal(options.session, options.command, ctx);
  }
  auto client = ctx.MakeClient();
  if (!client.ok()) return JobError(ctx, client.status());
  SessionClient sessions(*client);
  CatchInterrupts();
  std::string out, err;
  auto print = [&](std::string const& stream, std::string const& text) {
    if (ctx.json()) {
      (stream == "stderr" ? err : out) += text;
    } else {
      (stream == "stderr" ? ctx.err() : ctx.out()) << text << std::flush;
    }
  };
  // stdin reaches the command as with `ssh host cmd` (tar c . | bai exec S -- tar x), streamed
  // and held back by the command's pace, its end closing the command's stdin; -n: none.
  auto code =
      sessions.ExecPiped(options.session, options.command, print,
                         options.no_stdin ? -1 : STDIN_FILENO, [] { return Interrupted(); });
  if (!code.ok() && code.status().code() == StatusCode::kUnimplemented) {
    // Backend.AI's own managers have no command stream: the execute API, which has no stdin.
    if (!options.no_stdin && StdinHasData(ctx)) {
      ctx.err() << "error: " << code.status().message()
                << ", so piped stdin cannot reach the command; give -n to run it without, or put "
                   "the input in a file in the session (bai session cp FILE SESSION:)\n";
      return kExitUsage;
    }
    code = sessions.Exec(options.session, ShellJoin(options.command), print,
                         [] { return Interrupted(); });
  }
  if (!code.ok() && code.status().code() == StatusCode::kCancelled) {
    ctx.err() << "interrupted\n";
    return kExitInterrupted;
  }
  if (!code.ok()) return JobError(ctx, code.status());
  int rc = *code & 255;
  if (ctx.json()) {
    ctx.out() << json{{"session", options.session},
                      {"stdout", out},
                      {"stderr", err},
                      {"exit_code", rc}}
                     .dump()
              << "\n";
  }
  return rc;
}

int RunWait(WaitCommandOptions const& options, Context& ctx) {
  bool done = options.until == "done";
  std::int64_t limit = 0;
  if (!options.timeout.empty()) {
    auto s = DurationFlag(ctx, "--timeout", options.timeout);
    if (!s) return kExitUsage;
    limit = *s;
  }
  auto client = ctx.MakeClient();
  if (!client.ok())
    return done ? JobError(ctx, client.status()) : ReportError(ctx, client.status());
  SessionClient sessions(*client);
  CatchInterrupts();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit);
  json results = json::array();
  int rc = 0;
  // Every session is looked up before any wait: `bai wait A nosuch` fails at once (5) instead
  // of waiting for A and then reporting nosuch.
  std::vector<std::optional<protocol::SessionInfo>> found;
  for (auto const& ref : options.sessions) {
    auto info = sessions.Info(ref);
    if (!info.ok() && info.status().code() == StatusCode::kNotFound) {
      ReportError(ctx, info.status());
      if (ctx.json()) {
        ctx.out() << json{{"sessions", {{{"session", ref}, {"error", info.status().message()}}}},
                          {"exit_code", kExitNotFound}}
                         .dump()
                  << "\n";
      }
      return kExitNotFound;
    }
    found.push_back(info.ok() ? std::optional(*std::move(info)) : std::nullopt);
    if (!info.ok()) {
      int code = done ? JobError(ctx, info.status()) : ReportError(ctx, info.status());
      if (rc == 0) rc = code;
      results.push_back({{"session", ref}, {"error", info.status().message()}});
    }
  }
  for (std::size_t i = 0; i < options.sessions.size(); ++i) {
    auto const& ref = options.sessions[i];
    auto const& info = found[i];
    if (!info) continue;
    bool timed_out = false;
    WaitOptions wait;
    wait.until_running = !done;
    wait.poll_interval = std::chrono::milliseconds(1000);
    wait.cancelled = [&] {
      timed_out = limit > 0 && std::chrono::steady_clock::now() > deadline;
      return timed_out || Interrupted();
    };
    auto end = sessions.WaitForEnd(info->id, wait);
    if (!end.ok() && end.status().code() == StatusCode::kCancelled) {
      if (timed_out) {
        ctx.err() << "error: timed out waiting for " << ref << "\n";
        rc = done ? static_cast<int>(kJobTimedOut) : static_cast<int>(kExitTimeout);
      } else {
        rc = kExitInterrupted;
      }
      // Its status now ("WAITING" was no status of a session).
      auto now = sessions.Info(info->id);
      json r = InfoJson(now.ok() ? *now : *info);
      r["session"] = ref;
      r["timed_out"] = timed_out;
      results.push_back(std::move(r));
      break;
    }
    if (!end.ok()) {
      int code = done ? JobError(ctx, end.status()) : ReportError(ctx, end.status());
      if (rc == 0) rc = code;
      continue;
    }
    // The session as it is now, in the one session shape (the job's exit code included).
    json r;
    if (ctx.json()) {
      auto now = sessions.Info(info->id);
      r = InfoJson(now.ok() ? *now : *info);
    }
    r["session"] = ref;
    r["status"] = end->status;
    int code = 0;
    if (done) {
      code = end->exit_code ? static_cast<int>(*end->exit_code & 255) : kJobNoExitCode;
      r["job_exit_code"] = end->exit_code ? json(*end->exit_code) : json(nullptr);
    } else if (end->status != "RUNNING") {
      ctx.err() << "error: " << ref << " ended before it ran (" << end->status << ")\n";
      code = kExitError;
    }
    if (rc == 0) rc = code;
    if (!ctx.json()) ctx.out() << ref << " " << end->status << "\n";
    results.push_back(std::move(r));
  }
  if (ctx.json()) ctx.out() << json{{"sessions", results}, {"exit_code", rc}}.dump() << "\n";
  return rc;
}

}  // namespace bai::cli
