// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/nvml.h"

#include "server-reference/gpushim/driver_abi.h"

#include <dlfcn.h>

namespace bai::agent {

struct Nvml::Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  // v3 where the driver has it (r510+), else v2: the same structure.
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;  // optional
  char const* (*error)(nvmlReturn_t) = nullptr;

  std::string Why(nvmlReturn_t rc) const {
    return error != nullptr ? std::string(error(rc)) : "NVML error " + std::to_string(rc);
  }
};

StatusOr<std::unique_ptr<Nvml>> Nvml::Open(std::string const& library) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr)
    return Status(StatusCode::kNotFound, "no NVML: " + std::string(dlerror()));
  auto sym = [&](auto& fn, char const* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api->lib, name));
    return fn != nullptr;
  };
  bool complete = sym(api->init, "nvmlInit_v2") && sym(api->shutdown, "nvmlShutdown") &&
                  sym(api->count, "nvmlDeviceGetCount_v2") &&
                  sym(api->handle, "nvmlDeviceGetHandleByIndex_v2") &&
                  sym(api->uuid, "nvmlDeviceGetUUID") && sym(api->name, "nvmlDeviceGetName") &&
                  sym(api->memory, "nvmlDeviceGetMemoryInfo");
  if (!sym(api->processes, "nvmlDeviceGetComputeRunningProcesses_v3")) {
    sym(api->processes, "nvmlDeviceGetComputeRunningProcesses_v2");
  }
  sym(api->error, "nvmlErrorString");
  sym(api->utilization, "nvmlDeviceGetUtilizationRates");
  if (!complete) {
    dlclose(api->lib);
    return Status(StatusCode::kFailedPrecondition, library + " lacks NVML entry points");
  }
  if (nvmlReturn_t rc = api->init(); rc != NVML_SUCCESS) {
    std::string why = api->Why(rc);
    dlclose(api->lib);
    return Status(StatusCode::kUnavailable, "nvmlInit: " + why);
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(api_->lib);
}

StatusOr<std::vector<GpuDevice>> Nvml::Devices() {
  unsigned n = 0;
  if (nvmlReturn_t rc = api_->count(&n); rc != NVML_SUCCESS) {
    return Status(StatusCode::kUnavailable, "nvmlDeviceGetCount: " + api_->Why(rc));
  }
  std::vector<GpuDevice> out;
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvmlReturn_t rc = api_->handle(i, &dev); rc != NVML_SUCCESS) {
      return Status(StatusCode::kUnavailable, "device " + std::to_string(i) + ": " + api_->Why(rc));
    }
    char text[96] = {};
    GpuDevice g;
    g.index = static_cast<int>(i);
    if (api_->uuid(dev, text, sizeof text) == NVML_SUCCESS) g.uuid = text;
    text[0] = '\0';
    if (api_->name(dev, text, sizeof text) == NVML_SUCCESS) g.name = text;
    nvmlMemory_t mem{};
    if (api_->memory(dev, &mem) == NVML_SUCCESS) {
      g.memory_bytes = static_cast<std::int64_t>(mem.total);
      g.memory_used_bytes = static_cast<std::int64_t>(mem.used);
    }
    nvmlUtilization_t busy{};
    if (api_->utilization != nullptr && api_->utilization(dev, &busy) == NVML_SUCCESS) {
      g.utilization = static_cast<int>(busy.gpu);
    }
    out.push_back(g);
  }
  return out;
}

StatusOr<std::vector<gpushim::GpuProcess>> Nvml::ComputeProcesses(std::string const& uuid) {
  if (api_->processes == nullptr) {
    return Status(StatusCode::kFailedPrecondition, "NVML lists no compute processes (too old)");
  }
  unsigned n = 0;
  if (nvmlReturn_t rc = api_->count(&n); rc != NVML_SUCCESS) {
    return Status(StatusCode::kUnavailable, "nvmlDeviceGetCount: " + api_->Why(rc));
  }
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    char text[96] = {};
    if (api_->handle(i, &dev) != NVML_SUCCESS ||
        api_->uuid(dev, text, sizeof text) != NVML_SUCCESS || uuid != text) {
      continue;
    }
    // The list can grow between the sizing call and the reading one: retry a few times.
    std::vector<nvmlProcessInfo_t> infos(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned count = static_cast<unsigned>(infos.size());
      nvmlReturn_t rc = api_->processes(dev, &count, infos.data());
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        infos.resize(count + 16);
        continue;
      }
      if (rc != NVML_SUCCESS) {
        return Status(StatusCode::kUnavailable,
                      "nvmlDeviceGetComputeRunningProcesses: " + api_->Why(rc));
      }
      std::vector<gpushim::GpuProcess> out;
      for (unsigned k = 0; k < count && k < infos.size(); ++k) {
        // NVML_VALUE_NOT_AVAILABLE (all ones): the driver does not say; count nothing.
        std::uint64_t bytes = infos[k].usedGpuMemory == ~0ULL ? 0 : infos[k].usedGpuMemory;
        out.push_back({infos[k].pid, bytes});
      }
      return out;
    }
    return Status(StatusCode::kUnavailable, "the process list of " + uuid + " kept growing");
  }
  return Status(StatusCode::kNotFound, "no GPU " + uuid);
}

StatusOr<std::vector<GpuDevice>> DiscoverNvidiaGpus(std::string const& library) {
  auto nvml = Nvml::Open(library);
  if (!nvml.ok()) return nvml.status();
  return (*nvml)->Devices();
}

}  // namespace bai::agent
