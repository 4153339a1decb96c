// SPDX-License-Identifier: Apache-2.0
// The GPU that the fake libcuda.so.1 and the fake libnvidia-ml.so.1 describe together: devices
// modelled on the H100 the device tool lends (shared/reference/gpu-facts, copied into
// docs/gpu-facts.md), their memory, and a busy-time model. Every process that loads either fake
// maps the same state file (BAI_FAKE_GPU_STATE), so memory and GPU time are shared the way a real
// GPU shares them: one process's allocation lowers another's free memory, and launches from all
// processes run first-come first-served on one timeline per device, each costing
// blocks × ns_per_block (a graph: its declared cost) of GPU time.
//
// A process's row is owned through a record lock on the state file, as the ledger's slots are:
// the kernel drops it when the process dies, and the lock is seen from every PID namespace, so
// a process in a container and the agent outside agree on who is alive. A real NVML names
// processes by host PID; the fake learns a row's host PID when a reader in an outer namespace
// (the agent) looks at it, and reports that from then on, in every namespace.
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
#include <mutex>

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
  std::atomic<std::int32_t> pid;       // as the process itself sees it
  std::atomic<std::int32_t> host_pid;  // as an outer namespace sees it (0: not yet looked)
  std::atomic<std::uint64_t> start;    // the process's start time (tells a reused PID apart)
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

/// The state file, kept open for the rows' record locks (-1: a private state).
inline int& StateFd() {
  static int fd = -1;
  return fd;
}

/// The shared state (created on first use); never null.
inline State* Attach() {
  static State* state = [] {
    char const* path = std::getenv("BAI_FAKE_GPU_STATE");
    void* map = MAP_FAILED;
    if (path != nullptr && *path != '\0') {
      int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd >= 0) {
        fchmod(fd, 0666);  // processes of other users (a container's) share it
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
        if (map != MAP_FAILED) {
          StateFd() = fd;
        } else {
          close(fd);
        }
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

// Row i is owned through a write lock on byte sizeof(State) + i of the state file.
inline bool RowLock(int index, int cmd, short type, pid_t* owner = nullptr) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(sizeof(State)) + index;
  fl.l_len = 1;
  if (fcntl(StateFd(), cmd, &fl) != 0) return false;
  if (owner != nullptr) *owner = fl.l_type == F_UNLCK ? -1 : fl.l_pid;
  return true;
}

inline int RowIndex(State* s, Proc const* p) { return static_cast<int>(p - s->procs); }

/// This process's start time in clock ticks since boot (/proc/self/stat field 22).
inline std::uint64_t MyStart() {
  static int for_pid = 0;
  static std::uint64_t start = 0;
  if (for_pid == getpid()) return start;
  char buf[1024] = {};
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  start = 0;
  if (n > 0) {
    char const* p = std::strrchr(buf, ')');  // the command may hold spaces
    for (int field = 2; p != nullptr && field < 22; ++field) p = std::strchr(p + 1, ' ');
    if (p != nullptr) start = std::strtoull(p + 1, nullptr, 10);
  }
  for_pid = getpid();
  return start;
}

/// Whether the row is this process's own.
inline bool Mine(Proc const& p) { return p.pid.load() == getpid() && p.start.load() == MyStart(); }

/// The PID of the process owning the row as the caller's namespace sees it: 0 when the owner is
/// alive but in no namespace the caller sees, -1 when no process owns the row.
inline int Owner(State* s, Proc const& p) {
  std::int32_t pid = p.pid.load();
  if (pid <= 0) return -1;
  if (StateFd() < 0) return pid == getpid() ? pid : -1;  // private: only this process
  pid_t owner = -1;
  if (!RowLock(RowIndex(s, &p), F_GETLK, F_WRLCK, &owner)) return -1;
  // F_GETLK does not report the caller's own locks (held through the other fake's descriptor).
  if (owner < 0 && Mine(p)) return pid;
  return owner;
}

inline bool Alive(State* s, Proc const& p) { return Owner(s, p) >= 0; }

/// The PID NVML reports for a live row: its host PID. A reader that sees the owner under another
/// PID than the owner's own is in an outer namespace and records what it sees.
inline unsigned ReportedPid(State* s, Proc& p) {
  int owner = Owner(s, p);
  std::int32_t own = p.pid.load();
  if (owner > 0 && owner != own) p.host_pid.store(owner);
  std::int32_t host = p.host_pid.load();
  return static_cast<unsigned>(host != 0 ? host : owner > 0 ? owner : own);
}

/// This process's row (claimed on first use; a dead process's row is taken over). One per
/// process image: a forked child claims its own, and a row this PID had before an exec (its lock
/// went with the exec's close-on-exec descriptor, its memory with the old image) starts over.
inline Proc* MyProc() {
  static std::mutex mu;
  static std::atomic<Proc*> row{nullptr};
  static std::atomic<int> row_pid{0};  // whose `row` is (stored after it)
  int const me = getpid();
  if (row_pid.load(std::memory_order_acquire) == me) return row.load(std::memory_order_relaxed);
  std::lock_guard lock(mu);
  if (row_pid.load() == me) return row.load();
  State* s = Attach();
  Proc* found = nullptr;
  for (auto& p : s->procs) {
    bool claim = Mine(p);  // this PID's, from before an exec
    if (!claim && StateFd() >= 0) {
      // A row nobody holds (free, or its holder died).
      claim = Owner(s, p) < 0;
    } else if (!claim) {
      claim = p.pid.load() == 0;
    }
    if (!claim || (StateFd() >= 0 && !RowLock(RowIndex(s, &p), F_SETLK, F_WRLCK))) continue;
    for (int d = 0; d < kMaxDevices; ++d) {
      p.used[d].store(0);
      p.busy[d].store(0);
    }
    p.host_pid.store(0);
    p.start.store(MyStart());
    p.pid.store(me);
    found = &p;
    break;
  }
  Proc* mine = found != nullptr ? found : &s->procs[0];
  row.store(mine, std::memory_order_relaxed);
  row_pid.store(me, std::memory_order_release);
  return mine;
}

/// Device memory in use: what live processes hold (the driver frees a process's memory when it
/// exits, however it exits).
inline std::uint64_t DeviceUsed(State* s, int device) {
  std::uint64_t sum = 0;
  for (auto& p : s->procs) {
    if (Alive(s, p)) sum += p.used[device].load();
  }
  return sum;
}

}  // namespace bai::fakegpu
