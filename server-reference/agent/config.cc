// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/config.h"

#include "bai/protocol/resource.h"

#include "server-reference/agent/gpus.h"
#include "server-reference/agent/network_plan.h"
#include "server-reference/agent/nvml.h"
#include "server-reference/agent/oci_config.h"
#include "server-reference/agent/scratch.h"
#include "server-reference/common/wire/agent_protocol.h"

#include <CLI/CLI.hpp>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace bai::agent {
namespace {

// The manager's IPv4 addresses when it is not on this host's loopback: bridge-mode kernels are
// kept from them (its control ports are no business of a kernel's).
std::vector<std::uint32_t> ManagerAddresses(std::string const& url) {
  std::string host = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  host = host.substr(0, host.find_first_of("/"));
  if (!host.empty() && host.front() == '[') return {};  // IPv6: kernels have no IPv6 route
  host = host.substr(0, host.find(':'));
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  std::vector<std::uint32_t> out;
  if (host.empty() || getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    auto address = ntohl(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
    if ((address >> 24) != 127 && std::find(out.begin(), out.end(), address) == out.end()) {
      out.push_back(address);
    }
  }
  freeaddrinfo(found);
  return out;
}

Status Usage(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// A size flag ("64m") in bytes.
StatusOr<std::int64_t> Bytes(std::string const& text) {
  auto size = protocol::ParseBinarySize(text);
  if (!size.ok()) return size.status();
  return static_cast<std::int64_t>(size->units() / protocol::Decimal::kUnitsPerOne);
}

// GPU sharing and reconciliation from their flags; the GPUs NVML finds, their devices and slots.
Status DecideGpus(AgentFlags const& f, AgentConfig& c) {
  GpuSharing& gpu = c.runc.gpu_sharing;
  auto shares = protocol::Decimal::Parse(f.gpu_shares);
  if (!shares.ok()) return Usage("--gpu-shares: " + shares.status().message());
  auto context = Bytes(f.gpu_context);
  if (!context.ok()) return Usage("--gpu-context-mem: " + context.status().message());
  auto slack = Bytes(f.reconcile_slack);
  if (!slack.ok()) return Usage("--gpu-reconcile-slack: " + slack.status().message());
  c.runc.nvml_library = f.nvml_library;
  c.runc.gpu_reconcile.enforce = f.reconcile == "enforce";
  c.runc.gpu_reconcile.slack = static_cast<std::uint64_t>(*slack);
  c.runc.gpu_reconcile_interval =
      std::chrono::milliseconds(f.reconcile == "off" ? 0 : f.reconcile_ms);
  gpu.shares_per_gpu = *shares;
  gpu.context_bytes = static_cast<std::uint64_t>(*context);
  if (auto s = ValidateGpuSharing(gpu); !s.ok()) return Usage(s.message());
  c.agent.device_policy = gpu.policy;
  if (auto gpus = DiscoverNvidiaGpus(f.nvml_library); gpus.ok()) {
    c.runc.gpus = *gpus;
    c.agent.devices = GpuDeviceInfos(*gpus, gpu);
    c.runc.gpu_files = FindGpuFiles(f.nvml_library, f.shim_path);
    c.notes.push_back(std::to_string(gpus->size()) + " NVIDIA GPU(s) found through NVML" +
                      (gpus->empty() ? "" : ", shared by " + gpu.mode));
    if (gpu.mode != "off" && c.runc.gpu_files.shim.empty() && !gpus->empty()) {
      c.warnings.push_back(f.shim_path +
                           " not found: kernels with GPU fractions will fail to start");
    }
  } else if (gpus.status().code() != StatusCode::kNotFound) {
    c.warnings.push_back("NVML: " + gpus.status().message() + " (no GPUs offered)");
  }
  return Status();
}

// What the agent offers: --slots, else this machine less --mem-reserve; GPUs found are offered
// unless --slots names GPU slots itself.
Status DecideSlots(AgentFlags const& f, AgentConfig& c) {
  auto reserve = Bytes(f.mem_reserve);
  if (!reserve.ok()) return Usage("--mem-reserve: " + reserve.status().message());
  GpuSharing const& gpu = c.runc.gpu_sharing;
  if (f.slots.empty()) {
    c.agent.slots = DiscoverSlots(*reserve);
    AddGpuSlots(c.agent.slots, c.runc.gpus.size(), gpu);
    return Status();
  }
  if (auto s = protocol::ParseSlotAssignment(f.slots, c.agent.slots); !s.ok()) {
    return Usage("--slots: " + s.message());
  }
  if (!c.agent.slots.count("cuda.device") && !c.agent.slots.count("cuda.shares")) {
    AddGpuSlots(c.agent.slots, c.runc.gpus.size(), gpu);
  }
  return Status();
}

// The runc backend's network, sandbox exceptions and scratch.
Status DecideRunc(AgentFlags const& f, AgentConfig& c) {
  RuncOptions& runc = c.runc;
  if (f.network_pool == "off") {
    runc.bridge.reset();
    if (runc.network_default == kNetworkBridge) {
      return Usage("--network bridge needs a --network-pool");
    }
  } else {
    auto pool = ParseIpv4Net(f.network_pool);
    if (!pool.ok()) return Usage("--network-pool: " + pool.status().message());
    runc.bridge->pool = *pool;
    runc.bridge->nat = f.network_nat == "on";
    for (auto const& url : ManagerUrls(c.agent.manager_url)) {
      for (auto address : ManagerAddresses(url)) {
        auto& blocked = runc.bridge->blocked;
        if (std::find(blocked.begin(), blocked.end(), address) == blocked.end()) {
          blocked.push_back(address);
        }
      }
    }
    if (auto s = ValidateBridgeConfig(*runc.bridge); !s.ok()) {
      return Usage("--network-bridge: " + s.message());
    }
  }
  for (auto const& text : f.sandbox_exceptions) {
    auto e = ParseSandboxException(text);
    if (!e.ok()) return Usage(e.status().message());
    runc.sandbox_exceptions[e->first].insert(e->second.begin(), e->second.end());
  }
  auto backing = ResolveScratchBacking(f.scratch);
  if (!backing.ok()) return Usage(backing.status().message());
  runc.scratch = *backing;
  for (auto [flag, value] :
       {std::pair{"--home-size", runc.home_size}, std::pair{"--tmp-size", runc.tmp_size}}) {
    if (auto bytes = ScratchSizeBytes(flag, value); !bytes.ok())
      return Usage(bytes.status().message());
  }
  runc.agent_id = c.agent.agent_id;
  runc.state_dir = c.state_dir + "/" + c.agent.agent_id;
  return Status();
}

}  // namespace

#ifndef BAI_BIN_TO_LIBDIR
#define BAI_BIN_TO_LIBDIR "../lib"
#endif

void AddAgentFlags(CLI::App& app, AgentFlags& f, std::string const& self_dir) {
  f.runc.runner_path = self_dir + "/bai-kernel-runner";
  f.runc.hook_path = self_dir + "/bai-agent";
  // Installed: LIBDIR/bai beside BINDIR (cmake/BaiInstall.cmake); in a build tree: build/lib.
  f.shim_path = self_dir + "/" BAI_BIN_TO_LIBDIR "/bai/libbai-gpushim.so";
  if (::access(f.shim_path.c_str(), R_OK) != 0)
    f.shim_path = self_dir + "/../lib/libbai-gpushim.so";
  // /etc/bai/agent.toml (docs/operations.md): the options by their long names; flags win.
  app.set_config("--config", "", "TOML file of these options by their long names");
  app.allow_config_extras(false);  // a misspelt key is an error, not ignored
  app.add_option("--manager", f.agent.manager_url,
                 "Manager URL (http://HOST:PORT), or several separated by commas: the agent "
                 "links to each and goes on through the others when one dies")
      ->envname("BAI_MANAGER");
  // Backend.AI's default: "i-" and the host's name.
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') {
    f.agent.agent_id = std::string("i-") + host;
  }
  app.add_option("--id", f.agent.agent_id,
                 "Agent id, unique in the cluster (default: i-HOSTNAME, as Backend.AI's)");
  app.add_option("--cluster-secret-file", f.secret_file, "The manager's cluster-secret file")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--backend", f.backend, "Kernel backend (runc needs root)")
      ->check(CLI::IsMember({"runc", "dummy"}));
  app.add_option("--state-dir", f.state_dir,
                 "runc: kernels, images and runc state (one directory per agent instance)");
  app.add_option("--runner", f.runc.runner_path, "runc: the bai-kernel-runner binary");
  app.add_option("--runc", f.runc.runc, "runc: the runc binary");
  app.add_option("--uid", f.runc.uid, "runc: uid of the kernel's work user");
  app.add_option("--gid", f.runc.gid, "runc: gid of the kernel's work user");
  app.add_option("--home-size", f.runc.home_size, "runc: size of a kernel's /home/work");
  app.add_option("--tmp-size", f.runc.tmp_size, "runc: size of a kernel's /tmp");
  app.add_option("--scratch", f.scratch,
                 "runc: where /home/work and /tmp live: disk (an ext4 image per kernel of "
                 "home+tmp size on this agent's disk, loop-mounted: the size is the quota), "
                 "tmpfs (in memory, counted against the session's memory limit) or auto (disk "
                 "where loop devices and mkfs.ext4 are there, else tmpfs)")
      ->check(CLI::IsMember({"auto", "disk", "tmpfs"}));
  app.add_option("--nvml-library", f.nvml_library, "NVML library to discover NVIDIA GPUs with");
  app.add_option("--gpu-shares", f.gpu_shares,
                 "cuda.shares one GPU is worth (e.g. 5: 1 fGPU = 0.2 GPU; steps of 0.01)");
  app.add_option("--gpu-sharing", f.runc.gpu_sharing.mode,
                 "How fractions share a GPU: timeslice (the shim's time quanta), mps (NVIDIA MPS "
                 "thread percentage), off (whole GPUs only)");
  app.add_option("--gpu-compute", f.runc.gpu_sharing.compute,
                 "timeslice: hard (never past the share) or soft (idle time is used)");
  app.add_option("--gpu-allocation", f.runc.gpu_sharing.policy,
                 "Fractions over several GPUs: evenly (one GPU when it fits, else equal parts) "
                 "or fill (GPUs in order)");
  app.add_option("--gpu-context-mem", f.gpu_context,
                 "Charged to a container's GPU memory per CUDA context (e.g. 512m)");
  app.add_option("--gpu-period", f.runc.gpu_sharing.period_ms,
                 "timeslice: the period of time quanta, ms");
  app.add_option(
      "--gpu-shim", f.shim_path,
      "libbai-gpushim.so (default: LIBDIR/bai where installed, else ../lib beside bai-agent)");
  app.add_option("--gpu-reconcile", f.reconcile,
                 "Compare GPU ledgers with NVML's per-process usage: enforce (memory the shim "
                 "did not see counts against the cap), report (gpu-usage.json and the log "
                 "only), off")
      ->check(CLI::IsMember({"enforce", "report", "off"}));
  app.add_option("--gpu-reconcile-interval", f.reconcile_ms, "How often to reconcile, ms")
      ->check(CLI::Range(100, 3600000));
  app.add_option("--gpu-reconcile-slack", f.reconcile_slack,
                 "Excess over the ledger that is not charged (rounding, context estimates)");
  app.add_option("--network", f.runc.network_default,
                 "runc: a kernel's network when its session does not choose: bridge (an address "
                 "on this agent's bridge, NAT to the outside; the default) or none (loopback "
                 "only)")
      ->check(CLI::IsMember({"none", "bridge"}));
  app.add_option("--network-pool", f.network_pool,
                 "runc: bridge mode's addresses (the bridge takes the first); 'off': no bridge "
                 "mode on this agent");
  app.add_option("--network-bridge", f.runc.bridge->bridge, "runc: bridge mode's Linux bridge");
  app.add_option("--network-nat", f.network_nat,
                 "runc: masquerade kernels' traffic leaving the host (off: the pool is routed)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--sandbox-exception", f.sandbox_exceptions,
                 "runc: let one image's kernels past part of the sandbox, IMAGE=NAME[,NAME] "
                 "(repeatable; IMAGE a name for every tag or name:tag; NAME userns, io_uring "
                 "or perf). Only the operator grants these; an image cannot ask");
  app.add_flag("--stop-kernels-on-exit", f.stop_kernels,
               "On SIGTERM/SIGINT end every kernel (default: they keep running and a restarted "
               "agent re-adopts them)");
  app.add_option("--mem-reserve", f.mem_reserve,
                 "Memory kept for the host when slots are discovered");
  app.add_option("--slots", f.slots, "Capacity, e.g. cpu=4,mem=8g (default: this machine)");
  app.add_option("--scaling-group", f.agent.scaling_group, "Resource group to join");
  app.add_option("--images", f.agent.images, "Images this agent offers")->delimiter(',');
  app.add_option("--pull-stall-timeout", f.pull_stall_timeout,
                 "Seconds an image pull may receive no byte before it fails the kernel (300)");
  app.add_option("--max-log-size", f.max_log,
                 "Output kept per kernel (e.g. 64m): the first half and the last quarter to half "
                 "of it, a notice between");
  app.add_option("--log-budget", f.log_budget,
                 "All kernels' output kept on this agent (e.g. 2g; 0: no bound): past it the "
                 "logs of ended kernels go, oldest first");
  app.add_option("--dummy-prepare-ms", f.dummy_prepare_ms, "dummy: start-up time of a kernel");
  app.add_option("--dummy-run-ms", f.dummy_run_ms, "dummy: run time of a batch job");
  app.add_option("--dummy-exit-code", f.dummy_exit_code,
                 "dummy: exit code without a trailing `exit N`");
  app.add_option("--metrics-listen", f.metrics_listen,
                 "HOST:PORT to serve GET /metrics (Prometheus) on; none when not given");
  app.add_option("--metrics-token-file", f.metrics_token_file,
                 "A file whose first line is the bearer token /metrics asks for (needed when "
                 "--metrics-listen is not a loopback address)");
  server::log::AddOptions(app, f.log);
}

StatusOr<AgentConfig> LoadAgentConfig(AgentFlags const& f) {
  AgentConfig c;
  c.agent = f.agent;
  c.runc = f.runc;
  c.backend = f.backend;
  c.state_dir = f.state_dir;
  c.stop_kernels = f.stop_kernels;
  c.metrics_listen = f.metrics_listen;
  c.nvml_library = f.nvml_library;
  if (!server::agent_protocol::ValidAgentId(c.agent.agent_id)) {
    return Usage("invalid --id (1-64 of letters, digits, '.', '_', '-')");
  }
  std::ifstream in(f.secret_file);
  std::getline(in, c.agent.cluster_secret);
  if (c.agent.cluster_secret.size() < 32) {
    return Status(StatusCode::kFailedPrecondition,
                  f.secret_file + " does not hold a cluster secret");
  }
  auto max_log = Bytes(f.max_log);
  if (!max_log.ok() || *max_log == 0) return Usage("--max-log-size: expected a size such as 64m");
  c.agent.max_log_bytes = *max_log;
  if (f.pull_stall_timeout < 1 || f.pull_stall_timeout > 86400) {
    return Usage("--pull-stall-timeout: seconds from 1 to 86400");
  }
  c.pull_stall_timeout = std::chrono::seconds(f.pull_stall_timeout);
  auto budget = Bytes(f.log_budget);
  if (!budget.ok()) return Usage("--log-budget: expected a size such as 2g (0: no bound)");
  c.agent.log_budget_bytes = *budget;
  c.agent.logs_dir = f.state_dir + "/" + c.agent.agent_id + "/logs";
  if (auto s = DecideGpus(f, c); !s.ok()) return s;
  if (auto s = DecideSlots(f, c); !s.ok()) return s;
  c.dummy.prepare_delay = std::chrono::milliseconds(f.dummy_prepare_ms);
  c.dummy.run_time = std::chrono::milliseconds(f.dummy_run_ms);
  c.dummy.default_exit_code = f.dummy_exit_code;
  c.dummy.commit_dir = f.state_dir + "/" + c.agent.agent_id + "/commits";
  c.dummy.home_dir = f.state_dir + "/" + c.agent.agent_id + "/homes";
  if (c.backend == "runc") {
    if (auto s = DecideRunc(f, c); !s.ok()) return s;
  }
  if (!f.metrics_token_file.empty()) {
    std::ifstream token_in(f.metrics_token_file);
    std::getline(token_in, c.metrics_token);
    if (!token_in || c.metrics_token.empty()) {
      return Usage("--metrics-token-file " + f.metrics_token_file +
                   ": cannot read a token from its first line");
    }
  }
  return c;
}

}  // namespace bai::agent
