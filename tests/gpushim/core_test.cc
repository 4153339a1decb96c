// SPDX-License-Identifier: Apache-2.0
// Tier 1 of the shim's tests (gpu-shim.md §6.5): the pure core. The limits file, the ledger's
// arithmetic and crash safety (with real processes and a real file), and the limiter driven by
// a simulated GPU on a virtual clock.
#include "server-reference/gpushim/core/config.h"
#include "server-reference/gpushim/core/ledger.h"
#include "server-reference/gpushim/core/limiter.h"
#include "server-reference/gpushim/core/reconcile.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace bai::gpushim {
namespace {

using testing_util::TempDir;

// ---- config -------------------------------------------------------------------------------------
TEST(GpuShimConfig, ParsesAFullLimitsFile) {
  auto r = ParseConfig(
      "# written by bai-agent\n"
      "version=1\nmode=timeslice\ncompute=soft\nledger=/opt/kernel/gpushim/ledger\n"
      "context_bytes=536870912\nmanaged=refuse\nperiod_ms=50\n"
      "device.0.uuid=GPU-b58cbfff-a7f3-2498-9d0d-4f988f981200\ndevice.0.memory=8589934592\n"
      "device.0.quanta=0-299, 500-599\n"
      "device.1.uuid=GPU-b58cbfff-a7f3-2498-9d0d-4f988f981201\n"
      "SLOTS={\"cuda.shares\": \"0.4\"}\n");
  ASSERT_EQ(r.error, "");
  Config const& c = r.config;
  EXPECT_EQ(c.mode, SharingMode::kTimeslice);
  EXPECT_EQ(c.compute, ComputeMode::kSoft);
  EXPECT_EQ(c.managed, ManagedPolicy::kRefuse);
  EXPECT_EQ(c.ledger_path, "/opt/kernel/gpushim/ledger");
  EXPECT_EQ(c.context_bytes, 536870912u);
  EXPECT_EQ(c.period_ms, 50u);
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].memory_bytes, 8589934592u);
  EXPECT_EQ(c.devices[0].quanta.count(), 400u);
  EXPECT_TRUE(c.devices[0].ComputeLimited());
  EXPECT_EQ(FormatQuanta(c.devices[0].quanta), "0-299,500-599");
  // A device without quanta owns the whole period: no compute limit.
  EXPECT_EQ(c.devices[1].quanta.count(), 1000u);
  EXPECT_FALSE(c.devices[1].ComputeLimited());
}

TEST(GpuShimConfig, RefusesMalformedLinesNamingThem) {
  EXPECT_EQ(ParseConfig("mode=timeslice\nledger=/x\nmode=fast\n").error,
            "line 3: mode must be off, timeslice or mps");
  EXPECT_EQ(ParseConfig("ledger=/x\nno equals sign\n").error, "line 2: expected key=value");
  EXPECT_EQ(ParseConfig("device.0.quanta=995-1005\n").error,
            "line 1: quanta must be ranges within 0-999");
  EXPECT_EQ(ParseConfig("device.16.memory=1\n").error, "line 1: device index out of range 0-15");
  EXPECT_EQ(ParseConfig("device.0.memory=12GB\n").error, "line 1: memory is not a byte count");
  EXPECT_EQ(ParseConfig("version=2\n").error,
            "line 1: unsupported version (this shim reads version 1)");
  EXPECT_EQ(ParseConfig("mode=timeslice\n").error, "ledger= is required when mode is not off");
  EXPECT_EQ(ParseConfig("").error, "");  // no file content: no limits
}

TEST(GpuShimConfig, QuantaRoundTrip) {
  std::bitset<kQuantaPerPeriod> q;
  ASSERT_TRUE(ParseQuanta("0,2-4,999", &q));
  EXPECT_EQ(q.count(), 5u);
  EXPECT_EQ(FormatQuanta(q), "0,2-4,999");
  EXPECT_FALSE(ParseQuanta("4-2", &q));
  EXPECT_FALSE(ParseQuanta("a-b", &q));
  EXPECT_FALSE(ParseQuanta("-1", &q));
}

// ---- ledger -------------------------------------------------------------------------------------
constexpr std::uint64_t kGiB = 1ULL << 30;

std::unique_ptr<Ledger> OpenOrDie(std::string const& path) {
  std::string err;
  auto l = Ledger::Open(path, &err);
  EXPECT_NE(l, nullptr) << err;
  return l;
}

TEST(GpuShimLedger, ReserveStopsAtTheCapAndReleaseGivesBack) {
  TempDir dir;
  std::string path = dir.path() + "/ledger";
  ASSERT_EQ(Ledger::Create(path, {{"GPU-a", 4 * kGiB}, {"GPU-b", 0}}), "");
  auto l = OpenOrDie(path);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->DeviceCount(), 2);
  EXPECT_EQ(l->FindDevice("GPU-b"), 1);
  EXPECT_EQ(l->FindDevice("GPU-z"), -1);
  EXPECT_FALSE(l->Reserve(0, 1));  // not attached: nothing is charged to nobody
  ASSERT_TRUE(l->Attach());
  EXPECT_TRUE(l->Reserve(0, 3 * kGiB));
  EXPECT_FALSE(l->Reserve(0, kGiB + 1));
  EXPECT_TRUE(l->Reserve(0, kGiB));
  EXPECT_EQ(l->Used(0), 4 * kGiB);
  EXPECT_FALSE(l->Reserve(0, 1));
  EXPECT_FALSE(l->Reserve(0, ~0ULL));  // no wrap-around
  l->Release(0, kGiB);
  EXPECT_EQ(l->Used(0), 3 * kGiB);
  // Releasing more than this process holds cannot drive the counters below zero.
  l->Release(0, 100 * kGiB);
  EXPECT_EQ(l->Used(0), 0u);
  EXPECT_EQ(l->HeldByMe(0), 0u);
  // Without a cap, usage is still counted.
  EXPECT_TRUE(l->Reserve(1, 500 * kGiB));
  EXPECT_EQ(l->Used(1), 500 * kGiB);
  l->Detach();
  EXPECT_EQ(l->Used(1), 0u);
}

TEST(GpuShimLedger, RefusesFilesThatAreNotLedgers) {
  TempDir dir;
  std::string err;
  EXPECT_EQ(Ledger::Open(dir.path() + "/missing", &err), nullptr);
  EXPECT_NE(err.find("cannot open ledger"), std::string::npos) << err;
  testing_util::WriteFileBytes(dir.path() + "/junk", "not a ledger");
  EXPECT_EQ(Ledger::Open(dir.path() + "/junk", &err), nullptr);
  EXPECT_NE(err.find("wrong size"), std::string::npos) << err;
}

/// Forks a child that attaches, reserves `bytes` on device 0, reports, then waits to be killed.
pid_t HoldInChild(std::string const& path, std::uint64_t bytes, int* ready_fd) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string err;
    auto l = Ledger::Open(path, &err);
    char ok = l && l->Attach() && l->Reserve(0, bytes) ? 'y' : 'n';
    (void)!write(fds[1], &ok, 1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  *ready_fd = fds[0];
  return pid;
}

TEST(GpuShimLedger, ProcessesShareTheCapAndAKilledHolderGivesItsBytesBack) {
  TempDir dir;
  std::string path = dir.path() + "/ledger";
  ASSERT_EQ(Ledger::Create(path, {{"GPU-a", 4 * kGiB}}), "");
  int fd1 = -1;
  int fd2 = -1;
  pid_t a = HoldInChild(path, 3 * kGiB, &fd1);
  char c = 0;
  ASSERT_EQ(read(fd1, &c, 1), 1);
  EXPECT_EQ(c, 'y');
  pid_t b = HoldInChild(path, 2 * kGiB, &fd2);  // does not fit beside a's 3 GiB
  ASSERT_EQ(read(fd2, &c, 1), 1);
  EXPECT_EQ(c, 'n');

  auto me = OpenOrDie(path);
  ASSERT_TRUE(me->Attach());
  EXPECT_EQ(me->Used(0), 3 * kGiB);
  EXPECT_FALSE(me->Reserve(0, 2 * kGiB));
  // The agent's view: the live slots and their owners (here, our children).
  std::map<int, std::uint64_t> owners;
  for (auto const& s : me->Slots()) owners[s.owner_pid] = s.used[0];
  EXPECT_EQ(owners[a], 3 * kGiB);

  kill(a, SIGKILL);  // no exit handler runs: the kernel drops its lock
  waitpid(a, nullptr, 0);
  // The next reservation that would not fit sweeps the dead slot first.
  EXPECT_TRUE(me->Reserve(0, 2 * kGiB));
  EXPECT_EQ(me->Used(0), 2 * kGiB);
  kill(b, SIGKILL);
  waitpid(b, nullptr, 0);
  close(fd1);
  close(fd2);
}

// Threads of one process (a training job's allocator threads) and the agent's reconciler racing
// on one ledger: the count never passes the cap and comes back to zero. Run under TSan by
// `make check-tsan` (gpu-shim.md §6.5 tier 6).
TEST(GpuShimLedger, ConcurrentReservationsNeverPassTheCap) {
  TempDir dir;
  std::string path = dir.path() + "/ledger";
  constexpr std::uint64_t kMiB = 1ULL << 20;
  constexpr std::uint64_t kCap = 64 * kMiB;
  ASSERT_EQ(Ledger::Create(path, {{"GPU-a", kCap}}), "");
  auto l = OpenOrDie(path);
  ASSERT_TRUE(l->Attach());
  std::atomic<bool> over{false};
  std::atomic<bool> done{false};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 gen(t);
      std::vector<std::uint64_t> held;
      for (int i = 0; i < 20000; ++i) {
        if (held.empty() || gen() % 2 == 0) {
          std::uint64_t bytes = (gen() % 8 + 1) * kMiB;
          if (l->Reserve(0, bytes)) {
            held.push_back(bytes);
          } else {
            ++refused;
          }
        } else {
          l->Release(0, held.back());
          held.pop_back();
        }
        if (l->Used(0) > kCap) over = true;
      }
      for (auto bytes : held) l->Release(0, bytes);
    });
  }
  std::thread agent([&] {
    for (std::uint64_t i = 0; !done; ++i) {
      l->SetUntracked(0, (i % 2) * 16 * kMiB);
      for (auto const& slot : l->Slots()) l->SetHostPid(slot.index, slot.owner_pid);
    }
    l->SetUntracked(0, 0);
  });
  for (auto& t : threads) t.join();
  done = true;
  agent.join();
  EXPECT_FALSE(over);
  EXPECT_GT(refused.load(), 0) << "the cap was never reached: the test proves nothing";
  EXPECT_EQ(l->Used(0), 0u);
  EXPECT_EQ(l->HeldByMe(0), 0u);
}

TEST(GpuShimLedger, CreateReplacesAtomicallyAndKeepsOwnership) {
  TempDir dir;
  std::string path = dir.path() + "/ledger";
  ASSERT_EQ(Ledger::Create(path, {{"GPU-a", kGiB}}), "");
  ASSERT_EQ(Ledger::Create(path, {{"GPU-a", 2 * kGiB}}), "");
  auto l = OpenOrDie(path);
  EXPECT_EQ(l->Limit(0), 2 * kGiB);
  EXPECT_NE(Ledger::Create(dir.path() + "/no/such/dir/ledger", {}), "");
}

TEST(GpuShimLedger, UntrackedBytesCountAgainstTheCapAndHostPidsAreKept) {
  TempDir dir;
  std::string path = dir.path() + "/ledger";
  ASSERT_EQ(Ledger::Create(path, {{"GPU-a", 4 * kGiB}, {"GPU-b", 0}}), "");
  auto l = OpenOrDie(path);
  ASSERT_TRUE(l->Attach());
  ASSERT_TRUE(l->Reserve(0, kGiB));
  // The agent found 2 GiB the shim never saw: 1 GiB is left, not 3.
  l->SetUntracked(0, 2 * kGiB);
  EXPECT_EQ(l->Used(0), kGiB);
  EXPECT_EQ(l->Untracked(0), 2 * kGiB);
  EXPECT_EQ(l->Charged(0), 3 * kGiB);
  EXPECT_FALSE(l->Reserve(0, kGiB + 1));
  EXPECT_TRUE(l->Reserve(0, kGiB));
  EXPECT_FALSE(l->Reserve(0, 1));
  // More untracked than the cap: nothing more fits, and nothing wraps around.
  l->SetUntracked(0, 8 * kGiB);
  EXPECT_FALSE(l->Reserve(0, 1));
  l->SetUntracked(0, 0);
  EXPECT_TRUE(l->Reserve(0, 2 * kGiB));
  // An uncapped device counts untracked bytes too but refuses nothing.
  l->SetUntracked(1, 100 * kGiB);
  EXPECT_TRUE(l->Reserve(1, 100 * kGiB));
  EXPECT_EQ(l->Charged(1), 200 * kGiB);
  // The agent writes the host PID of each slot's owner; a new owner of the slot clears it.
  auto slots = l->Slots();
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0].host_pid, 0);
  l->SetHostPid(slots[0].index, 424242);
  EXPECT_EQ(l->Slots()[0].host_pid, 424242);
  l->Detach();
  ASSERT_TRUE(l->Attach());
  EXPECT_EQ(l->Slots()[0].host_pid, 0);
  l->SetHostPid(-1, 1);  // out of range: ignored
  l->SetHostPid(kLedgerSlots, 1);
  l->SetUntracked(7, 1);
}

// ---- reconciliation
// -------------------------------------------------------------------------------
TEST(GpuShimReconcile, CountsOnlyTheContainersProcessesAndNamesThoseWithoutTheShim) {
  std::vector<GpuProcess> on_device = {
      {100, 3 * kGiB},  // ours, shimmed
      {101, kGiB},      // ours, not shimmed (a static binary)
      {200, 9 * kGiB},  // another tenant's
      {102, 0},         // ours, a context being torn down
  };
  auto u = ReconcileDevice("GPU-a", 8 * kGiB, 3 * kGiB, on_device, {100, 101, 102}, {100}, {});
  EXPECT_EQ(u.uuid, "GPU-a");
  EXPECT_EQ(u.limit, 8 * kGiB);
  EXPECT_EQ(u.ledger, 3 * kGiB);
  EXPECT_EQ(u.nvml, 4 * kGiB);
  EXPECT_EQ(u.drift, static_cast<std::int64_t>(kGiB));
  EXPECT_EQ(u.untracked, kGiB);
  EXPECT_EQ(u.unshimmed, std::vector<unsigned>{101});
}

TEST(GpuShimReconcile, ChargesOnlyWhatPassesTheSlackAndOnlyWhenEnforcing) {
  ReconcilePolicy policy;
  policy.slack = 64ull << 20;
  std::vector<GpuProcess> procs = {{7, kGiB + (64ull << 20)}};
  // Within the slack (rounding, the context estimate): reported, not charged.
  auto u = ReconcileDevice("GPU-a", 0, kGiB, procs, {7}, {7}, policy);
  EXPECT_EQ(u.drift, 64 << 20);
  EXPECT_EQ(u.untracked, 0u);
  procs[0].bytes += 1;
  EXPECT_EQ(ReconcileDevice("GPU-a", 0, kGiB, procs, {7}, {7}, policy).untracked,
            (64ull << 20) + 1);
  policy.enforce = false;
  u = ReconcileDevice("GPU-a", 0, kGiB, procs, {7}, {7}, policy);
  EXPECT_EQ(u.untracked, 0u);
  EXPECT_GT(u.drift, 0);
  // The ledger ahead of NVML (memory reserved, not yet allocated by the driver): negative drift,
  // nothing charged.
  policy.enforce = true;
  u = ReconcileDevice("GPU-a", 0, 2 * kGiB, procs, {7}, {7}, policy);
  EXPECT_LT(u.drift, 0);
  EXPECT_EQ(u.untracked, 0u);
  // No processes of ours at all.
  u = ReconcileDevice("GPU-a", 0, 0, procs, {}, {}, policy);
  EXPECT_EQ(u.nvml, 0u);
  EXPECT_TRUE(u.unshimmed.empty());
}

// ---- limiter
// --------------------------------------------------------------------------------------
TEST(GpuShimLimiter, ScheduleFindsOwnedStretchesAcrossThePeriodEnd) {
  std::bitset<kQuantaPerPeriod> q;
  ASSERT_TRUE(ParseQuanta("900-999,0-99", &q));
  SliceSchedule s(q, 100'000'000);  // 0.1 ms quanta
  EXPECT_TRUE(s.Open(5'000'000));
  EXPECT_FALSE(s.Open(10'000'000));
  EXPECT_EQ(s.NextOpen(10'000'000), 90'000'000u);
  EXPECT_EQ(s.NextOpen(95'000'000), 95'000'000u);
  // 900-999 continues into the next period's 0-99: one 20 ms stretch.
  EXPECT_EQ(s.OpenUntil(95'000'000), 110'000'000u);
  EXPECT_DOUBLE_EQ(s.Share(), 0.2);
}

/// A GPU and clock in one thread: launches run first-come first-served on one timeline, sleeping
/// advances the clock, events complete when the timeline passes them.
class SimGpu final : public LimiterOps {
 public:
  std::uint64_t now = 0;
  std::uint64_t busy_until = 0;
  std::uint64_t launch_cost_ns = 3'000;  // host time per launch call
  struct Interval {
    std::uint64_t start, end;
  };
  std::vector<Interval> work;

  void Launch(std::uint64_t cost) {
    std::uint64_t start = std::max(now, busy_until);
    busy_until = start + cost;
    work.push_back({start, busy_until});
    now += launch_cost_ns;
  }
  /// GPU time inside [from, to).
  std::uint64_t BusyBetween(std::uint64_t from, std::uint64_t to) const {
    std::uint64_t sum = 0;
    for (auto const& w : work) {
      std::uint64_t a = std::max(w.start, from);
      std::uint64_t b = std::min(w.end, to);
      if (b > a) sum += b - a;
    }
    return sum;
  }
  /// GPU time outside the schedule's quanta (sampled per 10 µs).
  std::uint64_t BusyOutside(SliceSchedule const& s) const {
    std::uint64_t sum = 0;
    for (auto const& w : work) {
      for (std::uint64_t t = w.start; t < w.end; t += 10'000) {
        if (!s.Open(t)) sum += std::min<std::uint64_t>(10'000, w.end - t);
      }
    }
    return sum;
  }

  std::uint64_t Now() override { return now; }
  void SleepUntil(std::uint64_t t) override { now = std::max(now, t); }
  EventHandle RecordAfter(void*) override { return new std::uint64_t(std::max(now, busy_until)); }
  bool Done(EventHandle e) override { return now >= *static_cast<std::uint64_t*>(e); }
  void Wait(EventHandle e) override { now = std::max(now, *static_cast<std::uint64_t*>(e)); }
  std::int64_t Between(EventHandle a, EventHandle b) override {
    return static_cast<std::int64_t>(*static_cast<std::uint64_t*>(b)) -
           static_cast<std::int64_t>(*static_cast<std::uint64_t*>(a));
  }
  void Release(EventHandle e) override { delete static_cast<std::uint64_t*>(e); }
};

struct RunResult {
  double share;
  double outside_fraction;
  std::int64_t estimate;
  LimiterStats stats;
};

RunResult Saturate(char const* quanta, std::uint64_t kernel_ns, std::uint64_t seconds,
                   ComputeMode mode = ComputeMode::kHard, bool peers_idle = false) {
  std::bitset<kQuantaPerPeriod> q;
  EXPECT_TRUE(ParseQuanta(quanta, &q));
  SliceSchedule schedule(q, 100'000'000);
  SimGpu gpu;
  gpu.now = 1'000'000'007;  // not aligned to a period
  std::uint64_t const start = gpu.now;
  std::uint64_t const end = start + seconds * 1'000'000'000ULL;
  RunResult r{};
  {
    Limiter limiter(schedule, mode, &gpu);
    while (gpu.now < end) {
      limiter.BeforeLaunch(peers_idle);
      gpu.Launch(kernel_ns);
      limiter.AfterLaunch(nullptr);
    }
    r.estimate = limiter.EstimateNs();
    r.stats = limiter.Stats();
  }
  // Skip the first second (the estimate is still learning).
  std::uint64_t from = start + 1'000'000'000ULL;
  r.share = static_cast<double>(gpu.BusyBetween(from, end)) / static_cast<double>(end - from);
  std::uint64_t total = gpu.BusyBetween(0, ~0ULL);
  r.outside_fraction = static_cast<double>(gpu.BusyOutside(schedule)) / static_cast<double>(total);
  return r;
}

TEST(GpuShimLimiter, HoldsASaturatingLoopToItsShare) {
  // 1 ms kernels (about an 8192² bf16 GEMM on an H100), 300 quanta of 1000.
  RunResult r = Saturate("0-299", 1'000'000, 10);
  EXPECT_NEAR(r.share, 0.30, 0.02);
  EXPECT_LT(r.outside_fraction, 0.02);
  EXPECT_NEAR(static_cast<double>(r.estimate), 1e6, 1e5);
  EXPECT_GT(r.stats.waits_for_slice, 80u);  // about one wait per period
}

TEST(GpuShimLimiter, TinyKernelsQueueDeepAndStillStopAtTheStretchEnd) {
  RunResult r = Saturate("0-99", 5'000, 5);
  EXPECT_NEAR(r.share, 0.10, 0.01);
  EXPECT_LT(r.outside_fraction, 0.01);
  EXPECT_LT(r.estimate, 20'000);  // learned from consecutive events
}

TEST(GpuShimLimiter, KernelsLongerThanTheStretchArePaidBackLater) {
  // 45 ms kernels in 30 ms stretches: each overshoots, and the next stretch starts late.
  RunResult r = Saturate("0-299", 45'000'000, 20);
  EXPECT_NEAR(r.share, 0.30, 0.05);
  EXPECT_GT(r.stats.overshoot_ns, 0u);
}

TEST(GpuShimLimiter, SplitStretchesAddUp) {
  RunResult r = Saturate("0-99,500-599,800-899", 2'000'000, 10);
  EXPECT_NEAR(r.share, 0.30, 0.02);
  EXPECT_LT(r.outside_fraction, 0.03);
}

TEST(GpuShimLimiter, SoftModeRunsFreelyWhileNoOneElseIsActive) {
  RunResult soft_alone = Saturate("0-299", 1'000'000, 5, ComputeMode::kSoft, true);
  EXPECT_GT(soft_alone.share, 0.95);
  RunResult soft_contended = Saturate("0-299", 1'000'000, 5, ComputeMode::kSoft, false);
  EXPECT_NEAR(soft_contended.share, 0.30, 0.02);
  RunResult hard_alone = Saturate("0-299", 1'000'000, 5, ComputeMode::kHard, true);
  EXPECT_NEAR(hard_alone.share, 0.30, 0.02);  // hard ignores idle neighbours
}

}  // namespace
}  // namespace bai::gpushim
