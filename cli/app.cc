// SPDX-License-Identifier: Apache-2.0
// The command tree. CLI11 is confined to this file: commands are option structs and run
// functions that know nothing of the parser.
#include "cli/app.h"

#include "cli/commands/api.h"
#include "cli/commands/completion.h"
#include "cli/commands/config.h"
#include "cli/commands/session.h"
#include "cli/commands/version.h"
#include "cli/context.h"
#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <functional>
#include <iostream>

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

CommandNode Describe(CLI::App const& app) {
  CommandNode node;
  node.name = app.get_name();
  for (CLI::Option const* opt : app.get_options()) {
    if (opt->nonpositional()) {
      for (auto const& s : opt->get_snames()) node.flags.push_back("-" + s);
      for (auto const& l : opt->get_lnames()) node.flags.push_back("--" + l);
    }
  }
  for (CLI::App const* sub : app.get_subcommands({})) node.children.push_back(Describe(*sub));
  return node;
}

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err, std::istream& in) {
  Context ctx(out, err, in, ::isatty(STDOUT_FILENO) == 1, ::isatty(STDIN_FILENO) == 1);
  std::function<int()> action;

  CLI::App app{"bai: the Backend.AI command-line tool", "bai"};
  app.fallthrough();
  app.require_subcommand(0, 1);
  app.footer("Run `bai help exit-codes` for exit codes, `bai help environment` for settings.");
  auto& g = ctx.globals();
  app.add_option("-o,--output", g.output, "Output format")->check(CLI::IsMember({"json", "table"}));
  app.add_flag("--debug", g.debug, "Log requests and responses to stderr (secrets redacted)");
  app.add_option("--profile", g.profile, "Configuration profile to use");
  app.add_option("--endpoint", g.endpoint, "Manager URL (overrides profile and environment)");

  auto* version = app.add_subcommand("version", "Print the version of bai and libbai");
  version->callback([&] { action = [&] { return RunVersion(ctx); }; });

  auto* config = app.add_subcommand("config", "Show and change settings");
  config->require_subcommand(0, 1);
  config->callback([&] {
    if (!action) action = [&] { return RunConfigList(ctx); };
  });
  auto* config_list =
      config->add_subcommand("list", "Show every setting, its source and the server");
  config_list->callback([&] { action = [&] { return RunConfigList(ctx); }; });
  ConfigGetOptions get_options;
  auto* config_get = config->add_subcommand("get", "Print one setting");
  config_get->add_option("KEY", get_options.key, "Setting name")->required();
  config_get->add_flag("--reveal", get_options.reveal, "Print a secret in clear");
  config_get->callback([&] { action = [&] { return RunConfigGet(get_options, ctx); }; });
  ConfigSetOptions set_options;
  std::string set_value;
  auto* config_set = config->add_subcommand(
      "set", "Store a setting in the profile (secrets are read from a prompt or stdin)");
  config_set->add_option("KEY", set_options.key, "Setting name")->required();
  auto* value_opt = config_set->add_option("VALUE", set_value, "Value (not for secrets)");
  config_set->callback([&] {
    if (value_opt->count() > 0) set_options.value = set_value;
    action = [&] { return RunConfigSet(set_options, ctx); };
  });

  ApiOptions api_options;
  auto* api = app.add_subcommand("api", "Send a raw signed request and print the response body");
  api->add_option("METHOD", api_options.method, "HTTP method (GET, POST, …)")->required();
  api->add_option("PATH", api_options.path, "Path and query, e.g. /auth?echo=hi")->required();
  api->add_option("-d,--data", api_options.data, "Request body: JSON, @FILE, or @- for stdin");
  api->add_option("-H,--header", api_options.headers, "Extra header 'Name: value' (repeatable)")
      ->allow_extra_args(false);
  api->add_flag("--anonymous", api_options.anonymous, "Send the request unsigned");
  api->callback([&] { action = [&] { return RunApi(api_options, ctx); }; });

  RunOptions run_options;
  auto* run = app.add_subcommand(
      "run", "Run a batch job and exit with its exit code: bai run IMAGE -- CMD ARG…");
  run->add_option("IMAGE", run_options.image, "Image name or alias")->required();
  run->add_option("COMMAND", run_options.command, "The job's command, after --");
  run->add_option("-c,--code", run_options.code,
                  "Run CODE in the image's interpreter instead (query mode; '-' reads stdin)");
  run->add_option("--name", run_options.name, "Session name (default: run-XXXXXXXX)");
  // One value per flag, so `-r cpu=2 IMAGE` does not swallow the image.
  run->add_option("-r,--resource", run_options.resources, "Resource: SLOT=AMOUNT (repeatable)")
      ->allow_extra_args(false);
  run->add_option("-e,--env", run_options.env, "Environment variable KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--group", run_options.group, "Project (default: the configured group)");
  run->add_option("--scaling-group", run_options.scaling_group, "Resource group");
  run->add_option("--timeout", run_options.batch_timeout, "Stop the job after SECONDS")
      ->check(CLI::PositiveNumber);
  run->add_flag("--detach", run_options.detach, "Queue the job, print its session id, return");
  run->callback([&] { action = [&] { return RunRun(run_options, ctx); }; });

  std::string logs_session;
  auto* logs = app.add_subcommand("logs", "Print a session's output");
  logs->add_option("SESSION", logs_session, "Session id, name or unique prefix")->required();
  logs->callback([&] { action = [&] { return RunLogs(logs_session, ctx); }; });

  std::vector<std::string> rm_sessions;
  bool rm_forced = false;
  auto* rm = app.add_subcommand("rm", "Destroy sessions");
  rm->add_option("SESSION", rm_sessions, "Session ids, names or unique prefixes")->required();
  rm->add_flag("--force", rm_forced, "Destroy even if the kernel does not answer");
  rm->callback([&] { action = [&] { return RunRm(rm_sessions, rm_forced, ctx); }; });

  std::string info_session;
  auto* session = app.add_subcommand("session", "Compute sessions");
  session->require_subcommand(1);
  auto* session_info = session->add_subcommand("info", "Show a session");
  session_info->add_option("SESSION", info_session, "Session id, name or unique prefix")
      ->required();
  session_info->callback([&] { action = [&] { return RunSessionInfo(info_session, ctx); }; });
  CommitOptions commit_options;
  auto* session_commit = session->add_subcommand(
      "commit", "Archive a running session's files (/home/work, /tmp) into a tar on its agent");
  session_commit->add_option("SESSION", commit_options.session, "Session id, name or unique prefix")
      ->required();
  session_commit->add_option("--filename", commit_options.filename,
                             "Archive file name (default: SESSION-TIME.tar)");
  session_commit->add_flag("--wait", commit_options.wait,
                           "Wait until it is written; exit 1 if it failed");
  session_commit->callback([&] { action = [&] { return RunSessionCommit(commit_options, ctx); }; });

  std::string shell;
  auto* completion = app.add_subcommand("completion", "Print a shell completion script");
  completion->add_option("SHELL", shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  completion->callback([&] { action = [&] { return RunCompletion(shell, Describe(app), ctx); }; });

  std::string topic;
  auto* help = app.add_subcommand("help", "Help topics: exit-codes, environment");
  help->add_option("TOPIC", topic, "exit-codes or environment");
  help->callback([&] {
    action = [&]() -> int {
      if (topic == "exit-codes") {
        ctx.out() << ExitCodesHelp();
      } else if (topic == "environment") {
        ctx.out() << kEnvironmentHelp;
      } else if (topic.empty()) {
        ctx.out() << app.help();
      } else {
        ctx.err() << "error: unknown help topic \"" << topic << "\" (exit-codes, environment)\n";
        return kExitUsage;
      }
      return 0;
    };
  });

  try {
    app.parse(argc, argv);
  } catch (CLI::CallForHelp const&) {
    // --help on the innermost subcommand that was named.
    CLI::App const* target = &app;
    while (!target->get_subcommands().empty()) target = target->get_subcommands().front();
    out << target->help();
    return 0;
  } catch (CLI::CallForAllHelp const&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (CLI::ParseError const& e) {
    err << "error: " << e.what() << "\n";
    CLI::App const* target = &app;
    while (!target->get_subcommands().empty()) target = target->get_subcommands().front();
    err << "Run '" << (target == &app ? std::string("bai") : "bai " + target->get_name())
        << " --help' for usage.\n";
    return kExitUsage;
  }
  if (!action) {
    out << app.help();
    return 0;
  }
  return action();
}

}  // namespace bai::cli
