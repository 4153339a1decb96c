// SPDX-License-Identifier: Apache-2.0
#pragma once
// The agent's metrics (`GET /metrics` on `bai-agent --metrics-listen`, Prometheus text): its
// links to managers, its kernels, the node's load, and per GPU the memory NVML reports, the
// shares its kernels hold and how many kernels use it. What a scrape shows is a pure function
// of what it read (SetAgentGauges, unit-tested); main.cc reads. The list with meanings is in
// docs/operations.md.

#include "bai/protocol/resource.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/backend.h"
#include "server-reference/agent/nvml.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/common/metrics/metrics.h"
#include "server-reference/common/wire/agent_messages.h"
#include "server-reference/common/wire/device_allocation.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bai::agent {

/// What one scrape read.
struct AgentScrape {
  std::string agent_id;
  std::vector<Agent::LinkState> links;
  std::vector<server::agent_protocol::KernelStatus> kernels;
  std::map<std::string, server::agent_protocol::KernelUsage> usage;      ///< by session id
  std::map<std::string, std::vector<server::DeviceAllocation>> devices;  ///< by session id
  protocol::ResourceSlots slots;                                         ///< what the agent offers
  std::optional<server::agent_protocol::NodeStats> node;
  /// The GPUs as NVML reports them now; `gpus_read` false when it could not be asked (the
  /// devices found at start are then listed without memory figures).
  std::vector<GpuDevice> gpus;
  bool gpus_read = true;
  protocol::Decimal shares_per_gpu = protocol::Decimal::FromInteger(1);
};

void DeclareAgentMetrics(server::metrics::Registry& metrics);
/// Sets every gauge from `scrape` (a collector's work).
void SetAgentGauges(server::metrics::Registry& metrics, AgentScrape const& scrape);

/// The shell: declares the families and a collector that reads the agent, its backend, the
/// node and NVML (`nvml_library`, asked only when `base.gpus` lists GPUs) at each scrape.
/// `base` gives what does not change (agent id, slots, GPUs found at start, shares per GPU);
/// the agent and backend must outlive the registry's scrapes.
void CollectAgentMetrics(server::metrics::Registry& metrics, Agent const& agent,
                         KernelBackend& backend, AgentScrape base, std::string nvml_library);

/// `GET /metrics` (and `GET /health`) on HOST:PORT, for Prometheus; nothing else is served.
/// The metrics name every running session, so `/metrics` asks for `Authorization: Bearer TOKEN`
/// when `token` is given (Prometheus' `authorization.credentials_file`), and an address other
/// hosts can reach is refused without one (kInvalidArgument saying so). `/health` stays open.
StatusOr<std::unique_ptr<server::HttpServer>> ServeMetrics(std::string const& listen,
                                                           server::metrics::Registry& metrics,
                                                           std::string token = {});

/// Whether a listener's host is reachable only from this machine (127.0.0.0/8, ::1, localhost).
bool LoopbackHost(std::string const& host);

}  // namespace bai::agent
