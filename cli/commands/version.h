// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"
#include "cli/context.h"

namespace bai::cli {

/// `bai version`: the tool, library and API versions. Never touches the network.
int RunVersion(Context& ctx);

/// `bai version`.
void AddVersionCommands(CommandSet& set);
}  // namespace bai::cli
