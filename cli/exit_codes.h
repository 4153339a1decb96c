// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <string>
#include <string_view>

namespace bai::cli {

/// Exit codes of general commands.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitTimeout = 3,
  kExitAuth = 4,
  kExitNotFound = 5,
  kExitConflict = 6,
  kExitUnreachable = 7,
  kExitInterrupted = 130,
};

/// Exit codes of job commands (run, exec, wait --for done) when bai fails around the job.
enum JobExitCode : int {
  kJobTimedOut = 124,
  kJobBaiError = 125,
  kJobNoExitCode = 126,
};

/// The exit code of a general command that failed with `status`.
int ExitCodeFor(Status const& status);

/// A bad value on the command line found after parsing (a flag's duration, a secret given on
/// argv): kInvalidArgument that ExitCodeFor maps to kExitUsage.
Status UsageError(std::string message);

/// The text of `bai help exit-codes`.
std::string_view ExitCodesHelp();

}  // namespace bai::cli
