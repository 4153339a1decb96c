// SPDX-License-Identifier: Apache-2.0
// gpushim_probe: a CUDA program in miniature, run by the shim's tests under LD_PRELOAD with the
// fake driver. It reaches the driver the way libcudart does (dlopen libcuda.so.1, dlsym
// cuGetProcAddress_v2, then everything by base name + version + flags through the pointer the
// driver returns for "cuGetProcAddress" at 12000) and prints what it saw, one line per fact, for
// the tests to assert on.
//
//   gpushim_probe resolve NAME VERSION FLAGS...  each lookup: rc, symbolStatus, library, symbol
//   gpushim_probe dlsym NAME...                  plain dlsym on the libcuda / libnvidia-ml handles
//   gpushim_probe meminfo                        cuMemGetInfo, cuDeviceTotalMem, NVML v1/v2
//   gpushim_probe alloc KIND BYTES COUNT [HOLD_S] COUNT allocations (plain|managed|async|pool|
//                                                vmm|pitch), the first failure's code, then
//                                                meminfo; HOLD_S: sleep before freeing
//   gpushim_probe launch SECONDS BLOCKS [graph|idle]  a saturating launch loop (graph: replays
//                                                of a graph costing BLOCKS µs; idle: a context
//                                                and no launches), then launches done
//   gpushim_probe capture KERNELS [query|side]    kernels in flight on a stream, then a global-
//                                                mode capture of KERNELS launches (query: and an
//                                                event query inside it, which the driver
//                                                forbids; side: and launches on another stream),
//                                                the graph instantiated and launched; each
//                                                step's code
//   gpushim_probe processes                      NVML's compute processes, as the shim filters
//   gpushim_probe ledger PATH UUID BYTES…        writes a ledger, as the agent does (bench/gpu)
//   gpushim_probe next NAME…                     dlsym(RTLD_NEXT, NAME) from the program itself
//   gpushim_probe cudart PATH                    the real libcudart: cudaGetDeviceCount (which
//                                                initialises it), its error code
//   gpushim_probe driver BYTES HOLD_S            a context, then BYTES the driver takes on its
//                                                own (the fake's baiFakeDriverAlloc: seen by
//                                                NVML, by no wrapped call); holds them HOLD_S
//   gpushim_probe contexts COUNT VERSION         cuCtxCreate (as asked at VERSION) COUNT times,
//                                                the first failure's code; then two destroyed
//                                                and two created again
//   gpushim_probe exec BYTES ARGS…               a context and BYTES, then exec's itself with
//                                                ARGS (the old image's memory is gone)
//   gpushim_probe fork BYTES                     allocates, forks; the child allocates too and
//                                                exits; meminfo from both sides
#include "server-reference/gpushim/core/ledger.h"
#include "server-reference/gpushim/driver_abi.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using GpaV2 = CUresult (*)(char const*, void**, int, unsigned long long,
                           CUdriverProcAddressQueryResult*);
void* g_cuda = nullptr;
void* g_nvml = nullptr;
GpaV2 g_gpa = nullptr;

void Die(char const* what) {
  std::fprintf(stderr, "probe: %s\n", what);
  std::exit(2);
}

std::string Where(void* p) {
  Dl_info info{};
  if (p == nullptr) return "null null";
  if (dladdr(p, &info) == 0) return "unknown unknown";
  std::string lib = info.dli_fname != nullptr ? info.dli_fname : "?";
  lib = lib.substr(lib.rfind('/') + 1);
  return lib + " " + (info.dli_sname != nullptr ? info.dli_sname : "?");
}

void Boot() {
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_cuda == nullptr) Die(dlerror());
  auto gpa_v2 = reinterpret_cast<GpaV2>(dlsym(g_cuda, "cuGetProcAddress_v2"));
  if (gpa_v2 == nullptr) Die("no cuGetProcAddress_v2");
  // cudart's own bootstrap: the GPA it keeps is the one asked for at 12000.
  void* p = nullptr;
  CUdriverProcAddressQueryResult st{};
  if (gpa_v2("cuGetProcAddress", &p, 12000, 0, &st) != CUDA_SUCCESS) Die("gpa self lookup");
  g_gpa = reinterpret_cast<GpaV2>(p);
}

template <typename F>
F Get(char const* name, int version, unsigned long long flags = 0) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st{};
  if (g_gpa(name, &p, version, flags, &st) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cannot resolve %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(p);
}

void Context() {
  auto init = Get<CUresult (*)(unsigned)>("cuInit", 2000);
  if (init(0) != CUDA_SUCCESS) Die("cuInit");
  auto retain = Get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain", 7000);
  auto set = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent", 4000);
  CUcontext ctx = nullptr;
  CUresult rc = retain(&ctx, 0);
  if (rc != CUDA_SUCCESS) {
    std::printf("retain %d\n", rc);
    std::exit(3);
  }
  set(ctx);
}

void MemInfo() {
  auto info = Get<CUresult (*)(size_t*, size_t*)>("cuMemGetInfo", 3020);
  auto total = Get<CUresult (*)(size_t*, CUdevice)>("cuDeviceTotalMem", 3020);
  size_t f = 0;
  size_t t = 0;
  CUresult rc = info(&f, &t);
  std::printf("cuMemGetInfo %d free %zu total %zu\n", rc, f, t);
  size_t dt = 0;
  rc = total(&dt, 0);
  std::printf("cuDeviceTotalMem %d %zu\n", rc, dt);
  g_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_nvml == nullptr) return;
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(g_nvml, "nvmlInit_v2"));
  auto handle = reinterpret_cast<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(
      dlsym(g_nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto mem1 = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(
      dlsym(g_nvml, "nvmlDeviceGetMemoryInfo"));
  auto mem2 = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*)>(
      dlsym(g_nvml, "nvmlDeviceGetMemoryInfo_v2"));
  nvmlDevice_t dev = nullptr;
  if (init() != NVML_SUCCESS || handle(0, &dev) != NVML_SUCCESS) Die("nvml");
  nvmlMemory_t m1{};
  nvmlReturn_t r1 = mem1(dev, &m1);
  std::printf("nvmlMemory %d total %llu used %llu free %llu\n", r1, m1.total, m1.used, m1.free);
  nvmlMemory_v2_t m2{};
  m2.version = nvmlMemory_v2;
  nvmlReturn_t r2 = mem2(dev, &m2);
  std::printf("nvmlMemory_v2 %d total %llu reserved %llu used %llu free %llu\n", r2, m2.total,
              m2.reserved, m2.used, m2.free);
}

int Contexts(int count, int version) {
  auto init = Get<CUresult (*)(unsigned)>("cuInit", 2000);
  if (init(0) != CUDA_SUCCESS) Die("cuInit");
  // The same call through every ABI: the wrapper for the one the driver hands out.
  void* create = nullptr;
  CUdriverProcAddressQueryResult st{};
  if (g_gpa("cuCtxCreate", &create, version, 0, &st) != CUDA_SUCCESS) Die("cuCtxCreate");
  auto destroy = Get<CUresult (*)(CUcontext)>("cuCtxDestroy", 4000);
  auto make = [&](CUcontext* c) {
    if (version >= 12050)
      return reinterpret_cast<CUresult (*)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice)>(
          create)(c, nullptr, 0, 0);
    if (version >= 11040)
      return reinterpret_cast<CUresult (*)(CUcontext*, CUexecAffinityParam*, int, unsigned,
                                           CUdevice)>(create)(c, nullptr, 0, 0, 0);
    return reinterpret_cast<CUresult (*)(CUcontext*, unsigned, CUdevice)>(create)(c, 0, 0);
  };
  std::vector<CUcontext> made;
  CUresult failed = CUDA_SUCCESS;
  for (int i = 0; i < count; ++i) {
    CUcontext c = nullptr;
    failed = make(&c);
    if (failed != CUDA_SUCCESS) break;
    made.push_back(c);
  }
  std::printf("created %zu of %d first_error %d via %s\n", made.size(), count, failed,
              Where(create).c_str());
  int again = 0;
  for (int i = 0; i < 2 && !made.empty(); ++i) {
    if (destroy(made.back()) != CUDA_SUCCESS) Die("cuCtxDestroy");
    made.pop_back();
  }
  for (int i = 0; i < 2; ++i) {
    CUcontext c = nullptr;
    if (make(&c) == CUDA_SUCCESS) ++again;
  }
  std::printf("after destroy created %d of 2\n", again);
  return 0;
}

int Alloc(std::string const& kind, size_t bytes, int count, int hold_s) {
  Context();
  auto alloc = Get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto managed = Get<CUresult (*)(CUdeviceptr*, size_t, unsigned)>("cuMemAllocManaged", 6000);
  auto pitch =
      Get<CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned)>("cuMemAllocPitch", 3020);
  auto free_ = Get<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020);
  auto async = Get<CUresult (*)(CUdeviceptr*, size_t, CUstream)>("cuMemAllocAsync", 11020, 2);
  auto free_async = Get<CUresult (*)(CUdeviceptr, CUstream)>("cuMemFreeAsync", 11020, 2);
  auto pool_create =
      Get<CUresult (*)(CUmemoryPool*, CUmemPoolProps const*)>("cuMemPoolCreate", 11020);
  auto pool_alloc = Get<CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream)>(
      "cuMemAllocFromPoolAsync", 11020);
  auto pool_destroy = Get<CUresult (*)(CUmemoryPool)>("cuMemPoolDestroy", 11020);
  auto create = Get<CUresult (*)(CUmemGenericAllocationHandle*, size_t, CUmemAllocationProp const*,
                                 unsigned long long)>("cuMemCreate", 10020);
  auto release = Get<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease", 10020);
  CUmemoryPool pool = nullptr;
  if (kind == "pool") {
    CUmemPoolProps props{};
    props.allocType = 1;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    if (pool_create(&pool, &props) != CUDA_SUCCESS) Die("pool create");
  }
  std::vector<CUdeviceptr> ptrs;
  std::vector<CUmemGenericAllocationHandle> handles;
  int ok = 0;
  CUresult failed = CUDA_SUCCESS;
  for (int i = 0; i < count; ++i) {
    CUdeviceptr p = 0;
    CUresult rc = CUDA_SUCCESS;
    if (kind == "plain") {
      rc = alloc(&p, bytes);
    } else if (kind == "managed") {
      rc = managed(&p, bytes, CU_MEM_ATTACH_GLOBAL);
    } else if (kind == "pitch") {
      size_t pt = 0;
      rc = pitch(&p, &pt, bytes / 1024, 1024, 4);
    } else if (kind == "async") {
      rc = async(&p, bytes, nullptr);
    } else if (kind == "pool") {
      rc = pool_alloc(&p, bytes, pool, nullptr);
    } else if (kind == "vmm") {
      CUmemAllocationProp prop{};
      prop.type = 1;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = 0;
      CUmemGenericAllocationHandle h = 0;
      rc = create(&h, bytes, &prop, 0);
      if (rc == CUDA_SUCCESS) handles.push_back(h);
    } else {
      Die("unknown kind");
    }
    if (rc != CUDA_SUCCESS) {
      failed = rc;
      break;
    }
    if (p != 0) ptrs.push_back(p);
    ++ok;
  }
  std::printf("allocated %d of %d first_error %d\n", ok, count, failed);
  MemInfo();
  std::fflush(stdout);
  if (hold_s > 0) sleep(static_cast<unsigned>(hold_s));
  for (CUdeviceptr p : ptrs) {
    CUresult rc = kind == "async"  ? free_async(p, nullptr)
                  : kind == "pool" ? free_async(p, nullptr)
                                   : free_(p);
    if (rc != CUDA_SUCCESS) std::printf("free failed %d\n", rc);
  }
  for (auto h : handles) release(h);
  if (pool != nullptr) pool_destroy(pool);
  if (kind == "async") {
    // A pool keeps what it reserved until trimmed (or, on a real driver, until a sync point).
    auto get_pool = Get<CUresult (*)(CUmemoryPool*, CUdevice)>("cuDeviceGetMemPool", 11020);
    auto trim = Get<CUresult (*)(CUmemoryPool, size_t)>("cuMemPoolTrimTo", 11020);
    CUmemoryPool dp = nullptr;
    if (get_pool(&dp, 0) != CUDA_SUCCESS || trim(dp, 0) != CUDA_SUCCESS) Die("trim");
  }
  std::printf("after free\n");
  MemInfo();
  return 0;
}

int Launch(double seconds, unsigned blocks, bool graph, bool idle) {
  std::printf("pid %d\n", static_cast<int>(getpid()));
  Context();
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
  using GraphFn = CUresult (*)(CUgraphExec, CUstream);
  auto launch = Get<LaunchFn>("cuLaunchKernel", 7000, 2);
  auto graph_launch = Get<GraphFn>("cuGraphLaunch", 10000);
  auto sync = Get<CUresult (*)(CUcontext)>("cuCtxSynchronize", 2000);
  auto make_graph =
      reinterpret_cast<CUgraphExec (*)(unsigned long long)>(dlsym(g_cuda, "baiFakeGraphExec"));
  CUgraphExec g = graph && make_graph != nullptr ? make_graph(blocks * 1000ULL) : nullptr;
  if (idle) {
    usleep(static_cast<useconds_t>(seconds * 1e6));
    std::printf("launches 0\n");
    return 0;
  }
  auto fn = reinterpret_cast<CUfunction>(&g_gpa);  // any non-null handle: the fake runs no code
  timespec t0{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long n = 0;
  for (;;) {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    double el = static_cast<double>(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
    if (el >= seconds) break;
    CUresult rc = g != nullptr ? graph_launch(g, nullptr)
                               : launch(fn, blocks, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
    if (rc != CUDA_SUCCESS) {
      std::printf("launch failed %d\n", rc);
      return 1;
    }
    ++n;
  }
  sync(nullptr);
  std::printf("launches %ld\n", n);
  return 0;
}

int Capture(unsigned kernels, std::string const& extra) {
  Context();
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
  auto launch = Get<LaunchFn>("cuLaunchKernel", 7000);
  auto stream_create = Get<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate", 2000);
  auto begin = Get<CUresult (*)(CUstream, int)>("cuStreamBeginCapture", 10010);
  auto end = Get<CUresult (*)(CUstream, CUgraph*)>("cuStreamEndCapture", 10000);
  auto instantiate = Get<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(
      "cuGraphInstantiateWithFlags", 11040);
  auto graph_launch = Get<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch", 10000);
  auto event_create = Get<CUresult (*)(CUevent*, unsigned)>("cuEventCreate", 2000);
  auto event_record = Get<CUresult (*)(CUevent, CUstream)>("cuEventRecord", 2000);
  auto event_query = Get<CUresult (*)(CUevent)>("cuEventQuery", 2000);
  auto sync = Get<CUresult (*)(CUstream)>("cuStreamSynchronize", 2000);
  auto fn = reinterpret_cast<CUfunction>(&g_gpa);
  CUstream s = nullptr;
  CUstream side = nullptr;
  if (stream_create(&s, 0) != CUDA_SUCCESS || stream_create(&side, 0) != CUDA_SUCCESS) {
    Die("cuStreamCreate");
  }
  CUevent before = nullptr;
  event_create(&before, 0);
  // Work in flight first, so that a limiter has events of its own to look at during the capture.
  for (int i = 0; i < 8; ++i) {
    launch(fn, 1000, 1, 1, 128, 1, 1, 0, s, nullptr, nullptr);
    launch(fn, 1000, 1, 1, 128, 1, 1, 0, side, nullptr, nullptr);
  }
  event_record(before, s);
  std::printf("begin %d\n", begin(s, 0));  // CU_STREAM_CAPTURE_MODE_GLOBAL
  CUresult failed = CUDA_SUCCESS;
  for (unsigned i = 0; i < kernels && failed == CUDA_SUCCESS; ++i) {
    failed = launch(fn, 1000, 1, 1, 128, 1, 1, 0, s, nullptr, nullptr);
  }
  std::printf("captured launches %d\n", failed);
  if (extra == "query") std::printf("query %d\n", event_query(before));
  if (extra == "side") {
    CUresult side_rc = CUDA_SUCCESS;
    for (int i = 0; i < 8 && side_rc == CUDA_SUCCESS; ++i) {
      side_rc = launch(fn, 1000, 1, 1, 128, 1, 1, 0, side, nullptr, nullptr);
    }
    std::printf("side launches %d\n", side_rc);
  }
  CUgraph g = nullptr;
  std::printf("end %d\n", end(s, &g));
  if (g == nullptr) return 0;
  CUgraphExec exec = nullptr;
  std::printf("instantiate %d\n", instantiate(&exec, g, 0));
  std::printf("graph launch %d\n", graph_launch(exec, s));
  std::printf("sync %d\n", sync(s));
  return 0;
}

int Fork(size_t bytes) {
  Context();
  auto alloc = Get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  CUdeviceptr p = 0;
  std::printf("parent alloc %d\n", alloc(&p, bytes));
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    CUdeviceptr q = 0;
    std::printf("child alloc %d\n", alloc(&q, bytes));
    MemInfo();
    std::fflush(stdout);
    std::exit(0);  // a clean exit gives the child's bytes back
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exit %d\nparent after\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  MemInfo();
  return 0;
}

int Processes() {
  g_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_nvml == nullptr) Die(dlerror());
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(g_nvml, "nvmlInit_v2"));
  auto handle = reinterpret_cast<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(
      dlsym(g_nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto procs = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*)>(
      dlsym(g_nvml, "nvmlDeviceGetComputeRunningProcesses_v3"));
  nvmlDevice_t dev = nullptr;
  if (init() != NVML_SUCCESS || handle(0, &dev) != NVML_SUCCESS) Die("nvml");
  nvmlProcessInfo_t infos[64];
  unsigned n = 64;
  nvmlReturn_t rc = procs(dev, &n, infos);
  std::printf("processes %d count %u\n", rc, n);
  for (unsigned i = 0; i < n; ++i)
    std::printf("pid %u used %llu\n", infos[i].pid, infos[i].usedGpuMemory);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) Die("usage: gpushim_probe resolve|dlsym|meminfo|alloc|launch|processes ...");
  std::string cmd = argv[1];
  if (cmd == "processes") return Processes();
  if (cmd == "next") {
    for (int i = 2; i < argc; ++i) {
      std::printf("%s -> %s\n", argv[i], Where(dlsym(RTLD_NEXT, argv[i])).c_str());
    }
    return 0;
  }
  if (cmd == "cudart" && argc >= 3) {
    void* rt = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (rt == nullptr) Die(dlerror());
    auto count = reinterpret_cast<int (*)(int*)>(dlsym(rt, "cudaGetDeviceCount"));
    if (count == nullptr) Die("no cudaGetDeviceCount");
    int n = -1;
    int const got = count(&n);  // before n is read: argument order is unspecified
    std::printf("cudaGetDeviceCount %d count %d\n", got, n);
    // libcudart's own resolver: where the pointer it hands out leads.
    using ByVersion = int (*)(char const*, void**, unsigned, unsigned long long, int*);
    if (auto entry = reinterpret_cast<ByVersion>(dlsym(rt, "cudaGetDriverEntryPointByVersion"))) {
      void* p = nullptr;
      int status = -1;
      int rc = entry("cuMemAlloc", &p, 12000, 0, &status);
      std::printf("cudaGetDriverEntryPointByVersion %d %d %s\n", rc, status, Where(p).c_str());
    }
    return 0;
  }
  if (cmd == "ledger" && argc >= 5 && argc % 2 == 1) {
    std::vector<bai::gpushim::LedgerDeviceSpec> devices;
    for (int i = 3; i + 1 < argc; i += 2)
      devices.push_back({argv[i], std::strtoull(argv[i + 1], nullptr, 10)});
    std::string err = bai::gpushim::Ledger::Create(argv[2], devices);
    if (!err.empty()) Die(err.c_str());
    return 0;
  }
  Boot();
  if (cmd == "resolve") {
    for (int i = 2; i + 2 < argc; i += 3) {
      void* p = nullptr;
      auto st = static_cast<CUdriverProcAddressQueryResult>(-1);
      CUresult rc =
          g_gpa(argv[i], &p, std::atoi(argv[i + 1]), std::strtoull(argv[i + 2], nullptr, 10), &st);
      std::printf("%s %s %s -> %d %d %s\n", argv[i], argv[i + 1], argv[i + 2], rc,
                  static_cast<int>(st), Where(p).c_str());
    }
    return 0;
  }
  if (cmd == "dlsym") {
    g_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    for (int i = 2; i < argc; ++i) {
      void* lib = std::strncmp(argv[i], "nvml", 4) == 0 ? g_nvml : g_cuda;
      std::printf("%s -> %s\n", argv[i], Where(dlsym(lib, argv[i])).c_str());
    }
    return 0;
  }
  if (cmd == "meminfo") {
    Context();
    MemInfo();
    return 0;
  }
  if (cmd == "alloc" && argc >= 5) {
    return Alloc(argv[2], std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]),
                 argc >= 6 ? std::atoi(argv[5]) : 0);
  }
  if (cmd == "contexts" && argc >= 4) return Contexts(std::atoi(argv[2]), std::atoi(argv[3]));
  if (cmd == "driver" && argc >= 4) {
    Context();
    auto take =
        reinterpret_cast<int (*)(int, unsigned long long)>(dlsym(g_cuda, "baiFakeDriverAlloc"));
    if (take == nullptr) Die("not the fake driver");
    std::printf("driver took %d\n", take(0, std::strtoull(argv[2], nullptr, 10)));
    std::fflush(stdout);
    sleep(static_cast<unsigned>(std::atoi(argv[3])));
    return 0;
  }
  if (cmd == "exec" && argc >= 4) {
    Context();
    auto alloc = Get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
    CUdeviceptr p = 0;
    if (alloc(&p, std::strtoull(argv[2], nullptr, 10)) != CUDA_SUCCESS) Die("alloc");
    std::fflush(stdout);
    argv[2] = argv[0];
    execv("/proc/self/exe", argv + 2);
    Die("exec");
  }
  if (cmd == "capture" && argc >= 3) {
    return Capture(static_cast<unsigned>(std::atoi(argv[2])), argc >= 4 ? argv[3] : "");
  }
  if (cmd == "fork" && argc >= 3) return Fork(std::strtoull(argv[2], nullptr, 10));
  if (cmd == "launch" && argc >= 4) {
    std::string mode = argc >= 5 ? argv[4] : "";
    return Launch(std::atof(argv[2]), static_cast<unsigned>(std::atoi(argv[3])), mode == "graph",
                  mode == "idle");
  }
  Die("bad arguments");
}
