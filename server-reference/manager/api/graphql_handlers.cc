// SPDX-License-Identifier: Apache-2.0
// `POST /admin/gql` and `/admin/graphql` (PROTOCOL.md §8): the thin shell around the GraphQL
// engine. It decodes the request, runs parse → prepare → execute, and resolves the root fields
// through the stores, scoped by role: superadmins see everything, admins their domain, users
// their own sessions and keypair. Objects are built as JSON keyed by field name; the executor
// projects the selected fields.
#include "bai/protocol/cluster_wire.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/graphql_wire.h"
#include "bai/protocol/service_ports.h"

#include "libbai/util/json_parse.h"
#include "libbai/util/text.h"
#include "server-reference/common/wire/device_allocation.h"
#include "server-reference/manager/agents/image_rescan.h"
#include "server-reference/manager/api/admin_graphql.h"
#include "server-reference/manager/api/graphql_util.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/graphql/backend_ai_schema.h"
#include "server-reference/manager/graphql/execute.h"
#include "server-reference/manager/scheduler/scheduler.h"
#include "server-reference/manager/state/agent_store.h"
#include "server-reference/manager/state/columns.h"
#include "server-reference/manager/state/images.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/resource_groups.h"
#include "server-reference/manager/vfolders/storage_links.h"
#include "server-reference/manager/vfolders/store.h"
#include "server-reference/storage/storage_api.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace bai::manager {
namespace {

using graphql::PlannedField;
using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;

using gql::ArgString;
using gql::FilterAndOrder;
using gql::Forbidden;
using gql::Invalid;
using gql::kMaxPageSize;
using gql::Where;
using gql::Window;

json Opt(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }
json Opt(std::optional<std::int64_t> const& v) { return v ? json(*v) : json(nullptr); }
json OrNull(std::string const& v) { return v.empty() ? json(nullptr) : json(v); }

// The registry part of an image reference ("cr.backend.ai/stable/python:3.9" →
// "cr.backend.ai"); "" for a local name.
std::string RegistryOf(std::string const& image) {
  auto slash = image.find('/');
  if (slash == std::string::npos) return "";
  std::string first = image.substr(0, slash);
  return first.find_first_of(".:") == std::string::npos && first != "localhost" ? "" : first;
}

// The time the session entered its current status.
json StatusChanged(SessionRecord const& s) {
  auto it = s.status_history.find(std::string(protocol::ToString(s.status)));
  return it == s.status_history.end() ? json(nullptr) : json(it->second);
}

json HistoryTime(SessionRecord const& s, char const* status) {
  auto it = s.status_history.find(status);
  return it == s.status_history.end() ? json(nullptr) : json(it->second);
}

// The folders a session mounts, dot-folders included.
json MountedNames(SessionRecord const& s) {
  json out = json::array();
  for (auto const& m : s.vfolder_mounts) out.push_back(m.name);
  return out;
}

// A ComputeSession: every scalar field (cheap); containers and dependencies are added by the
// caller when selected.
json SessionObject(SessionRecord const& s, std::string const& user_email,
                   std::string const& full_name, std::string const& group_name,
                   std::string const& main_kernel_id) {
  std::string occupied = s.agent_id ? SlotsColumn(s.requested) : "{}";
  return {
      {"id", s.id},
      {"session_id", s.id},
      {"main_kernel_id", OrNull(main_kernel_id)},
      {"tag", Opt(s.tag)},
      {"name", s.name},
      {"type", internal::AsciiUpper(s.type)},
      {"main_kernel_role", "COMPUTE"},
      {"priority", s.priority},
      {"image", s.image},
      {"architecture", s.architecture},
      {"registry", RegistryOf(s.image)},
      {"cluster_template", nullptr},
      {"cluster_mode", "SINGLE_NODE"},
      {"cluster_size", s.cluster_size},
      {"domain_name", s.domain_name},
      {"group_name", OrNull(group_name)},
      {"group_id", s.group_id},
      {"user_email", OrNull(user_email)},
      {"full_name", full_name},
      {"user_id", s.user_id},
      {"access_key", s.access_key},
      {"created_user_email", OrNull(user_email)},
      {"created_user_id", s.user_id},
      {"status", protocol::ToString(s.status)},
      {"status_changed", StatusChanged(s)},
      {"status_info", s.status_info},
      {"status_data", "{}"},
      {"status_history", MapColumn(s.status_history)},
      {"created_at", s.created_at},
      {"terminated_at", Opt(s.terminated_at)},
      {"starts_at", Opt(s.starts_at)},
      {"scheduled_at", HistoryTime(s, "SCHEDULED")},
      {"startup_command", Opt(s.startup_command)},
      {"result", internal::AsciiUpper(s.result)},
      {"commit_status", nullptr},
      {"abusing_reports", json::array()},
      {"idle_checks", "{}"},
      {"agent_ids", s.agent_id ? json::array({*s.agent_id}) : json::array()},
      {"resource_opts", MapColumn(s.resource_opts)},
      {"scaling_group", s.scaling_group},
      {"service_ports", protocol::EncodeApps(s.service_ports)},
      {"mounts", s.mounts},
      {"vfolder_mounts", MountedNames(s)},
      {"occupying_slots", occupied},
      {"occupied_slots", occupied},
      {"requested_slots", SlotsColumn(s.requested)},
      {"num_queries", s.num_queries},
      {"inference_metrics", nullptr},
      {"exit_code", Opt(s.exit_code)},
  };
}

json PreopenPorts(SessionRecord const& s) {
  json out = json::array();
  for (auto const& a : s.service_ports) {
    if (a.protocol == "preopen" && !a.container_ports.empty()) out.push_back(a.container_ports[0]);
  }
  return out;
}

json ContainerObject(KernelRecord const& k, SessionRecord const& s) {
  std::string hostname = k.cluster_role + std::to_string(k.cluster_idx);
  return {
      {"id", k.id},
      {"idx", k.cluster_idx},
      {"role", k.cluster_role},
      {"hostname", hostname},
      {"kernel_id", k.id},
      {"cluster_idx", k.cluster_idx},
      {"local_rank", k.cluster_idx - 1},
      {"cluster_role", k.cluster_role},
      {"cluster_hostname", hostname},
      {"session_id", k.session_id},
      {"image", s.image},
      {"architecture", s.architecture},
      {"registry", RegistryOf(s.image)},
      {"status", k.status},
      {"status_changed", Opt(k.terminated_at ? k.terminated_at : std::optional(k.created_at))},
      {"status_info", k.status_info},
      {"status_data", "{}"},
      {"created_at", k.created_at},
      {"terminated_at", Opt(k.terminated_at)},
      {"starts_at", Opt(s.starts_at)},
      {"scheduled_at", HistoryTime(s, "SCHEDULED")},
      {"abusing_report", nullptr},
      {"agent", Opt(k.agent_id)},
      {"agent_addr", nullptr},
      {"container_id", Opt(k.container_id)},
      {"resource_opts", MapColumn(s.resource_opts)},
      {"occupied_slots", k.agent_id ? SlotsColumn(s.requested) : "{}"},
      // Its session's stat (bai keeps one per session): live while it runs, the last at its end.
      {"live_stat", k.terminated_at ? json(nullptr) : Opt(k.live_stat)},
      {"last_stat", Opt(k.last_stat ? k.last_stat : k.live_stat)},
      {"preopen_ports", PreopenPorts(s)},
      // bai's addition: the GPUs the scheduler gave the session, device by device.
      {"attached_devices", server::DeviceAllocationsToJson(s.devices).dump()},
  };
}

// Who may see a session (or a keypair's things): superadmins, admins of its domain, its user.
bool MaySee(Identity const& who, std::string const& domain, std::string const& user_id) {
  if (who.IsSuperadmin()) return true;
  if (who.IsAdmin()) return domain == who.domain;
  return user_id == who.user_id;
}

class Resolver {
 public:
  Resolver(RequestContext& ctx, SessionStore& sessions, vfolders::StorageLinks const& links,
           ImageRescan& rescan)
      : who_(*ctx.identity),
        store_(ctx.store),
        sessions_(sessions),
        agents_(ctx.store.db()),
        folders_(ctx.store.db()),
        links_(links),
        rescan_(rescan) {}

  // Each top-level field (each alias) resolved, and charged to the request's budget: the
  // bytes its answer takes. 64 aliases of a large list answered 640 MB to one 4 KB query.
  StatusOr<json> Resolve(PlannedField const& f) {
    auto r = ResolveField(f);
    if (!r.ok()) return r;
    spent_ += r->dump().size();
    if (spent_ > kMaxResponseBytes) {
      return Invalid("The answer would be larger than " + std::to_string(kMaxResponseBytes >> 20) +
                     " MiB: ask for fewer fields, rows or aliases.");
    }
    return r;
  }

 private:
  static constexpr std::size_t kMaxResponseBytes = 32u << 20;
  std::size_t spent_ = 0;

  StatusOr<json> ResolveField(PlannedField const& f) {
    if (auto admin = ResolveAdminField(who_, store_.db(), f)) return *std::move(admin);
    if (f.name == "rescan_images") return RescanImages(f);
    if (f.name == "purge_images") return PurgeImages(f);
    if (f.name == "forget_image" || f.name == "forget_image_by_id") return ForgetImage(f);
    if (f.name == "clear_images") return ClearImages(f);
    if (f.name == "compute_session") return ComputeSession(f);
    if (f.name == "compute_session_list") return ComputeSessionList(f);
    if (f.name == "compute_container") return ComputeContainer(f);
    if (f.name == "compute_container_list") return ComputeContainerList(f);
    if (f.name == "keypair") return Keypair(f);
    if (f.name == "image" || f.name == "images") return Images(f);
    if (f.name == "scaling_group" || f.name == "scaling_groups" ||
        f.name.rfind("scaling_groups_for_", 0) == 0) {
      return ScalingGroups(f);
    }
    if (f.name == "agent" || f.name == "agents" || f.name == "agent_list") return Agents(f);
    if (f.name.rfind("vfolder", 0) == 0) return VFolders(f);
    if (f.name == "storage_volume" || f.name == "storage_volume_list") return StorageVolumes(f);
    return Status(StatusCode::kUnimplemented, "No resolver for " + f.name + ".");
  }

  // -- sessions --

  StatusOr<json> ComputeSession(PlannedField const& f) {
    auto s = sessions_.Get(ArgString(f, "id"));
    if (!s.ok()) return s.status();
    if (!*s || !MaySee(who_, (*s)->domain_name, (*s)->user_id)) return json(nullptr);
    ListQuery q;
    q.where = {"s.id = ?"};
    q.params = {(*s)->id};
    q.limit = 1;
    auto page = sessions_.List(q);
    if (!page.ok()) return page.status();
    auto items = SessionObjects(page->rows, f);
    if (!items.ok()) return items.status();
    return items->empty() ? json(nullptr) : (*items)[0];
  }

  StatusOr<json> ComputeSessionList(PlannedField const& f) {
    ListQuery q;
    if (auto st = Window(f, q); !st.ok()) return st;
    if (auto st = ScopeSessions(f, q); !st.ok()) return st;
    if (auto st = FilterAndOrder(f, SessionListColumns(), q); !st.ok()) return st;
    if (q.order.empty()) q.order = "s.created_at DESC";
    auto page = sessions_.List(q);
    if (!page.ok()) return page.status();
    PlannedField const* items = f.Find("items");
    auto objects = SessionObjects(page->rows, items ? *items : f);
    if (!objects.ok()) return objects.status();
    return json{{"items", *std::move(objects)}, {"total_count", page->total}};
  }

  // Who the list covers: superadmins anyone (narrowed by domain_name), admins their domain,
  // users themselves; access_key, group_id and status narrow further.
  Status ScopeSessions(PlannedField const& f, ListQuery& q) {
    std::string domain = ArgString(f, "domain_name");
    std::string access_key = ArgString(f, "access_key");
    if (who_.IsSuperadmin()) {
      if (!domain.empty()) Where(q, "s.domain_name = ?", domain);
    } else if (who_.IsAdmin()) {
      if (!domain.empty() && domain != who_.domain) {
        return Forbidden("Admins may list only the sessions of their own domain.");
      }
      if (!access_key.empty() && access_key != who_.access_key) {
        if (auto kp = ActFor(who_, store_, access_key); !kp.ok()) return kp.status();
      }
      Where(q, "s.domain_name = ?", who_.domain);
    } else {
      if (!domain.empty() && domain != who_.domain) {
        return Forbidden("Users may list only their own sessions.");
      }
      if (!access_key.empty() && access_key != who_.access_key) {
        return Forbidden("Users may list only their own sessions.");
      }
      Where(q, "s.user_id = ?", who_.user_id);
    }
    if (!access_key.empty()) Where(q, "s.access_key = ?", access_key);
    if (auto group = ArgString(f, "group_id"); !group.empty()) Where(q, "s.group_id = ?", group);
    if (auto status = ArgString(f, "status"); !status.empty()) return StatusIn(status, q);
    return {};
  }

  // "RUNNING,PENDING": each a session status.
  static Status StatusIn(std::string const& list, ListQuery& q) {
    std::string in;
    std::size_t start = 0;
    while (start <= list.size()) {
      auto comma = list.find(',', start);
      std::string name = list.substr(start, comma == std::string::npos ? comma : comma - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      // Every name of the vocabulary is accepted, also those we never store (RESIZING is a
      // kernel status; PREPARED a newer manager's): they match no session.
      std::string upper = internal::AsciiUpper(name);
      if (!protocol::IsKnownStatusName(upper)) {
        return Invalid("Unknown session status \"" + name + "\" in status.");
      }
      in += in.empty() ? "?" : ", ?";
      q.params.emplace_back(std::move(upper));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    q.where.push_back("s.status IN (" + in + ")");
    return {};
  }

  // A list answer (items, total_count) of the window's page of `items`.
  static json PageOf(json items, ListQuery const& window) {
    json page = json::array();
    for (std::int64_t i = window.offset;
         i < static_cast<std::int64_t>(items.size()) && i < window.offset + window.limit; ++i) {
      page.push_back(std::move(items[static_cast<std::size_t>(i)]));
    }
    return json{{"items", std::move(page)}, {"total_count", items.size()}};
  }

  // The objects of `rows`, with containers and dependencies fetched (once for the page) only
  // when `f` selects them.
  StatusOr<json> SessionObjects(std::vector<SessionListRow> const& rows, PlannedField const& f) {
    std::vector<std::string> ids;
    for (auto const& r : rows) ids.push_back(r.session.id);
    std::multimap<std::string, KernelRecord> kernels;
    if (f.Selects("containers")) {
      auto ks = sessions_.Kernels(ids);
      if (!ks.ok()) return ks.status();
      for (auto& k : *ks) kernels.emplace(k.session_id, std::move(k));
    }
    std::map<std::string, SessionRecord> deps;
    if (f.Selects("dependencies")) {
      std::vector<std::string> dep_ids;
      for (auto const& r : rows) {
        dep_ids.insert(dep_ids.end(), r.session.dependencies.begin(), r.session.dependencies.end());
      }
      auto ds = sessions_.GetMany(dep_ids);
      if (!ds.ok()) return ds.status();
      for (auto& d : *ds) deps.emplace(d.id, std::move(d));
    }
    json out = json::array();
    for (auto const& r : rows) {
      json o = SessionObject(r.session, r.user_email, r.full_name, r.group_name, r.main_kernel_id);
      if (f.Selects("containers")) {
        json cs = json::array();
        auto [lo, hi] = kernels.equal_range(r.session.id);
        for (auto it = lo; it != hi; ++it) cs.push_back(ContainerObject(it->second, r.session));
        o["containers"] = std::move(cs);
      }
      if (f.Selects("dependencies")) {
        json ds = json::array();
        for (auto const& id : r.session.dependencies) {
          auto it = deps.find(id);
          if (it == deps.end() || !MaySee(who_, it->second.domain_name, it->second.user_id)) {
            continue;
          }
          ds.push_back(SessionObject(it->second, "", "", "", ""));
        }
        o["dependencies"] = std::move(ds);
      }
      out.push_back(std::move(o));
    }
    return out;
  }

  StatusOr<json> ComputeContainer(PlannedField const& f) {
    ListQuery q;
    q.where = {"k.id = ?"};
    q.params = {ArgString(f, "id")};
    q.limit = 1;
    auto page = sessions_.ListKernels(q);
    if (!page.ok()) return page.status();
    if (page->rows.empty()) return json(nullptr);
    auto s = VisibleSession(page->rows[0].session_id);
    if (!s.ok()) return s.status();
    if (!*s) return json(nullptr);
    return ContainerObject(page->rows[0], **s);
  }

  StatusOr<json> ComputeContainerList(PlannedField const& f) {
    ListQuery q;
    if (auto st = Window(f, q); !st.ok()) return st;
    auto s = VisibleSession(ArgString(f, "session_id"));
    if (!s.ok()) return s.status();
    json items = json::array();
    if (!*s) return json{{"items", items}, {"total_count", 0}};
    Where(q, "k.session_id = ?", (*s)->id);
    if (auto role = ArgString(f, "role"); !role.empty()) Where(q, "k.cluster_role = ?", role);
    if (auto st = FilterAndOrder(f, KernelListColumns(), q); !st.ok()) return st;
    auto page = sessions_.ListKernels(q);
    if (!page.ok()) return page.status();
    for (auto const& k : page->rows) items.push_back(ContainerObject(k, **s));
    return json{{"items", std::move(items)}, {"total_count", page->total}};
  }

  StatusOr<std::optional<SessionRecord>> VisibleSession(std::string const& id) {
    auto s = sessions_.Get(id);
    if (!s.ok()) return s.status();
    if (*s && !MaySee(who_, (*s)->domain_name, (*s)->user_id))
      return std::optional<SessionRecord>();
    return s;
  }

  // -- keypair --

  StatusOr<json> Keypair(PlannedField const& f) {
    std::string key = ArgString(f, "access_key");
    if (key.empty()) key = who_.access_key;
    if (key != who_.access_key) {
      auto allowed = ActFor(who_, store_, key);
      if (!allowed.ok()) return allowed.status();
    }
    auto kp = store_.FindKeypairDetails(key);
    if (!kp.ok()) return kp.status();
    if (!*kp) return json(nullptr);
    auto const& id = (*kp)->record.identity;
    json o = {
        {"id", id.access_key},
        {"user_id", id.email},
        {"full_name", (*kp)->full_name},
        {"access_key", id.access_key},
        // A secret key is its owner's, and superadmins': an admin acting for a user never
        // reads it (it would let them sign as that user outside every check).
        {"secret_key", key == who_.access_key || who_.IsSuperadmin()
                           ? json((*kp)->record.secret_key)
                           : json(nullptr)},
        {"is_active", (*kp)->record.keypair_active},
        {"is_admin", id.is_admin},
        {"resource_policy", (*kp)->resource_policy},
        {"created_at", (*kp)->created_at},
        {"modified_at", (*kp)->created_at},
        {"last_used", nullptr},
        {"rate_limit", id.rate_limit},
        {"num_queries", nullptr},
        {"user", id.user_id},
        {"projects", json::array()},
        {"ssh_public_key", nullptr},
        {"bootstrap_script", (*kp)->bootstrap_script},
        {"concurrency_limit", nullptr},
        {"user_info", {{"email", id.email}, {"full_name", (*kp)->full_name}}},
    };
    if (f.Selects("concurrency_used")) {
      ListQuery q;
      q.where = {"s.access_key = ?", "s.status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')"};
      q.params = {key};
      q.limit = 0;
      auto page = sessions_.List(q);
      if (!page.ok()) return page.status();
      o["concurrency_used"] = page->total;
    }
    if (PlannedField const* cs = f.Find("compute_sessions")) {
      ListQuery q;
      Where(q, "s.access_key = ?", key);
      if (auto status = ArgString(*cs, "status"); !status.empty()) {
        if (auto st = StatusIn(status, q); !st.ok()) return st;
      }
      q.order = "s.created_at DESC";
      q.limit = kMaxPageSize;
      auto page = sessions_.List(q);
      if (!page.ok()) return page.status();
      auto objects = SessionObjects(page->rows, *cs);
      if (!objects.ok()) return objects.status();
      o["compute_sessions"] = *std::move(objects);
    }
    return o;
  }

  // -- images, resource groups, agents --

  StatusOr<json> Images(PlannedField const& f) {
    auto agents = agents_.List();
    if (!agents.ok()) return agents.status();
    // NAME:TAG@ARCHITECTURE → the image and the ALIVE agents offering it. An agent lists its
    // images' tagged names one by one ("python", "python:3.11"): "python" is "python:latest".
    std::map<std::string, protocol::ImageEntry> images;
    for (auto const& a : *agents) {
      if (a.status != "ALIVE") continue;
      for (auto const& offered : a.row.images) {
        auto image = ImageOf(offered.name, offered.aliases, a.row.architecture);
        auto& entry = images.try_emplace(image.id, image).first->second;
        auto& agents_of = entry.installed_agents;
        if (std::find(agents_of.begin(), agents_of.end(), a.row.id) == agents_of.end()) {
          agents_of.push_back(a.row.id);
        }
        // Agents that imported the same name apart may hold different bytes: the largest.
        entry.size_bytes = std::max(entry.size_bytes, offered.size);
        // What it is (a host image, imported, pulled), as the agent says.
        if (!offered.kind.empty()) entry.labels[protocol::kImageKindLabel] = offered.kind;
      }
    }
    // Registry images a rescan found (issue 46): installed on the agents that offer their
    // canonical name (an agent reports a pulled image's canonical name as an alias).
    auto scanned = RegistryStore(store_.db()).Images();
    if (!scanned.ok()) return scanned.status();
    std::map<std::string, RegistryImage const*> found;
    for (auto const& r : *scanned) {
      protocol::ImageEntry e = ImageOf(r.canonical, {}, r.architecture);
      auto& entry = images.try_emplace(e.id, e).first->second;
      if (entry.size_bytes == 0) entry.size_bytes = r.size_bytes;
      found[e.id] = &r;
    }
    // A superadmin's aliases (alias_image) join the agents' own.
    auto defined = ImageStore(store_.db()).Aliases();
    if (!defined.ok()) return defined.status();
    for (auto const& a : *defined) {
      auto it = images.find(ImageOf(a.target, {}, a.architecture).id);
      if (it != images.end()) it->second.aliases.push_back(a.alias);
    }
    auto object = [&](protocol::ImageEntry const& img) {
      auto it = found.find(img.id);
      return ImageObject(img, it == found.end() ? nullptr : it->second);
    };
    if (f.name == "images") {
      json out = json::array();
      for (auto const& [key, img] : images) out.push_back(object(img));
      return out;
    }
    std::string ref = ArgString(f, "reference");
    if (ref.empty()) ref = ArgString(f, "id");
    std::string arch = ArgString(f, "architecture");
    for (auto const& [key, img] : images) {
      if (!arch.empty() && img.architecture != arch) continue;
      std::string full = key.substr(0, key.find('@'));  // [REGISTRY/]NAME:TAG
      bool match = img.id == ref || full == ref || (img.tag == "latest" && full == ref + ":latest");
      for (auto const& a : img.aliases) match = match || a == ref;
      if (match) return object(img);
    }
    return json(nullptr);
  }

  static protocol::ImageEntry ImageOf(std::string const& name,
                                      std::vector<std::string> const& aliases,
                                      std::string const& architecture) {
    // A tag in the name ("python:3.11"; not a registry's port, which has a '/' after it).
    std::string base = name;
    std::string tag = "latest";
    if (auto colon = name.rfind(':');
        colon != std::string::npos && name.find('/', colon) == std::string::npos) {
      base = name.substr(0, colon);
      tag = name.substr(colon + 1);
    }
    for (auto const& a : aliases) {
      if (auto colon = a.rfind(':'); colon != std::string::npos && a.substr(0, colon) == base) {
        tag = a.substr(colon + 1);
      }
    }
    std::string registry = RegistryOf(base);
    protocol::ImageEntry i;
    i.id = base + ":" + tag + "@" + architecture;
    i.name = registry.empty() ? base : base.substr(registry.size() + 1);
    i.tag = tag;
    i.registry = registry.empty() ? "local" : registry;
    i.architecture = architecture;
    i.aliases = aliases;
    return i;
  }

  // The shared codec's fields, and the rest of 24.09's Image with what bai knows of them:
  // a registry image's digest, labels, minimum resources (ai.backend.resource.min.*) and
  // accelerators from its rescan.
  static json ImageObject(protocol::ImageEntry const& i, RegistryImage const* scanned) {
    json j = json::parse(protocol::EncodeImage(i));
    json labels = j["labels"], limits = json::array(), accelerators = json::array();
    if (scanned != nullptr) {
      for (auto const& [k, v] : scanned->labels) {
        labels.push_back({{"key", k}, {"value", v}});
        if (k.rfind("ai.backend.resource.min.", 0) == 0) {
          limits.push_back({{"key", k.substr(24)}, {"min", v}, {"max", nullptr}});
        }
      }
      // 24.09: a label-less image takes any accelerator ("*").
      auto acc = scanned->labels.find("ai.backend.accelerators");
      if (acc == scanned->labels.end()) {
        accelerators.push_back("*");
      } else {
        std::stringstream list(acc->second);
        for (std::string a; std::getline(list, a, ',');) {
          if (!a.empty()) accelerators.push_back(a);
        }
      }
    }
    std::string project;
    if (auto slash = i.name.find('/'); slash != std::string::npos)
      project = i.name.substr(0, slash);
    j.update({{"project", project.empty() ? json(nullptr) : json(project)},
              {"humanized_name", i.registry == "local" ? i.name : i.registry + "/" + i.name},
              {"is_local", i.registry == "local"},
              {"digest", scanned ? json(scanned->config_digest) : json(nullptr)},
              {"labels", labels},
              {"resource_limits", limits},
              {"supported_accelerators", accelerators},
              {"hash", nullptr}});
    return j;
  }

  StatusOr<json> ScalingGroups(PlannedField const& f) {
    auto all = store_.ScalingGroups();
    if (!all.ok()) return all.status();
    // scaling_groups_for_{domain,user_group,keypair}: those associated with it directly
    // (superadmins'; 24.09's privileged queries).
    std::optional<std::set<std::string>> associated;
    if (f.name.rfind("scaling_groups_for_", 0) == 0) {
      if (!who_.IsSuperadmin()) return Forbidden("Only superadmins query associations.");
      AssociationKind kind = f.name == "scaling_groups_for_domain" ? AssociationKind::kDomain
                             : f.name == "scaling_groups_for_user_group"
                                 ? AssociationKind::kProject
                                 : AssociationKind::kKeypair;
      char const* arg = kind == AssociationKind::kDomain    ? "domain"
                        : kind == AssociationKind::kProject ? "user_group"
                                                            : "access_key";
      auto names = ResourceGroupStore(store_.db()).AssociatedWith(kind, ArgString(f, arg));
      if (!names.ok()) return names.status();
      associated.emplace(names->begin(), names->end());
    }
    std::set<std::string> allowed;
    if (!who_.IsSuperadmin()) {
      auto names = store_.AllowedScalingGroups(who_, "");
      if (!names.ok()) return names.status();
      allowed.insert(names->begin(), names->end());
    }
    auto agents = agents_.List();
    if (!agents.ok()) return agents.status();
    std::string name = ArgString(f, "name");
    auto active = f.args.find("is_active");
    json out = json::array();
    for (auto const& g : *all) {
      if (!who_.IsSuperadmin() && !allowed.count(g.name)) continue;
      if (!name.empty() && g.name != name) continue;
      if (associated && !associated->count(g.name)) continue;
      if (active != f.args.end() && active->is_boolean() && active->get<bool>() != g.is_active) {
        continue;
      }
      out.push_back(GroupObject(g, *agents, f));
    }
    if (f.name != "scaling_group") return out;
    return out.empty() ? json(nullptr) : out[0];
  }

  static json GroupObject(ScalingGroupRecord const& g, std::vector<AgentRecord> const& agents,
                          PlannedField const& f) {
    json o = {{"name", g.name},
              {"description", g.description},
              {"is_active", g.is_active},
              {"is_public", g.is_public},
              {"created_at", g.created_at},
              {"wsproxy_addr", Opt(g.wsproxy_addr)},
              {"wsproxy_api_token", Opt(g.wsproxy_api_token)},
              {"driver", "static"},
              {"driver_opts", g.driver_opts},
              {"scheduler", g.scheduler},
              {"scheduler_opts", g.scheduler_opts},
              {"use_host_network", g.use_host_network}};
    // The per-status fields answer for the status their selection names.
    auto status_arg = [&](char const* field) {
      PlannedField const* sub = f.Find(field);
      return sub ? ArgString(*sub, "status") : std::string("ALIVE");
    };
    std::string count_status = status_arg("agent_count_by_status");
    std::string slots_status = status_arg("agent_total_resource_slots_by_status");
    int count = 0;
    protocol::ResourceSlots total;
    for (auto const& a : agents) {
      if (a.row.scaling_group != g.name) continue;
      if (a.status == count_status) ++count;
      if (a.status == slots_status) protocol::AddInto(total, a.row.slots);
    }
    o["agent_count_by_status"] = count;
    o["agent_total_resource_slots_by_status"] = SlotsColumn(total);
    return o;
  }

  StatusOr<json> Agents(PlannedField const& f) {
    if (!who_.IsSuperadmin()) return Forbidden("Only superadmins may query agents.");
    auto agents = agents_.List();
    if (!agents.ok()) return agents.status();
    std::string id = ArgString(f, "agent_id");
    std::string group = ArgString(f, "scaling_group");
    std::string status = internal::AsciiUpper(ArgString(f, "status"));
    json items = json::array();
    for (auto const& a : *agents) {
      if (!id.empty() && a.row.id != id) continue;
      if (!group.empty() && a.row.scaling_group != group) continue;
      if (!status.empty() && a.status != status) continue;
      items.push_back(AgentObject(a));
      if (auto const* c = f.Find("compute_containers")) {
        auto containers = AgentContainers(a.row.id, ArgString(*c, "status"));
        if (!containers.ok()) return containers.status();
        items.back()["compute_containers"] = *std::move(containers);
      }
    }
    if (f.name == "agent") return items.empty() ? json(nullptr) : items[0];
    if (f.name == "agents") return items;
    ListQuery window;
    if (auto st = Window(f, window); !st.ok()) return st;
    if (!ArgString(f, "filter").empty() || !ArgString(f, "order").empty()) {
      return Invalid(
          "agent_list does not take filter or order here; use scaling_group and status.");
    }
    return PageOf(std::move(items), window);
  }

  // The load an agent reported, in 24.09's live_stat shape (a JSON string): `node` and
  // `devices` metrics {current, capacity, pct, unit_hint} as its agents report them.
  static json LiveStat(json const& load) {
    if (!load.is_object()) return nullptr;
    auto metric = [](double current, double capacity, double pct, char const* unit) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", pct);
      return json{{"current", current}, {"capacity", capacity}, {"pct", buf},
                  {"unit_hint", unit},  {"stats.max", current}, {"stats.rate", 0}};
    };
    auto cores = load.value("core_pct", json::array());
    double cpu = load.value("cpu_pct", 0.0);
    auto used = static_cast<double>(load.value("mem_used", std::int64_t{0}));
    auto total = static_cast<double>(load.value("mem_total", std::int64_t{0}));
    json per_core = json::object();
    for (std::size_t i = 0; i < cores.size(); ++i) {
      double pct = cores[i].is_number() ? cores[i].get<double>() : 0.0;
      per_core[std::to_string(i)] = metric(pct, 100, pct, "percent");
    }
    double capacity = 100.0 * static_cast<double>(std::max<std::size_t>(1, cores.size()));
    json mem = metric(used, total, total > 0 ? 100 * used / total : 0, "bytes");
    json node = {{"cpu_util", metric(cpu * capacity / 100, capacity, cpu, "percent")},
                 {"mem", mem}};
    json devices = {{"cpu_util", per_core}, {"mem", {{"root", mem}}}};
    return json{{"node", node}, {"devices", devices}}.dump();
  }

  // The kernels an agent holds (in `status`, or not yet ended): the console's allocation map.
  StatusOr<json> AgentContainers(std::string const& agent_id, std::string const& status) {
    ListQuery q;
    q.limit = 10000;
    Where(q, "k.agent_id = ?", agent_id);
    if (!status.empty()) {
      Where(q, "k.status = ?", internal::AsciiUpper(status));
    } else {
      q.where.push_back("k.status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')");
    }
    auto page = sessions_.ListKernels(q);
    if (!page.ok()) return page.status();
    json out = json::array();
    for (auto const& k : page->rows) {
      auto s = sessions_.Get(k.session_id);
      if (!s.ok()) return s.status();
      if (*s) out.push_back(ContainerObject(k, **s));
    }
    return out;
  }

  static json AgentObject(AgentRecord const& a) {
    // Its last heartbeat's load, parsed once; null before the first.
    json load = a.live_stat ? internal::ParseJson(*a.live_stat).value_or(json::object()) : json();
    json slot_types = json::object();
    for (auto const& [slot, type] : a.row.slot_types) slot_types[slot] = protocol::ToString(type);
    return {{"id", a.row.id},
            {"status", a.status},
            {"status_changed", a.lost_at ? *a.lost_at : a.first_contact},
            {"region", nullptr},
            {"scaling_group", a.row.scaling_group},
            {"schedulable", a.schedulable},
            {"available_slots", SlotsColumn(a.row.slots)},
            {"occupied_slots", SlotsColumn(a.occupied)},
            {"addr", nullptr},
            {"architecture", a.row.architecture},
            {"first_contact", a.first_contact},
            {"lost_at", Opt(a.lost_at)},
            {"live_stat", LiveStat(load)},
            {"version", a.row.version},
            {"compute_plugins", json{{"slot_types", slot_types}}.dump()},
            {"hardware_metadata", "{}"},
            {"auto_terminate_abusing_kernel", false},
            {"local_config", "{}"},
            {"container_count", a.container_count},
            // 24.09 answers 0 for an agent without a live statistic.
            {"cpu_cur_pct", load.is_object() ? load.value("cpu_pct", 0.0) : 0.0},
            {"mem_cur_bytes", load.is_object() ? load.value("mem_used", std::int64_t{0}) : 0},
            {"compute_containers", json::array()},
            // bai's addition: the agent's GPUs ({policy, devices: [{kind, index, uuid, name,
            // memory, shares}]}), so that a map of them lists the idle ones too.
            {"devices", AgentDevicesColumn(a.row.devices)}};
  }

  // -- storage volumes (superadmins, as in 24.09) --

  StatusOr<json> StorageVolumes(PlannedField const& f) {
    if (!who_.IsSuperadmin()) return Forbidden("Only superadmins may query storage volumes.");
    std::string id = ArgString(f, "id");
    json items = json::array();
    for (auto const& [host, v] : links_.Volumes()) {
      if (f.name == "storage_volume" && host != id) continue;
      json usage = json::object();
      if (v.usage) usage = {{"capacity_bytes", v.usage->total}, {"used_bytes", v.usage->used}};
      auto colon = host.find(':');
      items.push_back({{"id", host},
                       {"backend", v.backend},
                       {"fsprefix", "."},
                       {"path", v.path},
                       {"capabilities", v.capabilities},
                       {"hardware_metadata", "{}"},
                       {"performance_metric", "{}"},
                       {"usage", usage.dump()},
                       {"proxy", host.substr(0, colon)},
                       {"name", colon == std::string::npos ? host : host.substr(colon + 1)}});
    }
    if (f.name == "storage_volume") return items.empty() ? json(nullptr) : items[0];
    ListQuery window;
    if (auto st = Window(f, window); !st.ok()) return st;
    return PageOf(std::move(items), window);
  }

  // -- virtual folders --

  // vfolder(id) and the vfolder lists: the folders the caller reaches (as the REST API decides),
  // narrowed by the arguments, filtered and ordered in SQL, paged here.
  StatusOr<json> VFolders(PlannedField const& f) {
    vfolders::CallerFacts caller;
    caller.user_id = who_.user_id;
    caller.role = who_.role;
    caller.domain = who_.domain;
    auto visible = folders_.Visible(caller);
    if (!visible.ok()) return visible.status();
    std::string owner;
    if (auto key = ArgString(f, "access_key"); !key.empty()) {
      if (key == who_.access_key) {
        owner = who_.user_id;
      } else {
        auto kp = ActFor(who_, store_, key);
        if (!kp.ok()) return kp.status();
        owner = kp->identity.user_id;
      }
    }
    std::string domain = ArgString(f, "domain_name");
    std::string group = vfolders::FolderIdHex(ArgString(f, "group_id"));
    std::string id = vfolders::FolderIdHex(ArgString(f, "id"));
    auto keep = [&](vfolders::VisibleFolder const& v) {
      auto const& r = v.folder;
      if (f.name == "vfolder") return r.id == id;
      if (!domain.empty() && r.domain != domain) return false;
      if (!group.empty() && vfolders::FolderIdHex(r.group_id) != group) return false;
      if (!owner.empty() && r.user_id != owner) return false;
      if (f.name == "vfolder_own_list") return v.access.relation == vfolders::Relation::kOwner;
      if (f.name == "vfolder_invited_list")
        return v.access.relation == vfolders::Relation::kInvited;
      if (f.name == "vfolder_project_list") return r.ownership_type == "group";
      return true;
    };
    std::map<std::string, vfolders::VisibleFolder const*> by_id;
    for (auto const& v : *visible) {
      if (keep(v)) by_id[v.folder.id] = &v;
    }
    std::vector<vfolders::VisibleFolder> chosen;
    std::int64_t total = 0;
    if (f.name == "vfolder") {
      if (by_id.empty()) return json(nullptr);
      chosen.push_back(*by_id.begin()->second);
    } else {
      ListQuery q;
      if (auto st = Window(f, q); !st.ok()) return st;
      if (auto st = FilterAndOrder(f, vfolders::FolderListColumns(), q); !st.ok()) return st;
      std::string where;
      for (auto const& w : q.where) where += (where.empty() ? "" : " AND ") + w;
      auto ids = folders_.Matching(where, q.params, q.order);
      if (!ids.ok()) return ids.status();
      for (auto const& fid : *ids) {
        auto it = by_id.find(fid);
        if (it == by_id.end()) continue;
        if (total >= q.offset && total < q.offset + q.limit) chosen.push_back(*it->second);
        ++total;
      }
    }
    PlannedField const* items = f.name == "vfolder" ? &f : f.Find("items");
    bool usage = items && (items->Selects("num_files") || items->Selects("cur_size"));
    auto names = folders_.Names(chosen);
    if (!names.ok()) return names.status();
    json out = json::array();
    for (auto const& v : chosen) out.push_back(FolderObject(v, *names, usage));
    if (f.name == "vfolder") return out[0];
    return json{{"items", std::move(out)}, {"total_count", total}};
  }

  json FolderObject(vfolders::VisibleFolder const& v, vfolders::OwnerNames const& names,
                    bool usage) {
    auto const& r = v.folder;
    auto name_of = [](std::map<std::string, std::string> const& m, std::string const& key) {
      auto it = m.find(key);
      return it == m.end() || it->second.empty() ? json(nullptr) : json(it->second);
    };
    json o = {{"id", vfolders::DashedUuid(r.id)},
              {"host", r.host},
              {"quota_scope_id", r.quota_scope_id},
              {"name", r.name},
              {"user", OrNull(r.user_id)},
              {"user_email", name_of(names.user_emails, r.user_id)},
              {"group", OrNull(r.group_id)},
              {"group_name", name_of(names.group_names, r.group_id)},
              {"creator", r.creator},
              {"domain_name", r.domain},
              {"unmanaged_path", nullptr},
              {"usage_mode", r.usage_mode},
              {"permission", protocol::ToString(v.access.permission)},
              {"ownership_type", r.ownership_type},
              {"max_files", 0},
              {"max_size", 0},
              {"created_at", r.created_at},
              {"last_used", OrNull(r.last_used)},
              {"num_files", nullptr},
              {"cur_size", nullptr},
              {"cloneable", r.cloneable},
              {"status", protocol::ToString(r.status)}};
    if (usage) {
      // Once per folder and request: aliases asking again get the same walk's figures.
      auto memo = usage_.find(r.id);
      if (memo == usage_.end()) {
        auto u = links_.Ask(r.host, storage::api::GetFolderUsage{},
                            vfolders::ScopeDirectory(r.quota_scope_id), r.id);
        memo = usage_.emplace(r.id, u.ok() ? std::optional(*u) : std::nullopt).first;
      }
      if (memo->second) {
        o["num_files"] = memo->second->file_count;
        o["cur_size"] = memo->second->used_bytes;
      }
    }
    return o;
  }

  // rescan_images(registry): that registry's images, or every registry's and every agent's.
  StatusOr<json> RescanImages(PlannedField const& f) {
    std::string registry;
    if (auto r = f.args.find("registry"); r != f.args.end() && r->is_string()) {
      registry = r->get<std::string>();
    }
    auto task = rescan_.Start(who_.access_key, registry);
    if (task.status().code() == StatusCode::kNotFound) {
      return json{{"ok", false}, {"msg", task.status().message()}, {"task_id", nullptr}};
    }
    if (!task.ok()) return task.status();
    return json{{"ok", true}, {"msg", ""}, {"task_id", *task}};
  }

  // forget_image(reference, architecture), forget_image_by_id(image_id): a registry image a
  // rescan found leaves the manager's list (and the superadmin's aliases of it); what agents
  // hold stays. An image id is bai's "[REGISTRY/]NAME:TAG@ARCHITECTURE". An agent's own image
  // (host, imported) is no row to forget: the answer says where it goes.
  StatusOr<json> ForgetImage(PlannedField const& f) {
    std::string reference, arch = ArgString(f, "architecture");
    if (f.name == "forget_image_by_id") {
      std::string id = ArgString(f, "image_id");
      auto at = id.rfind('@');
      if (at == std::string::npos || at == 0) {
        return Status(StatusCode::kNotFound, "No such image: " + id);
      }
      reference = id.substr(0, at);
      arch = id.substr(at + 1);
    } else {
      reference = ArgString(f, "reference");
    }
    if (arch.empty()) arch = "x86_64";
    auto target = ImageStore(store_.db()).Resolve(reference);
    if (!target.ok()) return target.status();
    RegistryStore registries(store_.db());
    auto row = registries.FindImage(*target, arch);
    if (!row.ok()) return row.status();
    if (!*row) {
      auto offered = ImageStore(store_.db()).OfferedByAnAgent(*target);
      if (!offered.ok()) return offered.status();
      if (*offered) {
        return json{
            {"ok", false},
            {"msg", reference + " is an agent's own image (host or imported), not a registry's: "
                                "remove it on its agents (bai-agent image rm, or purge_images)"},
            {"image", nullptr}};
      }
      return Status(StatusCode::kNotFound,
                    "Unknown image reference: " + reference + " (" + arch + ")");
    }
    json image = ImageObject(ImageOf((*row)->canonical, {}, arch), &**row);
    auto gone = registries.ForgetImage((*row)->canonical, arch);
    if (!gone.ok()) return gone.status();
    return json{{"ok", true}, {"msg", ""}, {"image", image}};
  }

  // clear_images(registry): every image a rescan found in that registry.
  StatusOr<json> ClearImages(PlannedField const& f) {
    auto n = RegistryStore(store_.db()).ClearImages(ArgString(f, "registry"));
    if (!n.ok()) return n.status();
    return json{{"ok", true}, {"msg", ""}};
  }

  // purge_images(keys, options): a background task per call, one unit per agent. Images in use
  // are never removed, whatever `force` says (bai keeps no stopped containers); `noprune`
  // keeps the layers no image needs.
  StatusOr<json> PurgeImages(PlannedField const& f) {
    std::vector<PurgeKey> keys;
    auto k = f.args.find("keys");
    if (k != f.args.end() && k->is_array()) {
      for (auto const& key : *k) {
        if (!key.is_object()) continue;
        PurgeKey p{key.value("agent_id", ""), {}};
        for (auto const& img : key.value("images", json::array())) {
          if (!img.is_object()) continue;
          std::string name = img.value("name", json("")).is_string() ? img.value("name", "") : "";
          std::string registry =
              img.value("registry", json("")).is_string() ? img.value("registry", "") : "";
          if (!registry.empty() && registry != "local" && name.rfind(registry + "/", 0) != 0) {
            name = registry + "/" + name;
          }
          if (!name.empty()) p.images.push_back(name);
        }
        keys.push_back(std::move(p));
      }
    }
    bool prune = true;
    if (auto o = f.args.find("options"); o != f.args.end() && o->is_object()) {
      if (auto n = o->find("noprune"); n != o->end() && n->is_boolean()) prune = !n->get<bool>();
    }
    auto task = rescan_.StartPurge(who_.access_key, keys, prune);
    if (!task.ok()) return task.status();
    return json{{"task_id", *task}};
  }

  Identity const& who_;
  Store& store_;
  SessionStore& sessions_;
  AgentStore agents_;
  vfolders::FolderStore folders_;
  vfolders::StorageLinks const& links_;
  ImageRescan& rescan_;
  // folder id → its usage (none when the proxy failed), walked once per request
  std::map<std::string, std::optional<storage::api::Usage>> usage_;
};

// Parse, prepare and execute: the response document, or the errors that stopped it.
nlohmann::ordered_json Run(RequestContext& ctx, SessionStore& sessions,
                           vfolders::StorageLinks const& links, ImageRescan& rescan,
                           protocol::GraphqlRequest const& request) {
  auto parsed = graphql::Parse(request.query);
  if (!parsed.ok()) return graphql::ErrorResponse({*parsed.error});
  json variables = nullptr;
  if (!request.variables_json.empty()) {
    variables = internal::ParseJson(request.variables_json).value_or(json(nullptr));
  }
  auto prepared = graphql::Prepare(parsed.document, graphql::BackendAiSchema(), variables,
                                   request.operation_name);
  if (!prepared.ok()) return graphql::ErrorResponse(prepared.errors);
  Resolver resolver(ctx, sessions, links, rescan);
  return graphql::Execute(prepared.plan,
                          [&](PlannedField const& f) { return resolver.Resolve(f); });
}

}  // namespace

void RegisterGraphqlRoutes(ManagerApi& api, SessionStore& sessions,
                           vfolders::StorageLinks const& links, ImageRescan& rescan) {
  // The standard endpoint: always 200 with {data, errors}.
  // Both on the slow-work pool: a query may walk folders' trees (num_files, cur_size).
  api.AddPooled("POST", "/admin/gql", AuthLevel::kUser,
                [&sessions, &links, &rescan](RequestContext& ctx) {
                  return Guard([&]() -> StatusOr<server::HttpResponse> {
                    auto request = protocol::DecodeGraphqlRequest(ctx.request.body);
                    if (!request.ok()) return request.status();
                    return server::HttpResponse::Json(
                        200, Run(ctx, sessions, links, rescan, *request).dump());
                  });
                });
  // The legacy endpoint: data alone on success; 400 graphql-error with the errors as `data`.
  api.AddPooled("POST", "/admin/graphql", AuthLevel::kUser,
                [&sessions, &links, &rescan](RequestContext& ctx) {
                  return Guard([&]() -> StatusOr<server::HttpResponse> {
                    auto request = protocol::DecodeGraphqlRequest(ctx.request.body);
                    if (!request.ok()) return request.status();
                    auto out = Run(ctx, sessions, links, rescan, *request);
                    if (out.contains("errors")) {
                      return MakeProblemStatus(ProblemType::kGraphqlError,
                                               out["errors"][0]["message"].get<std::string>(),
                                               out["errors"].dump());
                    }
                    return server::HttpResponse::Json(200, out["data"].dump());
                  });
                });
}

}  // namespace bai::manager
