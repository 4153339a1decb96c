// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/server_info_cache.h"

#include "libbai/util/json_parse.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bai::internal {
namespace {

using nlohmann::json;

json ReadAll(std::string const& path) {
  std::ifstream in(path);
  if (!in) return json::object();
  std::stringstream text;
  text << in.rdbuf();
  auto j = ParseJson(text.str());
  return j && j->is_object() ? *j : json::object();
}

void WriteAll(std::string const& path, json const& all) {
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    out << all.dump() << "\n";
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::int64_t Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// The schema file of an endpoint and manager version, beside the server cache.
std::string SchemaPath(std::string const& path, std::string const& endpoint,
                       std::string const& manager) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : endpoint + "|" + manager) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char name[40];
  std::snprintf(name, sizeof name, "graphql-%016llx.json", static_cast<unsigned long long>(h));
  return (std::filesystem::path(path).parent_path() / name).string();
}

}  // namespace

std::optional<std::string> LoadSchemaText(std::string const& path, std::string const& endpoint,
                                          std::string const& manager) {
  auto j = ReadAll(SchemaPath(path, endpoint, manager));
  if (j.value("endpoint", "") != endpoint || j.value("manager", "") != manager ||
      !j.contains("facts")) {
    return std::nullopt;
  }
  return j["facts"].dump();
}

void StoreSchemaText(std::string const& path, std::string const& endpoint,
                     std::string const& manager, std::string const& text) {
  auto facts = ParseJson(text);
  if (!facts) return;
  WriteAll(SchemaPath(path, endpoint, manager),
           {{"endpoint", endpoint}, {"manager", manager}, {"facts", *facts}});
}

std::optional<ServerInfo> LoadServerInfo(std::string const& path, std::string const& endpoint,
                                         std::chrono::system_clock::time_point now,
                                         std::chrono::seconds max_age) {
  auto all = ReadAll(path);
  auto it = all.find(endpoint);
  if (it == all.end() || !it->is_object()) return std::nullopt;
  auto version = it->find("version");
  auto manager = it->find("manager");
  auto checked = it->find("checked_at");
  if (version == it->end() || !version->is_string() || manager == it->end() ||
      !manager->is_string() || checked == it->end() || !checked->is_number_integer()) {
    return std::nullopt;
  }
  auto age = Seconds(now) - checked->get<std::int64_t>();
  if (age < 0 || age >= max_age.count()) return std::nullopt;
  ServerInfo info;
  info.version = version->get<std::string>();
  info.manager = manager->get<std::string>();
  info.is_backend_ai = true;
  return info;
}

void StoreServerInfo(std::string const& path, std::string const& endpoint, ServerInfo const& info,
                     std::chrono::system_clock::time_point now) {
  auto all = ReadAll(path);
  all[endpoint] = {
      {"version", info.version}, {"manager", info.manager}, {"checked_at", Seconds(now)}};
  WriteAll(path, all);
}

void ForgetServerInfo(std::string const& path, std::string const& endpoint) {
  auto all = ReadAll(path);
  if (all.erase(endpoint) > 0) WriteAll(path, all);
}

}  // namespace bai::internal
