// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/agent_metrics.h"

#include "bai/protocol/session_status.h"

#include "server-reference/agent/node_stats.h"
#include "server-reference/common/http/listen_address.h"

#include <openssl/crypto.h>

#include <mutex>

namespace bai::agent {

namespace m = server::metrics;

void DeclareAgentMetrics(m::Registry& metrics) {
  m::DeclareHttpMetrics(metrics);
  metrics.Gauge("bai_agent_manager_link_up",
                "1 while the agent is registered with this manager, else 0.");
  metrics.Gauge("bai_agent_manager_link_primary",
                "1 for the link kernel states and heartbeats go through.");
  metrics.Gauge("bai_agent_kernels", "Kernels on this agent by status.");
  metrics.Gauge("bai_agent_slots", "Resource slots this agent offers.");
  metrics.Gauge("bai_agent_node_cpu_percent", "The node's CPU busy, percent of all cores.");
  metrics.Gauge("bai_agent_node_memory_bytes", "The node's memory (kind = used, total).");
  metrics.Gauge("bai_kernel_cpu_seconds", "CPU time a running kernel has used.");
  metrics.Gauge("bai_kernel_memory_bytes",
                "A running kernel's memory (kind = current, peak, limit).");
  metrics.Gauge("bai_kernel_gpu_memory_bytes", "GPU memory a running kernel holds.");
  metrics.Gauge("bai_gpu_memory_bytes", "A GPU's memory as NVML reports it (kind = total, used).");
  metrics.Gauge("bai_gpu_utilization_percent",
                "Percent of NVML's last sample period a kernel ran on the GPU.");
  metrics.Gauge("bai_gpu_shares",
                "cuda.shares of a GPU: capacity, and allocated to kernels (a whole-device "
                "kernel holds all of it).");
  metrics.Gauge("bai_gpu_kernels", "Kernels holding some of a GPU.");
  metrics.Gauge("bai_gpu_metrics_nvml_up", "1 when this scrape could ask NVML, else 0.");
}

void SetAgentGauges(m::Registry& r, AgentScrape const& s) {
  for (auto const& link : s.links) {
    r.Set("bai_agent_manager_link_up", {{"manager", link.manager}}, link.registered ? 1 : 0);
    r.Set("bai_agent_manager_link_primary", {{"manager", link.manager}}, link.primary ? 1 : 0);
  }
  std::map<std::string, double> by_status;
  for (auto status : {protocol::KernelStatus::kPreparing, protocol::KernelStatus::kRunning,
                      protocol::KernelStatus::kTerminated, protocol::KernelStatus::kError}) {
    by_status[std::string(protocol::ToString(status))] = 0;
  }
  for (auto const& k : s.kernels) by_status[std::string(protocol::ToString(k.status))] += 1;
  for (auto const& [status, n] : by_status) r.Set("bai_agent_kernels", {{"status", status}}, n);
  for (auto const& [slot, amount] : s.slots) {
    r.Set("bai_agent_slots", {{"slot", slot}}, amount.ToDouble());
  }
  if (s.node) {
    r.Set("bai_agent_node_cpu_percent", {}, s.node->cpu_pct);
    r.Set("bai_agent_node_memory_bytes", {{"kind", "used"}}, static_cast<double>(s.node->mem_used));
    r.Set("bai_agent_node_memory_bytes", {{"kind", "total"}},
          static_cast<double>(s.node->mem_total));
  }
  for (auto const& [session, u] : s.usage) {
    m::Labels who = {{"session", session}};
    r.Set("bai_kernel_cpu_seconds", who, static_cast<double>(u.cpu_used_ms) / 1000.0);
    r.Set("bai_kernel_memory_bytes", {{"session", session}, {"kind", "current"}},
          static_cast<double>(u.mem_current));
    r.Set("bai_kernel_memory_bytes", {{"session", session}, {"kind", "peak"}},
          static_cast<double>(u.mem_peak));
    if (u.mem_limit > 0) {
      r.Set("bai_kernel_memory_bytes", {{"session", session}, {"kind", "limit"}},
            static_cast<double>(u.mem_limit));
    }
    if (u.gpu_mem) r.Set("bai_kernel_gpu_memory_bytes", who, static_cast<double>(*u.gpu_mem));
  }
  // Per GPU: shares held (a whole device counts as all of its shares) and kernels on it.
  std::map<std::string, double> held;  // for display: doubles are exact enough
  std::map<std::string, double> kernels;
  for (auto const& [session, allocations] : s.devices) {
    std::map<std::string, bool> on;
    for (auto const& a : allocations) {
      held[a.uuid] += a.slot == "cuda.device" ? s.shares_per_gpu.ToDouble() * a.amount.ToDouble()
                                              : a.amount.ToDouble();
      on[a.uuid] = true;
    }
    for (auto const& [uuid, yes] : on) kernels[uuid] += yes ? 1 : 0;
  }
  for (auto const& g : s.gpus) {
    m::Labels id = {{"gpu", g.uuid}, {"index", std::to_string(g.index)}};
    auto with = [&id](char const* kind) {
      m::Labels l = id;
      l.emplace_back("kind", kind);
      return l;
    };
    if (s.gpus_read) {
      r.Set("bai_gpu_memory_bytes", with("total"), static_cast<double>(g.memory_bytes));
      r.Set("bai_gpu_memory_bytes", with("used"), static_cast<double>(g.memory_used_bytes));
      if (g.utilization >= 0) r.Set("bai_gpu_utilization_percent", id, g.utilization);
    }
    r.Set("bai_gpu_shares", with("capacity"), s.shares_per_gpu.ToDouble());
    auto h = held.find(g.uuid);
    r.Set("bai_gpu_shares", with("allocated"), h == held.end() ? 0 : h->second);
    auto k = kernels.find(g.uuid);
    r.Set("bai_gpu_kernels", id, k == kernels.end() ? 0 : k->second);
  }
  if (!s.gpus.empty()) r.Set("bai_gpu_metrics_nvml_up", {}, s.gpus_read ? 1 : 0);
}

void CollectAgentMetrics(m::Registry& metrics, Agent const& agent, KernelBackend& backend,
                         AgentScrape base, std::string nvml_library) {
  DeclareAgentMetrics(metrics);
  struct Readers {
    std::mutex mu;
    NodeSampler node;
    std::unique_ptr<Nvml> nvml;  // opened at the first scrape that needs it, again after a failure
  };
  auto readers = std::make_shared<Readers>();
  metrics.OnCollect([&agent, &backend, base = std::move(base), library = std::move(nvml_library),
                     readers](m::Registry& r) {
    std::lock_guard<std::mutex> lock(readers->mu);
    AgentScrape s = base;
    s.links = agent.Links();
    s.kernels = backend.Snapshot();
    s.usage = backend.Usage();
    s.devices = backend.Devices();
    s.node = readers->node.Sample();
    if (!base.gpus.empty()) {
      if (!readers->nvml) {
        auto opened = Nvml::Open(library);
        if (opened.ok()) readers->nvml = std::move(*opened);
      }
      auto now =
          readers->nvml
              ? readers->nvml->Devices()
              : StatusOr<std::vector<GpuDevice>>(Status(StatusCode::kUnavailable, "NVML not open"));
      if (now.ok() && now->size() == base.gpus.size()) {
        s.gpus = *now;
      } else {
        s.gpus_read = false;
        readers->nvml.reset();
      }
    }
    SetAgentGauges(r, s);
  });
}

bool LoopbackHost(std::string const& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

StatusOr<std::unique_ptr<server::HttpServer>> ServeMetrics(std::string const& listen,
                                                           m::Registry& metrics,
                                                           std::string token) {
  auto address = server::ParseListenAddress(listen);
  if (!address.ok()) {
    return Status(StatusCode::kInvalidArgument, "--metrics-listen: " + address.status().message());
  }
  if (token.empty() && !LoopbackHost(address->host)) {
    return Status(StatusCode::kInvalidArgument,
                  "--metrics-listen " + listen +
                      " can be reached from other hosts, and the metrics name every running "
                      "session: give --metrics-token-file FILE (Prometheus sends it with "
                      "authorization.credentials_file), or listen on 127.0.0.1");
  }
  server::HttpServerOptions http;
  http.address = address->host;
  http.port = address->port;
  http.threads = 1;
  http.on_response = [&metrics](server::HttpRequest const& request, int status,
                                std::chrono::nanoseconds took) {
    bool known = request.path == "/metrics" || request.path == "/health";
    m::ObserveHttpRequest(metrics, request.method, known ? request.path : "", status,
                          std::chrono::duration<double>(took).count());
  };
  return server::HttpServer::Start(http, [&metrics, token = std::move(token)](
                                             std::shared_ptr<server::Exchange> e) {
    auto const& q = e->request();
    server::HttpResponse r;
    auto bearer = q.Header("authorization");
    std::string expected = "Bearer " + token;
    bool authorized =
        token.empty() || (bearer && bearer->size() == expected.size() &&
                          CRYPTO_memcmp(bearer->data(), expected.data(), expected.size()) == 0);
    if (q.method != "GET" || (q.path != "/metrics" && q.path != "/health")) {
      r = server::HttpResponse::Json(404, R"({"title":"only GET /metrics and /health here"})");
    } else if (q.path == "/metrics" && !authorized) {
      r = server::HttpResponse::Json(
          401, R"({"title":"/metrics needs Authorization: Bearer and the agent's metrics token"})");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
    } else if (q.path == "/health") {
      r = server::HttpResponse::Json(200, R"({"status":"ok"})");
    } else {
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = metrics.Render();
    }
    e->Respond(std::move(r));
  });
}

}  // namespace bai::agent
