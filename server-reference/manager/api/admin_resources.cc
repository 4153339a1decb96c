// SPDX-License-Identifier: Apache-2.0
// Resource presets, resource groups (scaling groups) with their associations, and modify_agent
// in /admin/gql (24.09's names and answers; streams-admin-console.md §B.2). Every mutation here
// is the superadmin's (admin/roles.cc).
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"
#include "server-reference/manager/api/admin_fields.h"
#include "server-reference/manager/api/graphql_util.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/columns.h"
#include "server-reference/manager/state/images.h"
#include "server-reference/manager/state/policies.h"
#include "server-reference/manager/state/resource_groups.h"

#include <cstdlib>

namespace bai::manager::admin {

namespace {

using graphql::PlannedField;
using nlohmann::json;

// The one scheduler and driver bai implements (FIFO with backfill and a head guarantee, ADR 15;
// agents registered by themselves).
constexpr char kScheduler[] = "fifo";
constexpr char kDriver[] = "static";

// A JSONString input holding an object: its text, or why not.
StatusOr<std::string> ObjectText(json const& v, char const* field) {
  auto j = v.is_string() ? internal::ParseJson(v.get<std::string>()) : std::optional<json>(v);
  if (!j || !j->is_object()) {
    return Status(StatusCode::kInvalidArgument, std::string(field) + ": a JSON object");
  }
  return j->dump();
}

// "64m", "1g" or bytes: shared memory in bytes (24.09's BigInt), as text.
StatusOr<std::string> SharedMemory(json const& v) {
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  protocol::ResourceSlots probe;
  if (!protocol::ParseSlotAssignment("mem=" + text, probe).ok() || !probe.count("mem")) {
    return Status(StatusCode::kInvalidArgument, "shared_memory: a size such as 64m or 1g");
  }
  return probe["mem"].ToString();
}

json SharedMemoryValue(std::optional<std::string> const& text) {
  if (!text) return nullptr;
  char* end = nullptr;
  long long bytes = std::strtoll(text->c_str(), &end, 10);
  return end && *end == '\0' && !text->empty() ? json(bytes) : json(*text);
}

class ResourceFields {
 public:
  explicit ResourceFields(Context const& ctx)
      : db_(ctx.db), groups_(ctx.db), presets_(ctx.db), store_(ctx.db) {}

  FieldResult Resolve(PlannedField const& f) {
    if (f.name == "resource_preset" || f.name == "resource_presets") return Presets(f);
    if (f.name == "create_resource_preset") return CreatePreset(f);
    if (f.name == "modify_resource_preset") return ModifyPreset(f);
    if (f.name == "delete_resource_preset") return DeletePreset(f);
    if (f.name == "create_scaling_group") return CreateGroup(f);
    if (f.name == "modify_scaling_group") return ModifyGroup(f);
    if (f.name == "delete_scaling_group") return DeleteGroup(f);
    if (f.name == "modify_agent") return ModifyAgent(f);
    if (f.name == "alias_image") return AliasImage(f);
    if (f.name == "dealias_image") return DealiasImage(f);
    if (f.name.rfind("disassociate_all_scaling_groups_with_", 0) == 0) return DissociateAll(f);
    if (f.name.rfind("associate_scaling_group", 0) == 0 ||
        f.name.rfind("disassociate_scaling_group", 0) == 0) {
      return Associate(f);
    }
    return std::nullopt;
  }

 private:
  StatusOr<json> Presets(PlannedField const& f) {
    auto all = store_.ListPresets();
    if (!all.ok()) return all.status();
    std::string name = gql::ArgString(f, "name");
    json out = json::array();
    for (auto const& p : *all) {
      if (f.name == "resource_preset" && p.name != name) continue;
      out.push_back({{"name", p.name},
                     {"resource_slots", SlotsColumn(p.resource_slots)},
                     {"shared_memory", SharedMemoryValue(p.shared_memory)}});
    }
    if (f.name == "resource_presets") return out;
    return out.empty() ? json(nullptr) : out[0];
  }

  StatusOr<json> CreatePreset(PlannedField const& f) {
    std::string name = gql::ArgString(f, "name");
    json const& props = f.args["props"];
    if (name.empty()) return Refused("invalid name", "resource_preset");
    auto slots = SlotMapInput(props["resource_slots"], "resource_slots");
    if (!slots.ok()) return Refused(slots.status().message(), "resource_preset");
    std::optional<std::string> shm;
    if (auto const* v = Given(props, "shared_memory")) {
      auto s = SharedMemory(*v);
      if (!s.ok()) return Refused(s.status().message(), "resource_preset");
      shm = *s;
    }
    auto s = presets_.Create(name, *slots, shm);
    if (s.code() == StatusCode::kAlreadyExists) {
      return Refused("integrity error: " + s.message(), "resource_preset");
    }
    if (!s.ok()) return s;
    json item = {
        {"name", name}, {"resource_slots", *slots}, {"shared_memory", SharedMemoryValue(shm)}};
    return json{{"ok", true}, {"msg", "success"}, {"resource_preset", item}};
  }

  StatusOr<json> ModifyPreset(PlannedField const& f) {
    json const& props = f.args["props"];
    std::optional<std::string> slots, shm;
    if (auto const* v = Given(props, "resource_slots")) {
      auto s = SlotMapInput(*v, "resource_slots");
      if (!s.ok()) return Outcome(false, s.status().message());
      slots = *s;
    }
    if (auto const* v = Given(props, "shared_memory")) {
      auto s = SharedMemory(*v);
      if (!s.ok()) return Outcome(false, s.status().message());
      shm = *s;
    }
    auto s = presets_.Modify(gql::ArgString(f, "name"), slots, shm);
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kInvalidArgument) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> DeletePreset(PlannedField const& f) {
    auto s = presets_.Delete(gql::ArgString(f, "name"));
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  // The group fields every input shares; an error names the field.
  static Status ReadGroup(json const& props, ResourceGroupChanges& c) {
    if (auto const* v = Given(props, "description")) c.description = v->get<std::string>();
    if (auto const* v = Given(props, "is_active")) c.is_active = v->get<bool>();
    if (auto const* v = Given(props, "is_public")) c.is_public = v->get<bool>();
    if (auto const* v = Given(props, "driver"); v && v->get<std::string>() != kDriver) {
      return Status(StatusCode::kInvalidArgument,
                    "driver: only \"static\" (agents register themselves) is implemented");
    }
    if (auto const* v = Given(props, "scheduler")) {
      std::string scheduler = v->get<std::string>();
      if (scheduler != kScheduler) {
        return Status(StatusCode::kInvalidArgument,
                      "scheduler: only \"fifo\" (FIFO with backfill and a head guarantee) is "
                      "implemented, not \"" +
                          scheduler + "\"");
      }
      c.scheduler = scheduler;
    }
    for (auto [field, target] : {std::pair{"scheduler_opts", &c.scheduler_opts},
                                 std::pair{"driver_opts", &c.driver_opts}}) {
      if (auto const* v = Given(props, field)) {
        auto text = ObjectText(*v, field);
        if (!text.ok()) return text.status();
        *target = *text;
      }
    }
    if (auto const* v = Given(props, "wsproxy_addr")) c.wsproxy_addr = v->get<std::string>();
    if (auto const* v = Given(props, "wsproxy_api_token")) {
      c.wsproxy_api_token = v->get<std::string>();
    }
    if (auto const* v = Given(props, "use_host_network")) c.use_host_network = v->get<bool>();
    return Status();
  }

  StatusOr<json> CreateGroup(PlannedField const& f) {
    ResourceGroupChanges c;
    if (auto s = ReadGroup(f.args["props"], c); !s.ok()) {
      return Refused(s.message(), "scaling_group");
    }
    ScalingGroupRecord g;
    g.name = gql::ArgString(f, "name");
    if (g.name.empty() || g.name.size() > 64) {
      return Refused("invalid name: 1 to 64 characters", "scaling_group");
    }
    g.description = c.description.value_or("");
    g.is_active = c.is_active.value_or(true);
    g.is_public = c.is_public.value_or(true);
    g.scheduler = c.scheduler.value_or(kScheduler);
    g.scheduler_opts = c.scheduler_opts.value_or("{}");
    g.driver_opts = c.driver_opts.value_or("{}");
    g.wsproxy_addr = c.wsproxy_addr;
    g.wsproxy_api_token = c.wsproxy_api_token;
    g.use_host_network = c.use_host_network.value_or(false);
    auto s = groups_.Create(g);
    if (s.code() == StatusCode::kAlreadyExists) {
      return Refused("integrity error: " + s.message(), "scaling_group");
    }
    if (!s.ok()) return s;
    json item = {{"name", g.name},
                 {"description", g.description},
                 {"is_active", g.is_active},
                 {"is_public", g.is_public},
                 {"driver", kDriver},
                 {"driver_opts", g.driver_opts},
                 {"scheduler", g.scheduler},
                 {"scheduler_opts", g.scheduler_opts},
                 {"use_host_network", g.use_host_network}};
    return json{{"ok", true}, {"msg", "success"}, {"scaling_group", item}};
  }

  StatusOr<json> ModifyGroup(PlannedField const& f) {
    ResourceGroupChanges c;
    if (auto s = ReadGroup(f.args["props"], c); !s.ok()) return Outcome(false, s.message());
    auto s = groups_.Modify(gql::ArgString(f, "name"), c);
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kInvalidArgument) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> DeleteGroup(PlannedField const& f) {
    auto s = groups_.Delete(gql::ArgString(f, "name"));
    if (s.code() == StatusCode::kNotFound) return Outcome(false, NoMatching(f));
    if (s.code() == StatusCode::kFailedPrecondition) return Outcome(false, s.message());
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  // associate_scaling_group_with_{domain,user_group,keypair}, their disassociate_ forms, and the
  // bulk associate_scaling_groups_with_* / disassociate_scaling_groups_with_* (a list of groups).
  StatusOr<json> Associate(PlannedField const& f) {
    bool on = f.name.rfind("associate", 0) == 0;
    AssociationKind kind;
    std::string target;
    if (f.name.size() >= 6 && f.name.compare(f.name.size() - 6, 6, "domain") == 0) {
      kind = AssociationKind::kDomain;
      target = gql::ArgString(f, "domain");
    } else if (f.name.size() >= 10 && f.name.compare(f.name.size() - 10, 10, "user_group") == 0) {
      kind = AssociationKind::kProject;
      target = gql::ArgString(f, "user_group");
    } else {
      kind = AssociationKind::kKeypair;
      target = gql::ArgString(f, "access_key");
    }
    std::vector<std::string> names;
    if (auto it = f.args.find("scaling_groups"); it != f.args.end() && it->is_array()) {
      for (auto const& n : *it) {
        if (n.is_string()) names.push_back(n.get<std::string>());
      }
    } else {
      names.push_back(gql::ArgString(f, "scaling_group"));
    }
    for (auto const& name : names) {
      auto s = groups_.Associate(kind, name, target, on);
      if (s.code() == StatusCode::kNotFound) {
        return Outcome(false, NoMatching(f) + ": " + s.message());
      }
      if (!s.ok()) return s;
    }
    return Outcome(true, "success");
  }

  StatusOr<json> DissociateAll(PlannedField const& f) {
    bool domain = f.name == "disassociate_all_scaling_groups_with_domain";
    auto s = groups_.DissociateAll(domain ? AssociationKind::kDomain : AssociationKind::kProject,
                                   gql::ArgString(f, domain ? "domain" : "user_group"));
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  StatusOr<json> ModifyAgent(PlannedField const& f) {
    json const& props = f.args["props"];
    std::optional<bool> schedulable;
    std::optional<std::string> group;
    if (auto const* v = Given(props, "schedulable")) schedulable = v->get<bool>();
    if (auto const* v = Given(props, "scaling_group")) group = v->get<std::string>();
    if (!schedulable && !group) return Outcome(false, "nothing to update");
    auto s = groups_.ModifyAgent(gql::ArgString(f, "id"), schedulable, group);
    if (s.code() == StatusCode::kNotFound) {
      return Outcome(false, NoMatching(f) + ": " + s.message());
    }
    if (!s.ok()) return s;
    return Outcome(true, "success");
  }

  // alias_image: the target must be an image some agent offers (by name or alias).
  StatusOr<json> AliasImage(PlannedField const& f) {
    std::string alias = gql::ArgString(f, "alias");
    std::string target = gql::ArgString(f, "target");
    std::string arch = gql::ArgString(f, "architecture");
    if (arch.empty()) arch = "x86_64";
    if (alias.empty() || alias.size() > 256) return Outcome(false, "invalid alias");
    ImageStore images(db_);
    auto resolved = images.Resolve(target);
    if (!resolved.ok()) return resolved.status();
    if (auto known = images.CheckKnown(*resolved); !known.ok()) {
      return Outcome(false, "no matching image: " + target);
    }
    if (auto r = images.SetAlias({alias, *resolved, arch}); !r.ok()) return r;
    return Outcome(true, "success");
  }

  StatusOr<json> DealiasImage(PlannedField const& f) {
    auto removed = ImageStore(db_).RemoveAlias(gql::ArgString(f, "alias"));
    if (!removed.ok()) return removed.status();
    if (!*removed) return Outcome(false, NoMatching(f));
    return Outcome(true, "success");
  }

  server::Database& db_;
  ResourceGroupStore groups_;
  PresetStore presets_;
  Store store_;
};

}  // namespace

FieldResult ResolveResourceField(Context const& ctx, PlannedField const& f) {
  return ResourceFields(ctx).Resolve(f);
}

}  // namespace bai::manager::admin
