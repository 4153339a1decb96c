// SPDX-License-Identifier: Apache-2.0
#pragma once
// The manager's JSON columns (slot maps, string lists, string maps), parsed and written here
// only: records carry typed values, and the text is read once, where the row is read. Text
// that is not what the column holds reads as empty; "{}" and "[]" skip the parser.

#include "bai/protocol/resource.h"

#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/common/wire/device_allocation.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::manager {

protocol::ResourceSlots SlotsFromColumn(std::string_view text);
/// {"cpu": "2", "mem": "4294967296"}: amounts as strings, as on the wire.
std::string SlotsColumn(protocol::ResourceSlots const& slots);

std::vector<std::string> ListFromColumn(std::string_view text);
std::string ListColumn(std::vector<std::string> const& list);

/// Non-string values read as their JSON text.
std::map<std::string, std::string> MapFromColumn(std::string_view text);
std::string MapColumn(std::map<std::string, std::string> const& map);

/// A kernel's setup as its agent reported it (agent_messages.h, KernelSetupJson); nullopt for
/// NULL or text that is not one.
std::optional<protocol::KernelSetup> KernelSetupFromColumn(std::string_view text);
std::string KernelSetupColumn(protocol::KernelSetup const& setup);

/// An agent's images: [{"name", "aliases", "size"}] (or bare names, as older agents wrote them).
using ImageList = std::vector<server::agent_protocol::ImageInfo>;
ImageList ImagesFromColumn(std::string_view text);
std::string ImagesColumn(ImageList const& images);

/// An agent's GPUs and how it places fractions on them:
/// {"policy": "evenly", "devices": [{kind, index, uuid, name, memory, shares}]}.
struct AgentDevices {
  std::string policy = "evenly";
  std::vector<server::agent_protocol::DeviceInfo> devices;
};
AgentDevices AgentDevicesFromColumn(std::string_view text);
std::string AgentDevicesColumn(AgentDevices const& devices);

/// The GPUs a session holds (device_allocation.h's JSON form).
std::vector<server::DeviceAllocation> AllocationsFromColumn(std::string_view text);
std::string AllocationsColumn(std::vector<server::DeviceAllocation> const& allocations);

}  // namespace bai::manager
