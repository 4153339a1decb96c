// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::cli {

/// What `create` and `run` share: the session's spec.
struct SpecOptions {
  std::string image;
  std::string name;                    ///< empty: run-XXXXXXXX (run) or the server's choice
  std::vector<std::string> resources;  ///< -r cpu=2 -r mem=4g (or cpu=2,mem=4g)
  std::vector<std::string> env;        ///< -e KEY=VALUE
  std::vector<std::string> mounts;     ///< -m VFOLDER[:PATH][:ro]
  std::string group;
  std::string scaling_group;
  std::string tag;
  std::optional<int> priority;
  std::vector<std::string> depends;  ///< sessions that must succeed first
  std::vector<int> preopen;          ///< container ports served as apps (`bai app`)
  std::string network;               ///< bridge, none; empty: the agent's default
  std::string starts_at;             ///< a time or a delay ("30m"), batch only
  std::string timeout;               ///< a duration: the job is stopped after it
  std::string max_wait;              ///< a duration: give up waiting to start after it
  std::string bootstrap_file;        ///< --bootstrap-script: run in the kernel before it starts
};

struct RunOptions : SpecOptions {
  std::vector<std::string> command;  ///< after `--`: joined with POSIX quoting
  std::optional<std::string> code;   ///< -c CODE: query mode in an interactive session
  bool detach = false;               ///< print the session and return once it is queued
};

/// `bai session run IMAGE -- CMD…` (alias `bai run`): a batch session; prints its name and id
/// on stderr at creation and the scheduler's reason while it waits, follows it, prints its
/// output and exits with the job's exit code (DECISIONS.md "CLI": 124 timed out, 125 bai
/// failed, 126 no exit code, 130 interrupted, which also destroys the session). With
/// `-c CODE`: query mode in an interactive session (created, or reused by --name, which keeps
/// the interpreter's state between calls; an unnamed one is destroyed afterwards).
int RunRun(RunOptions const& options, Context& ctx);

struct CreateOptions : SpecOptions {
  std::string type = "interactive";
  std::string startup_command;
  bool no_wait = false;  ///< return once queued
  bool dry_run = false;  ///< ask check-presets whether it would fit; create nothing
  bool reuse = false;    ///< a running session of that name and image is taken as it is
};
/// `bai session create IMAGE`: prints the session id; waits until it runs unless --no-wait.
int RunCreate(CreateOptions const& options, Context& ctx);

struct ExecOptions {
  std::string session;
  std::vector<std::string> command;
  bool interactive = false;  ///< -i: the terminal's keys go to the command
  bool tty = false;          ///< -t: on a terminal in the container (bai shell's)
  bool no_stdin = false;     ///< -n: stdin does not reach the command (ssh -n)
};
/// `bai session exec SESSION -- CMD…` (alias `bai exec`): output streamed, the command's exit
/// code passed through.
int RunExec(ExecOptions const& options, Context& ctx);

struct ShellOptions {
  std::string session;
};
/// `bai shell SESSION` (alias of `bai session shell`): a terminal in the session — raw mode,
/// window size kept in step, Ctrl-C to the remote program, `~.` detaches, the shell's exit code
/// passed through. Refuses when stdin is not a terminal.
int RunShell(ShellOptions const& options, Context& ctx);
/// The terminal of RunShell running `command` (empty: a login shell); stdin must be a terminal.
int RunTerminal(std::string const& session, std::vector<std::string> const& command, Context& ctx);

struct AppOptions {
  std::string session;
  std::string app;
  std::string bind;                    ///< [HOST:]PORT; empty: 127.0.0.1:8080
  std::vector<std::string> arguments;  ///< "--option value"
  std::vector<std::string> envs;       ///< KEY=VALUE
};
/// `bai app SESSION APP [-b [HOST:]PORT]`: a local port tunnelled to the app, one WebSocket per
/// connection; prints the URL; Ctrl-C stops it.
int RunApp(AppOptions const& options, Context& ctx);
/// `bai app ls SESSION`: the session's apps.
int RunAppList(AppOptions const& options, Context& ctx);
/// `bai app stop SESSION APP`: ends the app's service.
int RunAppStop(AppOptions const& options, Context& ctx);

struct WaitCommandOptions {
  std::vector<std::string> sessions;
  std::string until = "done";  ///< running or done
  std::string timeout;         ///< a duration; empty: no limit
};
/// `bai session wait SESSION… --for running|done` (alias `bai wait`).
int RunWait(WaitCommandOptions const& options, Context& ctx);

struct ListOptions {
  std::vector<std::string> statuses;
  bool all = false;  ///< ended sessions too
  std::string name;  ///< sessions whose name contains this
  std::string filter;
  std::string order;
  std::optional<long long> limit;
  std::string access_key;  ///< admins: another keypair's sessions
  bool usage = false;      ///< what each uses now beside what it asked for
};
/// `bai session ls` (alias `bai ps`): a table, or every page as JSON.
int RunList(ListOptions const& options, Context& ctx);

struct LogsOptions {
  std::string session;
  bool follow = false;
  std::optional<long long> tail;  ///< the last N lines only
};
/// `bai session logs SESSION [-f] [--tail N]` (alias `bai logs`).
int RunLogs(LogsOptions const& options, Context& ctx);
/// `bai session events [SESSION]`: NDJSON when piped or with -o json.
int RunEvents(std::string const& session, Context& ctx);
/// `bai session rm SESSION…` (alias `bai rm`): a session already ending counts as removed.
int RunRm(std::vector<std::string> const& sessions, bool forced, Context& ctx);
/// `bai session info SESSION`.
int RunSessionInfo(std::string const& session, Context& ctx);
/// `bai session history SESSION`: when it entered each status.
int RunHistory(std::string const& session, Context& ctx);
int RunRename(std::string const& session, std::string const& new_name, Context& ctx);
int RunRestart(std::string const& session, Context& ctx);

struct CommitOptions {
  std::string session;
  std::string filename;  ///< empty: the server names it
  std::string folder;    ///< empty: on the agent; else into this virtual folder
  bool wait = false;     ///< follow the task; exit 0 when done, 1 when it failed
};
/// `bai session commit`: the kernel's writable files into a tar archive on its agent, or into
/// a folder.
int RunSessionCommit(CommitOptions const& options, Context& ctx);

struct CopyOptions {
  std::vector<std::string> paths;  ///< sources, then the destination; one side SESSION:PATH
  bool recursive = false;
};
/// `bai session cp [-r] SRC… DST`: files to or from a running session's /home/work.
int RunSessionCopy(CopyOptions const& options, Context& ctx);
/// `bai session files SESSION [PATH]`: a directory's entries.
int RunSessionFiles(std::string const& session, std::string const& path, Context& ctx);
/// Adds `cp` and `files` to the `session` noun.
void AddSessionFileCommands(CommandSet& set, CLI::App& session);

/// The `session` noun and its root aliases `run`, `ps`, `exec`, `logs`, `rm`, `wait`.
void AddSessionCommands(CommandSet& set);

}  // namespace bai::cli
