// SPDX-License-Identifier: Apache-2.0
// A stand-in for libnvidia-ml.so.1 (SONAME libnvidia-ml.so.1): the NVML entry points the agent
// and the shim use, with NVML's signatures and codes, reading the same fake GPU as the fake
// libcuda (fake_gpu.h): memory as nvidia-smi reports it on the lent H100 (81559 MiB total, 480 MiB
// reserved), per-process usage, and per-process SM utilisation from the busy-time model.
#include "fake_gpu.h"

#include "server-reference/gpushim/driver_abi.h"

#include <map>
#include <mutex>

namespace {
using namespace bai::fakegpu;

std::atomic<int> g_init_count{0};
int g_handles[kMaxDevices] = {0, 1, 2, 3, 4, 5, 6, 7};

int IndexOf(nvmlDevice_t d) {
  if (d == nullptr) return -1;
  int i = *reinterpret_cast<int*>(d);
  return i >= 0 && i < static_cast<int>(Attach()->device_count) ? i : -1;
}

template <typename Info>
nvmlReturn_t Processes(nvmlDevice_t dev, unsigned int* count, Info* infos) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  int d = IndexOf(dev);
  if (d < 0 || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  State* s = Attach();
  unsigned n = 0;
  for (auto& p : s->procs) {
    std::uint64_t used = p.used[d].load();
    if (used == 0 || !Alive(s, p)) continue;
    if (infos != nullptr && n < *count) {
      Info info{};
      info.pid = ReportedPid(s, p);
      info.usedGpuMemory = used;
      infos[n] = info;
    }
    ++n;
  }
  bool fits = infos != nullptr && n <= *count;
  *count = n;
  return fits || n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

}  // namespace

extern "C" {

#define API __attribute__((visibility("default")))

API nvmlReturn_t nvmlInit_v2() {
  Attach();
  g_init_count.fetch_add(1);
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlInit() { return nvmlInit_v2(); }
API nvmlReturn_t nvmlInitWithFlags(unsigned int) { return nvmlInit_v2(); }
API nvmlReturn_t nvmlShutdown() {
  int cur = g_init_count.load();
  do {
    if (cur == 0) return NVML_ERROR_UNINITIALIZED;
  } while (!g_init_count.compare_exchange_weak(cur, cur - 1));
  return NVML_SUCCESS;
}
API char const* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}
API nvmlReturn_t nvmlSystemGetDriverVersion(char* out, unsigned int len) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::snprintf(out, len, "580.159.04");
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  if (v == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *v = kDriverVersion;
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) {
  return nvmlSystemGetCudaDriverVersion_v2(v);
}
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  if (n == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *n = Attach()->device_count;
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetCount(unsigned int* n) { return nvmlDeviceGetCount_v2(n); }
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* dev) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  if (dev == nullptr || i >= Attach()->device_count) return NVML_ERROR_INVALID_ARGUMENT;
  *dev = reinterpret_cast<nvmlDevice_t>(&g_handles[i]);
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t* dev) {
  return nvmlDeviceGetHandleByIndex_v2(i, dev);
}
API nvmlReturn_t nvmlDeviceGetHandleByUUID(char const* uuid, nvmlDevice_t* dev) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || dev == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < Attach()->device_count; ++i) {
    if (std::strcmp(uuid, Attach()->devices[i].uuid) == 0) {
      *dev = reinterpret_cast<nvmlDevice_t>(&g_handles[i]);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int* index) {
  int d = IndexOf(dev);
  if (d < 0 || index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned>(d);
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int* minor) {
  return nvmlDeviceGetIndex(dev, minor);
}
API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char* out, unsigned int len) {
  int d = IndexOf(dev);
  if (d < 0 || out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (len < 41) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::snprintf(out, len, "%s", Attach()->devices[d].uuid);
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char* out, unsigned int len) {
  if (IndexOf(dev) < 0 || out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::snprintf(out, len, "NVIDIA H100 80GB HBM3");
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t* m) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  int d = IndexOf(dev);
  if (d < 0 || m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // The v1 structure counts the driver's reservation as used.
  m->total = kNvmlTotalMem;
  m->used = std::min(kNvmlTotalMem, kNvmlReserved + DeviceUsed(Attach(), d));
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t* m) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  int d = IndexOf(dev);
  if (d < 0 || m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != nvmlMemory_v2) return NVML_ERROR_INVALID_ARGUMENT;
  m->total = kNvmlTotalMem;
  m->reserved = kNvmlReserved;
  m->used = std::min(kNvmlTotalMem - kNvmlReserved, DeviceUsed(Attach(), d));
  m->free = m->total - m->reserved - m->used;
  return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int* count,
                                                      nvmlProcessInfo_v1_t* infos) {
  return Processes(dev, count, infos);
}
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int* count,
                                                         nvmlProcessInfo_t* infos) {
  return Processes(dev, count, infos);
}
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int* count,
                                                         nvmlProcessInfo_t* infos) {
  return Processes(dev, count, infos);
}

/// Per-process SM utilisation since `since` (µs, as NVML's timestamps), from the busy model:
/// each caller's previous reading of a process is its baseline.
API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev,
                                                 nvmlProcessUtilizationSample_t* samples,
                                                 unsigned int* count, unsigned long long) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  int d = IndexOf(dev);
  if (d < 0 || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  static std::mutex mu;
  static std::map<int, std::pair<std::uint64_t, std::uint64_t>> last;  // pid → (ns, busy)
  std::lock_guard lock(mu);
  State* s = Attach();
  std::uint64_t now = NowNs();
  unsigned n = 0;
  for (auto& p : s->procs) {
    if (p.busy[d].load() == 0 || !Alive(s, p)) continue;
    auto pid = static_cast<int>(ReportedPid(s, p));
    std::uint64_t busy = p.busy[d].load();
    auto [it, fresh] = last.try_emplace(pid, std::make_pair(now - 1000000000ULL, 0ULL));
    std::uint64_t span = std::max<std::uint64_t>(now - it->second.first, 1);
    std::uint64_t did = busy - std::min(busy, it->second.second);
    if (samples != nullptr && n < *count) {
      nvmlProcessUtilizationSample_t& out = samples[n];
      out = {};
      out.pid = static_cast<unsigned>(pid);
      out.timeStamp = now / 1000;
      out.smUtil = static_cast<unsigned>(std::min<std::uint64_t>(100, did * 100 / span));
      it->second = {now, busy};
    }
    (void)fresh;
    ++n;
  }
  bool fits = samples != nullptr && n <= *count;
  *count = n;
  return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t* u) {
  if (g_init_count.load() == 0) return NVML_ERROR_UNINITIALIZED;
  int d = IndexOf(dev);
  if (d < 0 || u == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::uint64_t now = NowNs();
  std::uint64_t until = Attach()->devices[d].busy_until.load();
  u->gpu = until > now ? 100 : 0;
  u->memory = 0;
  return NVML_SUCCESS;
}

}  // extern "C"
