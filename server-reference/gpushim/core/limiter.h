// SPDX-License-Identifier: Apache-2.0
// The compute limiter: holds one process's work on one GPU to the container's time quanta.
//
// A GPU's time is cut into periods (100 ms by default) of 1000 quanta; the agent gives each
// container on the GPU its own quanta (a 0.30 share of the GPU owns 300 of them), disjoint from its
// neighbours', so containers need no shared state to stay out of each other's way. The limiter
// lets a launch through only inside the container's quanta and keeps the work queued on the GPU
// short enough to finish by the end of the stretch: it records an event after each launch,
// estimates a launch's GPU time from consecutive events, and waits for the oldest when the queue
// would run past the stretch. Work that still runs past it (one kernel longer than the rest of the
// stretch) is measured when the queue drains and repaid by starting the next stretch that much
// later, so over a few periods the container's GPU time converges on its share. Kernel launches,
// cooperative launches and CUDA-graph launches all pass here.
//
// `hard` never lets work out of the quanta; `soft` (work-conserving) lets it run freely while no
// other container on the GPU has been active lately (the shell tells it, read at most once per
// period).
//
// The logic is pure over `LimiterOps` (clock, sleep, events), so tests drive it with a simulated
// GPU and clock; the shim's shell implements the ops with the driver and CLOCK_MONOTONIC.
#pragma once

#include "config.h"

#include <bitset>
#include <cstdint>
#include <deque>
#include <vector>

namespace bai::gpushim {

/// Which instants belong to a container: pure arithmetic over the period and its quanta.
class SliceSchedule {
 public:
  SliceSchedule(std::bitset<kQuantaPerPeriod> quanta, std::uint64_t period_ns);
  bool Open(std::uint64_t now) const;
  /// `now` when open, else the start of the next owned quantum.
  std::uint64_t NextOpen(std::uint64_t now) const;
  /// When open: the end of the stretch of owned quanta that contains `now`.
  std::uint64_t OpenUntil(std::uint64_t now) const;
  std::uint64_t QuantumNs() const { return quantum_ns_; }
  std::uint64_t PeriodNs() const { return period_ns_; }
  double Share() const { return static_cast<double>(quanta_.count()) / kQuantaPerPeriod; }

 private:
  std::bitset<kQuantaPerPeriod> quanta_;
  std::uint64_t period_ns_;
  std::uint64_t quantum_ns_;
};

/// Whether any neighbour on the GPU wanted it lately: stamps are the last instants each
/// container (this one excluded) launched work; `window` is how recent counts as active.
bool AnyPeerActive(std::vector<std::uint64_t> const& peer_stamps, std::uint64_t now,
                   std::uint64_t window);

using EventHandle = void*;

class LimiterOps {
 public:
  virtual ~LimiterOps() = default;
  virtual std::uint64_t Now() = 0;  ///< ns, monotonic, host-wide
  virtual void SleepUntil(std::uint64_t t) = 0;
  /// Records a timing event after the work just launched on `stream`; nullptr when that failed.
  virtual EventHandle RecordAfter(void* stream) = 0;
  virtual bool Done(EventHandle e) = 0;
  virtual void Wait(EventHandle e) = 0;
  /// GPU time between two completed events, ns; negative when unknown.
  virtual std::int64_t Between(EventHandle earlier, EventHandle later) = 0;
  virtual void Release(EventHandle e) = 0;
};

struct LimiterStats {
  std::uint64_t launches = 0;
  std::uint64_t waits_for_slice = 0;  ///< launches that slept until the next quantum
  std::uint64_t waits_for_queue = 0;  ///< launches that waited for queued work
  std::uint64_t overshoot_ns = 0;     ///< work measured running past the stretch, total
};

class Limiter {
 public:
  Limiter(SliceSchedule schedule, ComputeMode mode, LimiterOps* ops);
  ~Limiter();
  Limiter(Limiter const&) = delete;
  Limiter& operator=(Limiter const&) = delete;

  /// Before a launch: returns when the launch may go (sleeping or waiting as needed).
  /// `peers_idle`: soft mode may run outside the quanta.
  void BeforeLaunch(bool peers_idle = false);
  /// After a successful launch on `stream`.
  void AfterLaunch(void* stream);

  std::int64_t EstimateNs() const { return estimate_ns_; }
  LimiterStats const& Stats() const { return stats_; }

 private:
  struct InFlight {
    EventHandle event;
    bool queued_behind;  ///< launched while the previous one was still running
  };
  void Reap();
  void Learn(InFlight const& done, InFlight const* previous);
  void WaitAndCharge(EventHandle e);

  SliceSchedule schedule_;
  ComputeMode mode_;
  LimiterOps* ops_;
  std::deque<InFlight> queue_;
  EventHandle last_completed_ = nullptr;
  std::int64_t estimate_ns_;
  bool learned_ = false;           ///< estimate_ns_ comes from a measured launch
  std::uint64_t stretch_end_ = 0;  ///< end of the stretch the queued work was issued in
  std::uint64_t debt_ns_ = 0;
  std::uint64_t charged_until_ = 0;  ///< overshoot up to here is already owed
  LimiterStats stats_;
};

}  // namespace bai::gpushim
