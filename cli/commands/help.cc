// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/help.h"

#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>

#include <ostream>
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

}  // namespace

void AddHelpCommands(CommandSet& set) {
  auto& topic = set.Keep<std::string>();
  auto* help = set.root().add_subcommand("help", "Help topics: exit-codes, environment");
  help->add_option("TOPIC", topic, "exit-codes or environment");
  set.OnRun(help, [&set, &topic]() -> int {
    Context& ctx = set.ctx();
    if (topic == "exit-codes") {
      ctx.out() << ExitCodesHelp();
    } else if (topic == "environment") {
      ctx.out() << kEnvironmentHelp;
    } else if (topic.empty()) {
      ctx.out() << set.root().help();
    } else {
      ctx.err() << "error: unknown help topic \"" << topic << "\" (exit-codes, environment)\n";
      return kExitUsage;
    }
    return 0;
  });
}

}  // namespace bai::cli
