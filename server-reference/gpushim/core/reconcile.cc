// SPDX-License-Identifier: Apache-2.0
#include "reconcile.h"

#include <utility>

namespace bai::gpushim {

DeviceUsage ReconcileDevice(std::string uuid, std::uint64_t limit, std::uint64_t ledger_used,
                            std::vector<GpuProcess> const& on_device,
                            std::set<unsigned> const& container, std::set<unsigned> const& shimmed,
                            ReconcilePolicy const& policy) {
  DeviceUsage u;
  u.uuid = std::move(uuid);
  u.limit = limit;
  u.ledger = ledger_used;
  std::set<unsigned> unshimmed;
  for (auto const& p : on_device) {
    if (container.count(p.pid) == 0) continue;  // another tenant's, or the host's
    u.nvml += p.bytes;
    if (p.bytes != 0 && shimmed.count(p.pid) == 0) unshimmed.insert(p.pid);
  }
  u.unshimmed.assign(unshimmed.begin(), unshimmed.end());
  u.drift = static_cast<std::int64_t>(u.nvml) - static_cast<std::int64_t>(u.ledger);
  if (policy.enforce && u.nvml > u.ledger && u.nvml - u.ledger > policy.slack) {
    u.untracked = u.nvml - u.ledger;
  }
  return u;
}

}  // namespace bai::gpushim
