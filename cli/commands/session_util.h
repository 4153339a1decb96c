// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the session commands share: interrupt handling, durations, the job-error report.

#include "bai/status.h"

#include "cli/context.h"

#include <cstdint>
#include <optional>
#include <string>

namespace bai::cli {

/// From now on Ctrl-C and SIGTERM set a flag (Interrupted()) instead of killing the process, so
/// the command can clean up and exit 130.
void CatchInterrupts();
bool Interrupted();

/// A duration flag ("30s", "5m", "1h", "2d", or seconds): seconds, or a usage error printed
/// as "error: --FLAG VALUE: …" (nullopt).
std::optional<std::int64_t> DurationFlag(Context& ctx, char const* flag, std::string const& value);

/// A job command failed around the job: report (as JSON on stderr under -o json) and return
/// 125.
int JobError(Context& ctx, Status const& status);

}  // namespace bai::cli
