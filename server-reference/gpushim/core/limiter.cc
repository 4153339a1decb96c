// SPDX-License-Identifier: Apache-2.0
#include "limiter.h"

#include <algorithm>

namespace bai::gpushim {

namespace {
constexpr std::int64_t kInitialEstimateNs = 1'000'000;  // 1 ms until launches are measured
constexpr size_t kMaxQueued = 1024;                     // the driver's own queue is about this deep
}  // namespace

SliceSchedule::SliceSchedule(std::bitset<kQuantaPerPeriod> quanta, std::uint64_t period_ns)
    : quanta_(quanta),
      period_ns_(std::max<std::uint64_t>(period_ns, kQuantaPerPeriod)),
      quantum_ns_(period_ns_ / kQuantaPerPeriod) {}

bool SliceSchedule::Open(std::uint64_t now) const {
  auto q = static_cast<size_t>((now % period_ns_) / quantum_ns_);
  return quanta_.test(std::min<size_t>(q, kQuantaPerPeriod - 1));
}

std::uint64_t SliceSchedule::NextOpen(std::uint64_t now) const {
  if (quanta_.none() || Open(now)) return now;
  std::uint64_t q_start = now - now % quantum_ns_;
  for (int step = 1; step <= kQuantaPerPeriod; ++step) {
    std::uint64_t t = q_start + static_cast<std::uint64_t>(step) * quantum_ns_;
    if (Open(t)) return t;
  }
  return now;  // unreachable: some quantum is owned
}

std::uint64_t SliceSchedule::OpenUntil(std::uint64_t now) const {
  std::uint64_t t = now - now % quantum_ns_;
  for (int step = 0; step < kQuantaPerPeriod && Open(t); ++step) t += quantum_ns_;
  return t;
}

bool AnyPeerActive(std::vector<std::uint64_t> const& peer_stamps, std::uint64_t now,
                   std::uint64_t window) {
  for (std::uint64_t stamp : peer_stamps) {
    // A stamp from the future (another clock, a bad write) counts as active: never steal on doubt.
    if (stamp + window >= now) return true;
  }
  return false;
}

Limiter::Limiter(SliceSchedule schedule, ComputeMode mode, LimiterOps* ops)
    : schedule_(schedule), mode_(mode), ops_(ops), estimate_ns_(kInitialEstimateNs) {}

Limiter::~Limiter() {
  for (auto& f : queue_) ops_->Release(f.event);
  if (last_completed_ != nullptr) ops_->Release(last_completed_);
}

void Limiter::Learn(InFlight const& done, InFlight const* previous) {
  if (previous == nullptr || !done.queued_behind) return;
  std::int64_t ns = ops_->Between(previous->event, done.event);
  if (ns <= 0) return;
  estimate_ns_ = learned_ ? (estimate_ns_ * 3 + ns) / 4 : ns;
  learned_ = true;
}

void Limiter::Reap() {
  while (!queue_.empty() && ops_->Done(queue_.front().event)) {
    InFlight done = queue_.front();
    queue_.pop_front();
    if (last_completed_ != nullptr) {
      InFlight prev{last_completed_, false};
      Learn(done, &prev);
      ops_->Release(last_completed_);
    }
    last_completed_ = done.event;
  }
}

void Limiter::WaitAndCharge(EventHandle e) {
  ops_->Wait(e);
  std::uint64_t done_at = ops_->Now();
  Reap();
  // Work that ran past the end of the stretch it was issued in is owed; count each instant once.
  std::uint64_t from = std::max(stretch_end_, charged_until_);
  if (stretch_end_ != 0 && done_at > from) {
    debt_ns_ += done_at - from;
    stats_.overshoot_ns += done_at - from;
    charged_until_ = done_at;
  }
}

void Limiter::BeforeLaunch(bool peers_idle) {
  ++stats_.launches;
  Reap();
  if (mode_ == ComputeMode::kSoft && peers_idle) {
    // Free to run, but with a short queue (a quarter period of work), so that a neighbour who
    // wakes up waits little; what is still queued then is owed from here.
    auto horizon = static_cast<std::int64_t>(schedule_.PeriodNs() / 4);
    while (!queue_.empty() && (queue_.size() >= kMaxQueued ||
                               static_cast<std::int64_t>(queue_.size()) * estimate_ns_ > horizon)) {
      ops_->Wait(queue_.front().event);
      Reap();
    }
    stretch_end_ = ops_->Now();
    return;
  }
  std::uint64_t not_before = 0;
  for (;;) {
    std::uint64_t now = ops_->Now();
    if (now < not_before) {
      ops_->SleepUntil(not_before);
      continue;
    }
    if (!schedule_.Open(now)) {
      if (!queue_.empty()) {
        WaitAndCharge(queue_.back().event);
        continue;
      }
      std::uint64_t next = schedule_.NextOpen(now);
      std::uint64_t stretch = schedule_.OpenUntil(next) - next;
      // Repay work that ran past the last stretch by starting this one late.
      std::uint64_t repay = std::min(debt_ns_, stretch);
      debt_ns_ -= repay;
      not_before = next + repay;
      ++stats_.waits_for_slice;
      ops_->SleepUntil(not_before);
      continue;
    }
    std::uint64_t end = schedule_.OpenUntil(now);
    auto remaining = static_cast<std::int64_t>(end - now);
    if (queue_.empty()) {
      // Nothing queued: go, even if this launch will run past the stretch (a kernel cannot be
      // split); what runs past is measured and repaid.
      stretch_end_ = end;
      return;
    }
    auto queued = static_cast<std::int64_t>(queue_.size()) * estimate_ns_;
    // Until one launch has been timed, the estimate is a guess: keep at most two queued.
    size_t const max_queued = learned_ ? kMaxQueued : 2;
    if (queue_.size() < max_queued && queued + estimate_ns_ <= remaining) {
      stretch_end_ = end;
      return;
    }
    ++stats_.waits_for_queue;
    WaitAndCharge(queue_.front().event);
  }
}

void Limiter::AfterLaunch(void* stream) {
  EventHandle e = ops_->RecordAfter(stream);
  if (e == nullptr) return;
  bool behind = !queue_.empty();
  queue_.push_back(InFlight{e, behind});
}

}  // namespace bai::gpushim
