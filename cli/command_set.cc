// SPDX-License-Identifier: Apache-2.0
#include "cli/command_set.h"

#include <CLI/CLI.hpp>

namespace bai::cli {

void CommandSet::OnRun(CLI::App* command, std::function<int()> run) {
  command->callback([this, run = std::move(run)] { action_ = run; });
}

void CommandSet::OnRunDefault(CLI::App* command, std::function<int()> run) {
  // CLI11 runs a verb's callback before its noun's.
  command->callback([this, run = std::move(run)] {
    if (!action_) action_ = run;
  });
}

}  // namespace bai::cli
