// SPDX-License-Identifier: Apache-2.0
// `bai admin policy|user-policy|project-policy|resource-group`: what keys, users and projects
// may use (AdminClient).
#include "bai/admin_client.h"
#include "bai/protocol/resource.h"

#include "cli/commands/admin_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace bai::cli {

using nlohmann::json;

namespace {

// ---- keypair resource policies -------------------------------------------------------------

struct PolicyFlags {
  std::string name, slots, unspecified, idle, lifetime;
  std::optional<std::int64_t> max_sessions, max_pending, max_containers;
};

void AddPolicyFlags(CLI::App* cmd, PolicyFlags& f) {
  cmd->add_option("NAME", f.name, "Policy name")->required();
  cmd->add_option("--slots", f.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  cmd->add_option("--unspecified", f.unspecified,
                  "Slots not in --slots: unlimited or limited (none)");
  cmd->add_option("--max-sessions", f.max_sessions, "Sessions at once (0: no limit)");
  cmd->add_option("--max-pending", f.max_pending, "Sessions waiting at once");
  cmd->add_option("--max-containers", f.max_containers, "Containers per session");
  cmd->add_option("--idle-timeout", f.idle, "End sessions idle this long (30m, 2h; 0: never)");
  cmd->add_option("--max-lifetime", f.lifetime, "End sessions after this long (0: never)");
}

// The flags given, applied to `p`; a usage error names the flag.
Status ApplyPolicyFlags(PolicyFlags const& f, protocol::KeypairResourcePolicy& p) {
  if (!f.slots.empty()) {
    auto slots = SlotsFlag("--slots", f.slots);
    if (!slots.ok()) return slots.status();
    p.total_resource_slots = *slots;
  }
  if (!f.unspecified.empty()) {
    if (f.unspecified != "limited" && f.unspecified != "unlimited") {
      return UsageError("--unspecified: limited or unlimited");
    }
    p.default_for_unspecified = f.unspecified == "limited" ? "LIMITED" : "UNLIMITED";
  }
  if (f.max_sessions) p.max_concurrent_sessions = *f.max_sessions;
  if (f.max_pending) p.max_pending_session_count = *f.max_pending;
  if (f.max_containers) p.max_containers_per_session = *f.max_containers;
  for (auto [flag, text, target] :
       {std::tuple{"--idle-timeout", &f.idle, &p.idle_timeout},
        std::tuple{"--max-lifetime", &f.lifetime, &p.max_session_lifetime}}) {
    if (text->empty()) continue;
    auto seconds = protocol::ParseDurationSeconds(*text);  // 0: never, as the help says
    if (!seconds || *seconds < 0) {
      return UsageError(std::string(flag) + " " + *text +
                        ": expected a duration such as 30m, 2h, 1d (or seconds; 0: never)");
    }
    *target = *seconds;
  }
  return Status();
}

void PrintPolicies(Context& ctx, std::vector<protocol::KeypairResourcePolicy> const& all) {
  if (ctx.json()) {
    json items = json::array();
    for (auto const& p : all) {
      // Objects, not the JSON text GraphQL carries them in (issue 43, item 11).
      json j = internal::KeypairResourcePolicyToJson(p);
      j["total_resource_slots"] = SlotsObject(p.total_resource_slots);
      j["allowed_vfolder_hosts"] = JsonOrText(p.allowed_vfolder_hosts);
      if (p.max_pending_session_resource_slots) {
        j["max_pending_session_resource_slots"] =
            SlotsObject(*p.max_pending_session_resource_slots);
      }
      items.push_back(std::move(j));
    }
    PrintJson(ctx, {{"policies", items}});
    return;
  }
  std::vector<std::vector<std::string>> rows{{"NAME", "TOTAL SLOTS", "UNSPECIFIED", "SESSIONS",
                                              "PENDING", "CONTAINERS", "IDLE", "LIFETIME"}};
  auto secs = [](std::int64_t s) { return s == 0 ? std::string("-") : std::to_string(s) + "s"; };
  for (auto const& p : all) {
    rows.push_back(
        {p.name, SlotsWords(p.total_resource_slots),
         p.default_for_unspecified == "LIMITED" ? "none" : "unlimited",
         p.max_concurrent_sessions ? std::to_string(p.max_concurrent_sessions) : "-",
         p.max_pending_session_count ? std::to_string(*p.max_pending_session_count) : "-",
         std::to_string(p.max_containers_per_session), secs(p.idle_timeout),
         secs(p.max_session_lifetime)});
  }
  PrintTable(ctx, rows);
}

// bai admin policy ls
Status RunPolicyList(Context& ctx, AdminClient& a) {
  auto all = a.KeypairPolicies();
  if (!all.ok()) return all.status();
  PrintPolicies(ctx, *all);
  return Status();
}

// bai admin policy create
Status RunPolicyCreate(PolicyFlags& c, Context& ctx, AdminClient& a) {
  protocol::KeypairResourcePolicy p;
  p.name = c.name;
  p.max_concurrent_sessions = 30;  // 24.09's CLI default
  if (auto s = ApplyPolicyFlags(c, p); !s.ok()) return s;
  auto made = a.CreateKeypairPolicy(p);
  if (!made.ok()) return made.status();
  PrintPolicies(ctx, {*made});
  return Status();
}

// bai admin policy update
Status RunPolicyUpdate(PolicyFlags& u, Context& ctx, AdminClient& a) {
  auto all = a.KeypairPolicies();
  if (!all.ok()) return all.status();
  auto it = std::find_if(all->begin(), all->end(), [&](auto const& p) { return p.name == u.name; });
  if (it == all->end()) return Status(StatusCode::kNotFound, "no policy " + u.name);
  protocol::KeypairResourcePolicy p = *it;
  if (auto s = ApplyPolicyFlags(u, p); !s.ok()) return s;
  if (auto s = a.ModifyKeypairPolicy(p); !s.ok()) return s;
  PrintPolicies(ctx, {p});
  return Status();
}

void AddPolicies(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("policy", "Keypair resource policies (what a key may use)");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List keypair resource policies");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunPolicyList(ctx, a); });
  auto& c = set.Keep<PolicyFlags>();
  auto* create = noun->add_subcommand("create", "Create a keypair resource policy");
  create->alias("add");
  AddPolicyFlags(create, c);
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunPolicyCreate(c, ctx, a); });
  auto& u = set.Keep<PolicyFlags>();
  auto* update = noun->add_subcommand("update", "Change a policy (only the flags given)");
  AddPolicyFlags(update, u);
  OnAdminRun(set, update, [&u, &ctx](AdminClient& a) { return RunPolicyUpdate(u, ctx, a); });
  AddRemoveCommand(
      set, *noun, "Delete a policy no keypair uses", "NAME", "Policy name", "deleted policy",
      [](AdminClient& a, std::string const& name) { return a.DeleteKeypairPolicy(name); });
}

// ---- user and project resource policies ---------------------------------------------------

// An owner's folders: how many, and their quota together. `user`: user policies, else
// project policies.
void PrintScopePolicies(Context& ctx, bool user,
                        std::vector<protocol::ScopeResourcePolicy> const& all) {
  if (ctx.json()) {
    json items = json::array();
    for (auto const& p : all) items.push_back(internal::ScopeResourcePolicyToJson(p, user));
    PrintJson(ctx, {{"policies", items}});
    return;
  }
  std::vector<std::vector<std::string>> rows{{"NAME", "FOLDERS", "QUOTA (ALL FOLDERS)"}};
  for (auto const& p : all) {
    // 0 (and 23.09's -1) is no limit.
    rows.push_back({p.name, p.max_vfolder_count > 0 ? std::to_string(p.max_vfolder_count) : "-",
                    p.max_quota_scope_size > 0
                        ? HumanBytes(static_cast<double>(p.max_quota_scope_size))
                        : "-"});
  }
  PrintTable(ctx, rows);
}

// bai admin user-policy|project-policy ls
Status RunScopePolicyList(bool user, Context& ctx, AdminClient& a) {
  auto all = a.ScopePolicies(user);
  if (!all.ok()) return all.status();
  PrintScopePolicies(ctx, user, *all);
  return Status();
}

struct ScopePolicyOptions {
  std::string name, quota;
  std::optional<std::int64_t> folders;
};

// The flags given, applied to `p`.
Status ApplyScopePolicyFlags(ScopePolicyOptions const& f, protocol::ScopeResourcePolicy& p) {
  if (f.folders) p.max_vfolder_count = *f.folders;
  if (f.quota.empty()) return Status();
  auto size =
      f.quota == "none" ? protocol::ParseBinarySize("0") : protocol::ParseBinarySize(f.quota);
  if (!size.ok() || size->is_unlimited()) {
    return UsageError("--quota: a size such as 100g (0 or none: no quota), not '" + f.quota + "'");
  }
  p.max_quota_scope_size =
      static_cast<std::int64_t>(size->units() / protocol::Decimal::kUnitsPerOne);
  return Status();
}

// The policies named `name` (none or one).
StatusOr<std::vector<protocol::ScopeResourcePolicy>> ScopePoliciesNamed(AdminClient& a, bool user,
                                                                        std::string const& name) {
  auto all = a.ScopePolicies(user);
  if (!all.ok()) return all.status();
  std::vector<protocol::ScopeResourcePolicy> named;
  for (auto const& q : *all) {
    if (q.name == name) named.push_back(q);
  }
  return named;
}

// bai admin user-policy|project-policy create|update: prints the policy as the server keeps it.
Status RunScopePolicySet(ScopePolicyOptions& f, bool user, bool create, Context& ctx,
                         AdminClient& a) {
  protocol::ScopeResourcePolicy p;
  p.name = f.name;
  if (!create) {
    auto named = ScopePoliciesNamed(a, user, f.name);
    if (!named.ok()) return named.status();
    if (named->empty()) return Status(StatusCode::kNotFound, "no policy " + f.name);
    p = named->front();
  }
  if (auto s = ApplyScopePolicyFlags(f, p); !s.ok()) return s;
  auto s = create ? a.CreateScopePolicy(p, user) : a.ModifyScopePolicy(p, user);
  if (!s.ok()) return s;
  auto shown = ScopePoliciesNamed(a, user, f.name);
  if (!shown.ok()) return shown.status();
  // A manager may take a field and keep nothing (23.09 stores no max_vfolder_count).
  if (!shown->empty() && f.folders && shown->front().max_vfolder_count != *f.folders) {
    ctx.err() << "bai: warning: the manager kept no folder limit for " << f.name << " (it answers "
              << shown->front().max_vfolder_count
              << "); this server version does not enforce --max-folders\n";
  }
  PrintScopePolicies(ctx, user, *shown);
  return Status();
}

void AddScopePolicies(CommandSet& set, CLI::App& admin, bool user) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand(
      user ? "user-policy" : "project-policy",
      user ? "User resource policies: how many folders a user may own, and their quota together"
           : "Project resource policies: how many folders a project may own, and their quota "
             "together");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List them");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx, user](AdminClient& a) { return RunScopePolicyList(user, ctx, a); });
  for (bool create : {true, false}) {
    auto& f = set.Keep<ScopePolicyOptions>();
    auto* cmd = noun->add_subcommand(create ? "create" : "update",
                                     create ? "Create one" : "Change one (only the flags given)");
    if (create) cmd->alias("add");
    cmd->add_option("NAME", f.name, "Policy name")->required();
    cmd->add_option("--max-folders", f.folders, "Folders an owner may have (0: no limit)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--quota", f.quota,
                    "All of an owner's folders together, e.g. 100g (0 or none: no quota)");
    OnAdminRun(set, cmd, [&f, &ctx, user, create](AdminClient& a) {
      return RunScopePolicySet(f, user, create, ctx, a);
    });
  }
  AddRemoveCommand(
      set, *noun, "Delete a policy no one uses", "NAME", "Policy name", "deleted policy",
      [user](AdminClient& a, std::string const& name) { return a.DeleteScopePolicy(name, user); });
}

// ---- resource groups -----------------------------------------------------------------------

struct ResourceGroupAssocOptions {
  std::string group, domain, project, keypair;
};

// bai admin resource-group associate|dissociate (`on`: associate).
Status RunResourceGroupAssociate(ResourceGroupAssocOptions& o, bool on, Context& ctx,
                                 AdminClient& a) {
  std::string kind = !o.domain.empty()    ? "domain"
                     : !o.project.empty() ? "project"
                     : !o.keypair.empty() ? "keypair"
                                          : "";
  if (kind.empty()) {
    return Status(StatusCode::kInvalidArgument, "give --domain, --project or --keypair");
  }
  std::string target = kind == "domain" ? o.domain : o.keypair;
  if (kind == "project") {
    auto found = FindProject(a, o.project, "");
    if (!found.ok()) return found.status();
    target = found->id;
  }
  auto s = a.AssociateResourceGroup(o.group, kind, target, on);
  if (s.ok()) {
    PrintDone(ctx, std::string(on ? "associated " : "dissociated ") + o.group +
                       (on ? " with " : " from ") + kind + " " +
                       (kind == "project" ? o.project : target));
  }
  return s;
}

void AddResourceGroups(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("resource-group", "Who may use which resource group");
  noun->alias("sgroup");
  noun->require_subcommand(1);
  for (bool on : {true, false}) {
    auto& o = set.Keep<ResourceGroupAssocOptions>();
    auto* cmd =
        noun->add_subcommand(on ? "associate" : "dissociate",
                             on ? "Let a domain, project or keypair use a resource group"
                                : "Stop a domain, project or keypair using a resource group");
    cmd->add_option("GROUP", o.group, "Resource group")->required();
    auto* d = cmd->add_option("--domain", o.domain, "A domain");
    auto* p = cmd->add_option("--project", o.project, "A project (name or id)");
    auto* k = cmd->add_option("--keypair", o.keypair, "An access key");
    d->excludes(p)->excludes(k);
    p->excludes(k);
    OnAdminRun(set, cmd,
               [&o, &ctx, on](AdminClient& a) { return RunResourceGroupAssociate(o, on, ctx, a); });
  }
}

}  // namespace

void AddPolicyAdminCommands(CommandSet& set, CLI::App& admin) {
  AddPolicies(set, admin);
  AddScopePolicies(set, admin, true);
  AddScopePolicies(set, admin, false);
  AddResourceGroups(set, admin);
}

}  // namespace bai::cli
