// SPDX-License-Identifier: Apache-2.0
// `bai admin image|agent|preset …`: the cluster's images (listed, aliased, rescanned from the
// agents' stores), its agents (listed, taken out of scheduling) and resource presets.
#include "bai/admin_client.h"
#include "bai/protocol/cluster_wire.h"
#include "bai/session_client.h"

#include "cli/commands/admin_util.h"
#include "cli/commands/session_util.h"
#include "cli/commands/vfolder.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace bai::cli {

namespace {

using nlohmann::json;

std::string Joined(std::vector<std::string> const& words) {
  std::string out;
  for (auto const& w : words) out += (out.empty() ? "" : ",") + w;
  return out.empty() ? "-" : out;
}

struct ImageAliasOptions {
  std::string alias, target, arch = "x86_64";
};

// bai admin image ls
Status RunImageList(Context& ctx, AdminClient& a) {
  auto all = a.Images();
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& i : *all) items.push_back(json::parse(protocol::EncodeImage(i)));
    PrintJson(ctx, {{"images", items}});
    return Status();
  }
  // REGISTRY says where an image comes from: a registry, "host" (a built-in whose /usr is the
  // agent host's own: no registry's image), or "local" (imported into an agent's store).
  std::vector<std::vector<std::string>> rows{
      {"NAME", "TAG", "ARCH", "REGISTRY", "SIZE", "ALIASES", "AGENTS"}};
  bool host = false;
  for (auto const& i : *all) {
    bool is_host = i.Kind() == "host";
    host = host || is_host;
    rows.push_back({i.name, i.tag, i.architecture, is_host ? "host" : i.registry,
                    i.size_bytes > 0 ? HumanBytes(static_cast<double>(i.size_bytes)) : "-",
                    Joined(i.aliases), std::to_string(i.installed_agents.size())});
  }
  PrintTable(ctx, rows);
  if (host && ctx.stdout_tty()) {
    ctx.err() << "host: a built-in image made of the agent host's own /usr (not a registry's)\n";
  }
  return Status();
}

// bai admin image alias
Status RunImageAlias(ImageAliasOptions& al, Context& ctx, AdminClient& a) {
  auto s = a.AliasImage(al.alias, al.target, al.arch);
  if (s.ok()) PrintDone(ctx, "alias " + al.alias + " -> " + al.target);
  return s;
}

// bai admin image dealias
Status RunImageDealias(ImageAliasOptions& de, Context& ctx, AdminClient& a) {
  auto s = a.DealiasImage(de.alias, de.arch);
  if (s.ok()) PrintDone(ctx, "removed alias " + de.alias);
  return s;
}

// bai admin image forget REFERENCE
Status RunImageForget(ImageAliasOptions& fo, Context& ctx, AdminClient& a) {
  auto s = a.ForgetImage(fo.target, fo.arch);
  if (s.ok()) PrintDone(ctx, "forgot " + fo.target + " (" + fo.arch + ")");
  return s;
}

// bai admin image clear REGISTRY
Status RunImageClear(std::string const& registry, Context& ctx, AdminClient& a) {
  auto s = a.ClearImages(registry);
  if (s.ok()) PrintDone(ctx, "forgot the images of " + registry);
  return s;
}

// Follows an image task (rescan, purge) to its end: progress on stderr (one line per unit), the
// outcome on stdout; the exit code is the task's.
int FollowImageTask(Context& ctx, Client const& client, StatusOr<std::string> const& task,
                    char const* what) {
  if (!task.ok()) return ReportError(ctx, task.status());
  auto last = SessionClient(client).FollowTask(*task, [&](TaskProgress const& p) {
    if (!p.Finished() && !p.message.empty()) {
      ctx.err() << "[" << p.current_progress << "/" << p.total_progress << "] " << p.message
                << "\n";
    }
  });
  if (!last.ok()) return ReportError(ctx, last.status());
  int code = last->Succeeded() ? kExitOk : kExitError;
  if (ctx.json()) {
    ctx.out() << json{{"task_id", *task},
                      {"status", last->event},
                      {"message", last->message},
                      {"exit_code", code}}
                     .dump()
              << "\n";
  } else if (last->Succeeded()) {
    ctx.out() << last->message << "\n";
  } else {
    ctx.err() << "error: the " << what << " failed" << (last->message.empty() ? "" : ": ")
              << last->message << "\n";
  }
  return code;
}

// bai admin image rescan [REGISTRY]
int RunImageRescan(Context& ctx, std::string const& registry) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  return FollowImageTask(ctx, *client, AdminClient(*client).RescanImages(registry), "rescan");
}

struct ImagePurgeOptions {
  std::string agent;
  std::vector<std::string> images;
  bool keep_layers = false;
};

// bai admin image purge AGENT IMAGE…
int RunImagePurge(Context& ctx, ImagePurgeOptions const& o) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  return FollowImageTask(
      ctx, *client, AdminClient(*client).PurgeImages(o.agent, o.images, !o.keep_layers), "purge");
}

void AddImages(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun =
      admin.add_subcommand("image", "Images of the registries and the agents, aliases, rescans");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List images (one per name and architecture)");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunImageList(ctx, a); });
  auto& registry = set.Keep<std::string>();
  auto* rescan = noun->add_subcommand(
      "rescan",
      "Find the registries' images and make the agents read their stores again (after "
      "bai-agent image import); REGISTRY: only that registry's images");
  rescan->add_option("REGISTRY", registry,
                     "A registry's hostname (bai admin registry ls), or one image's reference "
                     "(REGISTRY/REPOSITORY:TAG, for registries without a catalog)");
  set.OnRun(rescan, [&ctx, &registry] { return RunImageRescan(ctx, registry); });
  auto& po = set.Keep<ImagePurgeOptions>();
  auto* purge = noun->add_subcommand(
      "purge",
      "Remove images from an agent's store (never one a kernel uses) and the layers no image "
      "needs any more (bai-manager, and Backend.AI 25.4 or later)");
  purge->add_option("AGENT", po.agent, "The agent's id (bai admin agent ls)")->required();
  purge->add_option("IMAGE", po.images, "Image names, aliases or registry references")->required();
  purge->add_flag("--keep-layers", po.keep_layers, "Keep layers no image needs (noprune)");
  set.OnRun(purge, [&ctx, &po] { return RunImagePurge(ctx, po); });
  auto& al = set.Keep<ImageAliasOptions>();
  auto* alias = noun->add_subcommand("alias", "Give an image another name");
  alias->add_option("ALIAS", al.alias, "The new name")->required();
  alias->add_option("TARGET", al.target, "The image it stands for")->required();
  alias->add_option("--arch", al.arch, "The image's architecture (default x86_64)");
  OnAdminRun(set, alias, [&al, &ctx](AdminClient& a) { return RunImageAlias(al, ctx, a); });
  auto& de = set.Keep<ImageAliasOptions>();
  auto* dealias = noun->add_subcommand("dealias", "Remove an alias");
  dealias->add_option("ALIAS", de.alias, "The alias")->required();
  dealias->add_option("--arch", de.arch, "The image's architecture (default x86_64)");
  OnAdminRun(set, dealias, [&de, &ctx](AdminClient& a) { return RunImageDealias(de, ctx, a); });
  auto& fo = set.Keep<ImageAliasOptions>();
  auto* forget = noun->add_subcommand(
      "forget",
      "Forget a registry image a rescan found (and its aliases); agents keep what they pulled "
      "(bai admin image purge removes that)");
  forget->add_option("IMAGE", fo.target, "Its reference or alias")->required();
  forget->add_option("--arch", fo.arch, "The image's architecture (default x86_64)");
  OnAdminRun(set, forget, [&fo, &ctx](AdminClient& a) { return RunImageForget(fo, ctx, a); });
  auto& cleared = set.Keep<std::string>();
  auto* clear = noun->add_subcommand(
      "clear", "Forget every image a rescan found in a registry (a rescan finds them again)");
  clear->add_option("REGISTRY", cleared, "The registry's hostname (bai admin registry ls)")
      ->required();
  OnAdminRun(set, clear,
             [&cleared, &ctx](AdminClient& a) { return RunImageClear(cleared, ctx, a); });
}

// bai admin agent ls
Status RunAgentList(Context& ctx, AdminClient& a) {
  auto all = a.Agents();
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& g : *all) {
      items.push_back({{"id", g.id},
                       {"status", g.status},
                       {"scaling_group", g.scaling_group},
                       {"architecture", g.architecture},
                       {"version", g.version},
                       {"schedulable", g.schedulable},
                       {"available_slots", SlotsObject(g.available_slots)},
                       {"occupied_slots", SlotsObject(g.occupied_slots)},
                       {"first_contact", g.first_contact},
                       {"lost_at", g.lost_at.empty() ? json(nullptr) : json(g.lost_at)}});
    }
    PrintJson(ctx, {{"agents", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{
      {"ID", "STATUS", "RESOURCE GROUP", "SCHEDULABLE", "AVAILABLE", "OCCUPIED"}};
  for (auto const& g : *all) {
    rows.push_back({g.id, g.status, g.scaling_group, g.schedulable ? "yes" : "no",
                    SlotsWords(g.available_slots), SlotsWords(g.occupied_slots)});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin agent enable|disable (`on`: enable)
Status RunAgentEnable(std::string const& id, bool on, Context& ctx, AdminClient& a) {
  auto s = a.SetAgentSchedulable(id, on);
  if (s.ok()) PrintDone(ctx, std::string(on ? "enabled " : "disabled ") + id);
  return s;
}

void AddAgents(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("agent", "The agents: what they offer and hold");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List agents (ALIVE and LOST)");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunAgentList(ctx, a); });
  for (bool on : {true, false}) {
    auto& id = set.Keep<std::string>();
    auto* cmd = noun->add_subcommand(
        on ? "enable" : "disable",
        on ? "Let the scheduler place sessions on the agent again"
           : "Place no new sessions on the agent (its running ones stay; e.g. to drain it)");
    cmd->alias(on ? "undrain" : "drain");
    cmd->add_option("ID", id, "Agent id")->required();
    OnAdminRun(set, cmd,
               [&id, &ctx, on](AdminClient& a) { return RunAgentEnable(id, on, ctx, a); });
  }
}

json PresetJson(protocol::ResourcePreset const& p) {
  return {{"name", p.name},
          {"resource_slots", SlotsObject(p.resource_slots)},
          {"shared_memory", p.shared_memory ? json(*p.shared_memory) : json()}};
}

struct PresetCreateOptions {
  std::string name, slots, shmem;
};

// bai admin preset ls
Status RunPresetList(Context& ctx, AdminClient& a) {
  auto all = a.Presets();
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    json items = json::array();
    for (auto const& p : *all) items.push_back(PresetJson(p));
    PrintJson(ctx, {{"presets", items}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{{"NAME", "SLOTS", "SHARED MEMORY"}};
  for (auto const& p : *all) {
    rows.push_back({p.name, SlotsWords(p.resource_slots),
                    p.shared_memory ? std::to_string(*p.shared_memory) : "-"});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai admin preset create
Status RunPresetCreate(PresetCreateOptions& c, Context& ctx, AdminClient& a) {
  auto slots = SlotsFlag("--slots", c.slots);
  if (!slots.ok()) return slots.status();
  auto s = a.CreatePreset(c.name, *slots, c.shmem);
  if (!s.ok() || !ctx.json()) {
    if (s.ok()) PrintDone(ctx, "created preset " + c.name);
    return s;
  }
  // -o json answers the preset as made (its sizes as the server read them), as other
  // creates do.
  auto all = a.Presets();
  if (!all.ok()) return all.status();
  for (auto const& p : *all) {
    if (p.name != c.name) continue;
    PrintJson(ctx, {{"preset", PresetJson(p)}});
    return Status();
  }
  return Status(StatusCode::kInternal, "the preset was made but the server does not list it");
}

void AddPresets(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* noun = admin.add_subcommand("preset", "Resource presets (named sizes for sessions)");
  noun->require_subcommand(1);
  auto* ls = noun->add_subcommand("ls", "List resource presets");
  ls->alias("list");
  OnAdminRun(set, ls, [&ctx](AdminClient& a) { return RunPresetList(ctx, a); });
  auto& c = set.Keep<PresetCreateOptions>();
  auto* create = noun->add_subcommand("create", "Create a preset");
  create->alias("add");
  create->add_option("NAME", c.name, "Preset name")->required();
  create->add_option("--slots", c.slots, "cpu=2,mem=4g or a JSON object")->required();
  create->add_option("--shared-memory", c.shmem, "e.g. 64m, 1g");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunPresetCreate(c, ctx, a); });
  AddRemoveCommand(set, *noun, "Delete a preset", "NAME", "Preset name", "deleted preset",
                   [](AdminClient& a, std::string const& name) { return a.DeletePreset(name); });
}

// bai admin status: the cluster at a glance, from GET /manager/status.
Status RunStatus(Context& ctx, AdminClient& a) {
  auto st = a.ManagerStatus();
  if (!st.ok()) return st.status();
  if (ctx.json()) {
    PrintJson(ctx, json::parse(protocol::EncodeManagerStatus(*st)));
    return Status();
  }
  auto counts = [](std::map<std::string, std::int64_t> const& by) {
    std::string out;
    for (auto const& [name, n] : by) {
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    }
    return out.empty() ? std::string("none") : out;
  };
  std::vector<std::vector<std::string>> rows{{"MANAGER", "VERSION", "STATUS", "SINCE"}};
  for (auto const& n : st->nodes) {
    rows.push_back({n.service_addr.empty() ? n.id : n.service_addr, n.version, n.status,
                    n.started_at.empty() ? "-" : n.started_at});
  }
  PrintTable(ctx, rows);
  std::string out = "\n";
  if (st->has_cluster) {
    out += "database  " + st->database + " (schema " + std::to_string(st->schema_version) +
           ")\nagents    " + counts(st->agents) + "\nsessions  " + counts(st->sessions) +
           "\nqueue     ";
    if (st->queue.empty()) out += "empty";
    for (std::size_t i = 0; i < st->queue.size(); ++i) {
      auto const& q = st->queue[i];
      out += (i ? ", " : "") + std::to_string(q.count) + " in " + q.scaling_group + " (" +
             q.reason + ")";
    }
    out += "\n";
  } else {
    out += "active sessions " + std::to_string(st->active_sessions) +
           " (the rest is for superadmins)\n";
  }
  ctx.out() << out;
  return Status();
}

void AddStatus(CommandSet& set, CLI::App& admin) {
  auto& ctx = set.ctx();
  auto* cmd = admin.add_subcommand(
      "status", "The cluster at a glance: managers, database, agents, sessions, queue");
  OnAdminRun(set, cmd, [&ctx](AdminClient& a) { return RunStatus(ctx, a); });
}

}  // namespace

void AddClusterAdminCommands(CommandSet& set, CLI::App& admin) {
  AddStatus(set, admin);
  AddImages(set, admin);
  AddAgents(set, admin);
  AddPresets(set, admin);
}

}  // namespace bai::cli
