// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_set.h"

namespace bai::cli {

/// The `admin` noun: `domain|project|user|keypair|policy` with `ls|create|update|rm|…`.
void AddAdminCommands(CommandSet& set);
/// The `user` noun (`me`) and the `keypair` noun: one's own keys, `ls|create|rm`.
void AddUserCommands(CommandSet& set);
/// The `dotfile` noun: `ls|get|set|rm`, one's own or (admins) a project's or a domain's.
void AddDotfileCommands(CommandSet& set);
/// The `template` noun: session templates, `ls|get|create|update|rm|run`.
void AddTemplateCommands(CommandSet& set);

}  // namespace bai::cli
