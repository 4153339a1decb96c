// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <chrono>
#include <string>
#include <vector>

namespace bai::server {

struct ProcessResult {
  int exit_code = -1;  ///< 128+N when killed by signal N; -1 when it could not start
  std::string output;  ///< stdout (and stderr, when merged) when captured
  bool timed_out = false;
};

struct ProcessOptions {
  bool capture = true;       ///< collect stdout (else it goes to `log_path` or /dev/null)
  bool merge_stderr = true;  ///< stderr joins the captured output
  std::string log_path;      ///< when not capturing: append stdout and stderr here
  std::string stdin_data;    ///< written to the child's stdin
  std::chrono::milliseconds timeout{60000};
};

/// Captures stdout only; stderr stays the caller's.
inline ProcessOptions StdoutOnly() {
  ProcessOptions o;
  o.merge_stderr = false;
  return o;
}

/// Runs argv[0] (looked up in PATH) and waits for it; the child is killed (SIGKILL) after
/// `timeout`. For the agent's calls to runc, tar and the like: no shell is involved.
ProcessResult RunProcess(std::vector<std::string> const& argv, ProcessOptions const& options = {});

/// A system tool by its full path (/usr/sbin, /sbin, /usr/bin, /bin, in that order), or "":
/// OCI hooks and the agent's helpers run without a PATH.
std::string FindSystemTool(char const* name);

/// Runs a tool to its end within `timeout`: ok when it exits 0, else kInternal naming the
/// command line, its exit code and its output.
Status RunTool(std::vector<std::string> const& argv, std::chrono::seconds timeout);

}  // namespace bai::server
