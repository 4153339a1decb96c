// SPDX-License-Identifier: Apache-2.0
// libbai-gpushim.so: the C ABI shell. It finds the driver's entry points, hands out its own
// wrappers in their place (through dlsym, cuGetProcAddress and plain symbol interposition), and
// turns each wrapped call into decisions of the pure core (ledger, limiter) around a call to the
// real entry point. Rules (gpu-shim.md §6.2): the real cuGetProcAddress is always asked first and
// only the pointer it returns is swapped, through the map {real pointer → wrapper}, so the ABI
// version and the per-thread-stream twin are the driver's choice, never ours; names we do not
// wrap, and names the library does not have, pass through untouched. Nothing runs in a
// constructor: the first CUDA call initialises, once per process (again in a forked child).
// The hot path (launches without a compute limit) is one relaxed load and a tail call.
#include "server-reference/gpushim/abi/hooks.h"
#include "server-reference/gpushim/core/config.h"
#include "server-reference/gpushim/core/ledger.h"
#include "server-reference/gpushim/core/limiter.h"
#include "server-reference/gpushim/driver_abi.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#define SHIM_API extern "C" __attribute__((visibility("default")))

// Wrapper declarations (definitions below), so the table can take their addresses.
extern "C" {
CUresult cuInit(unsigned int);
CUresult cuGetProcAddress(char const*, void**, int, unsigned long long);
CUresult cuGetProcAddress_v2(char const*, void**, int, unsigned long long,
                             CUdriverProcAddressQueryResult*);
CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice);
CUresult cuDevicePrimaryCtxRelease(CUdevice);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuCtxCreate_v2(CUcontext*, unsigned int, CUdevice);
CUresult cuCtxCreate_v3(CUcontext*, CUexecAffinityParam*, int, unsigned int, CUdevice);
CUresult cuCtxCreate_v4(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuDeviceTotalMem_v2(size_t*, CUdevice);
CUresult cuMemGetInfo_v2(size_t*, size_t*);
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr*, size_t*, size_t, size_t, unsigned int);
CUresult cuMemAllocManaged(CUdeviceptr*, size_t, unsigned int);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocAsync(CUdeviceptr*, size_t, CUstream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemPoolTrimTo(CUmemoryPool, size_t);
CUresult cuMemPoolDestroy(CUmemoryPool);
CUresult cuMemCreate(CUmemGenericAllocationHandle*, size_t, CUmemAllocationProp const*,
                     unsigned long long);
CUresult cuMemRelease(CUmemGenericAllocationHandle);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void**, void**);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
CUresult cuLaunchKernelEx(CUlaunchConfig const*, CUfunction, void**, void**);
CUresult cuLaunchKernelEx_ptsz(CUlaunchConfig const*, CUfunction, void**, void**);
CUresult cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, CUstream, void**);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned*, nvmlProcessInfo_v1_t*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*);
}

namespace bai::gpushim {
namespace {

// ---- the hook table ----------------------------------------------------------------------------
enum HookId {
#define BAI_ID(name) k_##name,
  BAI_GPUSHIM_CUDA_HOOKS(BAI_ID) kFirstNvml,
  BAI_GPUSHIM_NVML_HOOKS(BAI_ID) kHookCount
#undef BAI_ID
};

struct Hook {
  char const* name;
  void* wrapper;
  std::atomic<void*> real;
};

Hook g_hooks[] = {
#define BAI_ENTRY(name) {#name, reinterpret_cast<void*>(&::name), {nullptr}},
    BAI_GPUSHIM_CUDA_HOOKS(BAI_ENTRY){"", nullptr, {nullptr}}, BAI_GPUSHIM_NVML_HOOKS(BAI_ENTRY)
#undef BAI_ENTRY
};
static_assert(sizeof(g_hooks) / sizeof(g_hooks[0]) == kHookCount);

template <HookId id>
auto Real() {
  return g_hooks[id].real.load(std::memory_order_acquire);
}
#define REAL(name) reinterpret_cast<decltype(&::name)>(Real<k_##name>())

// ---- the real dlsym and the driver's libraries --------------------------------------------------
using DlsymFn = void* (*)(void*, char const*);
DlsymFn g_real_dlsym = nullptr;
pthread_once_t g_dlsym_once = PTHREAD_ONCE_INIT;

void FindRealDlsym() {
  // dlvsym is not interposed; asking it for dlsym by version finds libc's, never ours.
  for (char const* v : {"GLIBC_2.34", "GLIBC_2.2.5"}) {
    g_real_dlsym = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", v));
    if (g_real_dlsym != nullptr) return;
  }
}

DlsymFn RealDlsym() {
  pthread_once(&g_dlsym_once, FindRealDlsym);
  return g_real_dlsym;
}

// Helpers resolved from the driver but not wrapped.
struct Helpers {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_record_ptsz)(CUevent, CUstream) = nullptr;
  CUresult (*event_query)(CUevent) = nullptr;
  CUresult (*event_sync)(CUevent) = nullptr;
  CUresult (*event_elapsed)(float*, CUevent, CUevent) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  CUresult (*device_get_mem_pool)(CUmemoryPool*, CUdevice) = nullptr;
  CUresult (*pool_get_attribute)(CUmemoryPool, int, void*) = nullptr;
  CUresult (*stream_is_capturing)(CUstream, int*) = nullptr;
  CUresult (*stream_is_capturing_ptsz)(CUstream, int*) = nullptr;
  CUresult (*exchange_capture_mode)(int*) = nullptr;
  nvmlReturn_t (*nvml_device_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
};
Helpers g_help;

// {real pointer → wrapper}, sorted, rebuilt when a library's reals are resolved.
std::atomic<std::vector<std::pair<void*, void*>>*> g_reverse_snapshot{nullptr};

void RebuildReverse() {
  auto* next = new std::vector<std::pair<void*, void*>>();
  for (auto& h : g_hooks) {
    void* r = h.real.load();
    if (r != nullptr && h.wrapper != nullptr) next->emplace_back(r, h.wrapper);
  }
  std::sort(next->begin(), next->end());
  // Old snapshots are kept (a reader may still hold one); this happens twice per process.
  g_reverse_snapshot.store(next, std::memory_order_release);
}

void* Redirect(void* real) {
  auto* map = g_reverse_snapshot.load(std::memory_order_acquire);
  if (map == nullptr || real == nullptr) return real;
  auto it =
      std::lower_bound(map->begin(), map->end(), std::make_pair(real, static_cast<void*>(nullptr)));
  return it != map->end() && it->first == real ? it->second : real;
}

template <typename F>
void Resolve(void* lib, char const* name, F* out) {
  *out = reinterpret_cast<F>(RealDlsym()(lib, name));
}

std::mutex g_load_mu;
std::atomic<bool> g_cuda_loaded{false};
std::atomic<bool> g_nvml_loaded{false};

/// The driver's reals, once the program has loaded the library (the shim never loads it: a
/// dlsym of "cudnnCreate" must not drag libcuda into a process that does not use it).
void EnsureCuda() {
  if (g_cuda_loaded.load(std::memory_order_acquire)) return;
  std::lock_guard lock(g_load_mu);
  if (g_cuda_loaded.load()) return;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return;
  for (int i = 0; i < kFirstNvml; ++i) {
    g_hooks[i].real.store(RealDlsym()(lib, g_hooks[i].name), std::memory_order_release);
  }
  Resolve(lib, "cuCtxGetDevice", &g_help.ctx_get_device);
  Resolve(lib, "cuDeviceGetCount", &g_help.device_get_count);
  Resolve(lib, "cuDeviceGetUuid_v2", &g_help.device_get_uuid);
  if (g_help.device_get_uuid == nullptr) Resolve(lib, "cuDeviceGetUuid", &g_help.device_get_uuid);
  Resolve(lib, "cuEventCreate", &g_help.event_create);
  Resolve(lib, "cuEventRecord", &g_help.event_record);
  Resolve(lib, "cuEventRecord_ptsz", &g_help.event_record_ptsz);
  Resolve(lib, "cuEventQuery", &g_help.event_query);
  Resolve(lib, "cuEventSynchronize", &g_help.event_sync);
  Resolve(lib, "cuEventElapsedTime_v2", &g_help.event_elapsed);
  if (g_help.event_elapsed == nullptr) Resolve(lib, "cuEventElapsedTime", &g_help.event_elapsed);
  Resolve(lib, "cuEventDestroy_v2", &g_help.event_destroy);
  Resolve(lib, "cuDeviceGetMemPool", &g_help.device_get_mem_pool);
  Resolve(lib, "cuMemPoolGetAttribute", &g_help.pool_get_attribute);
  Resolve(lib, "cuStreamIsCapturing", &g_help.stream_is_capturing);
  Resolve(lib, "cuStreamIsCapturing_ptsz", &g_help.stream_is_capturing_ptsz);
  Resolve(lib, "cuThreadExchangeStreamCaptureMode", &g_help.exchange_capture_mode);
  RebuildReverse();
  g_cuda_loaded.store(true, std::memory_order_release);
}

void EnsureNvml() {
  if (g_nvml_loaded.load(std::memory_order_acquire)) return;
  std::lock_guard lock(g_load_mu);
  if (g_nvml_loaded.load()) return;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return;
  for (int i = kFirstNvml + 1; i < kHookCount; ++i) {
    g_hooks[i].real.store(RealDlsym()(lib, g_hooks[i].name), std::memory_order_release);
  }
  Resolve(lib, "nvmlDeviceGetUUID", &g_help.nvml_device_uuid);
  RebuildReverse();
  g_nvml_loaded.store(true, std::memory_order_release);
}

// ---- per-process state -------------------------------------------------------------------------
std::uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

thread_local bool t_ptsz = false;  // the launch in progress came through a _ptsz entry point

/// The limiter's view of the driver: timing events from a small free list.
class DriverOps final : public LimiterOps {
 public:
  std::uint64_t Now() override { return NowNs(); }
  void SleepUntil(std::uint64_t t) override {
    // In steps, stamping the activity board (soft mode) so that neighbours see this container
    // still wants the GPU while it waits for its quanta.
    for (;;) {
      std::uint64_t now = NowNs();
      if (now >= t) return;
      if (stamp_) stamp_(now);
      std::uint64_t until = stamp_ ? std::min(t, now + stamp_step_ns_) : t;
      timespec ts{static_cast<time_t>(until / 1000000000ULL),
                  static_cast<long>(until % 1000000000ULL)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
      }
    }
  }
  void StampWhileWaiting(std::function<void(std::uint64_t)> stamp, std::uint64_t step_ns) {
    stamp_ = std::move(stamp);
    stamp_step_ns_ = step_ns;
  }
  EventHandle RecordAfter(void* stream) override {
    CUevent e = nullptr;
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    } else if (g_help.event_create == nullptr || g_help.event_create(&e, CU_EVENT_DEFAULT) != 0) {
      return nullptr;
    }
    auto record = t_ptsz && g_help.event_record_ptsz != nullptr ? g_help.event_record_ptsz
                                                                : g_help.event_record;
    if (record == nullptr || record(e, static_cast<CUstream>(stream)) != CUDA_SUCCESS) {
      free_.push_back(e);
      return nullptr;
    }
    return e;
  }
  bool Done(EventHandle e) override {
    return g_help.event_query(static_cast<CUevent>(e)) != CUDA_ERROR_NOT_READY;
  }
  void Wait(EventHandle e) override { g_help.event_sync(static_cast<CUevent>(e)); }
  std::int64_t Between(EventHandle a, EventHandle b) override {
    float ms = 0;
    if (g_help.event_elapsed == nullptr ||
        g_help.event_elapsed(&ms, static_cast<CUevent>(a), static_cast<CUevent>(b)) != 0) {
      return -1;
    }
    return static_cast<std::int64_t>(static_cast<double>(ms) * 1e6);
  }
  void Release(EventHandle e) override { free_.push_back(static_cast<CUevent>(e)); }

 private:
  std::vector<CUevent> free_;
  std::function<void(std::uint64_t)> stamp_;
  std::uint64_t stamp_step_ns_ = 0;
};

/// Soft mode's view of the neighbours: a directory of stamp files, one per container on the GPU
/// (the agent's), of which this container may write its own only.
class ActivityBoard {
 public:
  ActivityBoard(std::string dir, std::string const& self, std::uint64_t period_ns)
      : dir_(std::move(dir)), self_(self), period_ns_(period_ns) {
    fd_ = ::open((dir_ + "/" + self).c_str(), O_RDWR | O_CLOEXEC);
  }
  ~ActivityBoard() {
    if (fd_ >= 0) ::close(fd_);
  }
  ActivityBoard(ActivityBoard const&) = delete;
  ActivityBoard& operator=(ActivityBoard const&) = delete;

  /// This container wants the GPU now (written at most four times per period).
  void Stamp(std::uint64_t now) {
    if (fd_ < 0 || now < last_stamp_ + period_ns_ / 4) return;
    last_stamp_ = now;
    (void)!::pwrite(fd_, &now, sizeof now, 0);
  }
  /// Whether no neighbour wanted the GPU in the last two periods (read once per period).
  bool PeersIdle(std::uint64_t now) {
    if (now < checked_at_ + period_ns_) return idle_;
    checked_at_ = now;
    std::vector<std::uint64_t> stamps;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == ".." || name == self_) continue;
        int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        std::uint64_t stamp = 0;
        if (::pread(fd, &stamp, sizeof stamp, 0) == static_cast<ssize_t>(sizeof stamp)) {
          stamps.push_back(stamp);
        }
        ::close(fd);
      }
      ::closedir(d);
    }
    idle_ = !AnyPeerActive(stamps, now, 2 * period_ns_);
    return idle_;
  }

 private:
  std::string dir_;
  std::string self_;
  std::uint64_t period_ns_;
  int fd_ = -1;
  std::uint64_t last_stamp_ = 0;
  std::uint64_t checked_at_ = 0;
  bool idle_ = false;
};

struct DeviceState {
  int ledger_index = -1;  // -1: not in the ledger (no accounting)
  std::uint64_t cap = 0;  // 0: no memory cap
  int context_refs = 0;
  std::mutex limiter_mu;
  std::unique_ptr<DriverOps> ops;
  std::unique_ptr<Limiter> limiter;         // null: no compute limit on this device
  std::unique_ptr<ActivityBoard> activity;  // soft mode with neighbours to watch
  bool soft = false;
};

struct Allocation {
  int device;
  std::uint64_t bytes;
  CUmemoryPool pool;
};

struct State {
  std::mutex mu;  // allocations, pools, context counts
  Config config;
  std::unique_ptr<Ledger> ledger;
  DeviceState devices[kMaxDevices];
  int device_count = 0;
  std::unordered_map<CUdeviceptr, Allocation> allocations;
  std::unordered_map<CUmemGenericAllocationHandle, Allocation> handles;
  std::map<CUmemoryPool, std::pair<int, std::uint64_t>> pool_charge;     // pool → (device, bytes)
  std::unordered_map<CUcontext, std::pair<int, std::uint64_t>> created;  // cuCtxCreate's
};

State& S() {
  static State* s = new State;  // never destroyed: wrappers may run during exit
  return *s;
}

std::atomic<bool> g_configured{false};  // limits file and ledger read (this process)
std::atomic<bool> g_ready{false};       // and the driver's devices mapped onto them
std::atomic<bool> g_limiting{false};    // some device has a compute limit
std::mutex g_init_mu;

std::string UuidText(CUuuid const& u) {
  char out[48];
  auto const* b = reinterpret_cast<unsigned char const*>(u.bytes);
  std::snprintf(out, sizeof out,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return out;
}

void Report(std::string const& what) { std::fprintf(stderr, "bai-gpushim: %s\n", what.c_str()); }

/// Reads the limits file and opens the ledger: once per process, at its first CUDA or NVML call
/// (the only getenv and file reads the shim does).
void ConfigureLocked() {
  if (g_configured.load()) return;
  State& s = S();
  char const* path = std::getenv("BAI_GPUSHIM_CONFIG");
  std::ifstream in(path != nullptr ? path : "/etc/bai-gpushim.conf");
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    ParseResult parsed = ParseConfig(text.str());
    if (!parsed.error.empty()) {
      Report("limits file ignored: " + parsed.error);
    } else {
      s.config = parsed.config;
    }
  }
  if (s.config.mode != SharingMode::kOff && !s.config.ledger_path.empty()) {
    std::string error;
    s.ledger = Ledger::Open(s.config.ledger_path, &error);
    if (!s.ledger) {
      Report(error);
    } else if (!s.ledger->Attach()) {
      Report("every ledger slot is held; this process is not accounted");
      s.ledger.reset();
    }
  }
  g_configured.store(true, std::memory_order_release);
}

void Configure() {
  if (g_configured.load(std::memory_order_acquire)) return;
  std::lock_guard lock(g_init_mu);
  ConfigureLocked();
}

/// Maps the driver's ordinals onto the limits (by UUID, else by position) once cuInit has
/// succeeded.
void MapDevices() {
  if (g_ready.load(std::memory_order_acquire)) return;
  std::lock_guard lock(g_init_mu);
  if (g_ready.load()) return;
  ConfigureLocked();
  State& s = S();
  int count = 0;
  if (g_help.device_get_count == nullptr || g_help.device_get_count(&count) != CUDA_SUCCESS) {
    return;  // the driver is not initialised yet: try again at the next call
  }
  s.device_count = std::min(count, kMaxDevices);
  bool limiting = false;
  for (int d = 0; d < s.device_count; ++d) {
    CUuuid uuid{};
    std::string text;
    if (g_help.device_get_uuid != nullptr && g_help.device_get_uuid(&uuid, d) == CUDA_SUCCESS) {
      text = UuidText(uuid);
    }
    DeviceLimits const* limits = nullptr;
    for (auto const& dl : s.config.devices) {
      if (!dl.uuid.empty() && dl.uuid == text) limits = &dl;
    }
    if (limits == nullptr && d < static_cast<int>(s.config.devices.size()) &&
        s.config.devices[static_cast<size_t>(d)].uuid.empty()) {
      limits = &s.config.devices[static_cast<size_t>(d)];
    }
    DeviceState& ds = s.devices[d];
    if (s.ledger) {
      ds.ledger_index = s.ledger->FindDevice(text);
      if (ds.ledger_index < 0 && limits != nullptr && !limits->uuid.empty()) {
        ds.ledger_index = s.ledger->FindDevice(limits->uuid);
      }
      if (ds.ledger_index >= 0) ds.cap = s.ledger->Limit(ds.ledger_index);
    }
    if (limits != nullptr && ds.cap == 0) ds.cap = limits->memory_bytes;
    if (limits != nullptr && s.config.mode == SharingMode::kTimeslice && limits->ComputeLimited()) {
      ds.ops = std::make_unique<DriverOps>();
      std::uint64_t period_ns = std::uint64_t{s.config.period_ms} * 1000000ULL;
      ds.limiter = std::make_unique<Limiter>(SliceSchedule(limits->quanta, period_ns),
                                             s.config.compute, ds.ops.get());
      ds.soft = s.config.compute == ComputeMode::kSoft;
      if (!limits->activity_dir.empty() && !limits->activity_self.empty()) {
        ds.activity =
            std::make_unique<ActivityBoard>(limits->activity_dir, limits->activity_self, period_ns);
        ActivityBoard* board = ds.activity.get();
        ds.ops->StampWhileWaiting([board](std::uint64_t now) { board->Stamp(now); }, period_ns / 4);
      }
      limiting = true;
    }
  }
  g_limiting.store(limiting, std::memory_order_release);
  g_ready.store(true, std::memory_order_release);
}

void EnsureReady() {
  if (!g_ready.load(std::memory_order_acquire)) {
    EnsureCuda();
    MapDevices();
  }
}

int CurrentDevice() {
  CUdevice d = -1;
  if (g_help.ctx_get_device == nullptr || g_help.ctx_get_device(&d) != CUDA_SUCCESS) return -1;
  return d >= 0 && d < S().device_count ? d : -1;
}

bool Accounted(int d) { return d >= 0 && S().devices[d].ledger_index >= 0; }

bool Reserve(int d, std::uint64_t bytes) {
  if (!Accounted(d)) return true;
  return S().ledger->Reserve(S().devices[d].ledger_index, bytes);
}

void Unreserve(int d, std::uint64_t bytes) {
  if (Accounted(d)) S().ledger->Release(S().devices[d].ledger_index, bytes);
}

std::uint64_t UsedOn(int d) {
  return Accounted(d) ? S().ledger->Charged(S().devices[d].ledger_index) : 0;
}

void AfterFork() {
  // The child holds no ledger slot (record locks are not inherited) and none of the parent's
  // driver state (CUDA does not survive fork); it starts over at its first CUDA call.
  State& s = S();
  if (s.ledger) s.ledger->ForgetSlotAfterFork();
  s.allocations.clear();
  s.handles.clear();
  s.pool_charge.clear();
  s.created.clear();
  for (auto& d : s.devices) {
    d.context_refs = 0;
    d.limiter.reset();
    d.activity.reset();
    d.ops.reset();
    d.ledger_index = -1;
  }
  s.ledger.reset();
  g_limiting.store(false);
  g_ready.store(false);
  g_configured.store(false);
}

void AtExit() {
  State& s = S();
  if (s.ledger) s.ledger->Detach();
}

// A fork while another thread holds one of the shim's locks would leave it locked forever in the
// child: the forking thread takes them first and both sides release them.
void BeforeFork() {
  g_init_mu.lock();
  S().mu.lock();
}
void AfterForkInParent() {
  S().mu.unlock();
  g_init_mu.unlock();
}
void AfterForkInChild() {
  S().mu.unlock();
  g_init_mu.unlock();
  AfterFork();
}

[[gnu::constructor]] void RegisterHandlers() {
  // Only registrations here: no CUDA, no files (gpu-shim.md §1.5).
  pthread_atfork(BeforeFork, AfterForkInParent, AfterForkInChild);
  std::atexit(AtExit);
}

// Memory bookkeeping of pools: a pool's charge follows its reserved bytes, not the requests.
std::uint64_t PoolReserved(CUmemoryPool pool) {
  std::uint64_t v = 0;
  if (g_help.pool_get_attribute == nullptr ||
      g_help.pool_get_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS) {
    return 0;
  }
  return v;
}

/// Brings the pool's charge to its reserved bytes now. False (and nothing changed) when growing
/// the charge does not fit the cap.
bool SettlePool(CUmemoryPool pool, int d) {
  std::uint64_t now = PoolReserved(pool);
  auto& entry = S().pool_charge[pool];
  entry.first = d;
  if (now > entry.second) {
    if (!Reserve(d, now - entry.second)) return false;
  } else if (now < entry.second) {
    Unreserve(d, entry.second - now);
  }
  entry.second = now;
  return true;
}

CUresult AllocFromPool(CUdeviceptr* dptr, size_t size, CUmemoryPool pool, CUstream stream,
                       bool from_pool, bool ptsz) {
  EnsureReady();
  auto call = [&]() -> CUresult {
    if (from_pool) {
      auto f = ptsz ? REAL(cuMemAllocFromPoolAsync_ptsz) : REAL(cuMemAllocFromPoolAsync);
      return f != nullptr ? f(dptr, size, pool, stream) : CUDA_ERROR_NOT_SUPPORTED;
    }
    auto f = ptsz ? REAL(cuMemAllocAsync_ptsz) : REAL(cuMemAllocAsync);
    return f != nullptr ? f(dptr, size, stream) : CUDA_ERROR_NOT_SUPPORTED;
  };
  int d = CurrentDevice();
  if (!Accounted(d)) return call();
  if (!from_pool && (g_help.device_get_mem_pool == nullptr ||
                     g_help.device_get_mem_pool(&pool, d) != CUDA_SUCCESS)) {
    return call();
  }
  std::lock_guard lock(S().mu);
  // The pool may have room already; otherwise it will grow by about the request.
  std::uint64_t used = 0;
  g_help.pool_get_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  std::uint64_t reserved = PoolReserved(pool);
  std::uint64_t growth = reserved - std::min(reserved, used) >= size ? 0 : size;
  if (growth > 0 && !Reserve(d, growth)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = call();
  Unreserve(d, growth);
  if (rc != CUDA_SUCCESS) return rc;
  if (!SettlePool(pool, d)) {
    // Another process took the room meanwhile: undo, as if the driver had refused.
    auto f = ptsz ? REAL(cuMemFreeAsync_ptsz) : REAL(cuMemFreeAsync);
    if (f != nullptr) f(*dptr, stream);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  S().allocations[*dptr] = Allocation{d, size, pool};
  return CUDA_SUCCESS;
}

/// Driver call → when it succeeded, what the object held goes back: the one shape of every
/// release (the inverse of Charged). `give_back` runs under the shim's lock; a failed call keeps
/// the charge (the object still exists).
template <typename Call, typename GiveBack>
CUresult Released(Call call, GiveBack give_back) {
  CUresult rc = call();
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(S().mu);
  give_back();
  return rc;
}

/// After the driver freed `p`: what it held goes back (a pool's charge is settled instead).
/// Pointers the shim never saw are left to the driver. Under the shim's lock.
void Forget(CUdeviceptr p) {
  auto it = S().allocations.find(p);
  if (it == S().allocations.end()) return;
  Allocation a = it->second;
  S().allocations.erase(it);
  if (a.pool != nullptr) {
    SettlePool(a.pool, a.device);
  } else {
    Unreserve(a.device, a.bytes);
  }
}

CUresult FreeAsync(CUdeviceptr p, CUstream stream, bool ptsz) {
  auto f = ptsz ? REAL(cuMemFreeAsync_ptsz) : REAL(cuMemFreeAsync);
  if (f == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return Released([&] { return f(p, stream); }, [&] { Forget(p); });
}

/// Reserve → driver call → roll back when the driver refuses: the one shape of every charged
/// allocation.
template <typename Call>
CUresult Charged(int d, std::uint64_t bytes, Call call) {
  if (!Reserve(d, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = call();
  if (rc != CUDA_SUCCESS) Unreserve(d, bytes);
  return rc;
}

CUresult AllocPlain(CUdeviceptr* dptr, size_t size, unsigned flags, bool managed) {
  EnsureReady();
  int d = CurrentDevice();
  auto call = [&] {
    if (managed) {
      auto f = REAL(cuMemAllocManaged);
      return f != nullptr ? f(dptr, size, flags) : CUDA_ERROR_NOT_SUPPORTED;
    }
    auto f = REAL(cuMemAlloc_v2);
    return f != nullptr ? f(dptr, size) : CUDA_ERROR_NOT_SUPPORTED;
  };
  if (!Accounted(d) || dptr == nullptr || size == 0) return call();
  if (managed && S().config.managed == ManagedPolicy::kRefuse && S().devices[d].cap != 0) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUresult rc = Charged(d, size, call);
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(S().mu);
  S().allocations[*dptr] = Allocation{d, size, nullptr};
  return CUDA_SUCCESS;
}

/// Whether a launch on `stream` goes into a graph being captured rather than to the GPU. Such a
/// launch runs nothing now (the graph's launch is held instead), and the limiter's event calls
/// would break the capture: querying or waiting on events is forbidden while a capture is on.
bool Capturing(CUstream stream, bool ptsz) {
  auto is = ptsz && g_help.stream_is_capturing_ptsz != nullptr ? g_help.stream_is_capturing_ptsz
                                                               : g_help.stream_is_capturing;
  int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
  return is != nullptr && is(stream, &status) == CUDA_SUCCESS && status != 0;
}

constexpr int kCaptureModeRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

/// Holds a launch to the device's quanta; returns after the limiter allows it.
struct LaunchGate {
  explicit LaunchGate(CUstream s, bool ptsz) : stream(s) {
    int d = CurrentDevice();
    if (d < 0 || !S().devices[d].limiter) return;
    dev = &S().devices[d];
    // A capture on another stream (this thread's in global mode, or any thread's) forbids the
    // limiter's event queries on this one unless this thread relaxes its mode, as PyTorch's
    // allocator does for its own queries; the program's mode is put back in Done.
    if (g_help.exchange_capture_mode != nullptr) {
      mode = kCaptureModeRelaxed;
      if (g_help.exchange_capture_mode(&mode) != CUDA_SUCCESS) mode = -1;
    }
    dev->limiter_mu.lock();
    t_ptsz = ptsz;
    bool peers_idle = false;
    if (dev->activity) {
      std::uint64_t now = NowNs();
      dev->activity->Stamp(now);
      // Soft mode without a board has no neighbours to yield to: it stays within its quanta.
      peers_idle = dev->soft && dev->activity->PeersIdle(now);
    }
    dev->limiter->BeforeLaunch(peers_idle);
  }
  CUresult Done(CUresult rc) {
    if (dev != nullptr) {
      if (rc == CUDA_SUCCESS) dev->limiter->AfterLaunch(stream);
      dev->limiter_mu.unlock();
      if (mode >= 0) g_help.exchange_capture_mode(&mode);
    }
    return rc;
  }
  CUstream stream;
  DeviceState* dev = nullptr;
  int mode = -1;  // the program's capture mode while the gate holds the relaxed one
};

template <typename F, typename... A>
CUresult Launch(F real, CUstream stream, bool ptsz, A... args) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (!g_limiting.load(std::memory_order_relaxed) || Capturing(stream, ptsz)) return real(args...);
  LaunchGate gate(stream, ptsz);
  return gate.Done(real(args...));
}

int NvmlLedgerDevice(nvmlDevice_t dev) {
  State& s = S();
  if (!s.ledger || g_help.nvml_device_uuid == nullptr) return -1;
  char uuid[96] = {};
  if (g_help.nvml_device_uuid(dev, uuid, sizeof uuid) != NVML_SUCCESS) return -1;
  return s.ledger->FindDevice(uuid);
}

void EnsureNvmlReady() {
  // NVML users (nvidia-smi) may never touch CUDA: the limits file and the ledger suffice.
  EnsureNvml();
  Configure();
}

template <typename Info>
nvmlReturn_t FilterProcesses(nvmlReturn_t rc, unsigned* count, Info* infos) {
  State& s = S();
  if (rc != NVML_SUCCESS || !s.ledger || infos == nullptr || count == nullptr) return rc;
  auto slots = s.ledger->Slots();
  unsigned kept = 0;
  for (unsigned i = 0; i < *count; ++i) {
    for (auto const& slot : slots) {
      // NVML names host PIDs: the one the agent wrote into the slot. Until it has (or with
      // no agent: in the host's namespace), the lock owner or the process's own PID.
      bool const same = slot.host_pid != 0
                            ? static_cast<unsigned>(slot.host_pid) == infos[i].pid
                            : static_cast<unsigned>(slot.owner_pid) == infos[i].pid ||
                                  static_cast<unsigned>(slot.pid) == infos[i].pid;
      if (same) {
        infos[kept] = infos[i];
        infos[kept].pid = static_cast<unsigned>(slot.pid);
        ++kept;
        break;
      }
    }
  }
  *count = kept;
  return rc;
}

}  // namespace
}  // namespace bai::gpushim

using namespace bai::gpushim;

// ---- dlsym
// ---------------------------------------------------------------------------------------
namespace {
void* ShimDlsym(void* handle, char const* name) {
  DlsymFn real = RealDlsym();
  if (real == nullptr) return nullptr;
  void* found = real(handle, name);
  if (found == nullptr || name == nullptr) return found;
  if (name[0] == 'c' && name[1] == 'u') {
    // cudart asks for cuGetExportTable while initialising: never initialise on it.
    if (std::strcmp(name, "cuGetExportTable") == 0) return found;
    EnsureCuda();
    return Redirect(found);
  }
  if (std::strncmp(name, "nvml", 4) == 0) {
    EnsureNvml();
    return Redirect(found);
  }
  return found;
}
}  // namespace

// Both versions of dlsym that programs link against: GLIBC_2.2.5 (before glibc 2.34) and
// GLIBC_2.34 (libdl merged into libc). See gpushim.map.
//
// RTLD_NEXT means "after the caller", and glibc finds the caller from dlsym's return address:
// those lookups jump straight to the real dlsym (a sibling call, so the return address is still
// the caller's; the shim is always built optimised for this). Otherwise a library looking for
// the next `malloc` after itself would be answered relative to the shim.
extern "C" __attribute__((visibility("default"))) void* bai_dlsym_old(void* h, char const* n) {
  if (h == RTLD_NEXT) return RealDlsym()(h, n);
  return ShimDlsym(h, n);
}
extern "C" __attribute__((visibility("default"))) void* bai_dlsym_new(void* h, char const* n) {
  if (h == RTLD_NEXT) return RealDlsym()(h, n);
  return ShimDlsym(h, n);
}
__asm__(".symver bai_dlsym_old,dlsym@GLIBC_2.2.5");
__asm__(".symver bai_dlsym_new,dlsym@@GLIBC_2.34");

// ---- driver API wrappers
// -------------------------------------------------------------------------
SHIM_API CUresult cuInit(unsigned int flags) {
  EnsureCuda();
  auto real = REAL(cuInit);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = real(flags);
  if (rc == CUDA_SUCCESS) MapDevices();
  return rc;
}

SHIM_API CUresult cuGetProcAddress_v2(char const* symbol, void** pfn, int version,
                                      unsigned long long flags,
                                      CUdriverProcAddressQueryResult* status) {
  EnsureCuda();
  auto real = REAL(cuGetProcAddress_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = real(symbol, pfn, version, flags, status);
  // Whatever ABI the driver chose for (name, version, flags), its wrapper, if we have one.
  if (rc == CUDA_SUCCESS && pfn != nullptr) *pfn = Redirect(*pfn);
  return rc;
}

SHIM_API CUresult cuGetProcAddress(char const* symbol, void** pfn, int version,
                                   unsigned long long flags) {
  EnsureCuda();
  auto real = REAL(cuGetProcAddress);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = real(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS && pfn != nullptr) *pfn = Redirect(*pfn);
  return rc;
}

namespace {
CUresult Retain(CUcontext* ctx, CUdevice dev) {
  EnsureReady();
  auto real = REAL(cuDevicePrimaryCtxRetain);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  State& s = S();
  bool in_range = dev >= 0 && dev < s.device_count;
  std::lock_guard lock(s.mu);
  bool first = in_range && s.devices[dev].context_refs == 0;
  std::uint64_t bytes = s.config.context_bytes;
  // A context is device memory too: the first one per device is charged to the container.
  auto call = [&] { return real(ctx, dev); };
  CUresult rc = first && bytes > 0 ? Charged(dev, bytes, call) : call();
  if (rc != CUDA_SUCCESS) return rc;
  if (in_range) ++s.devices[dev].context_refs;
  return rc;
}

template <typename F>
CUresult ReleaseCtx(F real, CUdevice dev) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Released([&] { return real(dev); },
                  [&] {
                    State& s = S();
                    if (dev < 0 || dev >= s.device_count) return;
                    // The last release of a device's primary context gives back its charge.
                    if (s.devices[dev].context_refs > 0 && --s.devices[dev].context_refs == 0 &&
                        s.config.context_bytes > 0) {
                      Unreserve(dev, s.config.context_bytes);
                    }
                  });
}
}  // namespace

namespace {
// A created context is charged like a primary one, each on its own, until destroyed.
template <typename Call>
CUresult CreateCtx(CUcontext* ctx, CUdevice dev, Call call) {
  State& s = S();
  std::uint64_t bytes = dev >= 0 && dev < s.device_count ? s.config.context_bytes : 0;
  CUresult rc = bytes > 0 ? Charged(dev, bytes, call) : call();
  if (rc != CUDA_SUCCESS) return rc;
  if (ctx == nullptr) {  // nothing to remember it by (no driver succeeds so)
    if (bytes > 0) Unreserve(dev, bytes);
    return rc;
  }
  std::lock_guard lock(s.mu);
  s.created[*ctx] = {dev, bytes};
  return rc;
}
}  // namespace

SHIM_API CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev) {
  EnsureReady();
  auto real = REAL(cuCtxCreate_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CreateCtx(ctx, dev, [&] { return real(ctx, flags, dev); });
}
SHIM_API CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam* params, int count,
                                 unsigned int flags, CUdevice dev) {
  EnsureReady();
  auto real = REAL(cuCtxCreate_v3);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CreateCtx(ctx, dev, [&] { return real(ctx, params, count, flags, dev); });
}
SHIM_API CUresult cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams* params, unsigned int flags,
                                 CUdevice dev) {
  EnsureReady();
  auto real = REAL(cuCtxCreate_v4);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CreateCtx(ctx, dev, [&] { return real(ctx, params, flags, dev); });
}
SHIM_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  EnsureReady();
  auto real = REAL(cuCtxDestroy_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Released([&] { return real(ctx); },
                  [&] {
                    State& s = S();
                    if (auto it = s.created.find(ctx); it != s.created.end()) {
                      if (it->second.second > 0) Unreserve(it->second.first, it->second.second);
                      s.created.erase(it);
                    }
                  });
}

SHIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  return Retain(ctx, dev);
}
SHIM_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return ReleaseCtx(REAL(cuDevicePrimaryCtxRelease), dev);
}
SHIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return ReleaseCtx(REAL(cuDevicePrimaryCtxRelease_v2), dev);
}

SHIM_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  EnsureReady();
  auto real = REAL(cuDeviceTotalMem_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = real(bytes, dev);
  if (rc == CUDA_SUCCESS && dev >= 0 && dev < S().device_count && S().devices[dev].cap != 0) {
    *bytes = std::min<size_t>(*bytes, S().devices[dev].cap);
  }
  return rc;
}

SHIM_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  EnsureReady();
  auto real = REAL(cuMemGetInfo_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = real(free_bytes, total);
  int d = CurrentDevice();
  if (rc != CUDA_SUCCESS || d < 0 || S().devices[d].cap == 0) return rc;
  // The container's view: its cap as the total; never an error when over it (free is then 0).
  std::uint64_t cap = std::min<std::uint64_t>(S().devices[d].cap, *total);
  std::uint64_t used = UsedOn(d);
  *total = cap;
  *free_bytes = std::min<std::uint64_t>(*free_bytes, used >= cap ? 0 : cap - used);
  return rc;
}

SHIM_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  return AllocPlain(dptr, size, 0, false);
}
SHIM_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t size, unsigned int flags) {
  return AllocPlain(dptr, size, flags, true);
}

SHIM_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                     unsigned int elem) {
  EnsureReady();
  auto real = REAL(cuMemAllocPitch_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  int d = CurrentDevice();
  if (!Accounted(d) || dptr == nullptr || pitch == nullptr) {
    return real(dptr, pitch, width, height, elem);
  }
  // Reserve the driver's likely footprint (rows padded to 512 bytes), then settle on the pitch
  // it chose.
  std::uint64_t guess = (width + 511) / 512 * 512 * height;
  if (!Reserve(d, guess)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = real(dptr, pitch, width, height, elem);
  if (rc != CUDA_SUCCESS) {
    Unreserve(d, guess);
    return rc;
  }
  std::uint64_t actual = static_cast<std::uint64_t>(*pitch) * height;
  if (actual > guess && !Reserve(d, actual - guess)) {
    Unreserve(d, guess);
    if (auto f = REAL(cuMemFree_v2)) f(*dptr);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (actual < guess) Unreserve(d, guess - actual);
  std::lock_guard lock(S().mu);
  S().allocations[*dptr] = Allocation{d, actual, nullptr};
  return rc;
}

SHIM_API CUresult cuMemFree_v2(CUdeviceptr p) {
  auto real = REAL(cuMemFree_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // Unknown pointers (allocated before the shim saw them, or by a path it does not wrap) are the
  // driver's business: forward and return its answer.
  return Released([&] { return real(p); }, [&] { Forget(p); });
}

SHIM_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t size, CUstream s) {
  return AllocFromPool(dptr, size, nullptr, s, false, false);
}
SHIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t size, CUstream s) {
  return AllocFromPool(dptr, size, nullptr, s, false, true);
}
SHIM_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t size, CUmemoryPool pool,
                                          CUstream s) {
  return AllocFromPool(dptr, size, pool, s, true, false);
}
SHIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t size, CUmemoryPool pool,
                                               CUstream s) {
  return AllocFromPool(dptr, size, pool, s, true, true);
}
SHIM_API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return FreeAsync(p, s, false); }
SHIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return FreeAsync(p, s, true); }

SHIM_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  auto real = REAL(cuMemPoolTrimTo);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = real(pool, keep);
  std::lock_guard lock(S().mu);
  auto it = S().pool_charge.find(pool);
  if (rc == CUDA_SUCCESS && it != S().pool_charge.end()) SettlePool(pool, it->second.first);
  return rc;
}

SHIM_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  auto real = REAL(cuMemPoolDestroy);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Released([&] { return real(pool); },
                  [&] {
                    auto it = S().pool_charge.find(pool);
                    if (it != S().pool_charge.end()) {
                      Unreserve(it->second.first, it->second.second);
                      S().pool_charge.erase(it);
                    }
                    for (auto a = S().allocations.begin(); a != S().allocations.end();) {
                      a = a->second.pool == pool ? S().allocations.erase(a) : std::next(a);
                    }
                  });
}

SHIM_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                              CUmemAllocationProp const* prop, unsigned long long flags) {
  EnsureReady();
  auto real = REAL(cuMemCreate);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // Only physical memory on a device counts; host or invalid locations are the driver's to judge
  // (HAMi-core#187 read a device id out of a host location).
  int d = -1;
  if (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
      prop->location.id >= 0 && prop->location.id < S().device_count) {
    d = prop->location.id;
  }
  if (!Accounted(d) || handle == nullptr) return real(handle, size, prop, flags);
  CUresult rc = Charged(d, size, [&] { return real(handle, size, prop, flags); });
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(S().mu);
  S().handles[*handle] = Allocation{d, size, nullptr};
  return rc;
}

SHIM_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto real = REAL(cuMemRelease);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Released([&] { return real(handle); },
                  [&] {
                    auto it = S().handles.find(handle);
                    if (it != S().handles.end()) {
                      Unreserve(it->second.device, it->second.bytes);
                      S().handles.erase(it);
                    }
                  });
}

// ---- launches
// ------------------------------------------------------------------------------------
SHIM_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned smem, CUstream s, void** p,
                                 void** e) {
  return Launch(REAL(cuLaunchKernel), s, false, f, gx, gy, gz, bx, by, bz, smem, s, p, e);
}
SHIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                      unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                      CUstream s, void** p, void** e) {
  return Launch(REAL(cuLaunchKernel_ptsz), s, true, f, gx, gy, gz, bx, by, bz, smem, s, p, e);
}
SHIM_API CUresult cuLaunchKernelEx(CUlaunchConfig const* c, CUfunction f, void** p, void** e) {
  return Launch(REAL(cuLaunchKernelEx), c != nullptr ? c->hStream : nullptr, false, c, f, p, e);
}
SHIM_API CUresult cuLaunchKernelEx_ptsz(CUlaunchConfig const* c, CUfunction f, void** p, void** e) {
  return Launch(REAL(cuLaunchKernelEx_ptsz), c != nullptr ? c->hStream : nullptr, true, c, f, p, e);
}
SHIM_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                            unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                            CUstream s, void** p) {
  return Launch(REAL(cuLaunchCooperativeKernel), s, false, f, gx, gy, gz, bx, by, bz, smem, s, p);
}
SHIM_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                 unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                                 unsigned smem, CUstream s, void** p) {
  return Launch(REAL(cuLaunchCooperativeKernel_ptsz), s, true, f, gx, gy, gz, bx, by, bz, smem, s,
                p);
}
SHIM_API CUresult cuGraphLaunch(CUgraphExec g, CUstream s) {
  return Launch(REAL(cuGraphLaunch), s, false, g, s);
}
SHIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) {
  return Launch(REAL(cuGraphLaunch_ptsz), s, true, g, s);
}

// ---- NVML
// ----------------------------------------------------------------------------------------
namespace {
/// The container's view of an NVML device when it has a cap: the cap, and the ledger's usage
/// (at most the cap). False when the device is not capped for this container.
bool CappedView(nvmlDevice_t dev, std::uint64_t* cap, std::uint64_t* used) {
  int li = NvmlLedgerDevice(dev);
  if (li < 0 || S().ledger->Limit(li) == 0) return false;
  *cap = S().ledger->Limit(li);
  *used = std::min(S().ledger->Charged(li), *cap);
  return true;
}
}  // namespace

SHIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t* m) {
  EnsureNvmlReady();
  auto real = REAL(nvmlDeviceGetMemoryInfo);
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  nvmlReturn_t rc = real(dev, m);
  std::uint64_t cap = 0;
  std::uint64_t used = 0;
  if (rc != NVML_SUCCESS || !CappedView(dev, &cap, &used)) return rc;
  m->total = cap;
  m->used = used;
  m->free = cap - used;
  return rc;
}

SHIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t* m) {
  EnsureNvmlReady();
  auto real = REAL(nvmlDeviceGetMemoryInfo_v2);
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  nvmlReturn_t rc = real(dev, m);
  std::uint64_t cap = 0;
  std::uint64_t used = 0;
  if (rc != NVML_SUCCESS || !CappedView(dev, &cap, &used)) return rc;
  m->total = cap;
  m->reserved = 0;
  m->used = used;
  m->free = cap - used;
  return rc;
}

SHIM_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned* count,
                                                           nvmlProcessInfo_v1_t* infos) {
  EnsureNvmlReady();
  auto real = REAL(nvmlDeviceGetComputeRunningProcesses);
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return FilterProcesses(real(dev, count, infos), count, infos);
}
SHIM_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned* count,
                                                              nvmlProcessInfo_t* infos) {
  EnsureNvmlReady();
  auto real = REAL(nvmlDeviceGetComputeRunningProcesses_v2);
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return FilterProcesses(real(dev, count, infos), count, infos);
}
SHIM_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned* count,
                                                              nvmlProcessInfo_t* infos) {
  EnsureNvmlReady();
  auto real = REAL(nvmlDeviceGetComputeRunningProcesses_v3);
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return FilterProcesses(real(dev, count, infos), count, infos);
}
