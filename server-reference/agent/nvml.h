// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bai::agent {

struct GpuDevice {
  int index = 0;
  std::string uuid;  ///< "GPU-…"
  std::string name;
  std::int64_t memory_bytes = 0;
};

/// NVIDIA GPUs through NVML, loaded at run time (`libnvidia-ml.so.1` by default), so the agent
/// builds and runs without the driver. No library: kNotFound (a machine without NVIDIA GPUs).
/// The library is initialised and shut down within the call.
StatusOr<std::vector<GpuDevice>> DiscoverNvidiaGpus(
    std::string const& library = "libnvidia-ml.so.1");

}  // namespace bai::agent
