// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/help.h"

#include "cli/exit_codes.h"
#include "cli/output_schema.h"

#include <CLI/CLI.hpp>

#include <ostream>
#include <span>
#include <string>

namespace bai::cli {
namespace {

constexpr char const* kEnvironmentHelp = R"(Environment variables

  BACKEND_ENDPOINT        manager URL; a comma-separated list fails over on connection errors
  BACKEND_ACCESS_KEY      keypair access key (empty = anonymous requests)
  BACKEND_SECRET_KEY      keypair secret key
  BACKEND_DOMAIN          default domain (default: default)
  BACKEND_GROUP           default project (default: default)
  BACKEND_CONNECTION_TIMEOUT  connect timeout in seconds (default: 10)
  BACKEND_READ_TIMEOUT    longest silence while reading, in seconds; 0 = none (default: 0)
  BACKEND_SKIP_SSLCERT_VALIDATION  yes to skip TLS verification (test servers only)
  BACKEND_ENDPOINT_TYPE   only "api" is supported
  (each BACKEND_* name also works as SORNA_*, as in the official client)

  BAI_PROFILE             profile to use (like --profile)
  BAI_CONFIG_DIR          configuration directory (default: $XDG_CONFIG_HOME/bai)

Precedence: flags > BACKEND_* > the selected profile > defaults. No .env file is read.
Files: config.toml ([profile.NAME] tables, default_profile) and credentials.toml (secret_key,
mode 0600) in the configuration directory.
)";

constexpr char const* kOutputHelp = R"(Output

Every command writes its results on stdout and everything else on stderr: progress, the
session a job runs in, why it waits, warnings, and errors. A script can read stdout and never
see a diagnostic in it.

Tables and text (the default):
  bai ps, bai session ls     a header and one row per session, columns two spaces apart
  bai session info           one "key  value" line per field
  bai run                    the job's output; with `bai run`, "session NAME (ID) queued" on
                             stderr as soon as the session exists

JSON (-o json, or --output json, anywhere on the line):
  - exactly one JSON document on stdout per command (NDJSON, one object per line, for
    streams: `bai session events`)
  - every result object carries "exit_code": the code bai exits with
  - errors go to stderr as {"error": {"code", "message", "type", …}, "exit_code": N}
  - amounts are JSON numbers: slots as numbers, bytes as integers ("mem": 1073741824)
  - times are RFC 3339 with an offset ("2026-11-23T03:29:04.932986+00:00")
  - a job's own exit code is "exit_code" for job commands (run, exec, wait --for done) and
    "job_exit_code" in a session object
  - one shape per noun, wherever it appears (below; "?": may be null); commands add their
    own fields around it: `ps` {"items": [session…], "total_count"}, `session info` a session
    with the details, `run` and `session create` {"id", "name", "status", …} (a session named as everywhere),
    `wait` and `rm` {"sessions": [{"session", …}]}, `vfolder list` {"folders": [folder…]},
    `vfolder info` and `vfolder create` a folder, `logs` {"logs", "stdout", "stderr",
    "notices", "truncated"}, `version` and `config list` their settings; `bai api` prints
    the server's own answer as it came (24.09's camelCase), not these shapes
)";

constexpr char const* kOutputHelpEnd = R"(
Exit codes: `bai help exit-codes`.
)";

std::string Fields(char const* title, std::span<output_schema::Field const> fields) {
  std::string out = std::string(title) + "\n";
  std::string line = " ";
  for (auto const& f : fields) {
    std::string item = " " + std::string(f.name) + " (" + std::string(f.type) + ")";
    if (line.size() + item.size() + 1 > 94) {
      out += line + "\n";
      line = " ";
    }
    line += item + (&f == &fields.back() ? "" : ",");
  }
  return out + line + "\n";
}

std::string OutputHelp() {
  return kOutputHelp +
         ("\n" + Fields("A session:", output_schema::kSession) +
          Fields("A session's details (session info):", output_schema::kSessionDetail) +
          Fields("A virtual folder:", output_schema::kFolder) +
          Fields("A session event (a line of session events; the server's other fields follow, "
                 "snake_case):",
                 output_schema::kEvent) +
          "\nAdministration (bai admin NOUN ls lists them under the noun's plural: domains, "
          "projects, users,\nkeypairs, policies, agents, images, presets):\n" +
          Fields("A domain:", output_schema::kDomain) +
          Fields("A project:", output_schema::kProject) + Fields("A user:", output_schema::kUser) +
          Fields("A keypair:", output_schema::kKeypair) +
          Fields("A keypair resource policy (admin policy):", output_schema::kKeypairPolicy) +
          Fields("A user or project resource policy (admin user-policy, project-policy):",
                 output_schema::kScopePolicy) +
          Fields("An agent:", output_schema::kAgent) + Fields("An image:", output_schema::kImage) +
          Fields("A resource preset:", output_schema::kPreset)) +
         kOutputHelpEnd;
}

}  // namespace

void AddHelpCommands(CommandSet& set) {
  auto& words = set.Keep<std::vector<std::string>>();
  auto* help = set.root().add_subcommand(
      "help",
      "Help on a command (bai help session create) or a topic: exit-codes, environment, "
      "output");
  if (set.names_only()) return;
  help->add_option("TOPIC", words, "A command's words, or exit-codes, environment, output");
  set.OnRun(help, [&set, &words]() -> int {
    Context& ctx = set.ctx();
    std::string topic = words.empty() ? "" : words.front();
    // A command's path: the same page as `bai … --help`.
    CLI::App* command = &set.root();
    for (auto const& w : words) {
      CLI::App* next = nullptr;
      try {
        next = command->get_subcommand(w);
      } catch (CLI::OptionNotFound const&) {
      }
      if (next == nullptr || next->get_group().empty()) {
        command = nullptr;
        break;
      }
      command = next;
    }
    if (command != nullptr && !words.empty()) {
      ctx.out() << command->help();
      return 0;
    }
    if (topic == "exit-codes") {
      ctx.out() << ExitCodesHelp();
    } else if (topic == "environment") {
      ctx.out() << kEnvironmentHelp;
    } else if (topic == "output") {
      ctx.out() << OutputHelp();
    } else if (topic.empty()) {
      ctx.out() << set.root().help();
    } else {
      std::string all;
      for (auto const& w : words) all += (all.empty() ? "" : " ") + w;
      ctx.err() << "error: no command or help topic \"" << all
                << "\" (a command such as `session create`, or exit-codes, environment, "
                   "output)\n";
      return kExitUsage;
    }
    return 0;
  });
}

}  // namespace bai::cli
