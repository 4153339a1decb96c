// SPDX-License-Identifier: Apache-2.0
// `bai session cp` and `bai session files`: a running session's /home/work from the shell.
#include "bai/protocol/dates.h"

#include "cli/commands/session.h"
#include "cli/commands/session_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ctime>

namespace bai::cli {
namespace {

using nlohmann::json;

std::string Rfc3339(double seconds) {
  return protocol::FormatRfc3339Seconds(static_cast<std::int64_t>(seconds));
}

}  // namespace

int RunSessionCopy(CopyOptions const& options, Context& ctx) {
  if (options.paths.size() < 2) {
    ctx.err() << "error: cp needs a source and a destination (SESSION:PATH on one side)\n";
    return kExitUsage;
  }
  std::vector<Place> sources;
  for (std::size_t i = 0; i + 1 < options.paths.size(); ++i) {
    sources.push_back(ParsePlace(options.paths[i]));
  }
  Place dst = ParsePlace(options.paths.back());
  std::string session = dst.remote.empty() ? sources[0].remote : dst.remote;
  for (auto const& s : sources) {
    bool ok = dst.remote.empty() ? s.remote == session && !session.empty() : s.remote.empty();
    if (!ok) {
      ctx.err() << "error: copy between this machine and one session: the sources all local and "
                   "the destination SESSION:PATH, or the sources all SESSION:PATH of one session "
                   "and the destination local\n";
      return kExitUsage;
    }
  }
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  SessionClient sessions(*client);
  std::vector<std::string> paths;
  for (auto const& s : sources) paths.push_back(s.path);
  auto report = dst.remote.empty()
                    ? sessions.CopyFromSession(session, paths, dst.path, options.recursive)
                    : sessions.CopyToSession(session, paths, dst.path, options.recursive);
  if (!report.ok()) return ReportError(ctx, report.status());
  for (auto const& skipped : report->skipped) ctx.err() << "skipped " << skipped << "\n";
  if (ctx.json()) {
    ctx.out() << json{{"files", report->files},
                      {"bytes", report->bytes},
                      {"written", report->written},
                      {"skipped", report->skipped},
                      {"exit_code", 0}}
                     .dump()
              << "\n";
  } else {
    for (auto const& w : report->written) ctx.out() << w << "\n";
  }
  return 0;
}

int RunSessionFiles(std::string const& session, std::string const& path, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  auto list = SessionClient(*client).ListFiles(session, path.empty() ? "." : path);
  if (!list.ok()) return ReportError(ctx, list.status());
  if (!list->errors.empty()) ctx.err() << list->errors;
  if (ctx.json()) {
    json files = json::array();
    for (auto const& f : list->files) {
      files.push_back({{"name", f.filename},
                       {"mode", f.mode},
                       {"size", f.size},
                       {"modified", Rfc3339(f.mtime)}});
    }
    ctx.out() << json{{"path", list->abspath}, {"files", files}, {"exit_code", 0}}.dump() << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows{{"MODE", "SIZE", "MODIFIED", "NAME"}};
  for (auto const& f : list->files) {
    rows.push_back({f.mode, std::to_string(f.size), Rfc3339(f.mtime), f.filename});
  }
  PrintTable(ctx, rows);
  return 0;
}

void AddSessionFileCommands(CommandSet& set, CLI::App& session) {
  auto& copy = set.Keep<CopyOptions>();
  auto* cp = session.add_subcommand(
      "cp",
      "Copy files to or from a running session's /home/work: SRC… DST, one side SESSION:PATH "
      "(files under 1 MiB each; 8 MiB per download)");
  cp->add_option("PATHS", copy.paths, "Sources, then the destination")->required();
  cp->add_flag("-r,--recursive", copy.recursive, "Copy directories");
  set.OnRun(cp, [&copy, &ctx = set.ctx()] { return RunSessionCopy(copy, ctx); });

  auto& listing = set.Keep<std::pair<std::string, std::string>>();
  auto* files =
      session.add_subcommand("files", "List a directory of a running session's /home/work");
  files->add_option("SESSION", listing.first, "Session name or id")->required();
  files->add_option("PATH", listing.second, "Directory under /home/work (default: itself)");
  set.OnRun(files, [&listing, &ctx = set.ctx()] {
    return RunSessionFiles(listing.first, listing.second, ctx);
  });
}

}  // namespace bai::cli
