// SPDX-License-Identifier: Apache-2.0
// Cluster-wide routes: resource slots and presets, resource groups, the manager's status and
// announcement, per-user bootstrap scripts.
#include "bai/protocol/api_version.h"
#include "bai/protocol/cluster_wire.h"
#include "bai/protocol/errors.h"

#include "libbai/protocol/wire_json.h"
#include "server-reference/manager/api/dialect.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/metrics.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/managers.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/resource_groups.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;

namespace {

// GET /config/resource-slots
StatusOr<HttpResponse> GetConfigResourceSlots(RequestContext& ctx) {
  auto types = ctx.store.ClusterSlotTypes();
  if (!types.ok()) return std::move(types).status();
  return JsonResponse(json(*types));
}

// GET /config/vfolder-types: the folder ownership types this manager serves.
StatusOr<HttpResponse> GetConfigVFolderTypes(RequestContext&) {
  return JsonResponse(json::array({"user", "group"}));
}

// GET /resource/container-registries and its older name /config/docker-registries:
// "PROJECT/REGISTRY" → URL ("REGISTRY" for a registry without a project), as 24.09 answers.
StatusOr<HttpResponse> GetContainerRegistries(RequestContext& ctx) {
  auto all = RegistryStore(ctx.store.db()).List();
  if (!all.ok()) return std::move(all).status();
  json out = json::object();
  for (auto const& r : *all) {
    out[r.project.empty() ? r.registry_name : r.project + "/" + r.registry_name] = r.url;
  }
  return JsonResponse(out);
}

// GET /resource/presets
StatusOr<HttpResponse> GetResourcePresets(RequestContext& ctx) {
  auto presets = ctx.store.ListPresets();
  if (!presets.ok()) return std::move(presets).status();
  json list = json::array();
  for (auto const& p : *presets) {
    list.push_back({{"name", p.name},
                    {"resource_slots", internal::SlotsToJson(p.resource_slots)},
                    {"shared_memory", p.shared_memory ? json(*p.shared_memory) : json(nullptr)}});
  }
  return JsonResponse({{"presets", list}});
}

// POST /resource/check-presets
StatusOr<HttpResponse> PostResourceCheckPresets(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto sg = p->String({"scaling_group", "scalingGroup"});
  std::string group = p->String({"group", "group_name", "groupName"}).value_or("default");
  if (auto s = p->Check(); !s.ok()) return s;
  auto gid = ctx.store.FindGroup(ctx.identity->domain, group);
  if (!gid.ok()) return std::move(gid).status();
  if (!*gid) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "Unknown user group (or project): " + group);
  }
  auto allowed = ctx.store.AllowedScalingGroups(*ctx.identity, group);
  if (!allowed.ok()) return std::move(allowed).status();
  std::vector<std::string> groups = *allowed;
  if (sg) {
    if (std::find(groups.begin(), groups.end(), *sg) == groups.end()) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams,
                               "Unknown or not allowed resource group: " + *sg);
    }
    groups = {*sg};
  }
  auto presets = ctx.store.ListPresets();
  if (!presets.ok()) return std::move(presets).status();
  auto result = CheckPresets(ctx.store.db(), ctx.identity->access_key, groups, *presets);
  if (!result.ok()) return std::move(result).status();
  return JsonResponse(json::parse(*result));
}

// GET /scaling-groups
StatusOr<HttpResponse> GetScalingGroups(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto group = p->String({"group", "group_id", "group_name"});
  if (auto s = p->Check(); !s.ok()) return s;
  if (group) {
    auto id = ctx.store.FindGroup(ctx.identity->domain, *group);
    if (!id.ok()) return std::move(id).status();
    if (!*id)
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such user group (or project).");
  }
  auto names = ctx.store.AllowedScalingGroups(*ctx.identity, group.value_or(""));
  if (!names.ok()) return std::move(names).status();
  json list = json::array();
  for (auto const& n : *names) list.push_back({{"name", n}});
  return JsonResponse({{"scaling_groups", list}});
}

// GET /manager/status
StatusOr<HttpResponse> GetManagerStatus(RequestContext& ctx, std::string const& manager_version) {
  auto status = ctx.store.GetSetting("status");
  if (!status.ok()) return std::move(status).status();
  auto active = ctx.store.ActiveSessionCount();
  if (!active.ok()) return std::move(active).status();
  protocol::ManagerStatus out;
  out.status = status->value_or("running");
  out.active_sessions = *active;
  // Every manager on the database that beat within the heartbeat timeout (15 s).
  auto seen = ManagerTable(ctx.store.db())
                  .SeenSince(std::chrono::system_clock::now() - std::chrono::seconds(15));
  if (!seen.ok()) return std::move(seen).status();
  // The caller's own version, as 24.09 shows it ([major, "YYYYMMDD"]).
  auto version = DialectOf(ctx.request).VersionPair();
  auto node_of = [&](std::string id, std::string url, std::string v) {
    protocol::ManagerNode n;
    n.id = std::move(id);
    n.service_addr = std::move(url);
    n.status = out.status;
    n.active_sessions = *active;
    n.version = std::move(v);
    n.api_major = version[0].get<int>();
    n.api_date = version[1].get<std::string>();
    return n;
  };
  for (auto const& row : *seen) {
    auto n = node_of(row.id, row.url, row.version);
    n.started_at = row.started_at;
    n.last_seen = row.last_seen;
    out.nodes.push_back(std::move(n));
  }
  if (out.nodes.empty()) out.nodes.push_back(node_of("bai-manager", "", manager_version));
  if (ctx.identity && ctx.identity->IsSuperadmin()) {
    // bai's: the cluster at a glance (`bai admin status`).
    auto& db = ctx.store.db();
    out.has_cluster = true;
    out.database = db.Backend();
    auto schema = ctx.store.SchemaVersion();
    if (schema.ok()) out.schema_version = *schema;
    auto counts = ReadClusterCounts(db);
    if (!counts.ok()) return std::move(counts).status();
    out.sessions = std::move(counts->sessions);
    out.agents = std::move(counts->agents);
    out.queue = std::move(counts->queue);
  }
  HttpResponse r;
  r.body = protocol::EncodeManagerStatus(out);
  return r;
}

// PUT /manager/status
StatusOr<HttpResponse> PutManagerStatus(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto status = p->String({"status"}, true);
  if (status && *status != "running" && *status != "frozen") {
    p->Fail("status", "must be \"running\" or \"frozen\"");
  }
  if (auto s = p->Check(); !s.ok()) return s;
  if (auto s = ctx.store.SetSetting("status", *status); !s.ok()) return s;
  return HttpResponse::NoContent();
}

// GET /manager/announcement
StatusOr<HttpResponse> GetManagerAnnouncement(RequestContext& ctx) {
  auto text = ctx.store.GetSetting("announcement");
  if (!text.ok()) return std::move(text).status();
  return JsonResponse(
      {{"enabled", text->has_value() && !(*text)->empty()}, {"message", text->value_or("")}});
}

// POST /manager/announcement
StatusOr<HttpResponse> PostManagerAnnouncement(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto enabled = p->Bool({"enabled"});
  auto message = p->String({"message"});
  if (!enabled) p->Fail("enabled", "required");
  if (auto s = p->Check(); !s.ok()) return s;
  auto s = ctx.store.SetSetting("announcement", *enabled ? message.value_or("") : "");
  if (!s.ok()) return s;
  return HttpResponse::NoContent();
}

// POST /manager/scheduler/operation {op: include-agents | exclude-agents, args: [agent ids]}:
// whether the scheduler may place new sessions on those agents (their running ones stay). Every
// agent must exist, or none changes. Pending sessions are placed on included agents within the
// scheduler's safety pass (5 s).
StatusOr<HttpResponse> PostSchedulerOperation(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto op = p->String({"op"}, true);
  if (op && *op != "include-agents" && *op != "exclude-agents") {
    p->Fail("op", "include-agents or exclude-agents");
  }
  std::vector<std::string> ids;
  json const* args = p->Raw({"args"});
  bool valid = args != nullptr && args->is_array();
  for (auto const& a : valid ? *args : json::array()) {
    valid = valid && a.is_string();
    if (a.is_string()) ids.push_back(a.get<std::string>());
  }
  if (!valid) p->Fail("args", "a list of agent ids");
  if (auto s = p->Check(); !s.ok()) return s;
  ResourceGroupStore groups(ctx.store.db());
  for (auto const& id : ids) {
    auto known = ctx.store.AgentKnown(id);
    if (!known.ok()) return known.status();
    if (!*known) {
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such agent: " + id + ".");
    }
  }
  bool schedulable = *op == "include-agents";
  for (auto const& id : ids) {
    if (auto s = groups.ModifyAgent(id, schedulable, std::nullopt); !s.ok()) return s;
  }
  return HttpResponse::NoContent();
}

// GET /user-config/bootstrap-script
StatusOr<HttpResponse> GetUserConfigBootstrapScript(RequestContext& ctx) {
  auto script = ctx.store.GetBootstrapScript(ctx.identity->access_key);
  if (!script.ok()) return std::move(script).status();
  return JsonResponse(json(*script));
}

// POST /user-config/bootstrap-script
StatusOr<HttpResponse> PostUserConfigBootstrapScript(RequestContext& ctx) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto script = p->String({"script"}, true);
  if (script && script->size() > 64 * 1024) p->Fail("script", "longer than 64 KiB");
  if (auto s = p->Check(); !s.ok()) return s;
  if (auto s = ctx.store.SetBootstrapScript(ctx.identity->access_key, *script); !s.ok()) return s;
  return HttpResponse::NoContent();
}

}  // namespace

void RegisterClusterRoutes(ManagerApi& api) {
  using L = AuthLevel;
  api.Add("GET", "/config/resource-slots", L::kAnonymous, Guarded(GetConfigResourceSlots));
  api.Add("GET", "/config/vfolder-types", L::kAnonymous, Guarded(GetConfigVFolderTypes));
  api.Add("GET", "/config/docker-registries", L::kSuperadmin, Guarded(GetContainerRegistries));
  api.Add("GET", "/resource/container-registries", L::kSuperadmin, Guarded(GetContainerRegistries));
  api.Add("GET", "/resource/presets", L::kUser, Guarded(GetResourcePresets));
  api.Add("POST", "/resource/check-presets", L::kUser, Guarded(PostResourceCheckPresets));
  api.Add("GET", "/scaling-groups", L::kUser, Guarded(GetScalingGroups));
  api.Add("GET", "/manager/status", L::kUser,
          [version = api.options().manager_version](RequestContext& ctx) {
            return Guard([&] { return GetManagerStatus(ctx, version); });
          });
  api.Add("PUT", "/manager/status", L::kSuperadmin, Guarded(PutManagerStatus));
  api.Add("GET", "/manager/announcement", L::kUser, Guarded(GetManagerAnnouncement));
  api.Add("POST", "/manager/announcement", L::kSuperadmin, Guarded(PostManagerAnnouncement));
  api.Add("POST", "/manager/scheduler/operation", L::kSuperadmin, Guarded(PostSchedulerOperation));
  api.Add("GET", "/user-config/bootstrap-script", L::kUser, Guarded(GetUserConfigBootstrapScript));
  api.Add("POST", "/user-config/bootstrap-script", L::kUser,
          Guarded(PostUserConfigBootstrapScript));
}

}  // namespace bai::manager
