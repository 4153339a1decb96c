// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

#include <optional>
#include <string>

namespace bai::cli {

struct ConfigGetOptions {
  std::string key;
  bool reveal = false;  ///< print a secret instead of its mask
};
struct ConfigSetOptions {
  std::string key;
  std::optional<std::string> value;  ///< absent for secrets: read from a prompt or stdin
};

/// `bai config list`: every resolved setting with its source (secret masked), the profile, and
/// the server's and the negotiated API version.
int RunConfigList(Context& ctx);
/// `bai config get KEY`.
int RunConfigGet(ConfigGetOptions const& options, Context& ctx);
/// `bai config set KEY [VALUE]`: secrets never come from argv.
int RunConfigSet(ConfigSetOptions const& options, Context& ctx);

/// `bai config [list|get|set]`.
void AddConfigCommands(CommandSet& set);
}  // namespace bai::cli
