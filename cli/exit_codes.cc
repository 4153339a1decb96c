// SPDX-License-Identifier: Apache-2.0
#include "cli/exit_codes.h"

namespace bai::cli {

namespace {
constexpr char kUsageErrorType[] = "bai:usage";
}  // namespace

Status UsageError(std::string message) {
  ErrorInfo info;
  info.type = kUsageErrorType;
  return Status(StatusCode::kInvalidArgument, std::move(message), std::move(info));
}

int ExitCodeFor(Status const& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kDeadlineExceeded:
      return kExitTimeout;
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return kExitAuth;
    case StatusCode::kNotFound:
      return kExitNotFound;
    case StatusCode::kAlreadyExists:
      return kExitConflict;
    case StatusCode::kCancelled:
      return kExitInterrupted;
    case StatusCode::kInvalidArgument:
      return status.error_info().type == kUsageErrorType ? kExitUsage : kExitError;
    case StatusCode::kUnavailable:
      // No HTTP answer at all: the server could not be reached.
      return status.error_info().http_status == 0 ? kExitUnreachable : kExitError;
    default:
      return kExitError;
  }
}

std::string_view ExitCodesHelp() {
  return R"(Exit codes

General commands (config, api, ps, logs, rm, session create/info/ls/history/rename/restart/
commit/events, wait --for running):
    0    success (an empty result is a success)
    1    error
    2    usage error (unknown command or flag, missing or invalid argument)
    3    timed out
    4    authentication or permission error
    5    not found
    6    conflict (already exists)
    7    server unreachable
  130    interrupted (Ctrl-C); 143 when stopped by SIGTERM

Job commands (run, exec, wait --for done):
    N    the job's own exit code, when the job ran
  124    timed out waiting for the job
  125    bai failed around the job (e.g. the session could not be created)
  126    the session ended without an exit code (cancelled, error, killed)
  130    interrupted (Ctrl-C); 143 when stopped by SIGTERM
  With several sessions, `wait` returns the first non-zero job exit code.

With -o json, the output always carries "exit_code", and "error" with the problem details when
bai itself failed.
)";
}

}  // namespace bai::cli
