// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/gpushim/core/reconcile.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bai::agent {

struct GpuDevice {
  int index = 0;
  std::string uuid;  ///< "GPU-…"
  std::string name;
  std::int64_t memory_bytes = 0;
  std::int64_t memory_used_bytes = 0;  ///< NVML's used (the driver's reservation included)
  int utilization = -1;                ///< % of the last sample period busy; -1: not known
};

/// NVML, loaded at run time (`libnvidia-ml.so.1` by default) so the agent builds and runs
/// without the driver, and initialised while the object lives.
class Nvml {
 public:
  /// No library: kNotFound (a machine without NVIDIA GPUs).
  static StatusOr<std::unique_ptr<Nvml>> Open(std::string const& library = "libnvidia-ml.so.1");
  ~Nvml();
  Nvml(Nvml const&) = delete;
  Nvml& operator=(Nvml const&) = delete;

  StatusOr<std::vector<GpuDevice>> Devices();
  /// The compute processes on the device with this UUID (host PIDs, bytes each holds).
  StatusOr<std::vector<gpushim::GpuProcess>> ComputeProcesses(std::string const& uuid);

  struct Api;

 private:
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

/// The GPUs, with NVML opened and shut down within the call.
StatusOr<std::vector<GpuDevice>> DiscoverNvidiaGpus(
    std::string const& library = "libnvidia-ml.so.1");

}  // namespace bai::agent
