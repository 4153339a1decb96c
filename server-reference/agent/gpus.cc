// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/gpus.h"

#include "server-reference/common/exec/process.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>

namespace bai::agent {

namespace fs = std::filesystem;
using protocol::Decimal;
using protocol::Int128;

namespace {
constexpr char kDeviceSlot[] = "cuda.device";
constexpr char kSharesSlot[] = "cuda.shares";
}  // namespace

Status ValidateGpuSharing(GpuSharing const& s) {
  auto bad = [](std::string const& what) { return Status(StatusCode::kInvalidArgument, what); };
  if (s.mode != "timeslice" && s.mode != "mps" && s.mode != "off") {
    return bad("--gpu-sharing must be timeslice, mps or off");
  }
  if (s.compute != "hard" && s.compute != "soft") return bad("--gpu-compute must be hard or soft");
  if (s.policy != "evenly" && s.policy != "fill") {
    return bad("--gpu-allocation must be evenly or fill");
  }
  if (s.shares_per_gpu.is_unlimited() || s.shares_per_gpu < Decimal::FromInteger(1) ||
      s.shares_per_gpu.units() % (Decimal::kUnitsPerOne / 100) != 0) {
    return bad("--gpu-shares must be at least 1, in steps of 0.01");
  }
  if (s.period_ms < 10 || s.period_ms > 10000) return bad("--gpu-period must be 10-10000 ms");
  return Status();
}

void AddGpuSlots(protocol::ResourceSlots& slots, std::size_t gpus, GpuSharing const& sharing) {
  if (gpus == 0) return;
  slots[kDeviceSlot] = Decimal::FromInteger(static_cast<std::int64_t>(gpus));
  if (sharing.mode == "off") return;
  auto total = Decimal::FromUnits(sharing.shares_per_gpu.units() * static_cast<Int128>(gpus));
  if (total) slots[kSharesSlot] = *total;
}

std::vector<server::agent_protocol::DeviceInfo> GpuDeviceInfos(std::vector<GpuDevice> const& gpus,
                                                               GpuSharing const& sharing) {
  std::vector<server::agent_protocol::DeviceInfo> out;
  for (auto const& g : gpus) {
    out.push_back({"cuda", g.index, g.uuid, g.name, g.memory_bytes,
                   sharing.mode == "off" ? Decimal() : sharing.shares_per_gpu});
  }
  return out;
}

std::optional<Quanta> QuantaMap::Take(std::string const& uuid, std::size_t count) {
  std::lock_guard lock(mu_);
  Quanta& held = held_[uuid];
  if (count == 0 || gpushim::kQuantaPerPeriod - held.count() < count) return std::nullopt;
  // First the longest free stretches: fewer stretch ends, less work run past them.
  Quanta taken;
  std::size_t left = count;
  while (left > 0) {
    std::size_t best_start = 0;
    std::size_t best_len = 0;
    for (std::size_t i = 0; i < gpushim::kQuantaPerPeriod;) {
      if (held.test(i) || taken.test(i)) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < gpushim::kQuantaPerPeriod && !held.test(j) && !taken.test(j)) ++j;
      // The shortest stretch that still holds everything left, else the longest.
      std::size_t len = j - i;
      bool better = best_len == 0 || (len >= left && (best_len < left || len < best_len)) ||
                    (best_len < left && len > best_len);
      if (better) {
        best_start = i;
        best_len = len;
      }
      i = j;
    }
    std::size_t n = std::min(best_len, left);
    for (std::size_t k = 0; k < n; ++k) taken.set(best_start + k);
    left -= n;
  }
  held |= taken;
  return taken;
}

void QuantaMap::Give(std::string const& uuid, Quanta const& quanta) {
  std::lock_guard lock(mu_);
  held_[uuid] &= ~quanta;
}

bool QuantaMap::Hold(std::string const& uuid, Quanta const& quanta) {
  std::lock_guard lock(mu_);
  Quanta& held = held_[uuid];
  bool clash = (held & quanta).any();
  held |= quanta;
  return !clash;
}

std::size_t QuantaMap::Free(std::string const& uuid) const {
  std::lock_guard lock(mu_);
  auto it = held_.find(uuid);
  return gpushim::kQuantaPerPeriod - (it == held_.end() ? 0 : it->second.count());
}

StatusOr<GpuPlan> PlanGpus(std::vector<GpuDevice> const& gpus,
                           std::vector<server::DeviceAllocation> const& allocations,
                           GpuSharing const& sharing, QuantaMap& quanta, std::string const& self) {
  GpuPlan plan;
  if (allocations.empty()) return plan;
  struct Slot {
    GpuDevice gpu;
    Decimal shares;  // zero: the whole device
  };
  std::vector<Slot> slots;
  for (auto const& a : allocations) {
    auto g =
        std::find_if(gpus.begin(), gpus.end(), [&](auto const& d) { return d.uuid == a.uuid; });
    if (g == gpus.end()) {
      return Status(StatusCode::kFailedPrecondition, "this agent has no GPU " + a.uuid);
    }
    if (a.slot != kDeviceSlot && a.slot != kSharesSlot) {
      return Status(StatusCode::kInvalidArgument, "unknown device slot " + a.slot);
    }
    if (a.slot == kSharesSlot && sharing.mode == "off") {
      return Status(StatusCode::kFailedPrecondition,
                    "GPU sharing is off on this agent: no fractions of " + a.uuid);
    }
    auto same = std::find_if(slots.begin(), slots.end(),
                             [&](Slot const& s) { return s.gpu.uuid == a.uuid; });
    if (same != slots.end()) {
      if (same->shares.is_zero() || a.slot == kDeviceSlot) {
        return Status(StatusCode::kInvalidArgument, "GPU " + a.uuid + " allocated twice");
      }
      same->shares = *same->shares.Add(a.amount);
      continue;
    }
    slots.push_back({*g, a.slot == kDeviceSlot ? Decimal() : a.amount});
  }

  bool fractional = false;
  std::string limits = "version=1\nmode=" + sharing.mode + "\ncompute=" + sharing.compute +
                       "\nledger=" + kLedgerInKernel +
                       "\ncontext_bytes=" + std::to_string(sharing.context_bytes) +
                       "\nperiod_ms=" + std::to_string(sharing.period_ms) + "\n";
  std::string visible;
  std::string mps_memory;
  int mps_threads = 100;
  auto give_back = [&] {
    for (auto const& [uuid, q] : plan.quanta) quanta.Give(uuid, q);
  };
  for (std::size_t i = 0; i < slots.size(); ++i) {
    Slot const& s = slots[i];
    std::string n = std::to_string(i);
    plan.devices.push_back(s.gpu);
    visible += (visible.empty() ? "" : ",") + n;
    limits += "device." + n + ".uuid=" + s.gpu.uuid + "\n";
    std::uint64_t cap = 0;
    if (!s.shares.is_zero()) {
      fractional = true;
      // The device's worth times the fraction of it, exactly, rounded down to whole bytes.
      Int128 per = sharing.shares_per_gpu.units();
      if (s.shares.units() > per) {
        give_back();
        return Status(StatusCode::kInvalidArgument, "more than one GPU's worth on " + s.gpu.uuid);
      }
      cap = static_cast<std::uint64_t>(static_cast<Int128>(s.gpu.memory_bytes) * s.shares.units() /
                                       per);
      limits += "device." + n + ".memory=" + std::to_string(cap) + "\n";
      if (sharing.mode == "timeslice") {
        auto count = static_cast<std::size_t>(
            std::max<Int128>(1, s.shares.units() * gpushim::kQuantaPerPeriod / per));
        auto got = quanta.Take(s.gpu.uuid, count);
        if (!got) {
          give_back();
          return Status(
              StatusCode::kFailedPrecondition,
              "GPU " + s.gpu.uuid + " has no " + std::to_string(count) + " free time quanta left");
        }
        plan.quanta[s.gpu.uuid] = *got;
        limits += "device." + n + ".quanta=" + gpushim::FormatQuanta(*got) + "\n";
        if (sharing.compute == "soft") {
          limits += "device." + n + ".activity=" + kActivityInKernel + "/" + n + "\n";
          limits += "device." + n + ".activity_self=" + self + "\n";
          plan.activity.emplace_back(i, s.gpu.uuid);
        }
      } else if (sharing.mode == "mps") {
        if (!plan.mps_uuid.empty()) {
          give_back();
          return Status(StatusCode::kFailedPrecondition,
                        "MPS mode: a kernel's fractions must be on one GPU (an MPS client talks "
                        "to one server); ask for whole GPUs, or at most one GPU's worth");
        }
        plan.mps_uuid = s.gpu.uuid;
        int pct = static_cast<int>((s.shares.units() * 100 + per - 1) / per);
        mps_threads = std::min(mps_threads, std::max(1, pct));
        mps_memory += (mps_memory.empty() ? "" : ",") + n + "=" +
                      std::to_string(std::max<std::uint64_t>(1, cap >> 20)) + "M";
      }
    }
    plan.ledger.push_back({s.gpu.uuid, cap});
  }
  plan.env["CUDA_VISIBLE_DEVICES"] = visible;
  if (fractional) {
    plan.limits = limits;
    if (sharing.mode == "mps") {
      plan.env["CUDA_MPS_PIPE_DIRECTORY"] = "/opt/bai/mps/pipe";
      plan.env["CUDA_MPS_LOG_DIRECTORY"] = "/opt/bai/mps/log";
      plan.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(mps_threads);
      plan.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = mps_memory;
    }
  }
  return plan;
}

std::string MpsDir(std::string const& state_dir, std::string const& uuid) {
  return state_dir + "/mps/" + uuid;
}

std::vector<MpsDaemon> PlanMpsDaemons(std::vector<GpuDevice> const& gpus,
                                      std::string const& state_dir, std::string const& control) {
  std::vector<MpsDaemon> out;
  for (auto const& g : gpus) {
    MpsDaemon d;
    d.uuid = g.uuid;
    d.dir = MpsDir(state_dir, g.uuid);
    std::vector<std::string> env = {"/usr/bin/env", "CUDA_VISIBLE_DEVICES=" + g.uuid,
                                    "CUDA_MPS_PIPE_DIRECTORY=" + d.dir + "/pipe",
                                    "CUDA_MPS_LOG_DIRECTORY=" + d.dir + "/log"};
    d.start = env;
    d.start.push_back(control);
    d.start.push_back("-d");
    d.stop = env;
    d.stop.push_back(control);
    out.push_back(std::move(d));
  }
  return out;
}

Status StartMpsDaemons(std::vector<MpsDaemon> const& daemons) {
  Status first;
  for (auto const& d : daemons) {
    std::error_code ec;
    for (char const* sub : {"/pipe", "/log"}) {
      fs::create_directories(d.dir + sub, ec);
      // Kernels run as the work user and must reach the daemon's pipes.
      fs::permissions(d.dir + sub, fs::perms::all, ec);
    }
    server::ProcessOptions o;
    o.timeout = std::chrono::seconds(20);
    auto r = server::RunProcess(d.start, o);
    // A daemon an earlier run of the agent left (with its kernels) is the one to keep.
    bool running = r.output.find("already running") != std::string::npos;
    if (r.exit_code != 0 && !running && first.ok()) {
      first = Status(StatusCode::kUnavailable,
                     "MPS control daemon for " + d.uuid + " did not start: " + r.output);
    }
  }
  return first;
}

void StopMpsDaemons(std::vector<MpsDaemon> const& daemons) {
  for (auto const& d : daemons) {
    server::ProcessOptions o;
    o.stdin_data = "quit\n";
    o.timeout = std::chrono::seconds(20);
    server::RunProcess(d.stop, o);
  }
}

GpuFiles FindGpuFiles(std::string const& nvml_library, std::string const& shim_path) {
  GpuFiles f;
  std::error_code ec;
  for (char const* node : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
    if (fs::exists(node, ec)) f.device_nodes.push_back(node);
  }
  if (void* lib = dlopen(nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    Dl_info info{};
    void* sym = dlsym(lib, "nvmlInit_v2");
    if (sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr) {
      fs::path real = fs::canonical(info.dli_fname, ec);
      if (!ec) f.lib_dir = real.parent_path().string();
    }
    dlclose(lib);
  }
  if (!f.lib_dir.empty()) {
    static constexpr char const* kPrefixes[] = {"libcuda.so",
                                                "libnvidia-ml.so",
                                                "libnvidia-ptxjitcompiler.so",
                                                "libnvidia-nvvm.so",
                                                "libcudadebugger.so",
                                                "libnvidia-gpucomp.so",
                                                "libnvidia-allocator.so"};
    for (auto const& e : fs::directory_iterator(f.lib_dir, ec)) {
      std::string name = e.path().filename().string();
      for (char const* p : kPrefixes) {
        if (name.rfind(p, 0) == 0) f.libraries.push_back(name);
      }
    }
    std::sort(f.libraries.begin(), f.libraries.end());
  }
  std::vector<std::string> candidates;
  if (char const* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t start = 0; start <= p.size();) {
      std::size_t colon = p.find(':', start);
      if (colon == std::string::npos) colon = p.size();
      if (colon > start) candidates.push_back(p.substr(start, colon - start) + "/nvidia-smi");
      start = colon + 1;
    }
  }
  if (!f.lib_dir.empty()) candidates.push_back(f.lib_dir + "/../bin/nvidia-smi");
  for (auto const& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) {
      f.smi = fs::canonical(c, ec).string();
      break;
    }
  }
  if (access(shim_path.c_str(), R_OK) == 0) f.shim = fs::canonical(shim_path, ec).string();
  return f;
}

}  // namespace bai::agent
