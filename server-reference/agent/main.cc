// SPDX-License-Identifier: Apache-2.0
// bai-agent: runs kernels for a bai-manager.
//   bai-agent --manager http://127.0.0.1:8081 --id agent-1 --cluster-secret-file FILE
//             [--backend runc|dummy] [--state-dir DIR] [--slots cpu=4,mem=8g]
//   bai-agent image import SOURCE --name NAME [--tag TAG] [--state-dir DIR]
//   bai-agent image list [--state-dir DIR]
//   bai-agent hook loopback-up|network-up ARGS   (run by runc as OCI createRuntime hooks)
#include "bai/protocol/resource.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/agent_metrics.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/nvml.h"
#include "server-reference/agent/runc_backend.h"
#include "server-reference/common/log/log_options.h"
#include "server-reference/common/wire/agent_protocol.h"

#include <CLI/CLI.hpp>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

namespace {

std::string SelfDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

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

int ImageCommand(int argc, char** argv) {
  CLI::App app{"bai-agent image: the agent's local image store", "bai-agent image"};
  std::string state_dir = "/var/lib/bai-agent";
  app.add_option("--state-dir", state_dir, "The agent's state directory (images/ inside)");
  app.require_subcommand(1);
  std::string source, name, tag;
  auto* import = app.add_subcommand("import", "Import an OCI image layout or a rootfs tarball");
  import->add_option("source", source, "OCI layout directory or .tar/.tar.gz")->required();
  import->add_option("--name", name, "Image name")->required();
  import->add_option("--tag", tag, "Tag in the layout (default: its first image)");
  auto* list = app.add_subcommand("list", "List images and aliases");
  // --state-dir before or after the subcommand, as the README writes it.
  import->fallthrough();
  list->fallthrough();
  CLI11_PARSE(app, argc, argv);
  bai::agent::ImageStore store(state_dir + "/images");
  if (*import) {
    if (auto s = store.Import(source, name, tag); !s.ok()) {
      std::cerr << "bai-agent: image import: " << s.message() << "\n";
      return s.code() == bai::StatusCode::kInvalidArgument ? 2 : 1;
    }
    std::cout << "imported " << name << "\n";
  } else if (*list) {
    for (auto const& n : store.Names()) std::cout << n << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "hook") {
    std::string state(std::istreambuf_iterator<char>(std::cin), {});
    auto s = bai::agent::RunHook(argv[2], state, std::vector<std::string>(argv + 3, argv + argc));
    if (!s.ok()) {
      std::cerr << "bai-agent hook " << argv[2] << ": " << s.message() << "\n";
      return 1;
    }
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "image") return ImageCommand(argc - 1, argv + 1);

  CLI::App app{"bai-agent: runs kernels for a bai-manager", "bai-agent"};
  // /etc/bai/agent.toml (docs/operations.md): the options by their long names; flags win.
  app.set_config("--config", "", "TOML file of these options by their long names");
  app.allow_config_extras(false);  // a misspelt key is an error, not ignored
  bai::agent::AgentOptions options;
  std::string secret_file, slots, backend = "runc";
  std::string state_dir = "/var/lib/bai-agent";
  bai::agent::RuncOptions runc;
  runc.runner_path = SelfDir() + "/bai-kernel-runner";
  runc.hook_path = SelfDir() + "/bai-agent";
  int prepare_ms = 100, run_ms = 200, exit_code = 0;
  app.add_option("--manager", options.manager_url,
                 "Manager URL (http://HOST:PORT), or several separated by commas: the agent "
                 "links to each and goes on through the others when one dies")
      ->envname("BAI_MANAGER");
  app.add_option("--id", options.agent_id, "Agent id (unique in the cluster)")->required();
  app.add_option("--cluster-secret-file", secret_file, "The manager's cluster-secret file")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--backend", backend, "Kernel backend (runc needs root)")
      ->check(CLI::IsMember({"runc", "dummy"}));
  app.add_option("--state-dir", state_dir,
                 "runc: kernels, images and runc state (one directory per agent instance)");
  app.add_option("--runner", runc.runner_path, "runc: the bai-kernel-runner binary");
  app.add_option("--runc", runc.runc, "runc: the runc binary");
  app.add_option("--uid", runc.uid, "runc: uid of the kernel's work user");
  app.add_option("--gid", runc.gid, "runc: gid of the kernel's work user");
  app.add_option("--home-size", runc.home_size, "runc: size of a kernel's /home/work");
  app.add_option("--tmp-size", runc.tmp_size, "runc: size of a kernel's /tmp");
  std::string scratch = "auto";
  app.add_option("--scratch", scratch,
                 "runc: where /home/work and /tmp live: disk (an ext4 image per kernel of "
                 "home+tmp size on this agent's disk, loop-mounted: the size is the quota), "
                 "tmpfs (in memory, counted against the session's memory limit) or auto (disk "
                 "where loop devices and mkfs.ext4 are there, else tmpfs)")
      ->check(CLI::IsMember({"auto", "disk", "tmpfs"}));
  std::string nvml_library = "libnvidia-ml.so.1";
  app.add_option("--nvml-library", nvml_library, "NVML library to discover NVIDIA GPUs with");
  bai::agent::GpuSharing& gpu = runc.gpu_sharing;
  std::string gpu_shares = "1", gpu_context = "0";
  std::string shim_path = SelfDir() + "/../lib/libbai-gpushim.so";
  app.add_option("--gpu-shares", gpu_shares,
                 "cuda.shares one GPU is worth (e.g. 5: 1 fGPU = 0.2 GPU; steps of 0.01)");
  app.add_option("--gpu-sharing", gpu.mode,
                 "How fractions share a GPU: timeslice (the shim's time quanta), mps (NVIDIA MPS "
                 "thread percentage), off (whole GPUs only)");
  app.add_option("--gpu-compute", gpu.compute,
                 "timeslice: hard (never past the share) or soft (idle time is used)");
  app.add_option("--gpu-allocation", gpu.policy,
                 "Fractions over several GPUs: evenly (one GPU when it fits, else equal parts) "
                 "or fill (GPUs in order)");
  app.add_option("--gpu-context-mem", gpu_context,
                 "Charged to a container's GPU memory per CUDA context (e.g. 512m)");
  app.add_option("--gpu-period", gpu.period_ms, "timeslice: the period of time quanta, ms");
  app.add_option("--gpu-shim", shim_path, "libbai-gpushim.so (default: ../lib beside bai-agent)");
  std::string reconcile = "enforce", reconcile_slack = "64m";
  int reconcile_ms = 2000;
  app.add_option("--gpu-reconcile", reconcile,
                 "Compare GPU ledgers with NVML's per-process usage: enforce (memory the shim "
                 "did not see counts against the cap), report (gpu-usage.json and the log "
                 "only), off")
      ->check(CLI::IsMember({"enforce", "report", "off"}));
  app.add_option("--gpu-reconcile-interval", reconcile_ms, "How often to reconcile, ms")
      ->check(CLI::Range(100, 3600000));
  app.add_option("--gpu-reconcile-slack", reconcile_slack,
                 "Excess over the ledger that is not charged (rounding, context estimates)");
  std::string network_pool = "10.220.0.0/16", network_nat = "on";
  app.add_option("--network", runc.network_default,
                 "runc: a kernel's network when its session does not choose: bridge (an address "
                 "on this agent's bridge, NAT to the outside; the default) or none (loopback "
                 "only)")
      ->check(CLI::IsMember({"none", "bridge"}));
  app.add_option("--network-pool", network_pool,
                 "runc: bridge mode's addresses (the bridge takes the first); 'off': no bridge "
                 "mode on this agent");
  app.add_option("--network-bridge", runc.bridge->bridge, "runc: bridge mode's Linux bridge");
  app.add_option("--network-nat", network_nat,
                 "runc: masquerade kernels' traffic leaving the host (off: the pool is routed)")
      ->check(CLI::IsMember({"on", "off"}));
  std::vector<std::string> sandbox_exceptions;
  app.add_option("--sandbox-exception", sandbox_exceptions,
                 "runc: let one image's kernels past part of the sandbox, IMAGE=NAME[,NAME] "
                 "(repeatable; IMAGE a name for every tag or name:tag; NAME userns, io_uring "
                 "or perf). Only the operator grants these; an image cannot ask");
  bool stop_kernels = false;
  app.add_flag("--stop-kernels-on-exit", stop_kernels,
               "On SIGTERM/SIGINT end every kernel (default: they keep running and a restarted "
               "agent re-adopts them)");
  std::string reserve = "1g";
  app.add_option("--mem-reserve", reserve, "Memory kept for the host when slots are discovered");
  app.add_option("--slots", slots, "Capacity, e.g. cpu=4,mem=8g (default: this machine)");
  app.add_option("--scaling-group", options.scaling_group, "Resource group to join");
  app.add_option("--images", options.images, "Images this agent offers")->delimiter(',');
  std::string max_log = "64m";
  app.add_option("--max-log-size", max_log,
                 "Output kept per kernel (e.g. 64m): the first half and the last quarter to half "
                 "of it, a notice between");
  std::string log_budget = "2g";
  app.add_option("--log-budget", log_budget,
                 "All kernels' output kept on this agent (e.g. 2g; 0: no bound): past it the "
                 "logs of ended kernels go, oldest first");
  app.add_option("--dummy-prepare-ms", prepare_ms, "dummy: start-up time of a kernel");
  app.add_option("--dummy-run-ms", run_ms, "dummy: run time of a batch job");
  app.add_option("--dummy-exit-code", exit_code, "dummy: exit code without a trailing `exit N`");
  std::string metrics_listen;
  app.add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT to serve GET /metrics (Prometheus) on; none when not given");
  std::string metrics_token_file;
  app.add_option("--metrics-token-file", metrics_token_file,
                 "A file whose first line is the bearer token /metrics asks for (needed when "
                 "--metrics-listen is not a loopback address)");
  bai::server::log::Options log;
  bai::server::log::AddOptions(app, log);
  CLI11_PARSE(app, argc, argv);
  if (auto s = bai::server::log::Init("bai-agent", log); !s.ok()) {
    std::cerr << "bai-agent: " << s.message() << "\n";
    return 2;
  }

  if (!bai::server::agent_protocol::ValidAgentId(options.agent_id)) {
    std::cerr << "bai-agent: invalid --id (1-64 of letters, digits, '.', '_', '-')\n";
    return 2;
  }
  std::ifstream in(secret_file);
  std::getline(in, options.cluster_secret);
  if (options.cluster_secret.size() < 32) {
    std::cerr << "bai-agent: " << secret_file << " does not hold a cluster secret\n";
    return 1;
  }
  auto reserve_bytes = bai::protocol::ParseBinarySize(reserve);
  if (!reserve_bytes.ok()) {
    std::cerr << "bai-agent: --mem-reserve: " << reserve_bytes.status().message() << "\n";
    return 2;
  }
  auto max_log_bytes = bai::protocol::ParseBinarySize(max_log);
  if (!max_log_bytes.ok() || max_log_bytes->is_zero()) {
    std::cerr << "bai-agent: --max-log-size: expected a size such as 64m\n";
    return 2;
  }
  options.max_log_bytes =
      static_cast<std::int64_t>(max_log_bytes->units() / bai::protocol::Decimal::kUnitsPerOne);
  auto budget_bytes = bai::protocol::ParseBinarySize(log_budget);
  if (!budget_bytes.ok()) {
    std::cerr << "bai-agent: --log-budget: expected a size such as 2g (0: no bound)\n";
    return 2;
  }
  options.log_budget_bytes =
      static_cast<std::int64_t>(budget_bytes->units() / bai::protocol::Decimal::kUnitsPerOne);
  options.logs_dir = state_dir + "/" + options.agent_id + "/logs";
  auto shares = bai::protocol::Decimal::Parse(gpu_shares);
  auto context = bai::protocol::ParseBinarySize(gpu_context);
  auto slack = bai::protocol::ParseBinarySize(reconcile_slack);
  if (!shares.ok() || !context.ok() || !slack.ok()) {
    std::cerr << "bai-agent: "
              << (!shares.ok()    ? "--gpu-shares: " + shares.status().message()
                  : !context.ok() ? "--gpu-context-mem: " + context.status().message()
                                  : "--gpu-reconcile-slack: " + slack.status().message())
              << "\n";
    return 2;
  }
  runc.nvml_library = nvml_library;
  runc.gpu_reconcile.enforce = reconcile == "enforce";
  runc.gpu_reconcile.slack =
      static_cast<std::uint64_t>(slack->units() / bai::protocol::Decimal::kUnitsPerOne);
  runc.gpu_reconcile_interval = std::chrono::milliseconds(reconcile == "off" ? 0 : reconcile_ms);
  gpu.shares_per_gpu = *shares;
  gpu.context_bytes =
      static_cast<std::uint64_t>(context->units() / bai::protocol::Decimal::kUnitsPerOne);
  if (auto s = bai::agent::ValidateGpuSharing(gpu); !s.ok()) {
    std::cerr << "bai-agent: " << s.message() << "\n";
    return 2;
  }
  options.device_policy = gpu.policy;
  if (auto gpus = bai::agent::DiscoverNvidiaGpus(nvml_library); gpus.ok()) {
    runc.gpus = *gpus;
    options.devices = bai::agent::GpuDeviceInfos(*gpus, gpu);
    runc.gpu_files = bai::agent::FindGpuFiles(nvml_library, shim_path);
    std::cout << "bai-agent: " << gpus->size() << " NVIDIA GPU(s) found through NVML"
              << (gpus->empty() ? "" : ", shared by " + gpu.mode) << std::endl;
    if (gpu.mode != "off" && runc.gpu_files.shim.empty() && !gpus->empty()) {
      std::cerr << "bai-agent: " << shim_path
                << " not found: kernels with GPU fractions will fail to start\n";
    }
  } else if (gpus.status().code() != bai::StatusCode::kNotFound) {
    std::cerr << "bai-agent: NVML: " << gpus.status().message() << " (no GPUs offered)\n";
  }
  if (slots.empty()) {
    options.slots = bai::agent::DiscoverSlots(
        static_cast<std::int64_t>(reserve_bytes->units() / bai::protocol::Decimal::kUnitsPerOne));
    bai::agent::AddGpuSlots(options.slots, runc.gpus.size(), gpu);
  } else {
    if (auto s = bai::protocol::ParseSlotAssignment(slots, options.slots); !s.ok()) {
      std::cerr << "bai-agent: --slots: " << s.message() << "\n";
      return 2;
    }
    // GPUs found are offered unless --slots names GPU slots itself.
    if (!options.slots.count("cuda.device") && !options.slots.count("cuda.shares")) {
      bai::agent::AddGpuSlots(options.slots, runc.gpus.size(), gpu);
    }
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  bai::agent::DummyOptions dummy;
  dummy.prepare_delay = std::chrono::milliseconds(prepare_ms);
  dummy.run_time = std::chrono::milliseconds(run_ms);
  dummy.default_exit_code = exit_code;
  dummy.commit_dir = state_dir + "/" + options.agent_id + "/commits";
  dummy.home_dir = state_dir + "/" + options.agent_id + "/homes";
  std::unique_ptr<bai::agent::KernelBackend> kernels;
  std::unique_ptr<bai::agent::ImageStore> images;
  if (backend == "runc") {
    if (network_pool == "off") {
      runc.bridge.reset();
      if (runc.network_default == bai::agent::kNetworkBridge) {
        std::cerr << "bai-agent: --network bridge needs a --network-pool\n";
        return 2;
      }
    } else {
      auto pool = bai::agent::ParseIpv4Net(network_pool);
      if (!pool.ok()) {
        std::cerr << "bai-agent: --network-pool: " << pool.status().message() << "\n";
        return 2;
      }
      runc.bridge->pool = *pool;
      runc.bridge->nat = network_nat == "on";
      for (auto const& url : bai::agent::ManagerUrls(options.manager_url)) {
        for (auto address : ManagerAddresses(url)) {
          if (std::find(runc.bridge->blocked.begin(), runc.bridge->blocked.end(), address) ==
              runc.bridge->blocked.end()) {
            runc.bridge->blocked.push_back(address);
          }
        }
      }
      if (auto s = bai::agent::ValidateBridgeConfig(*runc.bridge); !s.ok()) {
        std::cerr << "bai-agent: --network-bridge: " << s.message() << "\n";
        return 2;
      }
    }
    for (auto const& text : sandbox_exceptions) {
      auto e = bai::agent::ParseSandboxException(text);
      if (!e.ok()) {
        std::cerr << "bai-agent: " << e.status().message() << "\n";
        return 2;
      }
      runc.sandbox_exceptions[e->first].insert(e->second.begin(), e->second.end());
    }
    auto backing = bai::agent::ResolveScratchBacking(scratch);
    if (!backing.ok()) {
      std::cerr << "bai-agent: " << backing.status().message() << "\n";
      return 2;
    }
    runc.scratch = *backing;
    for (auto [flag, value] :
         {std::pair{"--home-size", runc.home_size}, std::pair{"--tmp-size", runc.tmp_size}}) {
      if (auto bytes = bai::agent::ScratchSizeBytes(flag, value); !bytes.ok()) {
        std::cerr << "bai-agent: " << bytes.status().message() << "\n";
        return 2;
      }
    }
    images = std::make_unique<bai::agent::ImageStore>(state_dir + "/images");
    if (auto s = images->EnsureBuiltins(); !s.ok()) {
      std::cerr << "bai-agent: images: " << s.message() << "\n";
      return 1;
    }
    runc.agent_id = options.agent_id;
    runc.state_dir = state_dir + "/" + options.agent_id;
    runc.images = images.get();
    auto r = std::make_unique<bai::agent::RuncBackend>(runc);
    if (auto s = r->Init(); !s.ok()) {
      std::cerr << "bai-agent: " << s.message() << "\n";
      return 1;
    }
    options.list_images = [store = images.get()] { return store->List(); };
    kernels = std::move(r);
  } else {
    kernels = std::make_unique<bai::agent::DummyBackend>(dummy);
  }
  // MPS mode: one control daemon per GPU, for as long as the agent runs.
  std::vector<bai::agent::MpsDaemon> mps;
  if (backend == "runc" && gpu.mode == "mps" && !runc.gpus.empty()) {
    mps = bai::agent::PlanMpsDaemons(runc.gpus, runc.state_dir);
    if (auto s = bai::agent::StartMpsDaemons(mps); !s.ok()) {
      std::cerr << "bai-agent: " << s.message() << " (kernels with GPU fractions will fail)\n";
    }
  }
  bai::agent::KernelBackend* backend_ptr = kernels.get();
  bai::agent::Agent agent(options, std::move(kernels));
  agent.Start();
  std::cout << "bai-agent " << options.agent_id << " connecting to " << options.manager_url
            << std::endl;
  bai::server::log::Info("started", {{"agent", options.agent_id},
                                     {"managers", options.manager_url},
                                     {"backend", backend},
                                     {"gpus", runc.gpus.size()},
                                     {"scratch", backend == "runc" ? runc.scratch : ""},
                                     {"network", backend == "runc" ? runc.network_default : ""}});
  // Declared before the server that renders it, so it outlives the server's threads.
  bai::server::metrics::Registry metrics;
  std::unique_ptr<bai::server::HttpServer> metrics_server;
  if (!metrics_listen.empty()) {
    bai::agent::AgentScrape base;
    base.agent_id = options.agent_id;
    base.slots = options.slots;
    base.gpus = runc.gpus;
    base.shares_per_gpu = gpu.shares_per_gpu;
    bai::agent::CollectAgentMetrics(metrics, agent, *backend_ptr, base, nvml_library);
    std::string token;
    if (!metrics_token_file.empty()) {
      std::ifstream token_in(metrics_token_file);
      std::getline(token_in, token);
      if (!token_in || token.empty()) {
        std::cerr << "bai-agent: --metrics-token-file " << metrics_token_file
                  << ": cannot read a token from its first line\n";
        agent.Stop();
        return 2;
      }
    }
    auto served = bai::agent::ServeMetrics(metrics_listen, metrics, token);
    if (!served.ok()) {
      std::cerr << "bai-agent: " << served.status().message() << "\n";
      agent.Stop();
      return 2;
    }
    metrics_server = std::move(*served);
    std::cout << "bai-agent: metrics on http://"
              << metrics_listen.substr(0, metrics_listen.rfind(':')) << ":"
              << metrics_server->port() << "/metrics" << std::endl;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  if (stop_kernels) {
    // Ends every kernel (reported to the manager while still connected), then disconnects.
    for (auto const& k : backend_ptr->Snapshot()) {
      if (!k.Ended()) backend_ptr->Destroy(k.session_id, "agent-shutdown");
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto live = [&] {
      for (auto const& k : backend_ptr->Snapshot()) {
        if (!k.Ended()) return true;
      }
      return false;
    };
    while (live() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the last reports go out
    // Without kernels, the MPS daemons go too (kept otherwise: re-adopted kernels use them).
    bai::agent::StopMpsDaemons(mps);
  }
  if (metrics_server) metrics_server->Stop();
  bai::server::log::Info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  agent.Stop();
  return 0;
}
