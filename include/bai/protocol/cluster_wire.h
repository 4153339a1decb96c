// SPDX-License-Identifier: Apache-2.0
#pragma once
// The cluster's images, agents and resource presets as /admin/gql lists them (24.09's field
// names): one codec for the manager, which encodes an image with it, and the SDK.

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
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
};

/// The 24.09 fields above as one JSON object (the manager adds the rest of the schema's).
BAI_EXPORT std::string EncodeImage(ImageEntry const& image);
BAI_EXPORT StatusOr<ImageEntry> DecodeImage(std::string_view json);

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

}  // namespace bai::protocol
