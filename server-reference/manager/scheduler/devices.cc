// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/scheduler/devices.h"

#include <algorithm>
#include <numeric>

namespace bai::manager::scheduler {
namespace {

using protocol::Int128;

Int128 Quanta(Decimal d) { return d.units() / kShareQuantumUnits; }
Decimal FromQuanta(Int128 q) { return *Decimal::FromUnits(q * kShareQuantumUnits); }

Decimal Amount(ResourceSlots const& slots, char const* name) {
  auto it = slots.find(name);
  return it == slots.end() ? Decimal() : it->second;
}

}  // namespace

bool OnShareQuantum(Decimal amount) {
  return !amount.is_unlimited() && amount.units() % kShareQuantumUnits == 0;
}

void Occupy(std::vector<Device>& devices, std::vector<DeviceAllocation> const& allocations) {
  for (auto const& a : allocations) {
    for (auto& d : devices) {
      if (d.uuid != a.uuid) continue;
      if (a.slot == kCudaDeviceSlot) {
        d.used = d.shares;
      } else if (auto sum = d.used.Add(a.amount)) {
        d.used = *sum;
      }
    }
  }
}

std::optional<std::vector<DeviceAllocation>> PlaceDevices(std::vector<Device> const& devices,
                                                          ResourceSlots const& requested,
                                                          DevicePolicy policy) {
  Decimal whole = Amount(requested, kCudaDeviceSlot);
  Decimal shares = Amount(requested, kCudaSharesSlot);
  std::vector<DeviceAllocation> out;
  if (whole.is_zero() && shares.is_zero()) return out;
  if (whole.is_unlimited() || shares.is_unlimited() || whole.is_negative() ||
      shares.is_negative() || whole.units() % Decimal::kUnitsPerOne != 0 ||
      !OnShareQuantum(shares)) {
    return std::nullopt;
  }
  // Free room per device, in 0.01 steps; a device given whole is taken out.
  std::vector<Int128> free(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    free[i] = std::max<Int128>(0, Quanta(devices[i].shares) - Quanta(devices[i].used));
  }
  Int128 whole_left = whole.units() / Decimal::kUnitsPerOne;
  for (size_t i = 0; i < devices.size() && whole_left > 0; ++i) {
    if (!devices[i].used.is_zero() || devices[i].shares.is_zero()) continue;
    out.push_back({kCudaDeviceSlot, devices[i].uuid, Decimal::FromInteger(1)});
    free[i] = 0;
    --whole_left;
  }
  if (whole_left > 0) return std::nullopt;

  Int128 want = Quanta(shares);
  if (want == 0) return out;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].fractional) free[i] = 0;
  }
  auto take = [&](size_t i, Int128 q) {
    out.push_back({kCudaSharesSlot, devices[i].uuid, FromQuanta(q)});
    free[i] -= q;
  };
  if (policy == DevicePolicy::kFill) {
    for (size_t i = 0; i < devices.size() && want > 0; ++i) {
      Int128 q = std::min(free[i], want);
      if (q > 0) take(i, q);
      want -= q;
    }
    return want == 0 ? std::optional(out) : std::nullopt;
  }
  // Evenly: one device when one device could hold it, the fullest that fits.
  Int128 largest = 0;
  for (auto const& d : devices) {
    if (d.fractional) largest = std::max(largest, Quanta(d.shares));
  }
  if (largest == 0) return std::nullopt;
  if (want <= largest) {
    std::optional<size_t> best;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (free[i] >= want && (!best || free[i] < free[*best])) best = i;
    }
    if (!best) return std::nullopt;
    take(*best, want);
    return out;
  }
  // Larger than a device: equal parts over n devices, the most-free first, n as small as
  // possible.
  std::vector<size_t> order(devices.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return free[a] > free[b]; });
  for (size_t n = static_cast<size_t>((want + largest - 1) / largest); n <= order.size(); ++n) {
    Int128 base = want / static_cast<Int128>(n);
    Int128 extra = want % static_cast<Int128>(n);  // the first `extra` parts get one step more
    bool fits = true;
    for (size_t k = 0; k < n && fits; ++k) {
      fits = free[order[k]] >= base + (static_cast<Int128>(k) < extra ? 1 : 0);
    }
    if (!fits) continue;
    for (size_t k = 0; k < n; ++k) take(order[k], base + (static_cast<Int128>(k) < extra ? 1 : 0));
    return out;
  }
  return std::nullopt;
}

}  // namespace bai::manager::scheduler
