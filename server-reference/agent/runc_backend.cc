// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/runc_backend.h"

#include "bai/protocol/resource.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"
#include "server-reference/agent/kernel_bundle.h"
#include "server-reference/agent/kernel_usage.h"
#include "server-reference/agent/network_host.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/agent/runc_kernel.h"
#include "server-reference/common/exec/process.h"
#include "server-reference/common/fs/image_root.h"
#include "server-reference/common/log/log.h"
#include "server-reference/common/wire/runner_messages.h"

#include <fcntl.h>
#include <net/if.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace bai::agent {
namespace fs = std::filesystem;
namespace rp = server::runner_protocol;
using nlohmann::json;

RuncBackend::RuncBackend(RuncOptions options) : options_(std::move(options)) {}

RuncBackend::~RuncBackend() {
  reconciler_.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    // Kernels keep running (a restarted agent re-adopts them); only our readers stop.
    for (auto& [id, k] : kernels_) {
      if (k->sock >= 0) shutdown(k->sock, SHUT_RDWR);
    }
  }
  workers_.JoinAll();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, k] : kernels_) {
    if (k->sock >= 0) close(k->sock);
    k->sock = -1;
  }
}

void RuncBackend::Spawn(std::function<void()> fn) { workers_.Run(std::move(fn)); }

std::vector<std::string> RuncBackend::Runc(std::vector<std::string> args) const {
  std::vector<std::string> argv = {options_.runc, "--root", options_.state_dir + "/runc"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Status RuncBackend::Init() {
  if (auto s = PrepareHost(); !s.ok()) return s;
  auto adopted = ReadoptKernels();
  DeleteStrayContainers();
  return Resume(adopted);
}

Status RuncBackend::PrepareHost() {
  if (!options_.images) return Status(StatusCode::kInvalidArgument, "no image store");
  if (geteuid() != 0) {
    return Status(
        StatusCode::kPermissionDenied,
        "the runc backend needs root (containers, cgroups); use --backend dummy otherwise");
  }
  auto version = server::RunProcess({options_.runc, "--version"});
  if (version.exit_code != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "cannot run " + options_.runc + " (install Debian's runc): " + version.output);
  }
  cgroup_version_ = HostCgroupVersion();
  std::error_code ec;
  fs::create_directories(fs::path(options_.state_dir) / "kernels", ec);
  fs::create_directories(fs::path(options_.state_dir) / "runc", ec);
  runner_dir_ = options_.state_dir + "/bin";
  fs::create_directories(runner_dir_, ec);
  if (ec)
    return Status(StatusCode::kInternal,
                  "cannot create " + options_.state_dir + ": " + ec.message());
  // The runner is copied, so a rebuild does not change the file under running kernels.
  fs::path runner = fs::path(runner_dir_) / "bai-kernel-runner";
  fs::path staged = fs::path(runner_dir_) / ".bai-kernel-runner.new";
  fs::copy_file(options_.runner_path, staged, fs::copy_options::overwrite_existing, ec);
  if (ec)
    return Status(StatusCode::kNotFound,
                  "kernel runner " + options_.runner_path + ": " + ec.message());
  fs::permissions(staged,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  fs::rename(staged, runner, ec);
  return Status();
}

std::shared_ptr<RuncBackend::Kernel> RuncBackend::KernelFromRecord(fs::path const& dir) const {
  auto k = std::make_shared<Kernel>();
  k->dir = dir.string();
  auto record = KernelRecord::FromJson(ReadWholeFile(dir / "kernel.json"),
                                       options_.agent_id + "." + dir.filename().string());
  k->container_id = record.container_id;
  k->spec.session_id = record.session_id;
  k->spec.session_name = record.session_name;
  k->spec.session_type = record.session_type;
  k->spec.image = record.image;
  k->cgroups_path = record.cgroups_path;
  k->cpus = record.cpus;
  if (record.network) k->net = *record.network;
  k->gpu_quanta = record.gpu_quanta;
  // A batch job's end still has to be heard: the runner keeps its `finished` for us.
  if (k->spec.session_type == "batch") k->runs[kBatchRunId] = {};
  k->state = {k->spec.session_id, protocol::KernelStatus::kRunning, std::nullopt, "", "", {}};
  return k;
}

// A kernel whose container runs and whose runner answers is adopted (its GPU quanta held
// again); any other is deleted, and said TERMINATED (agent-restarted) when it had a session.
std::vector<std::shared_ptr<RuncBackend::Kernel>> RuncBackend::ReadoptKernels() {
  std::vector<std::shared_ptr<Kernel>> adopt;
  std::error_code ec;
  for (auto const& entry : fs::directory_iterator(fs::path(options_.state_dir) / "kernels", ec)) {
    auto k = KernelFromRecord(entry.path());
    auto state = server::RunProcess(Runc({"state", k->container_id}), server::StdoutOnly());
    auto sj = internal::ParseJson(state.output);
    bool running = state.exit_code == 0 && sj && sj->value("status", "") == "running";
    if (running && !k->spec.session_id.empty() && ConnectRunner(*k, std::chrono::seconds(2))) {
      for (auto const& [uuid, q] : k->gpu_quanta) {
        quanta_.Hold(uuid, q);
        std::string stamp = ActivityBoardDir(options_, uuid) + "/" + k->spec.session_id;
        if (fs::exists(stamp, ec)) k->gpu_stamps.push_back(stamp);
      }
      adopt.push_back(k);
      continue;
    }
    server::RunProcess(Runc({"delete", "--force", k->container_id}));
    ReleaseKernelMounts(entry.path().string());
    fs::remove_all(entry.path(), ec);
    if (!k->spec.session_id.empty()) {
      k->state = {k->spec.session_id,
                  protocol::KernelStatus::kTerminated,
                  std::nullopt,
                  "agent-restarted",
                  "",
                  {}};
      std::lock_guard<std::mutex> lock(mu_);
      kernels_[k->spec.session_id] = k;
    }
  }
  return adopt;
}

// Containers under our runc root without a kernel directory are leftovers.
void RuncBackend::DeleteStrayContainers() const {
  std::error_code ec;
  auto list = server::RunProcess(Runc({"list", "-q"}), server::StdoutOnly());
  std::istringstream ids(list.output);
  std::string prefix = options_.agent_id + ".";
  for (std::string id; std::getline(ids, id);) {
    std::string session = id.rfind(prefix, 0) == 0 ? id.substr(prefix.size()) : id;
    if (!id.empty() && !fs::exists(fs::path(options_.state_dir) / "kernels" / session, ec)) {
      server::RunProcess(Runc({"delete", "--force", id}));
    }
  }
}

Status RuncBackend::Resume(std::vector<std::shared_ptr<Kernel>> const& adopted) {
  bool bridged = false;
  for (auto const& k : adopted) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      kernels_[k->spec.session_id] = k;
    }
    bridged = bridged || k->net.address != 0;
    Spawn([this, k] { ReadLoop(k); });
  }
  if (bridged && options_.bridge) {
    // Re-adopted kernels keep their veths on the bridge; the rules are loaded again (an
    // agent upgrade may have changed them) in one nft transaction.
    std::lock_guard<std::mutex> lock(bridge_mu_);
    auto s = EnsureBridge(*options_.bridge, options_.state_dir + "/network.nft");
    if (!s.ok()) return Status(s.code(), "bridge network: " + s.message());
    bridge_ready_ = true;
  }
  if (!options_.gpus.empty() && options_.gpu_reconcile_interval.count() > 0) {
    reconciler_ = std::make_unique<GpuReconciler>(options_.nvml_library, options_.gpu_reconcile,
                                                  [this] { return ReconcileTargets(); });
    reconciler_->Start(options_.gpu_reconcile_interval);
  }
  return Status();
}

StatusOr<KernelNetwork> RuncBackend::JoinBridge(Kernel& k) {
  if (!options_.bridge) {
    return Status(StatusCode::kFailedPrecondition,
                  "network mode bridge is off on this agent (bai-agent --network-pool)");
  }
  BridgeConfig const& config = *options_.bridge;
  {
    std::lock_guard<std::mutex> lock(bridge_mu_);
    if (!bridge_ready_) {
      auto s = EnsureBridge(config, options_.state_dir + "/network.nft");
      if (!s.ok()) return Status(s.code(), "cannot set up the bridge network: " + s.message());
      bridge_ready_ = true;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::uint32_t> used;
  for (auto const& [id, other] : kernels_) {
    if (other->net.address != 0) used.insert(other->net.address);
  }
  auto address = PickAddress(config.pool, used);
  if (!address) {
    return Status(StatusCode::kResourceExhausted,
                  "no free address in the network pool " + FormatIpv4Net(config.pool));
  }
  k.net = {config.bridge, HostInterface(k.spec.session_id), *address, config.pool.prefix,
           Gateway(config.pool)};
  return k.net;
}

std::vector<ReconcileTarget> RuncBackend::ReconcileTargets() const {
  std::vector<ReconcileTarget> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto const& [id, k] : kernels_) {
    if (k->tearing_down || k->state.status != protocol::KernelStatus::kRunning) continue;
    std::string ledger = k->dir + "/gpushim/ledger";
    std::error_code ec;
    if (!fs::exists(ledger, ec)) continue;  // no fraction of a GPU
    out.push_back({id, ledger,
                   "/sys/fs/cgroup/" + CgroupProcsFile(cgroup_version_, k->cgroups_path),
                   k->dir + "/gpu-usage.json"});
  }
  return out;
}

std::string RuncBackend::ContainerId(std::string const& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(session_id);
  return it == kernels_.end() ? "" : it->second->container_id;
}

std::string RuncBackend::CgroupsPath(std::string const& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(session_id);
  return it == kernels_.end() ? "" : it->second->cgroups_path;
}

void RuncBackend::Create(KernelSpec const& spec) {
  auto k = std::make_shared<Kernel>();
  k->spec = spec;
  k->state = {spec.session_id, protocol::KernelStatus::kPreparing, std::nullopt, "", "", {}};
  // runc ids allow [A-Za-z0-9_+.-]; the agent id keeps runs of different agents apart.
  k->container_id = options_.agent_id + "." + spec.session_id;
  k->dir = options_.state_dir + "/kernels/" + spec.session_id;
  k->cgroups_path = "/bai/" + options_.agent_id + "/" + spec.session_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || kernels_.count(spec.session_id)) return;  // a repeated create is a no-op
    kernels_[spec.session_id] = k;
  }
  Emit(k->state);
  Spawn([this, k] { Start(k); });
}

void RuncBackend::FailStart(std::shared_ptr<Kernel> const& k, std::string const& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    k->log += "bai-agent: " + why + "\n";
  }
  // A kernel that never ran ends in ERROR (the session too), with the reason in words.
  Teardown(k, "kernel-creation-failed: " + why, std::nullopt, false);
  KernelReport failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (k->state.reason.rfind("kernel-creation-failed", 0) != 0) return;  // destroyed meanwhile
    k->state.status = protocol::KernelStatus::kError;
    failed = k->state;
  }
  Emit(failed);
}

bool RuncBackend::DestroyedMeanwhile(Kernel& k) {
  // Destroyed while `runc run` was still creating it: the container appeared after Teardown
  // looked, so it is removed here.
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!k.tearing_down) return false;
  }
  server::RunProcess(Runc({"delete", "--force", k.container_id}));
  std::error_code ignored;
  ReleaseKernelMounts(k.dir);
  fs::remove_all(k.dir, ignored);
  KernelNetwork net;
  {
    std::lock_guard<std::mutex> lock(mu_);
    net = std::exchange(k.net, KernelNetwork{});
  }
  if (net.address != 0) DeleteHostInterface(net.host_if);
  return true;
}

std::string RuncBackend::PlaceCpus(Kernel& k) {
  // Its CPUs: the least loaded by the kernels already here.
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, int> load;
  for (auto const& [id, other] : kernels_) {
    if (other.get() == &k) continue;
    for (int c : other->cpus) ++load[c];
  }
  auto cpu = k.spec.resources.find("cpu");
  k.cpus = PickCpus(AllowedCpus(), load,
                    cpu == k.spec.resources.end() ? protocol::Decimal::Unlimited() : cpu->second);
  return CpuList(k.cpus);
}

StatusOr<std::string> RuncBackend::Assemble(Kernel& k, Image image) {
  if (auto s = PrepareRunDir(k.dir, options_); !s.ok()) return s;
  if (!image.layers.empty()) {
    // A layered image: the kernel's own overlay of its layers (gone with the kernel:
    // ReleaseKernelMounts), read-only to the kernel like a flat image's root; the upper
    // directory holds what runc makes (mount points).
    image.rootfs = k.dir + "/rootfs";
    if (auto s =
            MountOverlay(image.layers, k.dir + "/root.upper", k.dir + "/root.work", image.rootfs);
        !s.ok()) {
      return s;
    }
  }
  auto apps = KernelApps(image.labels, k.spec.preopen_ports, image.rootfs);
  if (!apps.ok()) return apps.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    k.state.service_ports = *apps;
  }
  // Who the kernel runs as, and (for an image of its own, not a built-in) its /etc/passwd and
  // /etc/group with that user in them.
  KernelUser user{options_.uid, options_.gid, "work"};
  std::string etc_dir;
  if (image.host_mounts.empty()) {
    auto read = [&](char const* rel) {
      auto text = server::ReadFileInRoot(image.rootfs, rel, 4 << 20);
      return text.ok() ? *text : std::string();
    };
    std::string passwd = read("etc/passwd"), group = read("etc/group");
    if (!image.user.empty() &&
        SandboxExceptionsFor(options_.sandbox_exceptions, image).count("image-user")) {
      auto resolved = ResolveImageUser(image.user, passwd, group);
      if (!resolved.ok()) return resolved.status();
      user = *resolved;
    }
    auto etc = WriteKernelEtc(k.dir, PasswdWithUser(passwd, user), GroupWithUser(group, user));
    if (!etc.ok()) return etc.status();
    etc_dir = *etc;
  }
  // What the kernel's user writes (its runner's socket, its GPU ledger) is that user's.
  RuncOptions as_user = options_;
  as_user.uid = user.uid;
  as_user.gid = user.gid;
  if (user.uid != options_.uid || user.gid != options_.gid) {
    if (auto s = PrepareRunDir(k.dir, as_user); !s.ok()) return s;
  }
  std::string image_command = ImageCommandLine(image);
  if (k.spec.session_type == "batch" &&
      (!k.spec.startup_command || k.spec.startup_command->empty()) && image_command.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "a batch session needs a command: none was given and the image " + image.name +
                      " names no Entrypoint or Cmd");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    k.image_command = std::move(image_command);
  }
  if (options_.scratch == kScratchDisk) {
    auto s = PrepareDiskScratch(k.dir, {options_.scratch, options_.home_size, options_.tmp_size},
                                user.uid, user.gid);
    if (!s.ok()) return Status(s.code(), "scratch: " + s.message());
  }
  GpuPlan gpus;
  if (!k.spec.devices.empty()) {
    auto plan =
        PlanGpus(options_.gpus, k.spec.devices, options_.gpu_sharing, quanta_, k.spec.session_id);
    if (!plan.ok()) return plan.status();
    gpus = *std::move(plan);
    {
      std::lock_guard<std::mutex> lock(mu_);
      k.gpu_quanta = gpus.quanta;  // given back by Teardown, also when the start fails
    }
    auto stamps = PrepareGpuShim(k.dir, k.spec.session_id, gpus, as_user);
    if (!stamps.ok()) return stamps.status();
    std::lock_guard<std::mutex> lock(mu_);
    k.gpu_stamps = *stamps;
  }
  std::string cpu_list = PlaceCpus(k);
  std::string mode = k.spec.network.empty() ? options_.network_default : k.spec.network;
  KernelNetwork net;
  if (mode == kNetworkBridge) {
    auto joined = JoinBridge(k);
    if (!joined.ok()) return joined.status();
    net = *joined;
    if (auto s = WriteResolvConf(k.dir); !s.ok()) return s;
  }
  KernelRecord record{k.spec.session_id,
                      k.spec.session_name,
                      k.spec.session_type,
                      k.spec.image,
                      k.cgroups_path,
                      k.container_id,
                      gpus.quanta,
                      k.cpus,
                      mode,
                      std::nullopt};
  if (net.address != 0) record.network = net;
  BundleLayout layout{k.dir, runner_dir_, k.cgroups_path,
                      &gpus, cpu_list,    net.address != 0 ? &net : nullptr,
                      &user, etc_dir};
  if (auto s = WriteBundle(k.dir, record, OciConfig(k.spec, image, options_, layout)); !s.ok()) {
    return s;
  }
  return mode;
}

void RuncBackend::MarkRunning(std::shared_ptr<Kernel> const& k, std::string const& mode) {
  KernelReport running;
  bool batch = false;
  std::string command;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (k->tearing_down) return;
    k->state.status = protocol::KernelStatus::kRunning;
    // Sizes were checked when the agent started.
    auto bytes = [](std::string const& size) {
      auto b = ScratchSizeBytes("size", size);
      return b.ok() ? *b : 0;
    };
    k->state.setup = server::agent_protocol::KernelSetup{
        mode, options_.scratch, bytes(options_.home_size), bytes(options_.tmp_size)};
    running = k->state;
    cv_.notify_all();
    // A batch session without a command runs its image's (Entrypoint, Cmd, WorkingDir).
    if (k->spec.session_type == "batch") {
      command = k->spec.startup_command && !k->spec.startup_command->empty()
                    ? *k->spec.startup_command
                    : k->image_command;
    }
    batch = !command.empty();
    if (batch) k->runs[kBatchRunId] = {};
  }
  Emit(running);
  if (batch) SendToRunner(*k, rp::Batch{kBatchRunId, "", "", command});
  ReadLoop(k);
}

void RuncBackend::Start(std::shared_ptr<Kernel> k) {
  // A registry image this agent lacks is pulled first: PREPARING reports say how far, at most
  // one a second (and the last).
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  auto image = options_.images->Provide(k->spec, [this, k, last](PullProgress const& p) {
    auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::seconds(1) && p.done < p.total) return;
    *last = now;
    KernelReport pulling;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (k->tearing_down) return;
      pulling = k->state;
    }
    pulling.status = protocol::KernelStatus::kPreparing;
    pulling.pull = server::agent_protocol::PullState{k->spec.image, p.done, p.total};
    Emit(pulling);
  });
  if (!image.ok()) return FailStart(k, image.status().message());
  auto mode = Assemble(*k, *image);
  if (!mode.ok()) return FailStart(k, mode.status().message());
  server::ProcessOptions run_options;
  run_options.capture = false;
  run_options.log_path = k->dir + "/runc.log";
  run_options.timeout = options_.start_timeout;
  auto run = server::RunProcess(Runc({"run", "--detach", "--bundle", k->dir, "--pid-file",
                                      k->dir + "/init.pid", k->container_id}),
                                run_options);
  if (run.exit_code != 0) {
    std::string log = ReadWholeFile(k->dir + "/runc.log");
    if (log.size() > 2000) log = log.substr(log.size() - 2000);
    return FailStart(k, "runc run failed (" + std::to_string(run.exit_code) + "): " + log);
  }
  if (DestroyedMeanwhile(*k)) return;
  if (!ConnectRunner(*k, options_.start_timeout)) {
    if (DestroyedMeanwhile(*k)) return;
    return FailStart(k, "the kernel runner did not answer");
  }
  WriteDotfiles(*k);
  RunBootstrap(*k);
  if (DestroyedMeanwhile(*k)) return;
  MarkRunning(k, *mode);  // and reads its messages until it ends
}

std::function<bool(pid_t)> RuncBackend::OwnPeer(Kernel const& k) const {
  return [version = cgroup_version_, path = k.cgroups_path](pid_t pid) {
    return ProcessInCgroup(pid, version, path);
  };
}

bool RuncBackend::OomKilled(Kernel const& k) const {
  // Not a path join: the v2 file name is absolute within the cgroup root.
  std::string text =
      ReadWholeFile("/sys/fs/cgroup/" + OomCounterFile(cgroup_version_, k.cgroups_path));
  static std::regex const kOom(R"((^|\n)oom_kill (\d+))");
  std::smatch m;
  return std::regex_search(text, m, kOom) && std::stoll(m[2]) > 0;
}

std::optional<server::agent_protocol::KernelUsage> RuncBackend::Sample(Kernel const& k) const {
  auto usage = ReadCgroupUsage(cgroup_version_, k.cgroups_path);
  if (!usage) return std::nullopt;
  if (!k.spec.devices.empty()) {
    usage->gpu_mem = GpuMemoryHeld(ReadWholeFile(fs::path(k.dir) / "gpu-usage.json")).value_or(0);
  }
  return usage;
}

std::map<std::string, server::agent_protocol::KernelUsage> RuncBackend::Usage() {
  std::vector<std::shared_ptr<Kernel>> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto const& [id, k] : kernels_) {
      if (k->state.status == protocol::KernelStatus::kRunning && !k->tearing_down)
        running.push_back(k);
    }
  }
  // Fields read here (spec, dir, cgroups_path) are fixed while the kernel lives.
  std::map<std::string, server::agent_protocol::KernelUsage> out;
  for (auto const& k : running) {
    if (auto u = Sample(*k)) out[k->spec.session_id] = *u;
  }
  return out;
}

std::map<std::string, std::vector<server::DeviceAllocation>> RuncBackend::Devices() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<server::DeviceAllocation>> out;
  for (auto const& [id, k] : kernels_) {
    if (!k->state.Ended() && !k->spec.devices.empty()) out[id] = k->spec.devices;
  }
  return out;
}

void RuncBackend::Teardown(std::shared_ptr<Kernel> k, std::string reason,
                           std::optional<std::int64_t> exit_code, bool report) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (k->tearing_down) return;
    k->tearing_down = true;
  }
  cv_.notify_all();
  std::error_code ec;
  if (fs::exists(fs::path(k->dir) / "init.pid", ec)) {
    // SIGTERM, a grace period, then SIGKILL (DECISIONS.md "Containers").
    server::RunProcess(Runc({"kill", k->container_id, "TERM"}));
    pid_t pid =
        static_cast<pid_t>(std::atoll(ReadWholeFile(fs::path(k->dir) / "init.pid").c_str()));
    auto deadline = std::chrono::steady_clock::now() + options_.grace;
    while (pid > 0 && kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::string stat = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
      auto close_paren = stat.rfind(')');
      if (close_paren != std::string::npos && close_paren + 2 < stat.size() &&
          stat[close_paren + 2] == 'Z')
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // The last figures, before the cgroup goes with the container (its last_stat).
  auto usage = Sample(*k);
  server::RunProcess(Runc({"delete", "--force", k->container_id}));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (k->sock >= 0) {
      shutdown(k->sock, SHUT_RDWR);
    }
  }
  ReleaseKernelMounts(k->dir);
  fs::remove_all(k->dir, ec);
  KernelNetwork net;
  {
    std::lock_guard<std::mutex> lock(mu_);
    net = k->net;
  }
  if (net.address != 0) {
    // Gone with the container's namespace already, normally; a restart of the same session
    // reuses the name, so it must not linger.
    DeleteHostInterface(net.host_if);
  }
  KernelReport done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    k->net = {};
    for (auto const& [uuid, q] : k->gpu_quanta) quanta_.Give(uuid, q);
    k->gpu_quanta.clear();
    for (auto const& stamp : k->gpu_stamps) fs::remove(stamp, ec);
    k->gpu_stamps.clear();
    k->state.status = protocol::KernelStatus::kTerminated;
    k->state.reason = reason;
    k->state.exit_code = exit_code;
    k->state.logs = k->log;
    k->state.usage = usage;
    done = k->state;
  }
  if (report) Emit(done);
}

void RuncBackend::Destroy(std::string const& session_id, std::string const& reason) {
  std::shared_ptr<Kernel> k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(session_id);
    if (it == kernels_.end() || it->second->tearing_down) return;
    k = it->second;
  }
  Spawn([this, k, reason] {
    Teardown(k, reason.empty() ? "user-requested" : reason, std::nullopt, true);
  });
}

StatusOr<std::shared_ptr<RuncBackend::Kernel>> RuncBackend::Running(
    std::string const& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(session_id);
  if (it == kernels_.end() || it->second->state.status != protocol::KernelStatus::kRunning ||
      it->second->tearing_down) {
    return Status(StatusCode::kNotFound, "no running kernel " + session_id);
  }
  return it->second;
}

Status RuncBackend::Restart(std::string const& session_id) {
  auto running = Running(session_id);
  if (!running.ok()) return running.status();
  std::shared_ptr<Kernel> old = *running;
  Teardown(old, "restarting", std::nullopt, /*report=*/false);
  auto fresh = std::make_shared<Kernel>();
  fresh->spec = old->spec;
  fresh->state = {session_id, protocol::KernelStatus::kPreparing, std::nullopt, "", "", {}};
  fresh->container_id = old->container_id;
  fresh->dir = old->dir;
  fresh->cgroups_path = old->cgroups_path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh->log = old->log;
    if (stopping_) return Status(StatusCode::kCancelled, "the agent is stopping");
    kernels_[session_id] = fresh;
  }
  Spawn([this, fresh] { Start(fresh); });
  std::unique_lock<std::mutex> lock(mu_);
  bool settled = cv_.wait_for(lock, options_.start_timeout + std::chrono::seconds(5), [&] {
    return fresh->state.status != protocol::KernelStatus::kPreparing;
  });
  if (!settled || fresh->state.status != protocol::KernelStatus::kRunning) {
    return Status(
        StatusCode::kInternal,
        "the kernel did not come back: " +
            (fresh->state.reason.empty() ? std::string(protocol::ToString(fresh->state.status))
                                         : fresh->state.reason));
  }
  return Status();
}

std::vector<KernelReport> RuncBackend::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KernelReport> out;
  for (auto const& [id, k] : kernels_) {
    KernelReport r = k->state;
    r.logs = k->log;
    out.push_back(r);
  }
  return out;
}

void RuncBackend::Acknowledge(std::string const& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(session_id);
  if (it != kernels_.end() && it->second->state.Ended()) {
    kernels_.erase(it);
  }
}

}  // namespace bai::agent
