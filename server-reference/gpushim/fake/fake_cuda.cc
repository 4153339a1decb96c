// SPDX-License-Identifier: Apache-2.0
// A stand-in for libcuda.so.1 (SONAME libcuda.so.1) on machines without a GPU, for the shim's
// tests: the driver entry points the shim wraps or needs, with the driver's signatures, return
// codes and cuGetProcAddress contract (base name + requested version + flags → the versioned
// entry point, symbolStatus, per-thread-default-stream twins), over the shared model of
// fake_gpu.h. cuGetExportTable answers not-supported, as a driver-less machine must: the real
// libcudart cannot run on this fake (gpu-shim.md §1.1), the shim's tests talk to it at the driver
// API, where the shim lives.
#include "fake_gpu.h"

#include "server-reference/gpushim/driver_abi.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using namespace bai::fakegpu;

constexpr std::uint64_t kPoolChunk = 32ULL << 20;  // pools grow in 32 MiB steps
constexpr std::uint64_t kMaxQueueDepth = 1024;     // launches a stream may have pending

enum CaptureStatus { kCaptureNone = 0, kCaptureActive = 1, kCaptureInvalidated = 2 };
enum CaptureMode { kModeGlobal = 0, kModeThreadLocal = 1, kModeRelaxed = 2 };

struct Stream {
  int device = 0;
  std::atomic<std::uint64_t> last_end{0};
  // Stream capture (under Process::mu): launches go into a graph instead of the queue.
  int capture = kCaptureNone;
  int capture_mode = kModeGlobal;
  pthread_t capture_thread{};
  std::uint64_t captured_cost = 0;
};

struct Context {
  int device = 0;
  int refs = 0;
  Stream stream;  // the NULL stream of this context
};

struct Event {
  std::uint64_t complete_at = 0;
  bool recorded = false;
  bool timing = true;
  bool captured = false;  // last recorded into a capture: a node of the graph, not a time
};

struct Graph {
  std::uint64_t cost_ns = 0;
};

struct Pool {
  int device = 0;
  std::uint64_t reserved = 0;
  std::uint64_t used = 0;
};

struct GraphExec {
  std::uint64_t cost_ns = 0;
};

enum class Kind { kPlain, kManaged, kPool };
struct Allocation {
  int device;
  std::uint64_t size;
  Kind kind;
  Pool* pool;
};

struct Process {
  std::mutex mu;
  bool initialised = false;
  Context contexts[kMaxDevices];
  Pool default_pools[kMaxDevices];
  Pool* current_pool[kMaxDevices] = {};
  std::unordered_map<CUdeviceptr, Allocation> allocations;
  std::unordered_map<CUmemGenericAllocationHandle, Allocation> vmm;
  std::unordered_map<Context*, std::unique_ptr<Context>> created;  // cuCtxCreate's
  CUdeviceptr next_ptr = 0;
  CUmemGenericAllocationHandle next_handle = 0;
  std::vector<Stream*> capturing;  // streams with a capture under way
};

Process& P() {
  static Process* p = [] {
    auto* proc = new Process;
    for (int d = 0; d < kMaxDevices; ++d) {
      proc->contexts[d].device = d;
      proc->contexts[d].stream.device = d;
      proc->default_pools[d].device = d;
      proc->current_pool[d] = &proc->default_pools[d];
    }
    // Unique, aligned, never-zero device addresses per process.
    proc->next_ptr = (static_cast<CUdeviceptr>(getpid()) << 36) | (1ULL << 32);
    return proc;
  }();
  return *p;
}

thread_local Context* t_current = nullptr;
thread_local int t_capture_mode = kModeGlobal;  // cuThreadExchangeStreamCaptureMode's

/// The driver's rule for "potentially unsafe" calls (event queries and waits, synchronisation)
/// while a capture is under way: refused, and the capture that forbade them is invalidated,
/// when this thread's mode is not relaxed and this thread has a capture under way (global or
/// thread-local mode) or another thread one in global mode. True when the call is refused.
bool UnsafeDuringCapture() {
  if (t_capture_mode == kModeRelaxed) return false;
  std::lock_guard lock(P().mu);
  bool refused = false;
  for (Stream* st : P().capturing) {
    bool mine = pthread_equal(st->capture_thread, pthread_self()) != 0;
    if (st->capture_mode == kModeGlobal || (mine && st->capture_mode == kModeThreadLocal)) {
      st->capture = kCaptureInvalidated;
      refused = true;
    }
  }
  return refused;
}

int DeviceCount() { return static_cast<int>(Attach()->device_count); }

void Charge(int device, std::uint64_t bytes) { MyProc()->used[device].fetch_add(bytes); }
void Uncharge(int device, std::uint64_t bytes) {
  auto& u = MyProc()->used[device];
  std::uint64_t cur = u.load();
  while (!u.compare_exchange_weak(cur, cur - std::min(cur, bytes))) {
  }
}
bool Fits(int device, std::uint64_t bytes) {
  return DeviceUsed(Attach(), device) + bytes <= kCudaTotalMem;
}

CUresult NeedContext(int* device) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = t_current->device;
  return CUDA_SUCCESS;
}

Stream* StreamOf(CUstream s) {
  if (s == nullptr) return t_current != nullptr ? &t_current->stream : nullptr;
  return reinterpret_cast<Stream*>(s);
}

/// Queues `cost` ns of work from this process on the stream's device; the device runs launches
/// first-come first-served.
CUresult Enqueue(CUstream s, std::uint64_t cost) {
  Stream* st = StreamOf(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (s != nullptr) {
    std::lock_guard lock(P().mu);
    if (st->capture == kCaptureActive) {
      st->captured_cost += cost;  // a node of the graph: runs when the graph is launched
      return CUDA_SUCCESS;
    }
    if (st->capture == kCaptureInvalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  std::uint64_t now = NowNs();
  // The driver's launch queue is finite: a launch waits while the stream is that far behind.
  std::uint64_t backlog = kMaxQueueDepth * std::max<std::uint64_t>(cost, 1);
  std::uint64_t last = st->last_end.load();
  if (last > now + backlog) {
    SleepUntilNs(last - backlog);
    now = NowNs();
  }
  Device& dev = Attach()->devices[st->device];
  std::uint64_t until = dev.busy_until.load();
  std::uint64_t end = 0;
  do {
    end = std::max({now, until, st->last_end.load()}) + cost;
  } while (!dev.busy_until.compare_exchange_weak(until, std::max(until, end)));
  st->last_end.store(end);
  dev.busy_total.fetch_add(cost);
  MyProc()->busy[st->device].fetch_add(cost);
  return CUDA_SUCCESS;
}

std::uint64_t LaunchCost(unsigned gx, unsigned gy, unsigned gz) {
  return static_cast<std::uint64_t>(gx) * gy * gz * Attach()->ns_per_block;
}

CUresult PoolAlloc(CUdeviceptr* dptr, size_t size, Pool* pool) {
  if (dptr == nullptr || size == 0 || pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(P().mu);
  std::uint64_t need = pool->used + size;
  if (need > pool->reserved) {
    std::uint64_t grow = (need - pool->reserved + kPoolChunk - 1) / kPoolChunk * kPoolChunk;
    if (!Fits(pool->device, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
    pool->reserved += grow;
    Charge(pool->device, grow);
  }
  pool->used += size;
  CUdeviceptr p = P().next_ptr;
  P().next_ptr += (size + 511) / 512 * 512;
  P().allocations[p] = Allocation{pool->device, size, Kind::kPool, pool};
  *dptr = p;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// ---- init, versions, errors --------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Attach();
  P().initialised = true;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* v) {
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *v = kDriverVersion;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuGetExportTable(void const** table,
                                                                 CUuuid const*) {
  if (table != nullptr) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult e, char const** s) {
  if (s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
    case CUDA_SUCCESS:
      *s = "no error";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *s = "invalid argument";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *s = "out of memory";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      *s = "initialization error";
      break;
    case CUDA_ERROR_INVALID_CONTEXT:
      *s = "invalid device context";
      break;
    case CUDA_ERROR_NOT_FOUND:
      *s = "named symbol not found";
      break;
    case CUDA_ERROR_NOT_READY:
      *s = "device not ready";
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *s = "operation not supported";
      break;
    default:
      *s = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// ---- devices -----------------------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* n) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *n = DeviceCount();
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "NVIDIA H100 80GB HBM3");
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // "GPU-xxxxxxxx-xxxx-…" → 16 bytes.
  char const* text = Attach()->devices[d].uuid + 4;
  int n = 0;
  for (char const* c = text; *c != '\0' && n < 32; ++c) {
    if (*c == '-') continue;
    int v = (*c >= 'a') ? *c - 'a' + 10 : *c - '0';
    if (n % 2 == 0)
      uuid->bytes[n / 2] = static_cast<char>(v << 4);
    else
      uuid->bytes[n / 2] = static_cast<char>(uuid->bytes[n / 2] | v);
    ++n;
  }
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice d) {
  return cuDeviceGetUuid_v2(uuid, d);
}
__attribute__((visibility("default"))) CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kCudaTotalMem;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = kSmCount;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *v = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *v = 52428800;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *v = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *v = 2619000;
      break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *v = 5120;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *v = 233472;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *v = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *v = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
      *v = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *v = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *v = 6 + d;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
      *v = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// ---- contexts ----------------------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx,
                                                                         CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(P().mu);
  Context& c = P().contexts[d];
  if (c.refs++ == 0) {
    if (!Fits(d, kContextBytes)) {
      c.refs = 0;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    Charge(d, kContextBytes);
  }
  *ctx = reinterpret_cast<CUcontext>(&c);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(P().mu);
  Context& c = P().contexts[d];
  if (c.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c.refs == 0) Uncharge(d, kContextBytes);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  return cuDevicePrimaryCtxRelease_v2(d);
}
// A created context costs what a primary one does, and becomes the thread's current one.
__attribute__((visibility("default"))) CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int,
                                                               CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(P().mu);
  if (!Fits(d, kContextBytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  Charge(d, kContextBytes);
  auto c = std::make_unique<Context>();
  c->device = d;
  c->refs = 1;
  c->stream.device = d;
  t_current = c.get();
  *ctx = reinterpret_cast<CUcontext>(c.get());
  P().created.emplace(c.get(), std::move(c));
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam*,
                                                               int, unsigned int flags,
                                                               CUdevice d) {
  return cuCtxCreate_v2(ctx, flags, d);
}
__attribute__((visibility("default"))) CUresult cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams*,
                                                               unsigned int flags, CUdevice d) {
  return cuCtxCreate_v2(ctx, flags, d);
}
__attribute__((visibility("default"))) CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  std::lock_guard lock(P().mu);
  auto it = P().created.find(reinterpret_cast<Context*>(ctx));
  if (it == P().created.end()) return CUDA_ERROR_INVALID_CONTEXT;  // a primary one, or junk
  Uncharge(it->second->device, kContextBytes);
  if (t_current == it->first) t_current = nullptr;
  P().created.erase(it);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  t_current = reinterpret_cast<Context*>(ctx);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = reinterpret_cast<CUcontext>(t_current);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuCtxGetDevice(CUdevice* d) {
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return NeedContext(d);
}
__attribute__((visibility("default"))) CUresult cuCtxSynchronize() {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  if (UnsafeDuringCapture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  SleepUntilNs(std::max(t_current->stream.last_end.load(), NowNs()));
  return CUDA_SUCCESS;
}

// ---- memory ------------------------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t used = DeviceUsed(Attach(), d);
  *total = kCudaTotalMem;
  *free_bytes = used >= kCudaTotalMem ? 0 : kCudaTotalMem - used;
  return CUDA_SUCCESS;
}
static CUresult Alloc(CUdeviceptr* dptr, size_t size, Kind kind) {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(P().mu);
  std::uint64_t rounded = (size + kVmmGranularity - 1) / kVmmGranularity * kVmmGranularity;
  if (!Fits(d, rounded)) return CUDA_ERROR_OUT_OF_MEMORY;
  Charge(d, rounded);
  CUdeviceptr p = P().next_ptr;
  P().next_ptr += rounded;
  P().allocations[p] = Allocation{d, rounded, kind, nullptr};
  *dptr = p;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  return Alloc(dptr, size, Kind::kPlain);
}
__attribute__((visibility("default"))) CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t size,
                                                                  unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != 2 /* HOST */) return CUDA_ERROR_INVALID_VALUE;
  return Alloc(dptr, size, Kind::kManaged);
}
__attribute__((visibility("default"))) CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch,
                                                                   size_t width, size_t height,
                                                                   unsigned int elem) {
  if (pitch == nullptr || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pitch = (width + 511) / 512 * 512;
  return Alloc(dptr, *pitch * height, Kind::kPlain);
}
__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (p == 0) return CUDA_SUCCESS;
  std::lock_guard lock(P().mu);
  auto it = P().allocations.find(p);
  if (it == P().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  Allocation a = it->second;
  P().allocations.erase(it);
  if (a.kind == Kind::kPool)
    a.pool->used -= std::min(a.pool->used, a.size);
  else
    Uncharge(a.device, a.size);
  return CUDA_SUCCESS;
}

// Stream-ordered allocation: pools reserve in chunks; a pool's reserved bytes are device memory.
__attribute__((visibility("default"))) CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool,
                                                                          CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount() || pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pool = reinterpret_cast<CUmemoryPool>(&P().default_pools[d]);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice d) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= DeviceCount() || pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pool = reinterpret_cast<CUmemoryPool>(P().current_pool[d]);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemPoolCreate(CUmemoryPool* pool,
                                                                CUmemPoolProps const* props) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (pool == nullptr || props == nullptr || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      props->location.id < 0 || props->location.id >= DeviceCount()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* p = new Pool;
  p->device = props->location.id;
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(P().mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  std::uint64_t floor =
      std::max<std::uint64_t>((p->used + kPoolChunk - 1) / kPoolChunk * kPoolChunk,
                              (keep + kPoolChunk - 1) / kPoolChunk * kPoolChunk);
  if (p->reserved > floor) {
    Uncharge(p->device, p->reserved - floor);
    p->reserved = floor;
  }
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* p = reinterpret_cast<Pool*>(pool);
  for (auto& dp : P().default_pools) {
    if (&dp == p) return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(P().mu);
  Uncharge(p->device, p->reserved);
  for (auto it = P().allocations.begin(); it != P().allocations.end();) {
    it = it->second.pool == p ? P().allocations.erase(it) : std::next(it);
  }
  delete p;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr,
                                                                      void* value) {
  if (pool == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(P().mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  auto* out = static_cast<std::uint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *out = p->reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *out = p->used;
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *out = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t size,
                                                                CUstream s) {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  Stream* st = StreamOf(s);
  return PoolAlloc(dptr, size, P().current_pool[st != nullptr ? st->device : d]);
}
__attribute__((visibility("default"))) CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t size,
                                                                     CUstream s) {
  return cuMemAllocAsync(dptr, size, s);
}
__attribute__((visibility("default"))) CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr,
                                                                        size_t size,
                                                                        CUmemoryPool pool,
                                                                        CUstream) {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  return PoolAlloc(dptr, size, reinterpret_cast<Pool*>(pool));
}
__attribute__((visibility("default"))) CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr,
                                                                             size_t size,
                                                                             CUmemoryPool pool,
                                                                             CUstream s) {
  return cuMemAllocFromPoolAsync(dptr, size, pool, s);
}
__attribute__((visibility("default"))) CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  return cuMemFree_v2(p);
}
__attribute__((visibility("default"))) CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
  return cuMemFreeAsync(p, s);
}

// Virtual memory management: physical handles are device memory.
__attribute__((visibility("default"))) CUresult cuMemGetAllocationGranularity(
    size_t* g, CUmemAllocationProp const* prop, int) {
  if (g == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *g = kVmmGranularity;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemCreate(CUmemGenericAllocationHandle* h,
                                                            size_t size,
                                                            CUmemAllocationProp const* prop,
                                                            unsigned long long flags) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (h == nullptr || prop == nullptr || flags != 0 || size == 0 || size % kVmmGranularity != 0 ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 ||
      prop->location.id >= DeviceCount()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(P().mu);
  int d = prop->location.id;
  if (!Fits(d, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  Charge(d, size);
  *h = ++P().next_handle;
  P().vmm[*h] = Allocation{d, size, Kind::kPlain, nullptr};
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  std::lock_guard lock(P().mu);
  auto it = P().vmm.find(h);
  if (it == P().vmm.end()) return CUDA_ERROR_INVALID_VALUE;
  Uncharge(it->second.device, it->second.size);
  P().vmm.erase(it);
  return CUDA_SUCCESS;
}

// ---- streams, events ---------------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuStreamCreate(CUstream* s, unsigned int) {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  if (s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* st = new Stream;
  st->device = d;
  *s = reinterpret_cast<CUstream>(st);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuStreamDestroy_v2(CUstream s) {
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Stream*>(s);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuStreamSynchronize(CUstream s) {
  Stream* st = StreamOf(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (UnsafeDuringCapture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  SleepUntilNs(std::max(st->last_end.load(), NowNs()));
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuStreamSynchronize_ptsz(CUstream s) {
  return cuStreamSynchronize(s);
}
__attribute__((visibility("default"))) CUresult cuEventCreate(CUevent* e, unsigned int flags) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (e == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* ev = new Event;
  ev->timing = (flags & CU_EVENT_DISABLE_TIMING) == 0;
  *e = reinterpret_cast<CUevent>(ev);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuEventDestroy_v2(CUevent e) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Event*>(e);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuEventRecord(CUevent e, CUstream s) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Stream* st = StreamOf(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  auto* ev = reinterpret_cast<Event*>(e);
  if (s != nullptr) {
    std::lock_guard lock(P().mu);
    if (st->capture == kCaptureInvalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (st->capture == kCaptureActive) {
      ev->captured = true;
      return CUDA_SUCCESS;
    }
  }
  ev->complete_at = std::max(st->last_end.load(), NowNs());
  ev->recorded = true;
  ev->captured = false;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuEventRecord_ptsz(CUevent e, CUstream s) {
  return cuEventRecord(e, s);
}
/// An event last recorded into a capture has no time to wait for: asking is an error.
bool CapturedEvent(Event const* ev) {
  std::lock_guard lock(P().mu);
  return ev->captured;
}

__attribute__((visibility("default"))) CUresult cuEventQuery(CUevent e) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* ev = reinterpret_cast<Event*>(e);
  if (UnsafeDuringCapture() || CapturedEvent(ev)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return !ev->recorded || NowNs() >= ev->complete_at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
__attribute__((visibility("default"))) CUresult cuEventSynchronize(CUevent e) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* ev = reinterpret_cast<Event*>(e);
  if (UnsafeDuringCapture() || CapturedEvent(ev)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (ev->recorded) SleepUntilNs(std::max(ev->complete_at, NowNs()));
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuEventElapsedTime_v2(float* ms, CUevent a,
                                                                      CUevent b) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (a == nullptr || b == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* ea = reinterpret_cast<Event*>(a);
  auto* eb = reinterpret_cast<Event*>(b);
  if (!ea->timing || !eb->timing) return CUDA_ERROR_INVALID_HANDLE;
  if (!ea->recorded || !eb->recorded) return CUDA_ERROR_INVALID_HANDLE;
  std::uint64_t now = NowNs();
  if (now < ea->complete_at || now < eb->complete_at) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(static_cast<std::int64_t>(eb->complete_at) -
                                               static_cast<std::int64_t>(ea->complete_at)) /
                           1e6);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuEventElapsedTime(float* ms, CUevent a,
                                                                   CUevent b) {
  return cuEventElapsedTime_v2(ms, a, b);
}

// ---- stream capture ----------------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
  int d = 0;
  if (CUresult rc = NeedContext(&d); rc != CUDA_SUCCESS) return rc;
  if (s == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy NULL stream
  if (mode < kModeGlobal || mode > kModeRelaxed) return CUDA_ERROR_INVALID_VALUE;
  auto* st = reinterpret_cast<Stream*>(s);
  std::lock_guard lock(P().mu);
  if (st->capture != kCaptureNone) return CUDA_ERROR_INVALID_VALUE;
  st->capture = kCaptureActive;
  st->capture_mode = mode;
  st->capture_thread = pthread_self();
  st->captured_cost = 0;
  P().capturing.push_back(st);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuStreamBeginCapture_ptsz(CUstream s, int mode) {
  return cuStreamBeginCapture_v2(s, mode);
}
__attribute__((visibility("default"))) CUresult cuStreamEndCapture(CUstream s, CUgraph* graph) {
  if (s == nullptr || graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* st = reinterpret_cast<Stream*>(s);
  std::lock_guard lock(P().mu);
  if (st->capture == kCaptureNone) return CUDA_ERROR_INVALID_VALUE;
  auto& c = P().capturing;
  c.erase(std::remove(c.begin(), c.end(), st), c.end());
  bool invalidated = st->capture == kCaptureInvalidated;
  st->capture = kCaptureNone;
  *graph = nullptr;
  if (invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto* g = new Graph;
  g->cost_ns = st->captured_cost;
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) {
  return cuStreamEndCapture(s, g);
}
__attribute__((visibility("default"))) CUresult cuStreamIsCapturing(CUstream s, int* status) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (StreamOf(s) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(P().mu);
  *status = s != nullptr ? reinterpret_cast<Stream*>(s)->capture : kCaptureNone;
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuStreamIsCapturing_ptsz(CUstream s, int* status) {
  return cuStreamIsCapturing(s, status);
}
__attribute__((visibility("default"))) CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  if (mode == nullptr || *mode < kModeGlobal || *mode > kModeRelaxed) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::swap(*mode, t_capture_mode);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec,
                                                                            CUgraph g,
                                                                            unsigned long long) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* e = new GraphExec;
  e->cost_ns = reinterpret_cast<Graph*>(g)->cost_ns;
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuGraphDestroy(CUgraph g) {
  if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Graph*>(g);
  return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult cuGraphExecDestroy(CUgraphExec g) {
  if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<GraphExec*>(g);
  return CUDA_SUCCESS;
}

// ---- launches ----------------------------------------------------------------------------------
__attribute__((visibility("default"))) CUresult cuLaunchKernel(CUfunction f, unsigned gx,
                                                               unsigned gy, unsigned gz, unsigned,
                                                               unsigned, unsigned, unsigned,
                                                               CUstream s, void**, void**) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0) return CUDA_ERROR_INVALID_VALUE;
  return Enqueue(s, LaunchCost(gx, gy, gz));
}
__attribute__((visibility("default"))) CUresult cuLaunchKernel_ptsz(
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    unsigned smem, CUstream s, void** params, void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, extra);
}
__attribute__((visibility("default"))) CUresult cuLaunchCooperativeKernel(
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    unsigned smem, CUstream s, void** params) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, nullptr);
}
__attribute__((visibility("default"))) CUresult cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    unsigned smem, CUstream s, void** params) {
  return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, smem, s, params);
}
__attribute__((visibility("default"))) CUresult cuLaunchKernelEx(CUlaunchConfig const* config,
                                                                 CUfunction f, void**, void**) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                        config->blockDimY, config->blockDimZ, config->sharedMemBytes,
                        config->hStream, nullptr, nullptr);
}
__attribute__((visibility("default"))) CUresult cuLaunchKernelEx_ptsz(CUlaunchConfig const* config,
                                                                      CUfunction f, void** params,
                                                                      void** extra) {
  return cuLaunchKernelEx(config, f, params, extra);
}
__attribute__((visibility("default"))) CUresult cuGraphLaunch(CUgraphExec g, CUstream s) {
  if (!P().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Enqueue(s, reinterpret_cast<GraphExec*>(g)->cost_ns);
}
__attribute__((visibility("default"))) CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) {
  return cuGraphLaunch(g, s);
}

/// Test hook (not a driver symbol): an executable graph whose replay costs `cost_ns` of GPU time.
__attribute__((visibility("default"))) CUgraphExec baiFakeGraphExec(unsigned long long cost_ns) {
  auto* g = new GraphExec;
  g->cost_ns = cost_ns;
  return reinterpret_cast<CUgraphExec>(g);
}

/// Test hook (not a driver symbol): device memory the driver takes for the process on its own
/// (a library's internal pool, say): in NVML's per-process figure, in no wrapped call. 0 when it
/// fits.
__attribute__((visibility("default"))) int baiFakeDriverAlloc(int device,
                                                              unsigned long long bytes) {
  if (device < 0 || device >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  if (!Fits(device, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  Charge(device, bytes);
  return CUDA_SUCCESS;
}

// ---- cuGetProcAddress --------------------------------------------------------------------------
struct ProcEntry {
  char const* name;  // base name as callers ask for it
  int version;       // the lowest CUDA version that gets this entry point
  bool ptds;         // answers CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM lookups
  void* fn;
};

#define E(name, ver, fn) \
  { name, ver, false, reinterpret_cast<void*>(&fn) }
#define T(name, ver, fn) \
  { name, ver, true, reinterpret_cast<void*>(&fn) }
CUresult cuGetProcAddress(char const*, void**, int, unsigned long long);
CUresult cuGetProcAddress_v2(char const*, void**, int, unsigned long long,
                             CUdriverProcAddressQueryResult*);
static ProcEntry const kProcTable[] = {
    E("cuInit", 2000, cuInit),
    E("cuDriverGetVersion", 2020, cuDriverGetVersion),
    E("cuGetProcAddress", 11030, cuGetProcAddress),
    E("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    E("cuGetExportTable", 3000, cuGetExportTable),
    E("cuGetErrorString", 6000, cuGetErrorString),
    E("cuDeviceGetCount", 2000, cuDeviceGetCount),
    E("cuDeviceGet", 2000, cuDeviceGet),
    E("cuDeviceGetName", 2000, cuDeviceGetName),
    E("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    E("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    E("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    E("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    E("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    E("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    E("cuCtxCreate", 3020, cuCtxCreate_v2),
    E("cuCtxCreate", 11040, cuCtxCreate_v3),
    E("cuCtxCreate", 12050, cuCtxCreate_v4),
    E("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    E("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    E("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    E("cuCtxGetDevice", 2000, cuCtxGetDevice),
    E("cuCtxSynchronize", 2000, cuCtxSynchronize),
    E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    E("cuMemAlloc", 3020, cuMemAlloc_v2),
    E("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    E("cuMemAllocManaged", 6000, cuMemAllocManaged),
    E("cuMemFree", 3020, cuMemFree_v2),
    E("cuMemAllocAsync", 11020, cuMemAllocAsync),
    T("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    E("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    T("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    E("cuMemFreeAsync", 11020, cuMemFreeAsync),
    T("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    E("cuMemPoolCreate", 11020, cuMemPoolCreate),
    E("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    E("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    E("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    E("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    E("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    E("cuMemCreate", 10020, cuMemCreate),
    E("cuMemRelease", 10020, cuMemRelease),
    E("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    E("cuStreamCreate", 2000, cuStreamCreate),
    E("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    E("cuStreamSynchronize", 2000, cuStreamSynchronize),
    T("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
    E("cuEventCreate", 2000, cuEventCreate),
    E("cuEventDestroy", 4000, cuEventDestroy_v2),
    E("cuEventRecord", 2000, cuEventRecord),
    T("cuEventRecord", 7000, cuEventRecord_ptsz),
    E("cuEventQuery", 2000, cuEventQuery),
    E("cuEventSynchronize", 2000, cuEventSynchronize),
    E("cuEventElapsedTime", 2000, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    E("cuLaunchKernel", 4000, cuLaunchKernel),
    T("cuLaunchKernel", 7000, cuLaunchKernel_ptsz),
    E("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    T("cuLaunchKernelEx", 11060, cuLaunchKernelEx_ptsz),
    E("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
    T("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel_ptsz),
    E("cuGraphLaunch", 10000, cuGraphLaunch),
    T("cuGraphLaunch", 10000, cuGraphLaunch_ptsz),
    E("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    T("cuStreamBeginCapture", 10010, cuStreamBeginCapture_ptsz),
    E("cuStreamEndCapture", 10000, cuStreamEndCapture),
    T("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
    E("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    T("cuStreamIsCapturing", 10000, cuStreamIsCapturing_ptsz),
    E("cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode),
    E("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    E("cuGraphDestroy", 10000, cuGraphDestroy),
    E("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
};
#undef E
#undef T

/// BAI_FAKE_CUDA_LOG=FILE: one line per lookup, "gpa NAME VERSION FLAGS from LIBRARY", naming
/// the library that called (the shim, when it sits between a caller and the driver).
void LogLookup(char const* symbol, int version, unsigned long long flags, void* caller) {
  static FILE* log = [] {
    char const* path = std::getenv("BAI_FAKE_CUDA_LOG");
    return path != nullptr ? std::fopen(path, "a") : nullptr;
  }();
  if (log == nullptr) return;
  Dl_info info{};
  char const* from = dladdr(caller, &info) != 0 && info.dli_fname != nullptr
                         ? std::strrchr(info.dli_fname, '/')
                         : nullptr;
  std::fprintf(log, "gpa %s %d %llu from %s\n", symbol != nullptr ? symbol : "(null)", version,
               flags, from != nullptr ? from + 1 : "?");
  std::fflush(log);
}

CUresult GetProcAddress(char const* symbol, void** pfn, int version, unsigned long long flags,
                        CUdriverProcAddressQueryResult* status);

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    char const* symbol, void** pfn, int version, unsigned long long flags,
    CUdriverProcAddressQueryResult* status) {
  LogLookup(symbol, version, flags, __builtin_return_address(0));
  return GetProcAddress(symbol, pfn, version, flags, status);
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress(char const* symbol, void** pfn,
                                                                 int version,
                                                                 unsigned long long flags) {
  LogLookup(symbol, version, flags, __builtin_return_address(0));
  return GetProcAddress(symbol, pfn, version, flags, nullptr);
}

CUresult GetProcAddress(char const* symbol, void** pfn, int version, unsigned long long flags,
                        CUdriverProcAddressQueryResult* status) {
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == nullptr || pfn == nullptr ||
      flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pfn = nullptr;
  bool const want_ptds = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  ProcEntry const* best = nullptr;
  bool known = false;
  for (int pass = 0; pass < 2 && best == nullptr; ++pass) {
    // First the per-thread twin when asked for, then the plain entry point.
    bool ptds = want_ptds && pass == 0;
    for (auto const& e : kProcTable) {
      if (std::strcmp(e.name, symbol) != 0) continue;
      known = true;
      if (e.ptds != ptds || e.version > version) continue;
      if (best == nullptr || e.version > best->version) best = &e;
    }
  }
  if (best == nullptr) {
    if (known && status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->fn;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // extern "C"
