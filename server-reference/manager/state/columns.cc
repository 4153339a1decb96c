// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/columns.h"

#include "libbai/internal/json_codec.h"

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
    if (img.is_string()) out.emplace_back(img.get<std::string>(), std::vector<std::string>());
    if (!img.is_object()) continue;
    std::vector<std::string> aliases;
    for (auto const& a : img.value("aliases", json::array())) {
      if (a.is_string()) aliases.push_back(a.get<std::string>());
    }
    auto name = img.value("name", std::string());
    if (!name.empty()) out.emplace_back(std::move(name), std::move(aliases));
  }
  return out;
}

std::string ImagesColumn(ImageList const& images) {
  json out = json::array();
  for (auto const& [name, aliases] : images) out.push_back({{"name", name}, {"aliases", aliases}});
  return out.dump();
}

}  // namespace bai::manager
