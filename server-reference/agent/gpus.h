// SPDX-License-Identifier: Apache-2.0
// The agent's CUDA plugin: which slots its GPUs offer, and what a kernel given some of them
// gets in its container (devices, the driver's user-space files, CUDA_VISIBLE_DEVICES, the GPU
// shim with its limits file and ledger, or NVIDIA MPS settings). The planning is pure; the runc
// backend applies the plan, and `GpuFiles` reads the host once at start.
#pragma once

#include "bai/protocol/resource.h"
#include "bai/status.h"

#include "server-reference/agent/nvml.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/common/wire/device_allocation.h"
#include "server-reference/gpushim/core/config.h"
#include "server-reference/gpushim/core/ledger.h"

#include <bitset>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bai::agent {

using Quanta = std::bitset<gpushim::kQuantaPerPeriod>;

/// How this agent shares its GPUs (bai-agent --gpu-* options; docs/gpu-sharing.md).
struct GpuSharing {
  /// What one physical GPU is worth in cuda.shares (e.g. 5: 1 fGPU = 0.2 GPU).
  protocol::Decimal shares_per_gpu = protocol::Decimal::FromInteger(1);
  std::string mode = "timeslice";   ///< timeslice | mps | off (whole devices only)
  std::string compute = "hard";     ///< hard | soft
  std::string policy = "evenly";    ///< evenly | fill
  std::uint64_t context_bytes = 0;  ///< charged to the container's cap per CUDA context
  std::uint32_t period_ms = 100;
};

/// Checks the options' values; the first bad one named.
Status ValidateGpuSharing(GpuSharing const& sharing);

/// cuda.device = N and, unless sharing is off, cuda.shares = N × shares_per_gpu.
void AddGpuSlots(protocol::ResourceSlots& slots, std::size_t gpus, GpuSharing const& sharing);
/// The registration's device list (what each is worth in shares; zero when sharing is off).
std::vector<server::agent_protocol::DeviceInfo> GpuDeviceInfos(std::vector<GpuDevice> const& gpus,
                                                               GpuSharing const& sharing);

/// The time quanta of each GPU's period that this agent's kernels hold, so that two kernels
/// sharing a GPU never hold the same instant. Thread-safe.
class QuantaMap {
 public:
  /// `count` free quanta of the device, in as few stretches as possible; nullopt when fewer
  /// are free.
  std::optional<Quanta> Take(std::string const& uuid, std::size_t count);
  void Give(std::string const& uuid, Quanta const& quanta);
  /// Marks quanta held (a re-adopted kernel's); false when some were already held.
  bool Hold(std::string const& uuid, Quanta const& quanta);
  std::size_t Free(std::string const& uuid) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Quanta> held_;
};

/// What a kernel's container gets for its devices.
struct GpuPlan {
  std::vector<GpuDevice> devices;  ///< in container ordinal order
  /// The shim's limits file ("" when the kernel holds whole devices only: no shim).
  std::string limits;
  std::vector<gpushim::LedgerDeviceSpec> ledger;
  std::map<std::string, std::string> env;
  std::map<std::string, Quanta> quanta;  ///< held per device UUID (given back at destroy)
  /// Soft mode: the devices (UUIDs, by container ordinal) whose activity boards the container
  /// sees at kActivityInKernel/N, with its own stamp file named by `PlanGpus`'s `self`.
  std::vector<std::pair<std::size_t, std::string>> activity;  ///< (ordinal, UUID)
  std::string mps_uuid;  ///< MPS mode: the GPU whose MPS daemon the container talks to
};

/// Where the shim's files are inside the container.
inline constexpr char kShimDirInKernel[] = "/opt/bai/gpushim";
inline constexpr char kShimLibInKernel[] = "/opt/bai/gpushim/libbai-gpushim.so";
inline constexpr char kLimitsInKernel[] = "/etc/bai-gpushim.conf";
inline constexpr char kLedgerInKernel[] = "/opt/bai/gpushim/state/ledger";
inline constexpr char kActivityInKernel[] = "/opt/bai/gpushim/activity";

/// Plans the devices of `allocations` (device UUIDs the agent has) for the kernel named `self`.
/// Errors: a UUID it does not have, a fraction while sharing is off, quanta no longer free
/// (kFailedPrecondition). Takes quanta from `quanta` on success only.
StatusOr<GpuPlan> PlanGpus(std::vector<GpuDevice> const& gpus,
                           std::vector<server::DeviceAllocation> const& allocations,
                           GpuSharing const& sharing, QuantaMap& quanta,
                           std::string const& self = "kernel");

/// MPS mode: one NVIDIA MPS control daemon per GPU, each with its own pipe and log directories
/// under the agent's state directory; a kernel's container gets its GPU's pipe directory.
struct MpsDaemon {
  std::string uuid;
  std::string dir;                 ///< pipe/ and log/ inside
  std::vector<std::string> start;  ///< argv: env … nvidia-cuda-mps-control -d
  std::vector<std::string> stop;   ///< argv whose stdin gets "quit"
};
std::string MpsDir(std::string const& state_dir, std::string const& uuid);
std::vector<MpsDaemon> PlanMpsDaemons(std::vector<GpuDevice> const& gpus,
                                      std::string const& state_dir,
                                      std::string const& control = "nvidia-cuda-mps-control");
/// Makes the directories and starts each daemon; the first failure is returned (the others are
/// still tried).
Status StartMpsDaemons(std::vector<MpsDaemon> const& daemons);
void StopMpsDaemons(std::vector<MpsDaemon> const& daemons);

/// The driver's files on this host that containers with GPUs get (read only).
struct GpuFiles {
  std::vector<std::string> device_nodes;  ///< /dev/nvidiactl, /dev/nvidia-uvm… (not per GPU)
  std::string lib_dir;                    ///< where libnvidia-ml.so.1 was found
  std::vector<std::string> libraries;     ///< driver libraries in it (file names)
  std::string smi;                        ///< nvidia-smi, if found
  std::string shim;                       ///< libbai-gpushim.so
};
/// Looks on this host: the NVML library as loaded, the device nodes that exist, nvidia-smi on
/// PATH or beside the libraries, and the shim beside the agent (`shim_path`).
GpuFiles FindGpuFiles(std::string const& nvml_library, std::string const& shim_path);

}  // namespace bai::agent
