// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the admin commands share (admin*.cc, dotfile.cc, template.cc).

#include "bai/admin_client.h"
#include "bai/status.h"

#include "cli/command_set.h"
#include "cli/context.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <utility>

namespace bai::cli {

/// Runs `body` with an AdminClient for the configured endpoint; its error reported (exit code).
int WithAdmin(Context& ctx, std::function<Status(AdminClient&)> const& body);
/// A verb's action: `run` (a Run<Noun><Verb> over the verb's options) with an AdminClient, its
/// error reported as every command's.
inline void OnAdminRun(CommandSet& set, CLI::App* verb, std::function<Status(AdminClient&)> run) {
  set.OnRun(verb, [&ctx = set.ctx(), run = std::move(run)] { return WithAdmin(ctx, run); });
}
/// A slot map's JSON text in words ("cpu=4 mem=8g"; "-" for none).
std::string SlotsWords(std::string const& text);
/// A JSON object flag ("{\"cpu\": 4}"), or "cpu=4,mem=8g": the object's text.
StatusOr<std::string> SlotsFlag(std::string const& flag, std::string const& value);

/// A slot map the server gives as JSON text ({"cpu": "2", "mem": "4294967296"}) as `-o json`
/// prints every slot map (`bai help output`): an object of numbers (integers when whole,
/// unlimited as null). Text that is no JSON object reads as {}.
nlohmann::json SlotsObject(std::string const& text);
/// JSON text the server gives in a string (GraphQL's JSONString) as the JSON it holds; text
/// that is not JSON stays a string.
nlohmann::json JsonOrText(std::string const& text);

/// `NOUN rm ARG`: `remove(admin, ARG)`, then "DONE ARG" (PrintDone).
void AddRemoveCommand(CommandSet& set, CLI::App& noun, std::string const& help,
                      std::string const& arg, std::string const& arg_help, std::string const& done,
                      std::function<Status(AdminClient&, std::string const&)> remove);

/// A project by id or name (within `domain`, "" = the caller's view).
StatusOr<protocol::Group> FindProject(AdminClient& a, std::string const& ref,
                                      std::string const& domain);

/// The nouns of `bai admin`, one file each:
/// `domain|project` (admin_org.cc);
void AddOrganizationAdminCommands(CommandSet& set, CLI::App& admin);
/// `user|keypair` (admin_users.cc);
void AddUserAdminCommands(CommandSet& set, CLI::App& admin);
/// `policy|user-policy|project-policy|resource-group` (admin_policies.cc);
void AddPolicyAdminCommands(CommandSet& set, CLI::App& admin);
/// `image|agent|preset` (admin_cluster.cc);
void AddClusterAdminCommands(CommandSet& set, CLI::App& admin);
/// `registry` (admin_registry.cc).
void AddRegistryAdminCommands(CommandSet& set, CLI::App& admin);

}  // namespace bai::cli
