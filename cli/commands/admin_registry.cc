// SPDX-License-Identifier: Apache-2.0
// `bai admin registry add|ls|info|update|rm`: the container registries a cluster pulls images
// from (issue 46). Passwords come from stdin or a prompt, never from argv, and are never shown.
#include "bai/admin_client.h"
#include "bai/protocol/cluster_wire.h"

#include "cli/commands/admin_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace bai::cli {

namespace {

using nlohmann::json;

struct RegistryOptions {
  std::string hostname, url, type, project, username;
  bool password_stdin = false, no_ssl_verify = false, ssl_verify = false;
};

json RegistryJson(protocol::ContainerRegistryEntry const& r) {
  return json::parse(protocol::EncodeContainerRegistry(r));
}

// The props a flag set gives; the password read from stdin (--password-stdin) or, for a new
// user name on a terminal, asked for.
StatusOr<AdminClient::RegistryProps> Props(RegistryOptions const& o, Context& ctx, bool creating) {
  AdminClient::RegistryProps p;
  if (!o.url.empty()) p.url = o.url;
  if (!o.type.empty()) p.type = o.type;
  if (!o.project.empty() || creating) p.project = o.project;
  if (!o.username.empty()) p.username = o.username;
  if (o.no_ssl_verify) p.ssl_verify = false;
  if (o.ssl_verify) p.ssl_verify = true;
  if (o.password_stdin || (!o.username.empty() && ctx.stdin_tty())) {
    auto secret = ReadSecret(ctx, "password for " + o.username + " at " + o.hostname + ": ");
    if (!secret || secret->empty()) {
      return Status(StatusCode::kInvalidArgument, o.password_stdin
                                                      ? "--password-stdin: no password on stdin"
                                                      : "no password given");
    }
    p.password = *secret;
  } else if (creating && !o.username.empty()) {
    return UsageError(
        "--username needs its password: pipe it to --password-stdin (never on the command "
        "line)");
  }
  return p;
}

Status RunRegistryAdd(RegistryOptions const& o, Context& ctx, AdminClient& a) {
  if (o.url.empty()) return Status(StatusCode::kInvalidArgument, "--url is required");
  auto props = Props(o, ctx, true);
  if (!props.ok()) return props.status();
  if (!props->type) props->type = "docker";
  auto s = a.CreateRegistry(o.hostname, *props);
  if (s.ok()) PrintDone(ctx, "registry " + o.hostname + " (" + o.url + ")");
  return s;
}

Status RunRegistryUpdate(RegistryOptions const& o, Context& ctx, AdminClient& a) {
  auto props = Props(o, ctx, false);
  if (!props.ok()) return props.status();
  auto s = a.ModifyRegistry(o.hostname, *props);
  if (s.ok()) PrintDone(ctx, "updated registry " + o.hostname);
  return s;
}

Status RunRegistryList(Context& ctx, AdminClient& a) {
  auto all = a.Registries();
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& r : *all) items.push_back(RegistryJson(r));
    PrintJson(ctx, {{"registries", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{
      {"HOSTNAME", "URL", "TYPE", "PROJECT", "USERNAME", "PASSWORD", "SSL-VERIFY"}};
  for (auto const& r : *all) {
    std::string projects;
    for (auto const& p : r.project) projects += (projects.empty() ? "" : ",") + p;
    rows.push_back({r.hostname, r.url, r.type, projects.empty() ? "-" : projects,
                    r.username.value_or("-"), r.has_password ? "set" : "-",
                    r.ssl_verify ? "yes" : "no"});
  }
  PrintTable(ctx, rows);
  return Status();
}

Status RunRegistryInfo(std::string const& hostname, Context& ctx, AdminClient& a) {
  auto all = a.Registries();
  if (!all.ok()) return all.status();
  for (auto const& r : *all) {
    if (r.hostname != hostname) continue;
    if (ctx.json()) {
      PrintJson(ctx, RegistryJson(r));
      return Status();
    }
    std::string projects;
    for (auto const& p : r.project) projects += (projects.empty() ? "" : ",") + p;
    PrintTable(ctx, {{"hostname", r.hostname},
                     {"url", r.url},
                     {"type", r.type},
                     {"project", projects.empty() ? "-" : projects},
                     {"username", r.username.value_or("-")},
                     {"password", r.has_password ? "set (not shown)" : "-"},
                     {"ssl_verify", r.ssl_verify ? "yes" : "no"}});
    return Status();
  }
  return Status(StatusCode::kNotFound, "no container registry " + hostname);
}

void AddRegistryFlags(CLI::App* cmd, RegistryOptions& o, bool creating) {
  cmd->add_option("HOSTNAME", o.hostname,
                  "The registry as image names begin with it (127.0.0.1:5000, cr.example.org)")
      ->required();
  auto* url = cmd->add_option("--url", o.url, "http(s)://HOST[:PORT] where it answers");
  if (creating) url->required();
  cmd->add_option("--type", o.type, "docker (default) or harbor2");
  cmd->add_option("--project", o.project,
                  "Only this project's repositories (harbor2: the Harbor project)");
  cmd->add_option("--username", o.username, "The account (anonymous without)");
  cmd->add_flag("--password-stdin", o.password_stdin,
                "Read the password from stdin (else asked for on a terminal)");
  cmd->add_flag("--no-ssl-verify", o.no_ssl_verify, "Do not verify its TLS certificate");
  if (!creating) cmd->add_flag("--ssl-verify", o.ssl_verify, "Verify its TLS certificate again");
}

}  // namespace

void AddRegistryAdminCommands(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("registry", "Container registries images are pulled from");
  noun->require_subcommand(1);
  auto& add_o = set.Keep<RegistryOptions>();
  auto* add = noun->add_subcommand("add", "Register a container registry (then: image rescan)");
  AddRegistryFlags(add, add_o, true);
  OnAdminRun(set, add, [&add_o, &ctx](AdminClient& a) { return RunRegistryAdd(add_o, ctx, a); });
  auto* ls = noun->add_subcommand("ls", "List the registries (passwords never shown)");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunRegistryList(ctx, a); });
  auto& info_name = set.Keep<std::string>();
  auto* info = noun->add_subcommand("info", "One registry");
  info->add_option("HOSTNAME", info_name, "The registry")->required();
  OnAdminRun(set, info,
             [&info_name, &ctx](AdminClient& a) { return RunRegistryInfo(info_name, ctx, a); });
  auto& up_o = set.Keep<RegistryOptions>();
  auto* update = noun->add_subcommand("update", "Change a registry's URL, type, account or TLS");
  AddRegistryFlags(update, up_o, false);
  OnAdminRun(set, update,
             [&up_o, &ctx](AdminClient& a) { return RunRegistryUpdate(up_o, ctx, a); });
  AddRemoveCommand(
      set, *noun, "Forget a registry (and the images a rescan found in it)", "HOSTNAME",
      "The registry", "removed registry",
      [](AdminClient& a, std::string const& hostname) { return a.DeleteRegistry(hostname); });
}

}  // namespace bai::cli
