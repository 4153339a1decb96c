// SPDX-License-Identifier: Apache-2.0
// The per-version rules of the manager (server-reference/manager/api/dialect.h), one version at
// a time: which keys a session creation's `config` takes, and how a caller's version is shown.
#include "server-reference/manager/api/dialect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

protocol::ApiVersion V(char const* text) { return *protocol::ApiVersion::Parse(text); }

std::vector<std::string> Refused(char const* version, json const& config) {
  std::vector<std::string> out;
  for (auto const& [k, v] : RefusedConfigKeys(DialectOf(V(version)), config)) out.push_back(k);
  return out;
}

TEST(DialectTest, EachVersionTakesItsOwnCreationConfig) {
  json every = {{"mounts", json::array()},
                {"mount_map", json::object()},
                {"mountOptions", json::object()},
                {"environ", json::object()},
                {"clusterSize", 2},
                {"scalingGroup", "default"},
                {"resources", json::object()},
                {"resource_opts", json::object()},
                {"preopenPorts", json::array()},
                {"agent_list", json::array()},
                {"instanceMemory", "1g"}};
  using L = std::vector<std::string>;
  // v6 and later (creation_config_v5): no cluster size, no instance sizes.
  EXPECT_EQ(Refused("v8.20240915", every), (L{"config.clusterSize", "config.instanceMemory"}));
  EXPECT_EQ(Refused("v6.20200815", every), (L{"config.clusterSize", "config.instanceMemory"}));
  // v5 (creation_config_v4): cluster size in config; no mount options, no agent list.
  EXPECT_EQ(Refused("v5.20191215", every),
            (L{"config.agent_list", "config.instanceMemory", "config.mountOptions"}));
  // v4.20190315 and later v4 (creation_config_v3): no mount map, no preopen ports.
  EXPECT_EQ(Refused("v4.20190615", every),
            (L{"config.agent_list", "config.instanceMemory", "config.mountOptions",
               "config.mount_map", "config.preopenPorts"}));
  // Earlier v4 (creation_config_v2): instance sizes instead of resources; camelCase only.
  EXPECT_EQ(
      Refused("v4.20181215", every),
      (L{"config.agent_list", "config.mountOptions", "config.mount_map", "config.preopenPorts",
         "config.resource_opts", "config.resources", "config.scalingGroup"}));
  EXPECT_TRUE(Refused("v8.20240915", json::object()).empty());
  EXPECT_TRUE(Refused("v8.20240915", json()).empty()) << "a missing config takes nothing";
  auto why = RefusedConfigKeys(DialectOf(V("v6.20220315")), {{"cluster_size", 2}});
  EXPECT_THAT(why["config.cluster_size"], HasSubstr("top-level"));
  EXPECT_THAT(why["config.cluster_size"], HasSubstr("v6.20220315"));
}

TEST(DialectTest, TheCallersVersionAndItsDefault) {
  EXPECT_EQ(DialectOf(V("v6.20220315")).VersionPair(), json::array({6, "20220315"}));
  server::HttpRequest with;
  with.headers.emplace_back("x-backendai-version", "v7.20230615");
  EXPECT_EQ(RequestVersion(with), V("v7.20230615"));
  server::HttpRequest without;
  EXPECT_EQ(RequestVersion(without), protocol::kDefaultRequestApiVersion) << "24.09: v5.20191215";
}

}  // namespace
}  // namespace bai::manager
