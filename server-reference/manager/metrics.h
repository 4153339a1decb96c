// SPDX-License-Identifier: Apache-2.0
#pragma once
// The manager's metrics (`GET /metrics`, Prometheus text): requests by route and status with
// latency histograms, scheduling passes, and gauges read from the database at each scrape
// (sessions by status, the queue by reason, agents by status, slots per resource group). The
// list with meanings is in docs/operations.md.

#include "bai/protocol/cluster_wire.h"

#include "server-reference/common/db/database.h"
#include "server-reference/common/http/http.h"
#include "server-reference/common/metrics/metrics.h"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace bai::manager {

/// Declares the families, and the collector that reads `db` at each scrape.
void DeclareManagerMetrics(server::metrics::Registry& metrics, server::Database& db);

/// One answered request: `route` is its pattern ("" when none matched).
void ObserveRequest(server::metrics::Registry& metrics, server::HttpRequest const& request,
                    std::string const& route, int status, std::chrono::nanoseconds took);

/// What `/metrics` and `GET /manager/status` both show of the cluster, from the database.
struct ClusterCounts {
  std::map<std::string, std::int64_t> sessions;  ///< by status
  std::map<std::string, std::int64_t> agents;    ///< by status
  std::vector<protocol::QueuedCount> queue;      ///< PENDING by group and QueueReason
};
StatusOr<ClusterCounts> ReadClusterCounts(server::Database& db);

/// A queued session's reason as a label: the kind of the scheduler's status_info
/// ("capacity", "keypair-slots", "image", …; "new" before a pass has seen it), never the ids
/// and figures that would give every session a label of its own.
std::string QueueReason(std::string const& status_info);

}  // namespace bai::manager
