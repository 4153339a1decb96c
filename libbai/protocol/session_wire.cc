// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/session_wire.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"
#include "bai/protocol/vfolder_wire.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

namespace bai::protocol {
namespace {

using internal::FieldProblem;
using internal::FieldReader;
using internal::FirstPresent;
using internal::Lenient;
using internal::LenientInt;
using internal::ObjectOf;
using nlohmann::json;

json OptionalInt(std::optional<std::int64_t> v) { return v ? json(*v) : json(nullptr); }
json OptionalString(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }

// The spelling of a field that `j` uses (the first when it uses none).
char const* Spelling(json const& j, std::initializer_list<char const*> keys) {
  char const* found = nullptr;
  FirstPresent(j, keys, &found);
  return found;
}

// The `config` object of a create request: placement, environment, mounts, resources.
void ReadCreateConfig(json const& config, SlotTypeLookup const& slot_types, FieldReader& r,
                      SessionCreateRequest& out) {
  Lenient c(config, r);
  out.scaling_group = c.Str({"scaling_group", "scalingGroup"});
  out.environ = c.StrMap({"environ"}, "config.environ");
  out.mounts = c.StrList({"mounts"}, "config.mounts", "a list of vfolder names");
  out.mount_map = c.StrMap({"mount_map", "mountMap"}, "config.mount_map");
  if (auto const* mo = c.Find({"mount_options", "mountOptions"})) {
    static json const kNone = json::object();
    bool ok = mo->is_object();
    for (auto const& [name, opts] : (ok ? *mo : kNone).items()) {
      if (!opts.is_object()) {
        ok = false;
        break;
      }
      json perm = opts.contains("permission") ? opts["permission"] : opts.value("perm", json());
      if (perm.is_null()) continue;
      if (!perm.is_string() || !ParseVFolderPermission(perm.get<std::string>())) {
        r.Fail("config.mount_options." + name + ".permission", "ro, rw or wd");
        continue;
      }
      out.mount_permissions[name] = perm.get<std::string>();
    }
    if (!ok) r.Fail("config.mount_options", "an object of {\"permission\": ro|rw|wd} by folder");
  }
  if (auto const* ro = c.Find({"resource_opts", "resourceOpts"})) {
    if (!ro->is_object()) {
      r.Fail("config.resource_opts", "an object");
    } else {
      for (auto const& [k, v] : ro->items()) {
        out.resource_opts[k] = v.is_string() ? v.get<std::string>() : v.dump();
      }
    }
  }
  out.agent_list =
      c.StrList({"agent_list", "agentList"}, "config.agent_list", "a list of agent ids");
  if (auto const* pp = c.Find({"preopen_ports", "preopenPorts"}); pp && !pp->is_null()) {
    bool ok = pp->is_array();
    for (auto const& item : ok ? *pp : json::array()) {
      auto n = LenientInt(item);
      if (!n || *n <= 1024 || *n >= 65535 || IsReservedServicePort(static_cast<int>(*n)) ||
          std::find(out.preopen_ports.begin(), out.preopen_ports.end(), *n) !=
              out.preopen_ports.end()) {
        ok = false;
        break;
      }
      out.preopen_ports.push_back(static_cast<int>(*n));
    }
    if (!ok) {
      r.Fail("config.preopen_ports",
             "a list of distinct ports above 1024 and below 65535, none of 2000-2003, 2200, 7681");
    }
  }
  out.network = c.Str({"network"}).value_or("");
  if (!out.network.empty() && out.network != "bridge" && out.network != "none") {
    r.Fail("config.network", "bridge or none");
  }
  auto const* res = c.Find({"resources"});
  if (res == nullptr) return;
  if (!res->is_object()) return r.Fail("config.resources", "an object of slot amounts");
  auto type_of = [&](std::string const& slot) {
    return slot_types ? slot_types(slot) : KnownSlotType(slot);
  };
  bool known = true;
  for (auto const& [slot, amount] : res->items()) {
    if (!type_of(slot)) {
      known = false;
      r.Refuse("config.resources." + slot, "Unknown slot type");
    }
  }
  if (!known) return;
  auto slots = internal::SlotsFromJson(*res, type_of);
  if (!slots.ok()) return r.Refuse("config.resources", slots.status().message());
  for (auto const& [slot, amount] : *slots) {
    if (amount.is_unlimited()) r.Fail("config.resources." + slot, "finite");
  }
  out.resources = *std::move(slots);
}

// starts_at (a time or a delay; batch only) and batch_timeout (seconds or a duration).
void ReadCreateTiming(Lenient& l, FieldReader& r, SessionCreateRequest& out) {
  out.starts_at = l.Str({"starts_at", "startsAt"});
  if (out.starts_at && out.type != "batch") {
    r.Refuse("starts_at", "only batch sessions can start later");
  } else if (out.starts_at && !ParseDurationSeconds(*out.starts_at) &&
             !ParseHttpDate(*out.starts_at)) {
    r.Fail("starts_at", "an ISO 8601 time or a duration such as 30m");
  }
  if (auto const* bt = l.Find({"batch_timeout", "batchTimeout"})) {
    auto secs = bt->is_number_integer() ? std::optional<std::int64_t>(bt->get<std::int64_t>())
                : bt->is_string()       ? ParseDurationSeconds(bt->get_ref<std::string const&>())
                                        : std::nullopt;
    if (!secs || *secs <= 0) {
      r.Fail("batch_timeout", "seconds or a duration such as 1h");
    } else {
      out.batch_timeout_seconds = secs;
    }
  }
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

void WriteSlots(internal::ObjectWriter& w, std::string_view key, ResourceSlots const& slots) {
  std::map<std::string, std::string> text;
  for (auto const& [name, amount] : slots) text.emplace(name, amount.ToString());
  w.StrMap(key, text);
}

}  // namespace

bool ValidSessionName(std::string_view n) {
  if (n.size() < 4 || n.size() > 64 || n == "from-template") return false;
  if (!IsWordChar(n.front()) || !IsWordChar(n.back())) return false;
  for (char c : n) {
    if (!IsWordChar(c) && c != '.' && c != '-') return false;
  }
  return true;
}

std::string EncodeSessionCreateRequest(SessionCreateRequest const& r) {
  json body = {{"image", r.image},
               {"type", r.type},
               {"enqueueOnly", r.enqueue_only},
               {"maxWaitSeconds", r.max_wait_seconds},
               {"reuseIfExists", r.reuse_if_exists},
               {"cluster_size", r.cluster_size},
               {"cluster_mode", r.cluster_mode}};
  auto put = [&body](char const* key, auto const& value) {
    if (value) body[key] = *value;
  };
  if (!r.name.empty()) body["name"] = r.name;
  if (!r.group.empty()) body["group"] = r.group;
  if (!r.domain.empty()) body["domain"] = r.domain;
  if (!r.architecture.empty()) body["architecture"] = r.architecture;
  put("startupCommand", r.startup_command);
  put("tag", r.tag);
  put("bootstrap_script", r.bootstrap_script);
  put("starts_at", r.starts_at);
  put("batch_timeout", r.batch_timeout_seconds);
  put("priority", r.priority);
  put("owner_access_key", r.owner_access_key);
  put("callback_url", r.callback_url);
  if (!r.dependencies.empty()) body["dependencies"] = r.dependencies;
  json config = {{"resources", internal::SlotsToJson(r.resources)},
                 {"environ", r.environ},
                 {"mounts", r.mounts}};
  if (r.scaling_group) config["scaling_group"] = *r.scaling_group;
  if (!r.mount_map.empty()) config["mount_map"] = r.mount_map;
  if (!r.mount_permissions.empty()) {
    json options = json::object();
    for (auto const& [name, perm] : r.mount_permissions) options[name] = {{"permission", perm}};
    config["mount_options"] = std::move(options);
  }
  if (!r.resource_opts.empty()) config["resource_opts"] = r.resource_opts;
  if (!r.agent_list.empty()) config["agent_list"] = r.agent_list;
  if (!r.preopen_ports.empty()) config["preopen_ports"] = r.preopen_ports;
  if (!r.network.empty()) config["network"] = r.network;
  body["config"] = std::move(config);
  return body.dump();
}

StatusOr<SessionCreateRequest> DecodeSessionCreateRequest(std::string_view text,
                                                          SlotTypeLookup const& slot_types) {
  auto j = ObjectOf(text, "session create request");
  if (!j.ok()) return std::move(j).status();
  return internal::SessionCreateRequestFromJson(*j, slot_types);
}

std::string EncodeSessionCreateResult(SessionCreateResult const& result) {
  json body = {{"sessionId", result.id},
               {"sessionName", result.name},
               {"status", result.status},
               {"created", result.created}};
  // 24.09 answers a reused session with the snake_case key; tolerant clients read both.
  body[result.created ? "servicePorts" : "service_ports"] = json::array();
  return body.dump();
}

StatusOr<SessionCreateResult> DecodeSessionCreateResult(std::string_view text) {
  auto j = ObjectOf(text, "session create answer");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  SessionCreateResult out;
  out.id = r.String("sessionId");
  out.name = r.String("sessionName");
  out.status = r.String("status");
  out.created = r.Bool("created", true);
  if (!r.ok()) return FieldProblem(r);
  return out;
}

std::string EncodeSessionInfo(SessionInfo const& s) {
  std::string out;
  out.reserve(1536);
  internal::ObjectWriter w(out);
  w.Str("sessionId", s.id);
  w.Str("sessionName", s.name);
  w.Str("domainName", s.domain_name);
  w.Str("groupId", s.group_id);
  w.Str("userId", s.user_id);
  w.Str("lang", s.image);
  w.Str("image", s.image);
  w.Str("architecture", s.architecture);
  w.Str("registry", "");
  w.OptStr("tag", s.tag);
  w.Str("type", s.type);
  w.Str("scalingGroup", s.scaling_group);
  w.OptStr("agentId", s.agent_id);
  w.Raw("containerId", "null");
  // JSON objects, not Python str() renderings (a deliberate improvement over 24.09).
  WriteSlots(w, "occupiedSlots", s.occupied);
  WriteSlots(w, "occupyingSlots", s.occupied);
  WriteSlots(w, "requestedSlots", s.requested);
  w.Raw("occupiedShares", "{}");
  w.StrMap("environ", s.environ);
  w.StrMap("resourceOpts", s.resource_opts);
  w.Str("status", s.status.text.empty() ? ToString(s.status.status) : s.status.text);
  w.Str("statusInfo", s.status_info);
  w.Raw("statusData", "{}");
  w.StrMap("statusHistory", s.status_history);
  w.Str("result", s.result);
  w.OptInt("exitCode", s.exit_code);
  w.Int("age", s.age_ms);
  w.Str("creationTime", s.created_at);
  w.OptStr("terminationTime", s.terminated_at);
  w.Int("numQueriesExecuted", s.num_queries);
  w.Raw("lastStat", "{}");
  w.Raw("idleChecks", "{}");
  w.OptStr("startupCommand", s.startup_command);
  if (s.priority) w.Int("priority", *s.priority);
  json devices = json::object();
  for (auto const& d : s.attached_devices) {
    devices[d.kind].push_back(
        {{"device_id", d.device_id}, {"data", {{d.slot, d.amount.ToString()}}}});
  }
  w.Raw("attachedDevices", devices.dump());
  w.Raw("servicePorts", EncodeApps(s.service_ports));
  if (s.kernel_setup) {
    w.Raw("kernelSetup", json{{"network", s.kernel_setup->network},
                              {"scratch", s.kernel_setup->scratch},
                              {"homeBytes", s.kernel_setup->home_bytes},
                              {"tmpBytes", s.kernel_setup->tmp_bytes}}
                             .dump());
  }
  w.Close();
  return out;
}

namespace {

// A slot map as 23.09's REST session info writes it, Python's repr of a dict of Decimals
// ("{'cpu': Decimal('1'), 'mem': Decimal('335544320')}"), as JSON text; other text unchanged.
std::string PythonSlotsAsJson(std::string const& text) {
  if (text.find('\'') == std::string::npos) return text;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 9, "Decimal('") == 0) {
      auto end = text.find("')", i + 9);
      if (end == std::string::npos) return text;
      out += "\"" + text.substr(i + 9, end - i - 9) + "\"";
      i = end + 1;
    } else if (text[i] == '\'') {
      out += '"';
    } else {
      out += text[i];
    }
  }
  return out;
}

// Reads answer fields leniently: a missing field or one of an unexpected type reads as absent.
// Slot maps are read from objects or, as GraphQL's JSONString sends them, from JSON text (or
// 23.09's Python repr of one).
struct LenientReader {
  json const& j;

  std::optional<std::string> Str(char const* key) const {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  }
  // A time as RFC 3339 ("2026-11-29 10:39:30.779+00:00", as 23.09 writes them, gets its 'T').
  std::optional<std::string> Time(char const* key) const {
    auto t = Str(key);
    if (t && t->size() > 10 && (*t)[10] == ' ' && (*t)[4] == '-' && (*t)[7] == '-') (*t)[10] = 'T';
    if (t && (t->empty() || *t == "None")) return std::nullopt;
    return t;
  }
  std::optional<std::int64_t> Num(char const* key) const {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
  }
  std::map<std::string, std::string> Strings(char const* key) const {
    std::map<std::string, std::string> out;
    auto it = j.find(key);
    if (it == j.end() || !it->is_object()) return out;
    for (auto const& [k, v] : it->items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    return out;
  }
  std::vector<std::string> List(char const* key) const {
    std::vector<std::string> out;
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return out;
    for (auto const& v : *it) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
    return out;
  }
  ResourceSlots Slots(char const* key) const {
    auto it = j.find(key);
    if (it == j.end()) return {};
    std::optional<json> parsed;
    json const* object = &*it;
    if (it->is_string()) {
      parsed = internal::ParseJson(PythonSlotsAsJson(it->get_ref<std::string const&>()));
      object = parsed ? &*parsed : nullptr;
    }
    if (object == nullptr || !object->is_object()) return {};
    auto slots = internal::SlotsFromJson(*object);
    return slots.ok() ? *std::move(slots) : ResourceSlots();
  }
};

}  // namespace

StatusOr<SessionInfo> DecodeSessionInfo(std::string_view text) {
  auto j = ObjectOf(text, "session info");
  if (!j.ok()) return std::move(j).status();
  LenientReader r{*j};
  SessionInfo out;
  out.id = r.Str("sessionId").value_or("");
  out.name = r.Str("sessionName").value_or("");
  out.status = ParseSessionStatus(r.Str("status").value_or(""));
  out.status_info = r.Str("statusInfo").value_or("");
  out.type = r.Str("type").value_or("");
  out.image = r.Str("image").value_or(r.Str("lang").value_or(""));
  out.result = r.Str("result").value_or("undefined");
  out.exit_code = r.Num("exitCode");
  out.agent_id = r.Str("agentId");
  out.requested = r.Slots("requestedSlots");
  out.created_at = r.Time("creationTime").value_or("");
  out.terminated_at = r.Time("terminationTime");
  out.domain_name = r.Str("domainName").value_or("");
  out.group_id = r.Str("groupId").value_or("");
  out.user_id = r.Str("userId").value_or("");
  out.architecture = r.Str("architecture").value_or("");
  out.tag = r.Str("tag");
  out.scaling_group = r.Str("scalingGroup").value_or("");
  out.occupied = r.Slots("occupiedSlots");
  out.environ = r.Strings("environ");
  out.resource_opts = r.Strings("resourceOpts");
  out.status_history = r.Strings("statusHistory");
  out.age_ms = r.Num("age").value_or(0);
  out.num_queries = r.Num("numQueriesExecuted").value_or(0);
  out.startup_command = r.Str("startupCommand");
  if (auto p = r.Num("priority")) out.priority = static_cast<int>(*p);
  if (out.status_info == "None") out.status_info.clear();  // 23.09 writes Python's None
  if (auto it = j->find("attachedDevices"); it != j->end() && it->is_object()) {
    for (auto const& [kind, list] : it->items()) {
      if (!list.is_array()) continue;
      for (auto const& e : list) {
        if (!e.is_object()) continue;
        LenientReader er{e};
        auto data = e.find("data");
        if (data == e.end() || !data->is_object()) continue;
        for (auto const& [slot, amount] : data->items()) {
          auto value = amount.is_string()
                           ? Decimal::Parse(amount.get<std::string>())
                           : StatusOr<Decimal>(Status(StatusCode::kInvalidArgument, ""));
          if (!value.ok()) continue;
          out.attached_devices.push_back({kind, er.Str("device_id").value_or(""), slot, *value});
        }
      }
    }
  }
  if (auto it = j->find("servicePorts"); it != j->end() && it->is_array()) {
    if (auto apps = DecodeApps(it->dump()); apps.ok()) out.service_ports = std::move(*apps);
  }
  if (auto it = j->find("kernelSetup"); it != j->end() && it->is_object()) {
    LenientReader kr{*it};
    out.kernel_setup = KernelSetup{kr.Str("network").value_or(""), kr.Str("scratch").value_or(""),
                                   kr.Num("homeBytes").value_or(0), kr.Num("tmpBytes").value_or(0)};
  }
  out.raw_json = std::string(text);
  return out;
}

char const kSessionListItemFields[] =
    "id name status status_info type image access_key scaling_group tag result exit_code "
    "created_at status_changed terminated_at requested_slots occupied_slots agent_ids";

char const kSessionUseFields[] = "containers { live_stat }";

void AddLiveStat(std::string_view text, SessionUse& use) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return;
  // A figure is a decimal string (24.09) or a number.
  auto figure = [&](char const* metric) -> std::optional<double> {
    auto m = j->find(metric);
    if (m == j->end() || !m->is_object()) return std::nullopt;
    auto c = m->find("current");
    if (c == m->end()) return std::nullopt;
    if (c->is_number()) return c->get<double>();
    if (!c->is_string()) return std::nullopt;
    char* end = nullptr;
    std::string t = c->get<std::string>();
    double v = std::strtod(t.c_str(), &end);
    return end != t.c_str() && *end == '\0' ? std::optional<double>(v) : std::nullopt;
  };
  auto add_bytes = [](std::optional<std::int64_t>& into, std::optional<double> v) {
    if (v) into = into.value_or(0) + static_cast<std::int64_t>(*v);
  };
  if (auto cpu = figure("cpu_util")) use.cpu_pct = use.cpu_pct.value_or(0) + *cpu;
  add_bytes(use.mem_bytes, figure("mem"));
  add_bytes(use.gpu_mem_bytes, figure("cuda_mem"));
  if (auto m = j->find("mem"); m != j->end() && m->is_object()) {
    auto cap = m->find("capacity");
    if (cap != m->end() && (cap->is_string() || cap->is_number())) {
      double v = cap->is_number() ? cap->get<double>()
                                  : std::strtod(cap->get<std::string>().c_str(), nullptr);
      if (v > 0)
        use.mem_limit_bytes = use.mem_limit_bytes.value_or(0) + static_cast<std::int64_t>(v);
    }
  }
}

StatusOr<SessionListItem> DecodeSessionListItem(std::string_view text) {
  auto j = ObjectOf(text, "session list item");
  if (!j.ok()) return std::move(j).status();
  return internal::SessionListItemFromJson(*j);
}

}  // namespace bai::protocol

namespace bai::internal {

protocol::SessionListItem SessionListItemFromJson(nlohmann::json const& object) {
  protocol::LenientReader r{object};
  protocol::SessionListItem out;
  out.id = r.Str("id").value_or("");
  out.name = r.Str("name").value_or("");
  out.status = protocol::ParseSessionStatus(r.Str("status").value_or(""));
  out.status_info = r.Str("status_info").value_or("");
  out.type = r.Str("type").value_or("");
  out.image = r.Str("image").value_or("");
  out.access_key = r.Str("access_key").value_or("");
  out.scaling_group = r.Str("scaling_group").value_or("");
  out.tag = r.Str("tag");
  out.result = r.Str("result").value_or("");
  out.exit_code = r.Num("exit_code");
  out.created_at = r.Time("created_at").value_or("");
  out.status_changed = r.Str("status_changed");
  out.terminated_at = r.Time("terminated_at");
  if (object.contains("requested_slots")) out.requested = r.Slots("requested_slots");
  out.occupied = r.Slots("occupied_slots");
  out.agent_ids = r.List("agent_ids");
  if (auto c = object.find("containers"); c != object.end() && c->is_array()) {
    protocol::SessionUse use;
    bool any = false;
    for (auto const& k : *c) {
      if (!k.is_object()) continue;
      auto stat = k.find("live_stat");
      if (stat == k.end() || stat->is_null()) continue;
      protocol::AddLiveStat(stat->is_string() ? stat->get<std::string>() : stat->dump(), use);
      any = true;
    }
    if (any) out.use = use;
  }
  return out;
}

}  // namespace bai::internal

namespace bai::protocol {

std::string EncodeExecuteStep(ExecuteStep const& step) {
  json body = {{"mode", step.mode}, {"code", step.code}};
  if (!step.run_id.empty()) body["runId"] = step.run_id;
  if (!step.options.empty()) body["options"] = step.options;
  return body.dump();
}

StatusOr<ExecuteStep> DecodeExecuteStep(std::string_view text) {
  auto j = ObjectOf(text, "execute request");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  ExecuteStep step;
  step.mode = r.Required("mode");
  if (!step.mode.empty() && step.mode != "query" && step.mode != "batch" &&
      step.mode != "continue" && step.mode != "input" && step.mode != "complete") {
    r.Fail("mode", "query, batch, continue, input or complete");
  }
  step.run_id = r.String(Spelling(*j, {"runId", "run_id"}));
  step.code = r.String("code");
  if (auto const* o = r.Object("options")) {
    for (auto const& [k, v] : o->items()) {
      // Backend.AI clients send non-string options too; only strings mean something here.
      if (v.is_string()) step.options[k] = v.get<std::string>();
    }
  }
  if ((step.mode == "continue" || step.mode == "input") && step.run_id.empty()) {
    r.Fail("runId", "given for continue and input");
  }
  if (!r.ok()) return FieldProblem(r);
  return step;
}

std::string EncodeExecuteResult(ExecuteResult const& result) {
  json console = json::array();
  for (auto const& [stream, text] : result.console) console.push_back({stream, text});
  json options = json::object();
  if (result.status == "waiting-input") {
    options = {{"prompt", result.prompt}, {"is_password", result.is_password}};
  }
  json j = {{"runId", result.run_id},
            {"status", result.status},
            {"exitCode", OptionalInt(result.exit_code)},
            {"console", console},
            {"options", options},
            {"files", json::array()}};
  if (!result.msg.empty()) j["msg"] = result.msg;
  return j.dump();
}

StatusOr<ExecuteResult> DecodeExecuteResult(std::string_view text) {
  auto j = ObjectOf(text, "execute result");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  ExecuteResult out;
  out.run_id = r.String("runId");
  out.status = r.Required("status");
  out.exit_code = r.OptInt("exitCode");
  if (auto const* c = r.Array("console")) {
    for (auto const& item : *c) {
      if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {
        out.console.emplace_back(item[0].get<std::string>(), item[1].get<std::string>());
      }
    }
  }
  if (auto const* o = r.Object("options")) {
    if (auto p = o->find("prompt"); p != o->end() && p->is_string()) out.prompt = *p;
    if (auto p = o->find("is_password"); p != o->end() && p->is_boolean()) out.is_password = *p;
  }
  out.msg = r.String("msg");
  // API v1 servers answer with stdout/stderr fields instead of a console list.
  for (char const* stream : {"stdout", "stderr"}) {
    if (auto t = r.OptString(stream); t && !t->empty()) out.console.emplace_back(stream, *t);
  }
  if (!r.ok()) return FieldProblem(r);
  out.raw_json = j->dump();
  return out;
}

std::string EncodeSessionEventData(SessionEventData const& data) {
  json j = {{"reason", OptionalString(data.reason)},
            {"sessionName", data.session_name},
            {"ownerAccessKey", data.owner_access_key},
            {"sessionId", data.session_id},
            {"exitCode", OptionalInt(data.exit_code)}};
  if (data.kernel_id) {
    j["kernelId"] = *data.kernel_id;
    j["clusterRole"] = "main";
  }
  return j.dump();
}

StatusOr<SessionEventData> DecodeSessionEventData(std::string_view text) {
  auto j = ObjectOf(text, "session event");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  SessionEventData out;
  out.session_id = r.String("sessionId");
  out.session_name = r.String("sessionName");
  out.owner_access_key = r.String("ownerAccessKey");
  out.kernel_id = r.OptString("kernelId");
  out.reason = r.OptString("reason");
  out.exit_code = r.OptInt("exitCode");
  if (!r.ok()) return FieldProblem(r);
  return out;
}

std::string EncodeTaskEventData(TaskEventData const& data) {
  json j = {{"task_id", data.task_id},
            {"message", data.message},
            {"current_progress", data.current_progress},
            {"total_progress", data.total_progress}};
  if (data.status) j["status"] = *data.status;
  return j.dump();
}

StatusOr<TaskEventData> DecodeTaskEventData(std::string_view text) {
  auto j = ObjectOf(text, "background task event");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  TaskEventData out;
  out.task_id = r.String("task_id");
  out.message = r.String("message");
  out.status = r.OptString("status");
  for (auto [key, field] : {std::pair{"current_progress", &out.current_progress},
                            std::pair{"total_progress", &out.total_progress}}) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) continue;
    if (it->is_number_integer()) {
      *field = it->get<std::int64_t>();
    } else if (it->is_string()) {  // 24.09 sends a finished task's numbers as strings
      char* end = nullptr;
      auto const& s = it->get_ref<std::string const&>();
      *field = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') r.Fail(key, "an integer");
    } else {
      r.Fail(key, "an integer");
    }
  }
  if (!r.ok()) return FieldProblem(r);
  return out;
}

}  // namespace bai::protocol

namespace bai::internal {

StatusOr<protocol::SessionCreateRequest> SessionCreateRequestFromJson(
    nlohmann::json const& object, protocol::SlotTypeLookup const& slot_types) {
  using protocol::SessionCreateRequest;
  FieldReader r(object);
  Lenient l(object, r);
  SessionCreateRequest out;
  if (auto name = l.Str({"name", "session_name", "clientSessionToken"})) {
    out.name = *name;
    if (!protocol::ValidSessionName(out.name)) {
      r.Refuse("name",
               "4–64 characters of letters, digits, '_', '.', '-', starting and ending "
               "with a letter, digit or '_' (not \"from-template\")");
    }
  }
  auto image = l.Str({"image", "lang"});
  if (!image && !l.Find({"image", "lang"})) r.Refuse("image", "required");
  if (image && (image->empty() || image->size() > 512)) r.Fail("image", "1–512 characters");
  out.image = image.value_or("");
  out.architecture = l.Str({"architecture", "arch"}).value_or("");
  out.type = l.Str({"type", "sessionType"}).value_or("interactive");
  if (out.type != "interactive" && out.type != "batch" && out.type != "inference" &&
      out.type != "system") {
    r.Fail("type", "interactive, batch or inference");
  }
  out.group = l.Str({"group", "groupName", "group_name"}).value_or("");
  out.domain = l.Str({"domain", "domainName", "domain_name"}).value_or("");
  out.cluster_size = static_cast<int>(l.Int({"cluster_size", "clusterSize"}, 1, 1024).value_or(1));
  out.cluster_mode = l.Str({"cluster_mode", "clusterMode"}).value_or("single-node");
  if (out.cluster_mode != "single-node" && out.cluster_mode != "multi-node") {
    r.Fail("cluster_mode", "single-node or multi-node");
  }
  out.tag = l.Str({"tag"});
  out.enqueue_only = l.Bool({"enqueueOnly", "enqueue_only"}).value_or(false);
  out.max_wait_seconds =
      l.Int({"maxWaitSeconds", "max_wait_seconds"}, 0, 86400LL * 365).value_or(0);
  out.reuse_if_exists = l.Bool({"reuseIfExists", "reuse_if_exists"}).value_or(true);
  out.startup_command = l.Str({"startupCommand", "startup_command"});
  out.bootstrap_script = l.Str({"bootstrap_script", "bootstrapScript"});
  out.callback_url = l.Str({"callback_url", "callbackUrl", "callbackURL"});
  if (auto p = l.Int({"priority"}, 0, 100)) out.priority = static_cast<int>(*p);
  out.owner_access_key = l.Str({"owner_access_key", "ownerAccessKey"});
  protocol::ReadCreateTiming(l, r, out);
  // A batch session without a command runs its image's Entrypoint and Cmd (issue 46); the agent
  // refuses one whose image names neither, in words.
  // Stored and listed with every session: bounded, so a list of sessions stays small (64
  // aliases over sessions with 1 MB commands made one 4 KB query answer 640 MB).
  if (out.startup_command && out.startup_command->size() > protocol::kMaxStartupCommandBytes) {
    r.Refuse("startupCommand", "longer than 64 KiB (put the script in a vfolder and run it)");
  }
  if (out.bootstrap_script && out.bootstrap_script->size() > protocol::kMaxStartupCommandBytes) {
    r.Refuse("bootstrap_script", "longer than 64 KiB");
  }
  out.dependencies = l.StrList({"dependencies"}, "dependencies", "a list of session ids or names");
  if (auto const* config = l.Find({"config"})) {
    if (config->is_object()) {
      protocol::ReadCreateConfig(*config, slot_types, r, out);
    } else {
      r.Fail("config", "an object");
    }
  }
  if (!r.ok()) return protocol::FieldProblem(r);
  return out;
}

}  // namespace bai::internal

namespace bai::protocol {

std::string EncodeLogEvent(LogEvent const& e) {
  std::string out = "event: " + e.kind + "\r\ndata: ";
  if (e.kind == "end") {
    json data = {{"status", e.status},
                 {"exit_code", OptionalInt(e.exit_code)},
                 {"status_info", e.status_info}};
    out += data.dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    // Written by hand: the output relay's hot path (every byte a job prints passes here).
    out.reserve(out.size() + e.data.size() + 64);
    out += "{\"stream\":";
    internal::AppendJsonBytes(out, e.stream);
    out += ",\"data\":";
    internal::AppendJsonBytes(out, e.data);
    out += ",\"offset\":" + std::to_string(e.offset) + "}";
  }
  out += "\r\n\r\n";
  return out;
}

namespace {

// The output event as EncodeLogEvent writes it, read without building a JSON tree: nullopt
// for any other shape (the general decoder then reads it).
std::optional<LogEvent> FastOutputEvent(std::string_view data) {
  LogEvent out;
  std::size_t pos = 0;
  auto literal = [&](std::string_view text) {
    if (data.substr(pos, text.size()) != text) return false;
    pos += text.size();
    return true;
  };
  if (!literal("{\"stream\":") || !internal::ReadJsonString(data, pos, out.stream) ||
      !literal(",\"data\":") || !internal::ReadJsonString(data, pos, out.data) ||
      !literal(",\"offset\":")) {
    return std::nullopt;
  }
  std::size_t digits = pos;
  std::int64_t offset = 0;
  while (pos < data.size() && data[pos] >= '0' && data[pos] <= '9' && pos - digits < 18) {
    offset = offset * 10 + (data[pos++] - '0');
  }
  if (pos == digits || !literal("}") || pos != data.size()) return std::nullopt;
  out.offset = offset;
  return out;
}

}  // namespace

StatusOr<LogEvent> DecodeLogEvent(std::string_view event, std::string_view data) {
  if (event == "output") {
    if (auto fast = FastOutputEvent(data)) return *std::move(fast);
  }
  auto j = ObjectOf(data, "log event");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  LogEvent out;
  out.kind = std::string(event);
  if (out.kind == "end") {
    out.status = r.String("status");
    out.exit_code = r.OptInt("exit_code");
    out.status_info = r.String("status_info");
  } else if (out.kind == "output") {
    out.stream = r.String("stream", "stdout");
    out.data = r.String("data");
    out.offset = r.Int("offset", 0);
  } else {
    r.Refuse("event", "output or end");
  }
  if (!r.ok()) return FieldProblem(r);
  return out;
}

std::vector<std::pair<std::string, std::string>> OutputFrom(SessionOutput const& output,
                                                            std::int64_t offset) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::int64_t> after(output.chunks.size() + 1, 0);  // data bytes from i on
  for (std::size_t i = output.chunks.size(); i-- > 0;) {
    auto const& [stream, text] = output.chunks[i];
    after[i] = after[i + 1] + (stream == "notice" ? 0 : static_cast<std::int64_t>(text.size()));
  }
  std::int64_t pos = 0;
  for (std::size_t i = 0; i < output.chunks.size(); ++i) {
    auto const& [stream, text] = output.chunks[i];
    if (stream == "notice") {
      pos = std::max(pos, output.next_offset - after[i + 1]);
      if (offset < pos || offset <= 0) out.emplace_back(stream, text);
      continue;
    }
    auto size = static_cast<std::int64_t>(text.size());
    if (pos + size > offset) {
      out.emplace_back(
          stream, text.substr(static_cast<std::size_t>(std::max<std::int64_t>(offset - pos, 0))));
    }
    pos += size;
  }
  return out;
}

std::string EncodeSessionOutput(SessionOutput const& o) {
  json chunks = json::array();
  for (auto const& [stream, text] : o.chunks) chunks.push_back({stream, text});
  json body = {{"result",
                {{"chunks", std::move(chunks)},
                 {"next_offset", o.next_offset},
                 {"truncated", o.truncated}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<SessionOutput> DecodeSessionOutput(std::string_view body) {
  auto j = ObjectOf(body, "session output");
  if (!j.ok()) return std::move(j).status();
  auto result = j->find("result");
  if (result == j->end() || !result->is_object()) {
    return Status(StatusCode::kInternal, "session output: no result object");
  }
  FieldReader r(*result);
  SessionOutput out;
  out.next_offset = r.Int("next_offset", 0);
  out.truncated = r.Bool("truncated", false);
  if (!r.ok()) return FieldProblem(r);
  auto chunks = result->find("chunks");
  if (chunks == result->end() || !chunks->is_array()) {
    return Status(StatusCode::kInternal, "session output: no chunks list");
  }
  for (auto const& c : *chunks) {
    if (!c.is_array() || c.size() != 2 || !c[0].is_string() || !c[1].is_string()) {
      return Status(StatusCode::kInternal, "session output: a chunk is not [stream, text]");
    }
    out.chunks.emplace_back(c[0].get<std::string>(), c[1].get<std::string>());
  }
  return out;
}

}  // namespace bai::protocol
