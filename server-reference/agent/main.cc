// SPDX-License-Identifier: Apache-2.0
// bai-agent: runs kernels for a bai-manager.
//   bai-agent --manager http://127.0.0.1:8081 --id agent-1 --cluster-secret-file FILE
//             [--backend runc|dummy] [--state-dir DIR] [--slots cpu=4,mem=8g]
//   bai-agent image import SOURCE --name NAME [--tag TAG] [--state-dir DIR]
//   bai-agent image pull REFERENCE [--name NAME] [--username U --password-stdin] [--state-dir DIR]
//   bai-agent image ls [--names] | rm NAME… | prune [--all] | export NAME PATH  [--state-dir DIR]
//   bai-agent hook loopback-up|network-up ARGS   (run by runc as OCI createRuntime hooks)
#include "server-reference/agent/agent.h"
#include "server-reference/agent/agent_metrics.h"
#include "server-reference/agent/config.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/agent/image_gc.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/runc_backend.h"
#include "server-reference/common/daemon/daemon.h"
#include "server-reference/common/log/log_options.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_client.h"

#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

namespace {

namespace agent = bai::agent;
namespace ap = bai::server::agent_protocol;

int HookCommand(int argc, char** argv) {
  std::string state(std::istreambuf_iterator<char>(std::cin), {});
  auto s = agent::RunHook(argv[2], state, std::vector<std::string>(argv + 3, argv + argc));
  if (!s.ok()) {
    std::cerr << "bai-agent hook " << argv[2] << ": " << s.message() << "\n";
    return 1;
  }
  return 0;
}

struct PullFlags {
  std::string reference, name, username;
  bool password_stdin = false, no_ssl_verify = false, plain_http = false;
};

CLI::App* AddPullCommand(CLI::App& app, PullFlags& f) {
  auto* pull = app.add_subcommand("pull", "Pull an image from a registry into the store");
  pull->add_option("reference", f.reference, "REGISTRY/PROJECT/NAME:TAG (or @sha256:…)")
      ->required();
  pull->add_option("--name", f.name,
                   "Image name in the store (default: NAME-DIGEST12, the repository's last part "
                   "and the manifest digest's first twelve hex digits)");
  pull->add_option("--username", f.username, "The registry's user (anonymous without)");
  pull->add_flag("--password-stdin", f.password_stdin, "Read the password from standard input");
  pull->add_flag("--no-ssl-verify", f.no_ssl_verify, "Do not verify the registry's certificate");
  pull->add_flag("--plain-http", f.plain_http,
                 "The registry speaks plain HTTP (loopback registries always do)");
  return pull;
}

// bai-agent image pull: progress on stderr, "pulled NAME" on stdout; 2 for a bad reference.
int RunPull(bai::agent::ImageStore& store, PullFlags const& f) {
  namespace oci = bai::server::oci;
  auto ref = oci::ParseImageReference(f.reference);
  if (!ref.ok()) {
    std::cerr << "bai-agent: image pull: " << ref.status().message() << "\n";
    return 2;
  }
  std::string password;
  if (f.password_stdin) std::getline(std::cin, password);
  oci::RegistryEndpoint e;
  e.url = oci::RegistryUrl(ref->registry, f.plain_http);
  e.username = f.username;
  e.password = password;
  e.ssl_verify = !f.no_ssl_verify;
  oci::RegistryClient registry(e);
  auto s = store.Pull(registry, *ref, f.name, [](bai::agent::PullProgress const& p) {
    if (!p.words.empty()) std::cerr << "pulling " << p.words << "\n";
  });
  if (!s.ok()) {
    std::cerr << "bai-agent: image pull: " << s.message() << "\n";
    return s.code() == bai::StatusCode::kInvalidArgument ? 2 : 1;
  }
  auto held = store.Find(ref->Canonical());
  std::cout << "pulled " << (held.ok() ? held->name : f.name) << " (" << ref->Canonical() << ")\n";
  return 0;
}

std::string Bytes(std::int64_t b) {
  char const* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char out[32];
  std::snprintf(out, sizeof out, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return out;
}

// bai-agent image ls | rm | prune (image_gc.h): 1 when refused (in use, a pull under way).
int RunStoreCommand(bai::agent::ImageStore& store, std::string const& state_dir,
                    std::string const& what, std::vector<std::string> const& names,
                    bool all_pulled) {
  namespace a = bai::agent;
  auto in_use = a::ImagesInUse(store, state_dir);
  if (!in_use.ok()) {
    if (what != "ls") {
      std::cerr << "bai-agent: image " << what << ": " << in_use.status().message() << "\n";
      return 1;
    }
    in_use = std::set<std::string>();
  }
  auto images = a::StoredImages(store);
  std::map<std::string, std::int64_t> layer_bytes;
  std::vector<std::string> layers;
  for (auto const& l : store.layer_store().List()) {
    layer_bytes[l.chain_id] = l.bytes;
    layers.push_back(l.chain_id);
  }
  if (what == "ls") {
    std::printf("%-32s %-9s %10s %10s %-6s %s\n", "NAME", "KIND", "SIZE", "OWN", "IN USE",
                "ALIASES");
    for (auto const& u : a::DiskUse(images, layer_bytes, *in_use)) {
      std::string aliases;
      for (auto const& al : u.aliases) aliases += (aliases.empty() ? "" : ",") + al;
      std::printf("%-32s %-9s %10s %10s %-6s %s\n", u.name.c_str(), u.kind.c_str(),
                  Bytes(u.bytes).c_str(), Bytes(u.own_bytes).c_str(), u.in_use ? "yes" : "no",
                  aliases.c_str());
    }
    return 0;
  }
  auto plan = a::PlanRemoval(images, layers, names, *in_use, all_pulled);
  if (!plan.ok()) {
    std::cerr << "bai-agent: image " << what << ": " << plan.status().message() << "\n";
    return 1;
  }
  auto freed = a::CarryOut(store, *plan);
  if (!freed.ok()) {
    std::cerr << "bai-agent: image " << what << ": " << freed.status().message() << "\n";
    return 1;
  }
  for (auto const& n : plan->images) std::cout << "removed " << n << "\n";
  std::cout << plan->images.size() << " images, " << plan->layers.size() << " layers, "
            << Bytes(*freed) << " freed\n";
  return 0;
}

int ImageCommand(int argc, char** argv) {
  CLI::App app{"bai-agent image: the agent's local image store", "bai-agent image"};
  std::string state_dir = "/var/lib/bai-agent";
  app.add_option("--state-dir", state_dir, "The agent's state directory (images/ inside)");
  app.require_subcommand(1);
  std::string source, name, tag;
  auto* import = app.add_subcommand("import", "Import an OCI image layout or a rootfs tarball");
  import
      ->add_option("source", source,
                   "An OCI image layout (directory), OCI archive, docker save tarball, or root "
                   "filesystem tarball (.tar, .tar.gz)")
      ->required();
  import->add_option("--name", name, "Image name")->required();
  import->add_option("--tag", tag,
                     "Tag in the layout or docker save tarball (default: its first image)");
  auto* list = app.add_subcommand(
      "ls", "List images: kind, disk use (all it stands on; only its own), in use, aliases");
  list->alias("list");
  bool names_only = false;
  list->add_flag("--names", names_only, "Only the names and aliases, one a line");
  std::vector<std::string> doomed;
  auto* rm = app.add_subcommand(
      "rm", "Remove images and the layers nothing else needs (never one a kernel uses)");
  rm->add_option("NAME", doomed, "Image names")->required();
  bool all_pulled = false;
  auto* prune = app.add_subcommand(
      "prune", "Remove layers no image needs (what removals and failed pulls left)");
  prune->add_flag("--all", all_pulled,
                  "Also every pulled image no kernel uses (a registry has it; imported and host "
                  "images stay)");
  std::string out;
  auto* exp = app.add_subcommand(
      "export", "Write an image as an OCI image layout (a directory) or OCI archive (PATH.tar)");
  exp->add_option("NAME", name, "Image name or alias")->required();
  exp->add_option("PATH", out, "A new directory, or a file ending in .tar")->required();
  PullFlags pf;
  auto* pull = AddPullCommand(app, pf);
  // --state-dir before or after the subcommand, as the README writes it.
  for (auto* sub : {import, list, rm, prune, exp, pull}) sub->fallthrough();
  CLI11_PARSE(app, argc, argv);
  bai::agent::ImageStore store(state_dir + "/images");
  if (*pull || *import) store.DetectLayered();
  if (*pull) return RunPull(store, pf);
  if (*exp) {
    auto digest = store.Export(name, out);
    if (!digest.ok()) {
      std::cerr << "bai-agent: image export: " << digest.status().message() << "\n";
      return 1;
    }
    std::cout << "exported " << name << " to " << out << " (" << *digest << ")\n";
    return 0;
  }
  if (*rm || *prune || (*list && !names_only)) {
    return RunStoreCommand(store, state_dir,
                           *list ? "ls"
                           : *rm ? "rm"
                                 : "prune",
                           doomed, all_pulled);
  }
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

// The kernel backend the configuration names (runc: its image store opened, kernels of an
// earlier run re-adopted); `images` keeps the store alive.
bai::StatusOr<std::unique_ptr<agent::KernelBackend>> MakeBackend(
    agent::AgentConfig& c, std::unique_ptr<agent::ImageStore>& images) {
  if (c.backend != "runc") {
    return std::unique_ptr<agent::KernelBackend>(std::make_unique<agent::DummyBackend>(c.dummy));
  }
  images = std::make_unique<agent::ImageStore>(c.state_dir + "/images");
  if (auto s = images->DetectLayered(); !s.ok()) {
    std::cerr << "bai-agent: images are flat copies: " << s.message() << "\n";
  }
  images->SweepUnfinished();
  images->set_stall_timeout(c.pull_stall_timeout);
  if (auto s = images->EnsureBuiltins(); !s.ok()) {
    return bai::Status(s.code(), "images: " + s.message());
  }
  c.runc.images = images.get();
  auto r = std::make_unique<agent::RuncBackend>(c.runc);
  if (auto s = r->Init(); !s.ok()) return s;
  c.agent.list_images = [store = images.get()] { return store->List(); };
  c.agent.purge_images = [store = images.get(), dir = c.state_dir](ap::PurgeImages const& m) {
    auto done = agent::Purge(*store, dir, m.images, m.prune);
    ap::PurgeReply reply;
    reply.removed = done.removed;
    reply.errors = done.errors;
    reply.freed = done.freed;
    return reply;
  };
  return std::unique_ptr<agent::KernelBackend>(std::move(r));
}

// MPS mode: one control daemon per GPU, for as long as the agent runs.
std::vector<agent::MpsDaemon> StartMps(agent::AgentConfig const& c) {
  std::vector<agent::MpsDaemon> mps;
  if (c.backend == "runc" && c.runc.gpu_sharing.mode == "mps" && !c.runc.gpus.empty()) {
    mps = agent::PlanMpsDaemons(c.runc.gpus, c.runc.state_dir);
    if (auto s = agent::StartMpsDaemons(mps); !s.ok()) {
      std::cerr << "bai-agent: " << s.message() << " (kernels with GPU fractions will fail)\n";
    }
  }
  return mps;
}

// GET /metrics when --metrics-listen is given; `metrics` must outlive the server.
bai::StatusOr<std::unique_ptr<bai::server::HttpServer>> StartMetrics(
    agent::AgentConfig const& c, agent::Agent& running, agent::KernelBackend& kernels,
    bai::server::metrics::Registry& metrics) {
  if (c.metrics_listen.empty()) return std::unique_ptr<bai::server::HttpServer>();
  agent::AgentScrape base;
  base.agent_id = c.agent.agent_id;
  base.slots = c.agent.slots;
  base.gpus = c.runc.gpus;
  base.shares_per_gpu = c.runc.gpu_sharing.shares_per_gpu;
  agent::CollectAgentMetrics(metrics, running, kernels, base, c.nvml_library);
  auto served = agent::ServeMetrics(c.metrics_listen, metrics, c.metrics_token);
  if (!served.ok()) return served.status();
  std::cout << "bai-agent: metrics on http://"
            << c.metrics_listen.substr(0, c.metrics_listen.rfind(':')) << ":" << (*served)->port()
            << "/metrics" << std::endl;
  return served;
}

// --stop-kernels-on-exit: ends every kernel (reported to the manager while still connected),
// waits up to 30 s for them, then stops the MPS daemons (kept otherwise: re-adopted kernels use
// them).
void StopKernels(agent::KernelBackend& kernels, std::vector<agent::MpsDaemon>& mps) {
  for (auto const& k : kernels.Snapshot()) {
    if (!k.Ended()) kernels.Destroy(k.session_id, "agent-shutdown");
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto live = [&] {
    for (auto const& k : kernels.Snapshot()) {
      if (!k.Ended()) return true;
    }
    return false;
  };
  while (live() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the last reports go out
  agent::StopMpsDaemons(mps);
}

int Fail(bai::Status const& s) {
  std::cerr << "bai-agent: " << s.message() << "\n";
  return s.code() == bai::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "hook") return HookCommand(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "image") return ImageCommand(argc - 1, argv + 1);
  CLI::App app{"bai-agent: runs kernels for a bai-manager", "bai-agent"};
  agent::AgentFlags flags;
  agent::AddAgentFlags(app, flags, bai::server::ExecutableDir());
  CLI11_PARSE(app, argc, argv);
  bai::server::Daemon process("bai-agent");
  if (!process.InitLog(flags.log).ok()) return 2;
  auto config = agent::LoadAgentConfig(flags);
  if (!config.ok()) return Fail(config.status());
  for (auto const& note : config->notes) std::cout << "bai-agent: " << note << std::endl;
  for (auto const& warning : config->warnings) std::cerr << "bai-agent: " << warning << "\n";
  process.BlockStopSignals();
  std::unique_ptr<agent::ImageStore> images;
  auto kernels = MakeBackend(*config, images);
  if (!kernels.ok())
    return Fail(bai::Status(bai::StatusCode::kUnavailable, kernels.status().message()));
  auto mps = StartMps(*config);
  agent::KernelBackend* backend = kernels->get();
  agent::Agent running(config->agent, std::move(*kernels));
  running.Start();
  std::cout << "bai-agent " << config->agent.agent_id << " connecting to "
            << config->agent.manager_url << std::endl;
  bool runc = config->backend == "runc";
  bai::server::log::Info("started", {{"agent", config->agent.agent_id},
                                     {"managers", config->agent.manager_url},
                                     {"backend", config->backend},
                                     {"gpus", config->runc.gpus.size()},
                                     {"scratch", runc ? config->runc.scratch : ""},
                                     {"network", runc ? config->runc.network_default : ""}});
  bai::server::metrics::Registry metrics;  // before the server that renders it
  auto metrics_server = StartMetrics(*config, running, *backend, metrics);
  if (!metrics_server.ok()) {
    running.Stop();
    return Fail(bai::Status(bai::StatusCode::kInvalidArgument, metrics_server.status().message()));
  }
  process.WaitForStop();
  if (config->stop_kernels) StopKernels(*backend, mps);
  if (*metrics_server) (*metrics_server)->Stop();
  running.Stop();
  return 0;
}
