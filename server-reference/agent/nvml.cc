// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/nvml.h"

#include <dlfcn.h>

namespace bai::agent {
namespace {

// The few NVML entry points used, with the C types of nvml.h (not included: the toolkit is
// optional). nvmlReturn_t is an int enum; NVML_SUCCESS is 0.
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
using InitFn = int (*)();
using CountFn = int (*)(unsigned int*);
using HandleFn = int (*)(unsigned int, NvmlDevice*);
using StringFn = int (*)(NvmlDevice, char*, unsigned int);
using MemoryFn = int (*)(NvmlDevice, NvmlMemory*);
using ErrorFn = char const* (*)(int);

}  // namespace

StatusOr<std::vector<GpuDevice>> DiscoverNvidiaGpus(std::string const& library) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status(StatusCode::kNotFound, "no NVML: " + std::string(dlerror()));
  struct Closer {
    void* h;
    ~Closer() { dlclose(h); }
  } closer{lib};
  auto sym = [lib](char const* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<InitFn>(sym("nvmlShutdown"));
  auto count = reinterpret_cast<CountFn>(sym("nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<HandleFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto uuid = reinterpret_cast<StringFn>(sym("nvmlDeviceGetUUID"));
  auto name = reinterpret_cast<StringFn>(sym("nvmlDeviceGetName"));
  auto memory = reinterpret_cast<MemoryFn>(sym("nvmlDeviceGetMemoryInfo"));
  auto error = reinterpret_cast<ErrorFn>(sym("nvmlErrorString"));
  if (!init || !shutdown || !count || !handle || !uuid || !name || !memory) {
    return Status(StatusCode::kFailedPrecondition, library + " lacks NVML entry points");
  }
  auto why = [error](int rc) {
    return error ? std::string(error(rc)) : "NVML error " + std::to_string(rc);
  };
  if (int rc = init(); rc != 0) return Status(StatusCode::kUnavailable, "nvmlInit: " + why(rc));
  std::vector<GpuDevice> out;
  Status status;
  unsigned int n = 0;
  if (int rc = count(&n); rc != 0) {
    status = Status(StatusCode::kUnavailable, "nvmlDeviceGetCount: " + why(rc));
  }
  for (unsigned int i = 0; status.ok() && i < n; ++i) {
    NvmlDevice dev = nullptr;
    char text[96] = {};
    GpuDevice g;
    g.index = static_cast<int>(i);
    if (int rc = handle(i, &dev); rc != 0) {
      status = Status(StatusCode::kUnavailable, "device " + std::to_string(i) + ": " + why(rc));
      break;
    }
    if (uuid(dev, text, sizeof text) == 0) g.uuid = text;
    text[0] = '\0';
    if (name(dev, text, sizeof text) == 0) g.name = text;
    NvmlMemory mem{};
    if (memory(dev, &mem) == 0) g.memory_bytes = static_cast<std::int64_t>(mem.total);
    out.push_back(g);
  }
  shutdown();
  if (!status.ok()) return status;
  return out;
}

}  // namespace bai::agent
