// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/runc_backend.h"

#include "bai/protocol/resource.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"
#include "server-reference/agent/kernel_bundle.h"
#include "server-reference/agent/kernel_usage.h"
#include "server-reference/agent/network_host.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/common/exec/process.h"
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

namespace {

constexpr std::size_t kMaxLog = 1u << 20;  // the tail of a kernel's output kept for /logs
constexpr char kBatchRunId[] = "batch-job";

}  // namespace

namespace {

// The container's pid in an OCI state document (`runc state`, or a hook's stdin).
std::optional<long long> StatePid(std::string const& state_json) {
  auto state = internal::ParseJson(state_json);
  if (!state || !state->contains("pid") || !(*state)["pid"].is_number_integer()) {
    return std::nullopt;
  }
  return (*state)["pid"].get<long long>();
}

}  // namespace

Status RunHook(std::string const& name, std::string const& state_json,
               std::vector<std::string> const& args) {
  if (name != "loopback-up" && name != "network-up") {
    return Status(StatusCode::kInvalidArgument, "unknown hook " + name);
  }
  auto pid = StatePid(state_json);
  if (!pid) return Status(StatusCode::kInvalidArgument, "no container pid in the hook's state");
  if (name == "network-up") return RunNetworkHook(static_cast<long>(*pid), args);
  std::string ns = "/proc/" + std::to_string(*pid) + "/ns/net";
  int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    if (fd >= 0) close(fd);
    return Status(StatusCode::kInternal, "cannot enter " + ns + ": " + std::strerror(errno));
  }
  close(fd);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    ok = ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  }
  int err = errno;
  if (s >= 0) close(s);
  if (!ok)
    return Status(StatusCode::kInternal, std::string("cannot raise lo: ") + std::strerror(err));
  return Status();
}

// ---------------------------------------------------------------------------------------------

namespace {

constexpr std::size_t kMaxConsole = 32u << 20;  // a run's output kept between two polls
// An execute step answers once this much output waits, and carries at most kMaxStepConsole:
// its answer crosses the control channel, which must never carry one huge message (20 MB of a
// query's output, answered whole, cut the agent's link).
constexpr std::size_t kStepConsole = 256u << 10;
constexpr std::size_t kMaxStepConsole = 1u << 20;

struct RunState {
  /// [stream, text] since the last poll; consecutive chunks of one stream merged.
  std::vector<std::pair<std::string, std::string>> console;
  std::size_t console_bytes = 0;
  std::string status = "running";  // running | waiting-input | finished
  int exit_code = 0;
  std::string prompt;  ///< of the latest waiting-input
  bool is_password = false;
};

// Takes at most `budget` bytes of a run's output for one answer, oldest first (a chunk split
// where the budget ends); the rest waits for the next poll.
std::vector<std::pair<std::string, std::string>> TakeConsole(RunState& run, std::size_t budget) {
  std::vector<std::pair<std::string, std::string>> out;
  auto& console = run.console;
  std::size_t taken_chunks = 0;
  for (auto& [stream, text] : console) {
    if (budget == 0) break;
    if (text.size() <= budget) {
      budget -= text.size();
      run.console_bytes -= text.size();
      out.emplace_back(stream, std::move(text));
      ++taken_chunks;
    } else {
      out.emplace_back(stream, text.substr(0, budget));
      text.erase(0, budget);
      run.console_bytes -= budget;
      budget = 0;
    }
  }
  console.erase(console.begin(), console.begin() + static_cast<std::ptrdiff_t>(taken_chunks));
  return out;
}

// Adds output to what the next poll of a run returns; consecutive chunks of one stream merge
// (PROTOCOL.md §5.5). A run nobody polls keeps its last kMaxConsole bytes and says what it
// dropped.
void AddConsole(RunState& run, std::string const& stream, std::string const& data) {
  auto& console = run.console;
  if (!console.empty() && console.back().first == stream) {
    console.back().second += data;
  } else {
    console.emplace_back(stream, data);
  }
  run.console_bytes += data.size();
  if (run.console_bytes <= kMaxConsole) return;
  std::size_t dropped = 0;
  while (run.console_bytes > kMaxConsole / 2 && console.size() > 1) {
    dropped += console.front().second.size();
    run.console_bytes -= console.front().second.size();
    console.erase(console.begin());
  }
  if (run.console_bytes > kMaxConsole / 2) {
    std::size_t cut = run.console_bytes - kMaxConsole / 2;
    console.front().second.erase(0, cut);
    dropped += cut;
    run.console_bytes -= cut;
  }
  console.insert(console.begin(),
                 {"stderr", "[bai: " + std::to_string(dropped) +
                                " bytes of output dropped here: not polled in time]\n"});
}

}  // namespace

struct RuncBackend::Kernel {
  KernelSpec spec;
  KernelReport state;
  std::string container_id;
  std::string dir;
  std::string cgroups_path;
  int sock = -1;
  bool tearing_down = false;
  std::string log;                           // tail of all output
  std::map<std::string, Quanta> gpu_quanta;  // GPU time quanta it holds, by device UUID
  std::vector<std::string> gpu_stamps;       // its activity stamp files (soft mode)
  std::vector<int> cpus;                     // its cpuset (PickCpus)
  KernelNetwork net;                         // bridge mode: its veth and address; else 0

  std::map<std::string, RunState> runs;
  /// File requests sent to the runner, by request id; the result once it came.
  std::map<std::string, std::optional<rp::FileResult>> files;
  std::mutex write_mu;  // one writer at a time on `sock`
};

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
  std::vector<Worker> threads;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    threads.swap(threads_);
  }
  for (auto& w : threads) w.thread.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, k] : kernels_) {
    if (k->sock >= 0) close(k->sock);
    k->sock = -1;
  }
}

void RuncBackend::Spawn(std::function<void()> fn) {
  std::vector<std::thread> finished;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (it->done->load()) {
        finished.push_back(std::move(it->thread));
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    threads_.push_back({std::thread([fn = std::move(fn), done] {
                          fn();
                          done->store(true);
                        }),
                        done});
  }
  for (auto& t : finished) t.join();  // returned already, or about to
}

std::vector<std::string> RuncBackend::Runc(std::vector<std::string> args) const {
  std::vector<std::string> argv = {options_.runc, "--root", options_.state_dir + "/runc"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Status RuncBackend::Init() {
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

  // Re-adopt or clean up what an earlier run of this agent left.
  std::vector<std::shared_ptr<Kernel>> adopt;
  for (auto const& entry : fs::directory_iterator(fs::path(options_.state_dir) / "kernels", ec)) {
    auto k = std::make_shared<Kernel>();
    k->dir = entry.path().string();
    auto record =
        KernelRecord::FromJson(ReadWholeFile(entry.path() / "kernel.json"),
                               options_.agent_id + "." + entry.path().filename().string());
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
    auto state = server::RunProcess(Runc({"state", k->container_id}), server::StdoutOnly());
    auto sj = internal::ParseJson(state.output);
    bool running = state.exit_code == 0 && sj && sj->value("status", "") == "running";
    k->state = {k->spec.session_id, protocol::KernelStatus::kRunning, std::nullopt, "", "", {}};
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
    ReleaseScratch(entry.path().string());
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
  // Containers under our runc root without a kernel directory are leftovers.
  auto list = server::RunProcess(Runc({"list", "-q"}), server::StdoutOnly());
  std::istringstream ids(list.output);
  std::string prefix = options_.agent_id + ".";
  for (std::string id; std::getline(ids, id);) {
    std::string session = id.rfind(prefix, 0) == 0 ? id.substr(prefix.size()) : id;
    if (!id.empty() && !fs::exists(fs::path(options_.state_dir) / "kernels" / session, ec)) {
      server::RunProcess(Runc({"delete", "--force", id}));
    }
  }
  bool bridged = false;
  for (auto& k : adopt) {
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
  ReleaseScratch(k.dir);
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

StatusOr<std::string> RuncBackend::Assemble(Kernel& k, Image const& image) {
  auto apps = KernelApps(image.labels, k.spec.preopen_ports, image.rootfs);
  if (!apps.ok()) return apps.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    k.state.service_ports = *apps;
  }
  if (auto s = PrepareRunDir(k.dir, options_); !s.ok()) return s;
  if (options_.scratch == kScratchDisk) {
    auto s = PrepareDiskScratch(k.dir, {options_.scratch, options_.home_size, options_.tmp_size},
                                options_.uid, options_.gid);
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
    auto stamps = PrepareGpuShim(k.dir, k.spec.session_id, gpus, options_);
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
                      &gpus, cpu_list,    net.address != 0 ? &net : nullptr};
  if (auto s = WriteBundle(k.dir, record, OciConfig(k.spec, image, options_, layout)); !s.ok()) {
    return s;
  }
  return mode;
}

void RuncBackend::MarkRunning(std::shared_ptr<Kernel> const& k, std::string const& mode) {
  KernelReport running;
  bool batch = false;
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
    batch = k->spec.session_type == "batch" && k->spec.startup_command;
    if (batch) k->runs[kBatchRunId] = {};
  }
  Emit(running);
  if (batch) SendToRunner(*k, rp::Batch{kBatchRunId, "", "", *k->spec.startup_command});
  ReadLoop(k);
}

void RuncBackend::Start(std::shared_ptr<Kernel> k) {
  auto image = options_.images->Find(k->spec.image);
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

namespace {

/// One message from the runner, read here before the kernel's reader owns the socket: byte by
/// byte, so that nothing past it leaves the socket. nullopt at the deadline, at the socket's
/// end, or for a line that is not a message.
std::optional<rp::ToAgent> ReadMessageNow(int sock,
                                          std::chrono::steady_clock::time_point deadline) {
  std::string buffer;
  std::optional<rp::ToAgent> out;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto slice = std::min<std::int64_t>(left.count(), 1000000);
    timeval tv{static_cast<time_t>(slice / 1000000), static_cast<suseconds_t>(slice % 1000000)};
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    ssize_t n = read(sock, &c, 1);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    if (n < 0) continue;
    buffer.push_back(c);
    if (buffer.size() > (64U << 20)) break;
    if (c != '\n') continue;
    std::size_t used = 0;
    auto message = rp::TakeToAgent(buffer, used);  // a framed Output may have bytes to come
    if (!message) continue;
    if (message->ok()) out = *std::move(*message);
    break;
  }
  timeval none{0, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  return out;
}

}  // namespace

void RuncBackend::WriteDotfiles(Kernel& k) {
  // Before the kernel is RUNNING no reader owns the socket: each answer is read here, in turn.
  int n = 0;
  for (auto const& d : k.spec.dotfiles) {
    rp::FileRequest write;
    write.request_id = "dotfile-" + std::to_string(n++);
    write.action = rp::kFileWrite;
    write.path = d.path;
    write.data = d.data;
    write.mode = std::stoi(d.permission, nullptr, 8);
    SendToRunner(k, write);
    auto answer =
        ReadMessageNow(k.sock, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    std::string why = "no answer";
    if (answer) {
      if (auto const* r = std::get_if<rp::FileResult>(&*answer)) {
        if (r->status.ok()) continue;
        why = r->status.message();
      }
    }
    // A dotfile that cannot be written (a directory of that name…) does not stop the kernel;
    // its log says so.
    std::string text = "bai: dotfile " + d.path + " not written: " + why + "\n";
    EmitOutput(k.spec.session_id, "stderr", text);
    std::lock_guard<std::mutex> lock(mu_);
    k.log += text;
  }
}

void RuncBackend::RunBootstrap(Kernel& k) {
  if (!k.spec.bootstrap_script || k.spec.bootstrap_script->empty()) return;
  // Everything of the bootstrap goes to the kernel's stderr (`bai logs`; `bai run` keeps the
  // job's own stdout clean for pipes): the script's output and bai's words about it.
  auto note = [&](std::string const& line) {
    std::string text = "bai: bootstrap script " + line + "\n";
    EmitOutput(k.spec.session_id, "stderr", text);
    std::lock_guard<std::mutex> lock(mu_);
    k.log += text;
  };
  // The script as a file in the work user's home (run by its #! line, else by /bin/sh).
  rp::FileRequest write;
  write.request_id = "bootstrap";
  write.action = rp::kFileWrite;
  write.path = ".bai/bootstrap.sh";
  write.data = *k.spec.bootstrap_script;
  write.mode = 0700;
  SendToRunner(k, write);
  auto now = std::chrono::steady_clock::now;
  auto written = ReadMessageNow(k.sock, now() + std::chrono::seconds(10));
  auto const* wrote = written ? std::get_if<rp::FileResult>(&*written) : nullptr;
  if (wrote == nullptr || !wrote->status.ok()) {
    note("not run: it could not be written (" +
         (wrote != nullptr ? wrote->status.message() : std::string("no answer")) + ")");
    return;
  }
  SendToRunner(k, rp::Batch{"bootstrap", "", "", "./.bai/bootstrap.sh"});
  auto deadline = now() + options_.bootstrap_timeout;
  bool interrupted = false;
  for (;;) {
    auto message = ReadMessageNow(k.sock, deadline);
    if (!message) {
      // Before the deadline: the runner's socket ended (the kernel is going) or sent nonsense.
      if (now() < deadline) return note("ended early: the kernel runner stopped answering");
      if (interrupted) return note("did not end after SIGINT; the kernel starts beside it");
      interrupted = true;
      SendToRunner(k, rp::Interrupt{"bootstrap"});
      note("stopped (SIGINT) after " + std::to_string(options_.bootstrap_timeout.count() / 1000) +
           " s");
      deadline = now() + std::chrono::seconds(10);
      continue;
    }
    if (auto const* out = std::get_if<rp::Output>(&*message)) {
      EmitOutput(k.spec.session_id, "stderr", out->data);
      std::lock_guard<std::mutex> lock(mu_);
      k.log += out->data;
    } else if (auto const* done = std::get_if<rp::Finished>(&*message);
               done != nullptr && done->run_id == "bootstrap") {
      if (done->exit_code != 0 && !interrupted) {
        note("exited with status " + std::to_string(done->exit_code));
      }
      return;
    }
  }
}

void RuncBackend::SendToRunner(Kernel& k, rp::ToRunner const& message) {
  std::string line = rp::Encode(message) + "\n";
  std::lock_guard<std::mutex> lock(k.write_mu);
  if (k.sock >= 0) (void)!::send(k.sock, line.data(), line.size(), MSG_NOSIGNAL);
}

bool RuncBackend::ConnectRunner(Kernel& k, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto connected = ConnectKernelSocket(k.dir + "/run", "runner.sock", OwnPeer(k));
    if (!connected.ok() && connected.status().code() == StatusCode::kPermissionDenied) {
      server::log::Warn("refused the kernel's runner socket",
                        {{"session", k.spec.session_id}, {"reason", connected.status().message()}});
      return false;
    }
    if (connected.ok()) {
      int fd = *connected;
      // The runner greets first; anything else is not our runner.
      std::string hello;
      char c;
      timeval tv{5, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      while (read(fd, &c, 1) == 1 && c != '\n' && hello.size() < 4096) hello.push_back(c);
      timeval none{0, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
      auto greeting = rp::DecodeToAgent(hello);
      if (greeting.ok() && std::holds_alternative<rp::Hello>(*greeting)) {
        std::lock_guard<std::mutex> lock(mu_);
        k.sock = fd;
        return true;
      }
      close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
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

void RuncBackend::ReadLoop(std::shared_ptr<Kernel> k) {
  int fd;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd = k->sock;
  }
  std::string buf;
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (;;) {
      std::size_t used = 0;
      auto taken = rp::TakeToAgent(std::string_view(buf).substr(start), used);
      if (!taken) break;
      start += used;
      auto& msg = *taken;
      if (!msg.ok()) {
        server::log::Warn("refused a kernel runner's message",
                          {{"session", k->spec.session_id}, {"reason", msg.status().message()}});
        continue;
      }
      std::optional<std::int64_t> batch_exit;
      std::optional<KernelReport> logs_update;
      if (auto const* out = std::get_if<rp::Output>(&*msg)) {
        // To the agent's log store and followers first, as it comes.
        EmitOutput(k->spec.session_id, out->stream, out->data);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto const* out = std::get_if<rp::Output>(&*msg)) {
          k->log += out->data;
          // Trimmed in steps, not per chunk: a megabyte moved per chunk was most of the
          // agent's time relaying a large output.
          if (k->log.size() > 2 * kMaxLog) k->log.erase(0, k->log.size() - kMaxLog);
          auto run = k->runs.find(out->run_id);
          // The session's own batch job is read from the log store, never polled: its output
          // is not kept twice.
          if (run != k->runs.end() && out->run_id != kBatchRunId) {
            AddConsole(run->second, out->stream, out->data);
          }
        } else if (auto const* fin = std::get_if<rp::Finished>(&*msg)) {
          auto run = k->runs.find(fin->run_id);
          if (run != k->runs.end()) {
            run->second.status = "finished";
            run->second.exit_code = static_cast<int>(fin->exit_code);
            if (fin->run_id == kBatchRunId) {
              batch_exit = run->second.exit_code;
            } else {
              // The output so far, for GET /session/{id}/logs while the kernel runs.
              logs_update = k->state;
              logs_update->logs = k->log;
            }
          }
        } else if (auto* file = std::get_if<rp::FileResult>(&*msg)) {
          auto pending = k->files.find(file->request_id);
          if (pending != k->files.end()) pending->second = std::move(*file);
        } else if (auto const* waiting = std::get_if<rp::WaitingInput>(&*msg)) {
          auto run = k->runs.find(waiting->run_id);
          if (run != k->runs.end()) {
            run->second.status = "waiting-input";
            run->second.prompt = waiting->prompt;
            run->second.is_password = waiting->is_password;
          }
        }
      }
      cv_.notify_all();
      if (logs_update) Emit(*logs_update);
      if (batch_exit) {
        bool oom_killed = OomKilled(*k);
        std::string reason = oom_killed         ? "oom-killed"
                             : *batch_exit == 0 ? "task-finished"
                                                : "task-failed";
        // A job the memory limit killed a process of did not succeed, whatever its last
        // command said (a shell script goes on after `dd` is killed): 137, as SIGKILL.
        if (oom_killed && *batch_exit == 0) batch_exit = 128 + SIGKILL;
        Teardown(k, reason, batch_exit, true);
        std::lock_guard<std::mutex> lock(mu_);
        std::lock_guard<std::mutex> wlock(k->write_mu);
        if (k->sock >= 0) close(k->sock);
        k->sock = -1;
        return;
      }
    }
    buf.erase(0, start);
  }
  // The runner went away: the container ended by itself (or the agent is stopping). The reader
  // owns the socket: it closes it, under both locks, so no writer uses a stale descriptor.
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> wlock(k->write_mu);
    if (k->sock >= 0) close(k->sock);
    k->sock = -1;
    stopping = stopping_ || k->tearing_down;
  }
  cv_.notify_all();
  if (stopping) return;
  Teardown(k, OomKilled(*k) ? "oom-killed" : "self-terminated", std::nullopt, true);
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
  ReleaseScratch(k->dir);
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

StatusOr<std::string> RuncBackend::CommitTarget(std::string const& session_id,
                                                std::string const& filename,
                                                std::string const& directory) {
  if (auto running = Running(session_id); !running.ok()) return running.status();
  return CommitFile(options_.state_dir + "/commits", session_id, filename, directory);
}

Status RuncBackend::Commit(std::string const& session_id, std::string const& path) {
  std::shared_ptr<Kernel> k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(session_id);
    if (it == kernels_.end()) return Status(StatusCode::kNotFound, "no kernel " + session_id);
    k = it->second;
  }
  auto state = server::RunProcess(Runc({"state", k->container_id}), server::StdoutOnly());
  auto pid = state.exit_code == 0 ? StatePid(state.output) : std::nullopt;
  if (!pid || *pid <= 0) {
    return Status(StatusCode::kFailedPrecondition, "the kernel's container is not running");
  }
  // The container's own view of its files: /proc/PID/root crosses into its mount namespace, so
  // its tmpfs /home/work and /tmp are what tar reads. Symbolic links are stored, not followed.
  std::string root = "/proc/" + std::to_string(*pid) + "/root";
  std::string partial = path + ".partial";
  std::vector<std::string> argv = {"tar",         "--create", "--file",          partial,
                                   "--directory", root,       "--numeric-owner", "--sparse"};
  for (auto const& v : VfolderMounts(k->spec.mounts)) {
    argv.push_back("--exclude=" + v.kernel_path.substr(1));  // member names have no leading '/'
  }
  argv.insert(argv.end(), {"home/work", "tmp"});
  server::ProcessOptions o;
  o.timeout = std::chrono::minutes(30);
  auto tar = server::RunProcess(argv, o);
  // Exit 1 is GNU tar's "some files changed while being read": the archive is still whole.
  if (tar.exit_code != 0 && tar.exit_code != 1) {
    ::unlink(partial.c_str());
    return Status(StatusCode::kInternal, "tar failed (" + std::to_string(tar.exit_code) +
                                             "): " + tar.output.substr(0, 500));
  }
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    ::unlink(partial.c_str());
    return Status(StatusCode::kInternal, "cannot rename " + partial + ": " + std::strerror(errno));
  }
  return Status();
}

StatusOr<int> RuncBackend::OpenStream(std::string const& session_id, rp::StreamOpen const& open,
                                      std::string* status) {
  auto running = Running(session_id);
  if (!running.ok()) return running.status();
  auto fd = ConnectKernelSocket((*running)->dir + "/run", "stream.sock", OwnPeer(**running));
  if (!fd.ok()) {
    server::log::Warn("refused the kernel's stream socket",
                      {{"session", session_id}, {"reason", fd.status().message()}});
    return fd.status().code() == StatusCode::kPermissionDenied
               ? fd.status()
               : Status(StatusCode::kInternal, "cannot reach the kernel's stream socket");
  }
  return HandshakeStream(*fd, open, status);
}

rp::FileResult RuncBackend::Files(std::string const& session_id, rp::FileRequest const& request) {
  rp::FileResult result;
  result.request_id = request.request_id;
  auto running = Running(session_id);
  if (!running.ok()) {
    result.status = running.status();
    return result;
  }
  std::shared_ptr<Kernel> k = *running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    k->files[request.request_id];
  }
  SendToRunner(*k, request);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = k->files.find(request.request_id);
  bool answered = cv_.wait_for(lock, options_.files_timeout, [&] {
    return it->second.has_value() || k->tearing_down || k->sock < 0;
  });
  if (answered && it->second) {
    result = std::move(*it->second);
  } else {
    bool gone = k->tearing_down || k->sock < 0;
    result.status = Status(gone ? StatusCode::kNotFound : StatusCode::kDeadlineExceeded,
                           gone ? "the kernel ended" : "the kernel runner did not answer");
  }
  k->files.erase(it);
  return result;
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

std::string RuncBackend::Execute(server::agent_protocol::Execute const& req) {
  std::string const& run_id = req.run_id;
  std::string const& mode = req.mode;
  protocol::ExecuteResult result;
  result.run_id = run_id;
  result.status = "finished";
  std::shared_ptr<Kernel> k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(req.session_id);
    if (it != kernels_.end() && it->second->state.status == protocol::KernelStatus::kRunning &&
        !it->second->tearing_down) {
      k = it->second;
    }
  }
  if (!k) {
    result.exit_code = 130;
    return protocol::EncodeExecuteResult(result);
  }
  std::optional<rp::ToRunner> op;
  if (mode == "query") {
    op = rp::Query{run_id, req.code};
  } else if (mode == "batch") {
    auto step = [&req](char const* name) {
      auto it = req.options.find(name);
      return it == req.options.end() ? std::string() : it->second;
    };
    rp::Batch batch{run_id, step("clean"), step("build"), step("exec")};
    if (!req.options.count("exec")) batch.exec = req.code;
    op = std::move(batch);
  } else if (mode == "input") {
    op = rp::Input{run_id, req.code};
  } else if (mode == "interrupt") {
    op = rp::Interrupt{run_id};
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (mode == "query" || mode == "batch") k->runs[run_id] = {};
  if (mode == "input") {
    auto it = k->runs.find(run_id);
    if (it != k->runs.end()) it->second.status = "running";
  }
  if (op) SendToRunner(*k, *op);
  if (k->runs.find(run_id) == k->runs.end()) {
    result.exit_code = mode == "interrupt" ? 0 : 130;
    return protocol::EncodeExecuteResult(result);
  }
  // Another request may wait on the same run meanwhile (an interrupt beside a poll) and take
  // its end: the run is looked up again after every wait, never held across one.
  auto ended = [&] {
    auto r = k->runs.find(run_id);
    return r == k->runs.end() || r->second.status != "running" || k->tearing_down ||
           r->second.console_bytes >= kStepConsole;
  };
  if (req.flush_ms > 0) {
    // Streamed: output goes out once a flush interval has passed, not only at the wait's end.
    auto flush = std::chrono::milliseconds(req.flush_ms);
    auto has_output = [&] {
      auto r = k->runs.find(run_id);
      return r != k->runs.end() && !r->second.console.empty();
    };
    if (!cv_.wait_for(lock, std::min(flush, options_.flush_timeout), ended) && !has_output()) {
      cv_.wait_for(lock, options_.flush_timeout - std::min(flush, options_.flush_timeout),
                   [&] { return ended() || has_output(); });
    }
  } else {
    cv_.wait_for(lock, options_.flush_timeout, ended);
  }
  auto it = k->runs.find(run_id);
  if (it == k->runs.end()) {  // its end went to the other request
    result.exit_code = mode == "interrupt" ? 0 : 130;
    return protocol::EncodeExecuteResult(result);
  }
  result.console = TakeConsole(it->second, kMaxStepConsole);
  if (!it->second.console.empty()) {
    result.status = "continued";  // more waits: the end is told once it is all taken
  } else if (it->second.status == "finished") {
    result.exit_code = it->second.exit_code;
    k->runs.erase(it);
  } else if (it->second.status == "waiting-input") {
    result.status = "waiting-input";
    result.prompt = it->second.prompt;
    result.is_password = it->second.is_password;
  } else if (k->tearing_down) {
    result.exit_code = 130;
    k->runs.erase(it);
  } else {
    result.status = "continued";
  }
  return protocol::EncodeExecuteResult(result);
}

}  // namespace bai::agent
