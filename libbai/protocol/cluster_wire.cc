// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/cluster_wire.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace bai::protocol {

using json = nlohmann::json;

namespace {

using Fields = internal::AnswerFields;

StatusOr<json> Object(std::string_view text, char const* what) {
  return internal::ParseObject(text, what);
}

// A slot map the server sends as an object or as JSON text: its text.
std::string SlotsText(json const& j, char const* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "{}";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

}  // namespace

std::string ImageEntry::Kind() const {
  auto it = labels.find(kImageKindLabel);
  return it == labels.end() ? std::string() : it->second;
}

std::string EncodeImage(ImageEntry const& i) {
  json labels = json::array();
  for (auto const& [k, v] : i.labels) labels.push_back({{"key", k}, {"value", v}});
  return json{{"id", i.id},
              {"name", i.name},
              {"tag", i.tag},
              {"registry", i.registry},
              {"architecture", i.architecture},
              {"aliases", i.aliases},
              {"installed_agents", i.installed_agents},
              {"installed", !i.installed_agents.empty()},
              {"size_bytes", i.size_bytes},
              {"labels", labels}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<ImageEntry> DecodeImage(std::string_view text) {
  auto j = Object(text, "an image");
  if (!j.ok()) return j.status();
  Fields f(*j);
  ImageEntry i{f.Str("id"),
               f.Str("name"),
               f.Str("tag"),
               f.Str("registry"),
               f.Str("architecture"),
               f.Strings("aliases"),
               f.Strings("installed_agents"),
               f.Int("size_bytes")};
  // 24.09's [{key, value}]; a manager that answers none (or null) gives none.
  if (auto it = j->find("labels"); it != j->end() && it->is_array()) {
    for (auto const& kv : *it) {
      if (kv.is_object() && kv.value("key", json()).is_string() &&
          kv.value("value", json()).is_string()) {
        i.labels[kv["key"].get<std::string>()] = kv["value"].get<std::string>();
      }
    }
  }
  if (i.name.empty()) return Status(StatusCode::kInvalidArgument, "an image without a name");
  return i;
}

std::string EncodeContainerRegistry(ContainerRegistryEntry const& r) {
  return json{{"id", r.id},
              {"hostname", r.hostname},
              {"config",
               {{"url", r.url},
                {"type", r.type},
                {"project", r.project},
                {"username", r.username ? json(*r.username) : json(nullptr)},
                {"password", r.has_password ? json("*****") : json(nullptr)},
                {"ssl_verify", r.ssl_verify},
                {"is_global", r.is_global}}}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<ContainerRegistryEntry> DecodeContainerRegistry(std::string_view text) {
  auto j = Object(text, "a container registry");
  if (!j.ok()) return j.status();
  Fields f(*j);
  ContainerRegistryEntry r;
  r.id = f.Str("id");
  r.hostname = f.Str("hostname");
  if (r.hostname.empty()) {
    return Status(StatusCode::kInvalidArgument, "a container registry without a hostname");
  }
  auto config = j->find("config");
  if (config != j->end() && config->is_object()) {
    Fields c(*config);
    r.url = c.Str("url");
    r.type = c.Str("type");
    r.project = c.Strings("project");
    r.username = c.OptStr("username");
    r.has_password = c.OptStr("password").has_value();
    r.ssl_verify = c.Bool("ssl_verify", true);
    r.is_global = c.Bool("is_global", true);
  }
  return r;
}

StatusOr<AgentEntry> DecodeAgent(std::string_view text) {
  auto j = Object(text, "an agent");
  if (!j.ok()) return j.status();
  Fields f(*j);
  AgentEntry a;
  a.id = f.Str("id");
  a.status = f.Str("status");
  a.scaling_group = f.Str("scaling_group");
  a.architecture = f.Str("architecture");
  a.version = f.Str("version");
  a.schedulable = f.Bool("schedulable", true);
  a.available_slots = SlotsText(*j, "available_slots");
  a.occupied_slots = SlotsText(*j, "occupied_slots");
  a.first_contact = f.Str("first_contact");
  a.lost_at = f.Str("lost_at");
  if (a.id.empty()) return Status(StatusCode::kInvalidArgument, "an agent without an id");
  return a;
}

StatusOr<ResourcePreset> DecodeResourcePreset(std::string_view text) {
  auto j = Object(text, "a resource preset");
  if (!j.ok()) return j.status();
  Fields f(*j);
  ResourcePreset p;
  p.name = f.Str("name");
  p.resource_slots = SlotsText(*j, "resource_slots");
  if (auto s = f.OptStr("shared_memory")) {
    char* end = nullptr;
    long long bytes = std::strtoll(s->c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && !s->empty()) p.shared_memory = bytes;
  }
  if (p.name.empty()) return Status(StatusCode::kInvalidArgument, "a preset without a name");
  return p;
}

std::string EncodeManagerStatus(ManagerStatus const& m) {
  json nodes = json::array();
  for (auto const& n : m.nodes) {
    nodes.push_back(
        {{"id", n.id},
         {"num_proc", 1},
         {"service_addr", n.service_addr.empty() ? json(nullptr) : json(n.service_addr)},
         {"heartbeat_timeout", 15.0},
         {"ssl_enabled", false},
         {"active_sessions", n.active_sessions},
         {"status", n.status},
         {"version", n.version},
         {"api_version", json::array({n.api_major, n.api_date})},
         {"started_at", n.started_at},
         {"last_seen", n.last_seen}});
  }
  json j = {{"nodes", nodes}, {"status", m.status}, {"active_sessions", m.active_sessions}};
  if (m.has_cluster) {
    json queue = json::array();
    for (auto const& q : m.queue) {
      queue.push_back(
          {{"scaling_group", q.scaling_group}, {"reason", q.reason}, {"count", q.count}});
    }
    j["cluster"] = {{"database", m.database},
                    {"schema_version", m.schema_version},
                    {"sessions", m.sessions},
                    {"agents", m.agents},
                    {"queue", queue}};
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<ManagerStatus> DecodeManagerStatus(std::string_view text) {
  auto j = Object(text, "the manager's status");
  if (!j.ok()) return j.status();
  Fields f(*j);
  ManagerStatus m;
  m.status = f.Str("status");
  m.active_sessions = f.Int("active_sessions");
  if (auto it = j->find("nodes"); it != j->end() && it->is_array()) {
    for (auto const& node : *it) {
      if (!node.is_object()) continue;
      Fields nf(node);
      ManagerNode n;
      n.id = nf.Str("id");
      n.service_addr = nf.Str("service_addr");
      n.status = nf.Str("status");
      n.active_sessions = nf.Int("active_sessions");
      n.version = nf.Str("version");
      if (auto v = node.find("api_version"); v != node.end() && v->is_array() && v->size() == 2 &&
                                             (*v)[0].is_number_integer() && (*v)[1].is_string()) {
        n.api_major = (*v)[0].get<int>();
        n.api_date = (*v)[1].get<std::string>();
      }
      n.started_at = nf.Str("started_at");
      n.last_seen = nf.Str("last_seen");
      m.nodes.push_back(std::move(n));
    }
  }
  auto c = j->find("cluster");
  if (c == j->end() || !c->is_object()) return m;
  m.has_cluster = true;
  Fields cf(*c);
  m.database = cf.Str("database");
  m.schema_version = cf.Int("schema_version");
  auto counts = [&c](char const* key) {
    std::map<std::string, std::int64_t> out;
    auto it = c->find(key);
    if (it == c->end() || !it->is_object()) return out;
    for (auto const& [name, n] : it->items()) {
      if (n.is_number_integer()) out[name] = n.get<std::int64_t>();
    }
    return out;
  };
  m.sessions = counts("sessions");
  m.agents = counts("agents");
  if (auto q = c->find("queue"); q != c->end() && q->is_array()) {
    for (auto const& item : *q) {
      if (!item.is_object()) continue;
      Fields qf(item);
      m.queue.push_back({qf.Str("scaling_group"), qf.Str("reason"), qf.Int("count")});
    }
  }
  return m;
}

}  // namespace bai::protocol
