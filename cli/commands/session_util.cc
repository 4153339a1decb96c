// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/session_util.h"

#include "bai/protocol/session_wire.h"

#include "cli/exit_codes.h"

#include <nlohmann/json.hpp>
#include <signal.h>

#include <atomic>

namespace bai::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted = true; }

}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool Interrupted() { return g_interrupted.load(); }

std::optional<std::int64_t> DurationFlag(Context& ctx, char const* flag, std::string const& value) {
  auto seconds = protocol::ParseDurationSeconds(value);
  if (!seconds || *seconds <= 0) {
    ctx.err() << "error: " << flag << " " << value
              << ": expected a duration such as 30s, 5m, 1h, 2d (or seconds)\n";
    return std::nullopt;
  }
  return seconds;
}

int JobError(Context& ctx, Status const& status) {
  if (ctx.json()) {
    ctx.err() << nlohmann::json{{"exit_code", kJobBaiError},
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

}  // namespace bai::cli
