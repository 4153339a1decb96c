// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the session commands share: interrupt handling, durations, the job-error report.

#include "bai/session_client.h"
#include "bai/status.h"

#include "cli/context.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bai::cli {

/// "NAME:PATH" names a place in a session or a folder (`bai session cp`, `bai cp`); anything else
/// (or "./a:b", "/x:y") is local.
struct Place {
  std::string remote;  ///< the session or folder; empty: local
  std::string path;
};
Place ParsePlace(std::string const& arg);

/// From now on Ctrl-C and SIGTERM set a flag (Interrupted()) instead of killing the process, so
/// the command can clean up and exit 130.
void CatchInterrupts();
bool Interrupted();
/// The signal that interrupted (SIGINT, SIGTERM), 0 when none did.
int InterruptSignal();
/// The flag Interrupted() reads, for calls that take a cancellation flag.
std::atomic<bool> const* InterruptFlag();

/// A duration flag ("30s", "5m", "1h", "2d", or seconds): seconds, or a usage error printed
/// as "error: --FLAG VALUE: …" (nullopt).
std::optional<std::int64_t> DurationFlag(Context& ctx, char const* flag, std::string const& value);

/// `-e KEY=VALUE` flags into `into`; false after saying "error: -e FLAG: expected KEY=VALUE" for
/// one without a key or an '='.
bool ReadEnvFlags(Context& ctx, std::vector<std::string> const& flags,
                  std::map<std::string, std::string>& into);

/// A job command failed around the job: report (as JSON on stderr under -o json) and return
/// 125.
int JobError(Context& ctx, Status const& status);

/// A session in bai's one JSON shape (cli/output_schema.h kSession): a listing's item (plus
/// its access_key), and `session info`'s (plus kSessionDetail).
nlohmann::json ItemJson(SessionListItem const& s);
nlohmann::json InfoJson(SessionInfo const& s);

/// Prints the part of a stored output after output offset `offset` (all of it from 0), chunk by
/// chunk with its stream.
void PrintOutputFrom(protocol::SessionOutput const& output, std::int64_t offset,
                     std::function<void(std::string const&, std::string const&)> const& print);

/// How following a job's output ended: its end, an interrupt, or an error.
struct FollowedJob {
  std::optional<SessionEnd> end;
  bool interrupted = false;
  Status error;
};
/// Follows `id`'s output until it ends, `print(stream, text)` getting every piece (stream
/// stdout, stderr or notice), from byte `offset`. A broken stream is followed again from where
/// it stopped; after three breaks the end is waited for and the rest read whole.
FollowedJob FollowToEnd(SessionClient const& sessions, std::string const& id,
                        std::function<void(std::string const&, std::string const&)> const& print,
                        std::int64_t offset = 0);

/// What a session uses now as people read it: "cpu=37.5% mem=1.2G/4G cuda.mem=2G" ("-" when
/// nothing was reported); and as -o json has it (exact numbers; null when nothing was).
std::string UseText(std::optional<protocol::SessionUse> const& use);
nlohmann::json UseJson(std::optional<protocol::SessionUse> const& use);

}  // namespace bai::cli
