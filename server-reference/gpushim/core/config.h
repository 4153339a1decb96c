// SPDX-License-Identifier: Apache-2.0
// What the agent tells the shim about one container: the limits file, parsed once at the first
// CUDA call (never on the hot path). Pure: text in, a Config or the first error out.
//
// The file is `key=value` lines, like Backend.AI's resource.txt (docs/gpu-sharing.md lists them):
//   mode=timeslice|mps|off
//   compute=hard|soft
//   ledger=/opt/kernel/gpushim/ledger
//   context_bytes=536870912
//   managed=count|refuse
//   period_ms=100
//   device.0.uuid=GPU-…            device.0.memory=8589934592
//   device.0.quanta=0-299,500-599
//   device.0.activity=/opt/bai/gpushim/activity/0   device.0.activity_self=SESSION-ID
// `device.N` numbers the devices as the container sees them (CUDA ordinal N); the UUID is what
// the ledger and NVML key by.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bai::gpushim {

inline constexpr int kQuantaPerPeriod = 1000;  ///< one quantum = 0.001 of a GPU's time
inline constexpr int kMaxDevices = 16;

enum class SharingMode { kOff, kTimeslice, kMps };
enum class ComputeMode { kHard, kSoft };
enum class ManagedPolicy { kCount, kRefuse };

struct DeviceLimits {
  std::string uuid;
  std::uint64_t memory_bytes = 0;        ///< 0: no memory cap
  std::bitset<kQuantaPerPeriod> quanta;  ///< the period's quanta this container may use
  /// Soft mode: a directory with one stamp file per container on this GPU (the agent's), and the
  /// name of this container's own, the only one it can write.
  std::string activity_dir;
  std::string activity_self;
  [[nodiscard]] bool ComputeLimited() const { return quanta.count() < kQuantaPerPeriod; }
};

struct Config {
  SharingMode mode = SharingMode::kOff;
  ComputeMode compute = ComputeMode::kHard;
  ManagedPolicy managed = ManagedPolicy::kCount;
  std::string ledger_path;
  std::uint64_t context_bytes = 0;
  std::uint32_t period_ms = 100;
  std::vector<DeviceLimits> devices;  ///< index = container-local CUDA ordinal
};

struct ParseResult {
  Config config;
  std::string error;  ///< empty on success; else "line N: …"
};

ParseResult ParseConfig(std::string_view text);

/// "0-29,50-59" → bits; false on malformed or out-of-range input.
bool ParseQuanta(std::string_view text, std::bitset<kQuantaPerPeriod>* out);
/// Bits → "0-29,50-59" (the agent writes what ParseQuanta reads).
std::string FormatQuanta(std::bitset<kQuantaPerPeriod> const& quanta);

}  // namespace bai::gpushim
