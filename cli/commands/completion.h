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
  /// What its arguments name, for `bai __complete KIND`: sessions, folders, session-places,
  /// folder-places (NAME: plus local paths), or "".
  std::string names;
  std::vector<CommandNode> children;
};

/// `bai completion bash|zsh|fish`: prints a completion script for the shell.
int RunCompletion(std::string const& shell, CommandNode const& root, Context& ctx);

/// `bai __complete KIND` (hidden): the names a completion script offers, one per line (live
/// sessions, folders; "NAME:" for the places of the cp commands); nothing on any error.
int RunCompletionNames(std::string const& kind, Context& ctx);

/// `bai completion SHELL`, generated from the whole tree as parsed.
void AddCompletionCommands(CommandSet& set);

}  // namespace bai::cli
