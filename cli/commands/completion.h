// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

#include <string>
#include <vector>

namespace bai::cli {

/// The command tree as completion sees it (built from the parser, so it never goes stale).
struct CommandNode {
  std::string name;
  std::vector<std::string> flags;  ///< "--output", "-o", …
  std::vector<CommandNode> children;
};

/// `bai completion bash|zsh|fish`: prints a completion script for the shell.
int RunCompletion(std::string const& shell, CommandNode const& root, Context& ctx);

/// `bai completion SHELL`, generated from the whole tree as parsed.
void AddCompletionCommands(CommandSet& set);

}  // namespace bai::cli
