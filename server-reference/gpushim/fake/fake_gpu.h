// SPDX-License-Identifier: Apache-2.0
// The GPU that the fake libcuda.so.1 and the fake libnvidia-ml.so.1 describe together: devices
// modelled on the H100 the device tool lends (shared/reference/gpu-facts, copied into
// docs/gpu-facts.md), their memory, and a busy-time model. Every process that loads either fake
// maps the same state file (BAI_FAKE_GPU_STATE), so memory and GPU time are shared the way a real
// GPU shares them: one process's allocation lowers another's free memory, and launches from all
// processes run first-come first-served on one timeline per device, each costing
// blocks × ns_per_block (a graph: its declared cost) of GPU time.
//
// Without BAI_FAKE_GPU_STATE each library keeps a private state (one process, no NVML view of
// CUDA's usage). BAI_FAKE_GPU_COUNT (1-8, default 1) and BAI_FAKE_GPU_NS_PER_BLOCK (default
// 1000) apply when the state is created.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bai::fakegpu {

inline constexpr int kMaxDevices = 8;
inline constexpr int kMaxProcs = 128;
inline constexpr std::uint32_t kMagic = 0x46474255;  // "UBGF"

// Facts of the lent H100 (driver 580.159.04).
inline constexpr std::uint64_t kCudaTotalMem = 85017493504ULL;  // cuDeviceTotalMem_v2
inline constexpr std::uint64_t kNvmlTotalMem = 85520809984ULL;  // 81559 MiB
inline constexpr std::uint64_t kNvmlReserved = 503316480ULL;    // 480 MiB
inline constexpr std::uint64_t kContextBytes = 552402944ULL;    // free drop after a primary ctx
inline constexpr std::uint64_t kVmmGranularity = 2097152ULL;    // 2 MiB
inline constexpr int kSmCount = 132;
inline constexpr int kDriverVersion = 13000;

struct Device {
  char uuid[48];  // "GPU-b58cbfff-a7f3-2498-9d0d-4f988f98127e" with the last digits = index
  std::atomic<std::uint64_t> busy_until;  // the timeline: when the last queued launch ends, ns
  std::atomic<std::uint64_t> busy_total;  // GPU time executed or queued, ns
};

struct Proc {
  std::atomic<std::int32_t> pid;
  std::int32_t pad;
  std::atomic<std::uint64_t> used[kMaxDevices];
  std::atomic<std::uint64_t> busy[kMaxDevices];  // GPU time of this process's launches, ns
};

struct State {
  std::atomic<std::uint32_t> magic;
  std::uint32_t device_count;
  std::uint64_t ns_per_block;
  Device devices[kMaxDevices];
  Proc procs[kMaxProcs];
};

inline std::uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

inline void SleepUntilNs(std::uint64_t t) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t / 1000000000ULL);
  ts.tv_nsec = static_cast<long>(t % 1000000000ULL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

inline void InitState(State* s) {
  int count = 1;
  if (char const* c = std::getenv("BAI_FAKE_GPU_COUNT")) count = std::atoi(c);
  if (count < 1) count = 1;
  if (count > kMaxDevices) count = kMaxDevices;
  std::uint64_t ns_per_block = 1000;
  if (char const* n = std::getenv("BAI_FAKE_GPU_NS_PER_BLOCK")) {
    ns_per_block = std::strtoull(n, nullptr, 10);
  }
  s->device_count = static_cast<std::uint32_t>(count);
  s->ns_per_block = ns_per_block;
  for (int i = 0; i < count; ++i) {
    std::snprintf(s->devices[i].uuid, sizeof s->devices[i].uuid,
                  "GPU-b58cbfff-a7f3-2498-9d0d-4f988f9812%02d", i);
  }
  s->magic.store(kMagic);
}

/// The shared state (created on first use); never null.
inline State* Attach() {
  static State* state = [] {
    char const* path = std::getenv("BAI_FAKE_GPU_STATE");
    void* map = MAP_FAILED;
    if (path != nullptr && *path != '\0') {
      int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd >= 0) {
        flock(fd, LOCK_EX);
        struct stat st {};
        fstat(fd, &st);
        if (st.st_size < static_cast<off_t>(sizeof(State))) {
          if (ftruncate(fd, sizeof(State)) != 0) std::perror("fake gpu state");
        }
        map = mmap(nullptr, sizeof(State), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED && static_cast<State*>(map)->magic.load() != kMagic) {
          InitState(static_cast<State*>(map));
        }
        flock(fd, LOCK_UN);
        close(fd);
      }
    }
    if (map == MAP_FAILED) {
      map = mmap(nullptr, sizeof(State), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      InitState(static_cast<State*>(map));
    }
    return static_cast<State*>(map);
  }();
  return state;
}

inline bool Alive(std::int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/// This process's row (claimed on first use; a dead process's row is taken over).
inline Proc* MyProc() {
  thread_local int cached_pid = 0;
  thread_local Proc* cached = nullptr;
  int const me = getpid();
  if (cached != nullptr && cached_pid == me) return cached;
  State* s = Attach();
  Proc* found = nullptr;
  for (auto& p : s->procs) {
    if (p.pid.load() == me) found = &p;
  }
  for (int pass = 0; found == nullptr && pass < 2; ++pass) {
    for (auto& p : s->procs) {
      std::int32_t cur = p.pid.load();
      bool free_row = cur == 0 || (pass == 1 && !Alive(cur));
      if (free_row && p.pid.compare_exchange_strong(cur, me)) {
        for (int d = 0; d < kMaxDevices; ++d) {
          p.used[d].store(0);
          p.busy[d].store(0);
        }
        found = &p;
        break;
      }
    }
  }
  cached_pid = me;
  cached = found != nullptr ? found : &s->procs[0];
  return cached;
}

/// Device memory in use: what live processes hold (the driver frees a process's memory when it
/// exits, however it exits).
inline std::uint64_t DeviceUsed(State* s, int device) {
  std::uint64_t sum = 0;
  for (auto& p : s->procs) {
    if (Alive(p.pid.load())) sum += p.used[device].load();
  }
  return sum;
}

}  // namespace bai::fakegpu
