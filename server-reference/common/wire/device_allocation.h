// SPDX-License-Identifier: Apache-2.0
// The GPUs a kernel holds: which device, through which slot, how much. The scheduler decides
// it, the manager stores it with the session and sends it in create_kernel, the agent builds the
// container from it, and session info shows it: one type and one JSON form for all of them.
#pragma once

#include "bai/protocol/resource.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace bai::server {

struct DeviceAllocation {
  std::string slot;  ///< "cuda.device" (amount 1: the whole device) or "cuda.shares"
  std::string uuid;  ///< "GPU-…"
  protocol::Decimal amount;
  friend bool operator==(DeviceAllocation const&, DeviceAllocation const&) = default;
};

/// [{"slot": "cuda.shares", "uuid": "GPU-…", "amount": "0.5"}, …]
nlohmann::json DeviceAllocationsToJson(std::vector<DeviceAllocation> const& allocations);
/// The inverse; entries that are not of that shape are errors (kInvalidArgument naming them).
StatusOr<std::vector<DeviceAllocation>> DeviceAllocationsFromJson(nlohmann::json const& j);

}  // namespace bai::server
