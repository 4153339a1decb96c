// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/api/dialect.h"

#include <algorithm>
#include <cstdio>

namespace bai::manager {

protocol::ApiVersion RequestVersion(server::HttpRequest const& request) {
  if (auto header = request.Header("x-backendai-version")) {
    if (auto v = protocol::ApiVersion::Parse(*header)) return *v;
  }
  return protocol::kDefaultRequestApiVersion;
}

nlohmann::json Dialect::VersionPair() const {
  char date[16];
  std::snprintf(date, sizeof date, "%08d", version.date);
  return nlohmann::json::array({version.major, date});
}

Dialect DialectOf(protocol::ApiVersion version) {
  using V = protocol::ApiVersion;
  Dialect d;
  d.version = version;
  if (version >= V{6, 0}) {  // creation_config_v5
    d.create_config_keys = {{"mounts"},
                            {"mount_map", "mountMap"},
                            {"mount_options", "mountOptions"},
                            {"environ"},
                            {"scaling_group", "scalingGroup"},
                            {"resources"},
                            {"resource_opts", "resourceOpts"},
                            {"preopen_ports", "preopenPorts"},
                            {"agent_list", "agentList"}};
  } else if (version >= V{5, 0}) {  // creation_config_v4
    d.create_config_keys = {{"mounts"},
                            {"mount_map", "mountMap"},
                            {"environ"},
                            {"cluster_size", "clusterSize"},
                            {"scaling_group", "scalingGroup"},
                            {"resources"},
                            {"resource_opts", "resourceOpts"},
                            {"preopen_ports", "preopenPorts"}};
  } else if (version >= V{4, 20190315}) {  // creation_config_v3
    d.create_config_keys = {{"mounts"},
                            {"environ"},
                            {"cluster_size", "clusterSize"},
                            {"scaling_group", "scalingGroup"},
                            {"resources"},
                            {"resource_opts", "resourceOpts"}};
  } else {  // creation_config_v2
    d.create_config_keys = {{"mounts"},         {"environ"},       {"clusterSize"},
                            {"instanceMemory"}, {"instanceCores"}, {"instanceGPUs"},
                            {"instanceTPUs"}};
  }
  // bai's extension, in every version: the kernel's network (bridge, none).
  d.create_config_keys.push_back({"network"});
  return d;
}

std::map<std::string, std::string> RefusedConfigKeys(Dialect const& dialect,
                                                     nlohmann::json const& config) {
  std::map<std::string, std::string> out;
  if (!config.is_object()) return out;
  for (auto const& [key, value] : config.items()) {
    bool taken =
        std::any_of(dialect.create_config_keys.begin(), dialect.create_config_keys.end(),
                    [&](auto const& aliases) {
                      return std::find(aliases.begin(), aliases.end(), key) != aliases.end();
                    });
    if (taken) continue;
    std::string why = key + " is not allowed key in API " + dialect.version.ToString();
    if (key == "cluster_size" || key == "clusterSize") {
      why += " (since v6 it is a top-level parameter: cluster_size)";
    }
    out["config." + key] = why;
  }
  return out;
}

}  // namespace bai::manager
