// SPDX-License-Identifier: Apache-2.0
#pragma once
// The cluster's images, agents and resource presets as /admin/gql lists them (24.09's field
// names): one codec for the manager, which encodes an image with it, and the SDK.

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// An image (`images`, `image`): a name the agents offer, on one architecture.
struct ImageEntry {
  std::string id;  ///< NAME:TAG@ARCHITECTURE
  std::string name;
  std::string tag;
  std::string registry;  ///< "local" for an agent's own store
  std::string architecture;
  std::vector<std::string> aliases;
  std::vector<std::string> installed_agents;
  std::int64_t size_bytes = 0;  ///< as its agents' stores hold it; 0: unknown
  /// 24.09's labels (a list of {key, value} on the wire): a registry image's own, and bai's
  /// `kImageKindLabel` for what an agent holds.
  std::map<std::string, std::string> labels = {};

  /// "host" (a built-in on the agent host's /usr), "imported", "pulled", or "" (a registry
  /// image no agent holds, or a manager that does not say).
  std::string Kind() const;
};
/// The label a bai manager puts on an image an agent holds: what it is (host, imported, pulled).
inline constexpr char kImageKindLabel[] = "bai.image-kind";

/// The 24.09 fields above as one JSON object (the manager adds the rest of the schema's).
BAI_EXPORT std::string EncodeImage(ImageEntry const& image);
BAI_EXPORT StatusOr<ImageEntry> DecodeImage(std::string_view json);

/// A container registry as 24.09's legacy GraphQL type answers it (`container_registries`):
/// {id, hostname, config {url, type, project [..], username, password, ssl_verify,
/// is_global}}. A set password is answered "*****", never itself (issue 46).
struct ContainerRegistryEntry {
  std::string id;
  std::string hostname;  ///< the canonical names' first part ("127.0.0.1:5000")
  std::string url;
  std::string type = "docker";
  std::vector<std::string> project;
  std::optional<std::string> username;
  bool has_password = false;
  bool ssl_verify = true;
  bool is_global = true;
};
BAI_EXPORT std::string EncodeContainerRegistry(ContainerRegistryEntry const& r);
BAI_EXPORT StatusOr<ContainerRegistryEntry> DecodeContainerRegistry(std::string_view json);

/// An agent (`agent_list.items`): slots as the JSON objects the server keeps.
struct AgentEntry {
  std::string id;
  std::string status;  ///< ALIVE, LOST
  std::string scaling_group;
  std::string architecture;
  std::string version;
  bool schedulable = true;
  std::string available_slots = "{}";
  std::string occupied_slots = "{}";
  std::string first_contact;
  std::string lost_at;
};

BAI_EXPORT StatusOr<AgentEntry> DecodeAgent(std::string_view json);

/// A resource preset (`resource_presets`).
struct ResourcePreset {
  std::string name;
  std::string resource_slots = "{}";  ///< {"cpu": "2", "mem": "4294967296"}
  std::optional<std::int64_t> shared_memory;
};

BAI_EXPORT StatusOr<ResourcePreset> DecodeResourcePreset(std::string_view json);

/// One manager (`GET /manager/status` `nodes`): 24.09's fields, and when it started and was
/// last seen (bai's; every manager on the database is listed while it beats).
struct ManagerNode {
  std::string id;            ///< the HOST:PORT it listens on
  std::string service_addr;  ///< its URL
  std::string status = "running";
  std::int64_t active_sessions = 0;
  std::string version;  ///< "bai-manager 0.1.0"
  int api_major = 0;    ///< the caller's API version as the node answers it
  std::string api_date;
  std::string started_at;
  std::string last_seen;
};

/// A resource group's queued sessions of one kind of reason (`capacity`, `keypair-slots`, …).
struct QueuedCount {
  std::string scaling_group;
  std::string reason;
  std::int64_t count = 0;
};

/// `GET /manager/status`: 24.09's answer, plus (for superadmins; bai's) the cluster at a glance.
struct ManagerStatus {
  std::string status = "running";  ///< running, frozen
  std::int64_t active_sessions = 0;
  std::vector<ManagerNode> nodes;
  bool has_cluster = false;  ///< the fields below were sent
  std::string database;      ///< sqlite, postgresql
  std::int64_t schema_version = 0;
  std::map<std::string, std::int64_t> sessions;  ///< by status
  std::map<std::string, std::int64_t> agents;    ///< by status
  std::vector<QueuedCount> queue;
};

BAI_EXPORT std::string EncodeManagerStatus(ManagerStatus const& status);
BAI_EXPORT StatusOr<ManagerStatus> DecodeManagerStatus(std::string_view json);

}  // namespace bai::protocol
