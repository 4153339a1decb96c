// SPDX-License-Identifier: Apache-2.0
// `bai admin domain|project`: the organization (AdminClient).
#include "bai/admin_client.h"

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

// A project by id or name (within `domain`, "" = the caller's view).
StatusOr<protocol::Group> FindProject(AdminClient& a, std::string const& ref,
                                      std::string const& domain) {
  auto all = a.Projects(domain);
  if (!all.ok()) return all.status();
  std::vector<protocol::Group> named;
  for (auto const& g : *all) {
    if (g.id == ref) return g;
    if (g.name == ref) named.push_back(g);
  }
  if (named.size() == 1) return named.front();
  if (named.empty()) return Status(StatusCode::kNotFound, "no project " + ref);
  return Status(StatusCode::kInvalidArgument,
                "several domains have a project " + ref + ": give --domain or its id");
}

namespace {

// A domain or project as -o json shows it: its slot map and folder hosts as objects, not the JSON
// text GraphQL carries them in (issue 43, item 11).
json DomainJson(protocol::Domain const& d) {
  json j = json::parse(protocol::EncodeDomain(d));
  j["total_resource_slots"] = SlotsObject(d.total_resource_slots);
  j["allowed_vfolder_hosts"] = JsonOrText(d.allowed_vfolder_hosts);
  return j;
}

json ProjectJson(protocol::Group const& g) {
  json j = json::parse(protocol::EncodeGroup(g));
  j["total_resource_slots"] = SlotsObject(g.total_resource_slots);
  j["allowed_vfolder_hosts"] = JsonOrText(g.allowed_vfolder_hosts);
  return j;
}

// ---- domains -------------------------------------------------------------------------------

struct DomainCreateOptions {
  protocol::Domain d;
  std::string slots;
};

struct DomainUpdateOptions {
  std::string name, description, slots, registries, status;
  CLI::Option *description_given = nullptr, *registries_given = nullptr;
};

struct DomainRemoveOptions {
  std::string name;
  bool purge = false;
};

// bai admin domain ls
Status RunDomainList(Context& ctx, AdminClient& a) {
  auto all = a.Domains();
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& d : *all) items.push_back(DomainJson(d));
    PrintJson(ctx, {{"domains", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{
      {"NAME", "ACTIVE", "TOTAL SLOTS", "RESOURCE GROUPS", "DESCRIPTION"}};
  for (auto const& d : *all) {
    std::string groups;
    for (auto const& g : d.scaling_groups) groups += (groups.empty() ? "" : ",") + g;
    rows.push_back({d.name, YesNo(d.is_active), SlotsWords(d.total_resource_slots),
                    groups.empty() ? "-" : groups, d.description});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin domain create
Status RunDomainCreate(DomainCreateOptions& c, Context& ctx, AdminClient& a) {
  auto slots = SlotsFlag("--slots", c.slots);
  if (!slots.ok()) return slots.status();
  c.d.total_resource_slots = *slots;
  auto made = a.CreateDomain(c.d);
  if (!made.ok()) return made.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"domain", DomainJson(*made)}});
  } else {
    ctx.out() << "created domain " << made->name << "\n";
  }
  return Status();
}

// A comma-separated list of registry names ("" for none).
std::vector<std::string> RegistryList(std::string const& text) {
  std::vector<std::string> out;
  std::string item;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (text[i] != ' ') {
      item += text[i];
    }
  }
  return out;
}

// bai admin domain update
Status RunDomainUpdate(DomainUpdateOptions& up, Context& ctx, AdminClient& a) {
  DomainUpdate u;
  if (up.description_given->count() > 0) u.description = up.description;
  if (!up.slots.empty()) {
    auto slots = SlotsFlag("--slots", up.slots);
    if (!slots.ok()) return slots.status();
    u.total_resource_slots = *slots;
  }
  if (!up.status.empty()) u.is_active = up.status == "active";
  if (up.registries_given->count() > 0) u.allowed_docker_registries = RegistryList(up.registries);
  auto changed = a.ModifyDomain(up.name, u);
  if (!changed.ok()) return changed.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"domain", DomainJson(*changed)}});
  } else {
    ctx.out() << "updated domain " << changed->name << "\n";
  }
  return Status();
}

// bai admin domain rm
Status RunDomainRemove(DomainRemoveOptions& r, Context& ctx, AdminClient& a) {
  auto s = a.DeleteDomain(r.name, r.purge);
  if (s.ok()) PrintDone(ctx, (r.purge ? "purged domain " : "deactivated domain ") + r.name);
  return s;
}

void AddDomains(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("domain", "Domains (superadmins)");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List domains");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunDomainList(ctx, a); });
  auto& c = set.Keep<DomainCreateOptions>();
  auto* create = noun->add_subcommand("create", "Create a domain");
  create->alias("add");
  create->add_option("NAME", c.d.name, "Domain name")->required();
  create->add_option("-d,--description", c.d.description, "Description");
  create->add_option("--slots", c.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  auto& registries = set.Keep<std::string>();
  create->add_option("--allowed-docker-registries", registries,
                     "Registries its sessions' images may come from (comma-separated; default: "
                     "any)");
  OnAdminRun(set, create, [&c, &ctx, &registries](AdminClient& a) {
    c.d.allowed_docker_registries = RegistryList(registries);
    return RunDomainCreate(c, ctx, a);
  });
  auto& up = set.Keep<DomainUpdateOptions>();
  auto* update = noun->add_subcommand("update", "Change a domain (only the flags given)");
  update->add_option("NAME", up.name, "Domain name")->required();
  up.description_given = update->add_option("-d,--description", up.description, "Description");
  update->add_option("--slots", up.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  update->add_option("--status", up.status, "active, inactive")
      ->check(CLI::IsMember({"active", "inactive"}));
  up.registries_given = update->add_option(
      "--allowed-docker-registries", up.registries,
      "Registries its sessions' images may come from, comma-separated (\"\": any)");
  OnAdminRun(set, update, [&up, &ctx](AdminClient& a) { return RunDomainUpdate(up, ctx, a); });
  auto& r = set.Keep<DomainRemoveOptions>();
  auto* rm = noun->add_subcommand("rm", "Deactivate a domain (--purge: delete it, when empty)");
  rm->add_option("NAME", r.name, "Domain name")->required();
  rm->add_flag("--purge", r.purge, "Delete it for good");
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunDomainRemove(r, ctx, a); });
}

// ---- projects ------------------------------------------------------------------------------

struct ProjectCreateOptions {
  protocol::Group g;
  std::string slots;
};

struct ProjectRemoveOptions {
  std::string ref, domain;
  bool purge = false;
};

// bai admin project ls
Status RunProjectList(std::string& domain, Context& ctx, AdminClient& a) {
  auto all = a.Projects(domain);
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& g : *all) items.push_back(ProjectJson(g));
    PrintJson(ctx, {{"projects", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{
      {"NAME", "DOMAIN", "ACTIVE", "TOTAL SLOTS", "ID", "DESCRIPTION"}};
  for (auto const& g : *all) {
    rows.push_back({g.name, g.domain_name, YesNo(g.is_active), SlotsWords(g.total_resource_slots),
                    g.id, g.description});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin project create
Status RunProjectCreate(ProjectCreateOptions& c, Context& ctx, AdminClient& a) {
  auto slots = SlotsFlag("--slots", c.slots);
  if (!slots.ok()) return slots.status();
  c.g.total_resource_slots = *slots;
  auto made = a.CreateProject(c.g);
  if (!made.ok()) return made.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"project", ProjectJson(*made)}});
  } else {
    ctx.out() << "created project " << made->name << " (" << made->id << ") in "
              << made->domain_name << "\n";
  }
  return Status();
}

// bai admin project rm
Status RunProjectRemove(ProjectRemoveOptions& r, Context& ctx, AdminClient& a) {
  auto p = FindProject(a, r.ref, r.domain);
  if (!p.ok()) return p.status();
  auto s = a.DeleteProject(p->id, r.purge);
  if (s.ok()) PrintDone(ctx, (r.purge ? "purged project " : "deactivated project ") + r.ref);
  return s;
}

void AddProjects(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("project", "Projects (groups) and their members");
  noun->alias("group");
  noun->require_subcommand(1);
  auto& domain = set.Keep<std::string>();
  auto* ls = noun->add_subcommand("ls", "List projects");
  ls->alias("list");
  ls->add_option("--domain", domain, "Only this domain's");
  OnAdminRun(set, ls, [&domain, &ctx](AdminClient& a) { return RunProjectList(domain, ctx, a); });
  auto& c = set.Keep<ProjectCreateOptions>();
  auto* create = noun->add_subcommand("create", "Create a project");
  create->alias("add");
  create->add_option("NAME", c.g.name, "Project name")->required();
  create->add_option("--domain", c.g.domain_name, "Its domain")->default_val("default");
  create->add_option("-d,--description", c.g.description, "Description");
  create->add_option("--slots", c.slots, "Total resource slots: cpu=8,mem=32g or JSON");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunProjectCreate(c, ctx, a); });
  auto& r = set.Keep<ProjectRemoveOptions>();
  auto* rm = noun->add_subcommand("rm", "Deactivate a project (--purge: delete it, when empty)");
  rm->add_option("PROJECT", r.ref, "Name or id")->required();
  rm->add_option("--domain", r.domain, "Its domain (when the name is in several)");
  rm->add_flag("--purge", r.purge, "Delete it for good");
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunProjectRemove(r, ctx, a); });
}

}  // namespace

void AddOrganizationAdminCommands(CommandSet& set, CLI::App& admin) {
  AddDomains(set, admin);
  AddProjects(set, admin);
}

}  // namespace bai::cli
