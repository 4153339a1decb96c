// SPDX-License-Identifier: Apache-2.0
// Where on an agent's GPUs a session's GPU slots go: whole devices (`cuda.device`) and
// fractions (`cuda.shares`, in steps of 0.01) placed on individual devices, never past any one
// device's worth. Pure, like the scheduler that calls it.
#pragma once

#include "bai/protocol/resource.h"

#include "server-reference/common/wire/device_allocation.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::manager::scheduler {

using protocol::Decimal;
using protocol::ResourceSlots;

inline constexpr char kCudaDeviceSlot[] = "cuda.device";
inline constexpr char kCudaSharesSlot[] = "cuda.shares";
/// The step of `cuda.shares`: 0.01, in Decimal units.
inline constexpr std::int64_t kShareQuantumUnits = Decimal::kUnitsPerOne / 100;

/// How a fraction that needs more than one device, or could go on several, is placed.
///  kEvenly: a request no larger than one device goes whole on one device (the fullest that
///           still fits, to keep large holes for large requests); a larger one is split in equal
///           parts over as few devices as possible.
///  kFill:   devices are filled in order, each as far as it goes.
enum class DevicePolicy { kEvenly, kFill };

struct Device {
  std::string uuid;
  Decimal shares = Decimal::FromInteger(1);  ///< the whole device in cuda.shares (agent config)
  Decimal used;            ///< in cuda.shares; a device held whole counts as fully used
  bool fractional = true;  ///< false: offered whole only (cuda.device)
};

using server::DeviceAllocation;

/// Whether `amount` is a whole number of 0.01 steps (what cuda.shares accepts).
bool OnShareQuantum(Decimal amount);

/// The devices for `requested`'s cuda.device and cuda.shares, or nullopt when they do not fit
/// (including a fraction that fits the agent's total but no arrangement of its devices).
/// Requests without GPU slots get an empty list.
std::optional<std::vector<DeviceAllocation>> PlaceDevices(std::vector<Device> const& devices,
                                                          ResourceSlots const& requested,
                                                          DevicePolicy policy);

/// Marks `allocations` as used on `devices`.
void Occupy(std::vector<Device>& devices, std::vector<DeviceAllocation> const& allocations);

}  // namespace bai::manager::scheduler
