// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"

namespace bai::cli {

/// `bai help [exit-codes|environment]`.
void AddHelpCommands(CommandSet& set);

}  // namespace bai::cli
