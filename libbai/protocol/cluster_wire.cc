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

std::string EncodeImage(ImageEntry const& i) {
  return json{{"id", i.id},
              {"name", i.name},
              {"tag", i.tag},
              {"registry", i.registry},
              {"architecture", i.architecture},
              {"aliases", i.aliases},
              {"installed_agents", i.installed_agents},
              {"installed", !i.installed_agents.empty()},
              {"size_bytes", i.size_bytes}}
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
  if (i.name.empty()) return Status(StatusCode::kInvalidArgument, "an image without a name");
  return i;
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

}  // namespace bai::protocol
