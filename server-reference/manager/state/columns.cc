// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/columns.h"

#include "libbai/protocol/wire_json.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

using nlohmann::json;

namespace {

bool Empty(std::string_view text) { return text.empty() || text == "{}" || text == "[]"; }

}  // namespace

protocol::ResourceSlots SlotsFromColumn(std::string_view text) {
  if (Empty(text)) return {};
  auto j = internal::ParseJson(text);
  if (!j) return {};
  auto slots = internal::SlotsFromJson(*j);
  return slots.ok() ? *std::move(slots) : protocol::ResourceSlots();
}

std::string SlotsColumn(protocol::ResourceSlots const& slots) {
  return internal::SlotsToJson(slots).dump();
}

std::vector<std::string> ListFromColumn(std::string_view text) {
  std::vector<std::string> out;
  if (Empty(text)) return out;
  auto j = internal::ParseJson(text);
  if (!j || !j->is_array()) return out;
  for (auto const& item : *j) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string ListColumn(std::vector<std::string> const& list) { return json(list).dump(); }

std::map<std::string, std::string> MapFromColumn(std::string_view text) {
  std::map<std::string, std::string> out;
  if (Empty(text)) return out;
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return out;
  for (auto const& [k, v] : j->items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

std::string MapColumn(std::map<std::string, std::string> const& map) { return json(map).dump(); }

ImageList ImagesFromColumn(std::string_view text) {
  ImageList out;
  if (Empty(text)) return out;
  auto j = internal::ParseJson(text);
  if (!j || !j->is_array()) return out;
  for (auto const& img : *j) {
    if (img.is_string()) out.push_back({img.get<std::string>(), {}, 0, ""});
    if (!img.is_object()) continue;
    server::agent_protocol::ImageInfo info;
    auto name = img.find("name");
    if (name == img.end() || !name->is_string() || name->get<std::string>().empty()) continue;
    info.name = name->get<std::string>();
    if (auto aliases = img.find("aliases"); aliases != img.end() && aliases->is_array()) {
      for (auto const& a : *aliases) {
        if (a.is_string()) info.aliases.push_back(a.get<std::string>());
      }
    }
    if (auto size = img.find("size"); size != img.end() && size->is_number_integer()) {
      info.size = size->get<std::int64_t>();
    }
    if (auto kind = img.find("kind"); kind != img.end() && kind->is_string()) {
      info.kind = kind->get<std::string>();
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string ImagesColumn(ImageList const& images) {
  json out = json::array();
  for (auto const& i : images) {
    json image = {{"name", i.name}, {"aliases", i.aliases}};
    if (i.size > 0) image["size"] = i.size;
    if (!i.kind.empty()) image["kind"] = i.kind;
    out.push_back(std::move(image));
  }
  return out.dump();
}

AgentDevices AgentDevicesFromColumn(std::string_view text) {
  AgentDevices out;
  if (Empty(text)) return out;
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return out;
  if (auto p = j->find("policy"); p != j->end() && p->is_string())
    out.policy = p->get<std::string>();
  auto list = j->find("devices");
  if (list == j->end() || !list->is_array()) return out;
  for (auto const& d : *list) {
    if (!d.is_object()) continue;
    server::agent_protocol::DeviceInfo info;
    info.kind = d.value("kind", std::string("cuda"));
    info.index = d.value("index", std::int64_t{0});
    info.uuid = d.value("uuid", std::string());
    info.name = d.value("name", std::string());
    info.memory = d.value("memory", std::int64_t{0});
    if (auto shares = protocol::Decimal::Parse(d.value("shares", std::string("0"))); shares.ok()) {
      info.shares = *shares;
    }
    if (!info.uuid.empty()) out.devices.push_back(std::move(info));
  }
  return out;
}

std::string AgentDevicesColumn(AgentDevices const& devices) {
  json list = json::array();
  for (auto const& d : devices.devices) {
    list.push_back({{"kind", d.kind},
                    {"index", d.index},
                    {"uuid", d.uuid},
                    {"name", d.name},
                    {"memory", d.memory},
                    {"shares", d.shares.ToString()}});
  }
  return json{{"policy", devices.policy}, {"devices", list}}.dump();
}

std::vector<server::DeviceAllocation> AllocationsFromColumn(std::string_view text) {
  if (Empty(text)) return {};
  auto j = internal::ParseJson(text);
  if (!j) return {};
  auto parsed = server::DeviceAllocationsFromJson(*j);
  return parsed.ok() ? *std::move(parsed) : std::vector<server::DeviceAllocation>();
}

std::string AllocationsColumn(std::vector<server::DeviceAllocation> const& allocations) {
  return server::DeviceAllocationsToJson(allocations).dump();
}

std::optional<protocol::KernelSetup> KernelSetupFromColumn(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return std::nullopt;
  auto bytes = [&](char const* key) {
    auto it = j->find(key);
    return it != j->end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  auto word = [&](char const* key) {
    auto it = j->find(key);
    return it != j->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return protocol::KernelSetup{word("network"), word("scratch"), bytes("home_bytes"),
                               bytes("tmp_bytes")};
}

std::string KernelSetupColumn(protocol::KernelSetup const& setup) {
  return server::agent_protocol::KernelSetupJson(setup).dump();
}

}  // namespace bai::manager
