// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::cli {

struct RunOptions {
  std::string image;
  std::vector<std::string> command;    ///< after `--`: joined with POSIX quoting
  std::optional<std::string> code;     ///< -c CODE: query mode in an interactive session
  std::string name;                    ///< empty: run-XXXXXXXX
  std::vector<std::string> resources;  ///< -r cpu=2 -r mem=4g (or cpu=2,mem=4g)
  std::vector<std::string> env;        ///< -e KEY=VALUE
  std::string group;
  std::string scaling_group;
  long long batch_timeout = 0;  ///< seconds; 0 = none
  bool detach = false;          ///< print the session and return once it is queued
};

/// `bai session run IMAGE -- CMD…` (alias `bai run`): a batch session; follows its events, prints
/// its logs and exits with the job's exit code (DECISIONS.md "CLI": 125 bai failed, 126 no exit
/// code, 130 interrupted, which also destroys the session). With `-c CODE`: query mode in an
/// interactive session (created, or reused by --name, which keeps the interpreter's state between
/// calls; an unnamed one is destroyed afterwards); output streams as it comes, `input()` reads a
/// line from stdin, and the exit code is the snippet's.
int RunRun(RunOptions const& options, Context& ctx);
/// `bai session logs SESSION` (alias `bai logs`).
int RunLogs(std::string const& session, Context& ctx);
/// `bai session rm SESSION…` (alias `bai rm`).
int RunRm(std::vector<std::string> const& sessions, bool forced, Context& ctx);
/// `bai session info SESSION`.
int RunSessionInfo(std::string const& session, Context& ctx);

struct CommitOptions {
  std::string session;
  std::string filename;  ///< empty: the server names it
  bool wait = false;     ///< follow the task; exit 0 when done, 1 when it failed
};
/// `bai session commit`: the kernel's writable files into a tar archive on its agent.
int RunSessionCommit(CommitOptions const& options, Context& ctx);

/// `bai session run|info|logs|rm|commit`, and the top-level `bai run`, `bai logs` and `bai rm`,
/// documented aliases of their `bai session` forms.
void AddSessionCommands(CommandSet& set);

}  // namespace bai::cli
