// SPDX-License-Identifier: Apache-2.0
// A kernel's OCI runtime configuration (issue 45): the sandbox (seccomp profile and the
// operator's exceptions), cgroup limits and files, CPU sets, vfolder mounts and config.json
// itself. Pure but for AllowedCpus and HostCgroupVersion, which read the host.
#include "server-reference/agent/oci_config.h"

#include "bai/protocol/resource.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

namespace bai::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Syscalls a kernel never needs; everything else is allowed. With every capability dropped most
/// of these fail anyway: the profile is the second wall, as in other container runtimes.
constexpr char const* kDeniedSyscalls[] = {
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
    "finit_module", "get_kernel_syms", "init_module", "ioperm", "iopl", "kcmp", "kexec_file_load",
    "kexec_load", "keyctl", "lookup_dcookie", "mount", "move_mount", "name_to_handle_at",
    "nfsservctl", "open_by_handle_at", "open_tree", "perf_event_open", "pivot_root", "query_module",
    "quotactl", "reboot", "request_key", "setns", "settimeofday", "stime", "swapoff", "swapon",
    "syslog", "umount", "umount2", "unshare", "uselib", "userfaultfd", "ustat", "vhangup", "fsopen",
    "fsconfig", "fsmount", "fspick",
    // A large, often-exploited kernel surface that
    // Docker's default profile also refuses.
    "io_uring_setup", "io_uring_enter", "io_uring_register"};

/// What each sandbox exception lets back in (SandboxExceptionNames()).
struct ExceptionSyscalls {
  std::string_view name;
  std::vector<std::string_view> syscalls;
};
std::vector<ExceptionSyscalls> const& ExceptionTable() {
  // userns: making user namespaces (rootless containers, bubblewrap, buildah in a kernel) and
  // what one does inside its own namespaces (mounts, pivot_root); the host's namespaces stay
  // out of reach, as the kernel holds no capability in them.
  static auto const* table = new std::vector<ExceptionSyscalls>{
      {"userns",
       {"unshare", "setns", "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree",
        "fsopen", "fsconfig", "fsmount", "fspick"}},
      {"io_uring", {"io_uring_setup", "io_uring_enter", "io_uring_register"}},
      {"perf", {"perf_event_open"}},
      // image-user: the image config's User instead of the work user (image_process.h); no
      // system call of its own.
      {"image-user", {}},
  };
  return *table;
}

}  // namespace

std::vector<std::string> SandboxExceptionNames() {
  std::vector<std::string> out;
  for (auto const& e : ExceptionTable()) out.emplace_back(e.name);
  return out;
}

StatusOr<std::pair<std::string, std::set<std::string>>> ParseSandboxException(
    std::string_view text) {
  auto eq = text.find('=');
  auto usage = [&](std::string why) {
    std::string names;
    for (auto const& n : SandboxExceptionNames()) names += (names.empty() ? "" : ", ") + n;
    return Status(StatusCode::kInvalidArgument,
                  "--sandbox-exception " + std::string(text) + ": " + why +
                      " (expected IMAGE=NAME[,NAME…], NAME one of " + names + ")");
  };
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return usage("no image or no exception");
  }
  std::pair<std::string, std::set<std::string>> out{std::string(text.substr(0, eq)), {}};
  std::string_view rest = text.substr(eq + 1);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto known = SandboxExceptionNames();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return usage("unknown exception \"" + name + "\"");
    }
    out.second.insert(std::move(name));
  }
  return out;
}

std::set<std::string> SandboxExceptionsFor(
    std::map<std::string, std::set<std::string>> const& policy, Image const& image) {
  std::set<std::string> out;
  auto add = [&](std::string const& ref) {
    auto it = policy.find(ref);
    if (it != policy.end()) out.insert(it->second.begin(), it->second.end());
    // "python" names every tag of it; "python:3.11" one ("HOST:PORT/lab/app" every tag of a
    // registry's image: the tag's colon is the one after the last slash).
    auto colon = ref.rfind(':');
    auto slash = ref.rfind('/');
    if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
      it = policy.find(ref.substr(0, colon));
      if (it != policy.end()) out.insert(it->second.begin(), it->second.end());
    }
  };
  add(image.name);
  for (auto const& a : image.aliases) add(a);
  return out;
}

json SeccompProfile(std::set<std::string> const& exceptions) {
  std::set<std::string_view> allowed;
  for (auto const& e : ExceptionTable()) {
    if (exceptions.count(std::string(e.name))) allowed.insert(e.syscalls.begin(), e.syscalls.end());
  }
  json names = json::array();
  for (char const* s : kDeniedSyscalls) {
    if (!allowed.count(s)) names.push_back(s);
  }
  json syscalls = {{{"names", names}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 1}}};
  if (!exceptions.count("userns")) {
    // clone with CLONE_NEWUSER: a user namespace gives its creator every capability inside it
    // (netfilter, packet sockets, mounts), as Docker's default profile refuses. clone3 passes
    // its flags in memory seccomp cannot read, so it answers ENOSYS and libc falls back to
    // clone.
    constexpr std::uint64_t kCloneNewUser = 0x10000000;
    syscalls.push_back({{"names", {"clone"}},
                        {"action", "SCMP_ACT_ERRNO"},
                        {"errnoRet", 1},
                        {"args",
                         {{{"index", 0},
                           {"value", kCloneNewUser},
                           {"valueTwo", kCloneNewUser},
                           {"op", "SCMP_CMP_MASKED_EQ"}}}}});
    syscalls.push_back({{"names", {"clone3"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 38}});
  }
  return {{"defaultAction", "SCMP_ACT_ALLOW"},
          {"architectures", {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}},
          {"syscalls", syscalls}};
}

namespace {

std::string EnvKey(std::string const& kv) { return kv.substr(0, kv.find('=')); }

}  // namespace

std::vector<int> PickCpus(std::vector<int> const& allowed, std::map<int, int> const& load,
                          protocol::Decimal const& cpu) {
  if (allowed.empty()) return {};
  std::size_t want = allowed.size();
  if (!cpu.is_unlimited()) {
    auto units = cpu.units();
    auto whole = static_cast<std::size_t>((units + protocol::Decimal::kUnitsPerOne - 1) /
                                          protocol::Decimal::kUnitsPerOne);
    want = std::clamp<std::size_t>(whole, 1, allowed.size());
  }
  std::vector<int> order = allowed;
  auto load_of = [&load](int c) {
    auto it = load.find(c);
    return it == load.end() ? 0 : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return load_of(a) != load_of(b) ? load_of(a) < load_of(b) : a < b;
  });
  order.resize(want);
  std::sort(order.begin(), order.end());
  return order;
}

std::string CpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::size_t CpuCount(std::string_view list) {
  std::size_t n = 0;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    auto dash = range.find('-');
    int lo = 0, hi = 0;
    auto first = range.substr(0, dash);
    if (std::from_chars(first.data(), first.data() + first.size(), lo).ec != std::errc()) continue;
    hi = lo;
    if (dash != std::string_view::npos) {
      auto last = range.substr(dash + 1);
      if (std::from_chars(last.data(), last.data() + last.size(), hi).ec != std::errc()) continue;
    }
    if (hi >= lo) n += static_cast<std::size_t>(hi - lo + 1);
  }
  return n;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

CgroupLimits LimitsFromResources(protocol::ResourceSlots const& resources, std::int64_t pids) {
  CgroupLimits l;
  l.pids = pids;
  auto finite = [&](char const* key) -> std::optional<protocol::Decimal> {
    auto it = resources.find(key);
    if (it == resources.end() || it->second.is_unlimited()) return std::nullopt;
    return it->second;
  };
  if (auto cpu = finite("cpu")) {
    auto units = cpu->units() * l.cpu_period_us / protocol::Decimal::kUnitsPerOne;
    l.cpu_quota_us = std::max<std::int64_t>(1000, static_cast<std::int64_t>(units));
  }
  if (auto mem = finite("mem")) {
    l.memory_bytes = static_cast<std::int64_t>(mem->units() / protocol::Decimal::kUnitsPerOne);
  }
  return l;
}

std::vector<std::pair<std::string, std::string>> CgroupFiles(int version, std::string const& path,
                                                             CgroupLimits const& l) {
  std::vector<std::pair<std::string, std::string>> out;
  if (version == 2) {
    out.emplace_back(path + "/cpu.max",
                     (l.cpu_quota_us < 0 ? std::string("max") : std::to_string(l.cpu_quota_us)) +
                         " " + std::to_string(l.cpu_period_us));
    out.emplace_back(path + "/memory.max",
                     l.memory_bytes < 0 ? std::string("max") : std::to_string(l.memory_bytes));
    out.emplace_back(path + "/pids.max", std::to_string(l.pids));
    return out;
  }
  out.emplace_back("cpu" + path + "/cpu.cfs_period_us", std::to_string(l.cpu_period_us));
  out.emplace_back("cpu" + path + "/cpu.cfs_quota_us", std::to_string(l.cpu_quota_us));
  if (l.memory_bytes >= 0) {
    out.emplace_back("memory" + path + "/memory.limit_in_bytes", std::to_string(l.memory_bytes));
  }
  out.emplace_back("pids" + path + "/pids.max", std::to_string(l.pids));
  return out;
}

std::string OomCounterFile(int version, std::string const& path) {
  return version == 2 ? path + "/memory.events" : "memory" + path + "/memory.oom_control";
}

std::string CgroupProcsFile(int version, std::string const& path) {
  return version == 2 ? path + "/cgroup.procs" : "memory" + path + "/cgroup.procs";
}

int HostCgroupVersion() {
  std::error_code ec;
  return fs::exists("/sys/fs/cgroup/cgroup.controllers", ec) ? 2 : 1;
}

std::vector<VfolderMount> VfolderMounts(std::vector<server::agent_protocol::Mount> const& mounts) {
  std::vector<VfolderMount> out;
  for (auto const& m : mounts) {
    if (m.host_path.empty()) continue;
    std::string kernel_path = m.kernel_path.empty() ? m.name : m.kernel_path;
    if (kernel_path.empty() || kernel_path.find("..") != std::string::npos) continue;
    if (kernel_path[0] != '/') kernel_path = "/home/work/" + kernel_path;
    out.push_back({kernel_path, m.host_path, m.permission == "ro"});
  }
  return out;
}

std::string ActivityBoardDir(RuncOptions const& o, std::string const& uuid) {
  return o.state_dir + "/gpu-activity/" + uuid;
}

std::string OciConfig(KernelSpec const& spec, Image const& image, RuncOptions const& o,
                      BundleLayout const& layout) {
  CgroupLimits limits = LimitsFromResources(spec.resources, o.pids_limit);
  KernelUser const user = layout.user != nullptr ? *layout.user : KernelUser{o.uid, o.gid, "work"};
  std::string uid = std::to_string(user.uid), gid = std::to_string(user.gid);

  // Environment: the image's, then defaults, then the user's; BACKENDAI_* cannot be overridden.
  std::vector<std::string> env = image.env;
  auto set = [&env](std::string const& kv) {
    std::string key = EnvKey(kv);
    env.erase(
        std::remove_if(env.begin(), env.end(), [&](auto const& e) { return EnvKey(e) == key; }),
        env.end());
    env.push_back(kv);
  };
  // An image's own PATH stays (a framework image's python is in /opt/conda/bin or the like).
  if (std::none_of(env.begin(), env.end(), [](auto const& e) { return EnvKey(e) == "PATH"; })) {
    set("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  }
  set("HOME=/home/work");
  set("USER=" + user.name);
  set("LOGNAME=" + user.name);
  set("SHELL=/bin/sh");
  set("TERM=xterm");
  // ai.backend.envs.corecount: the kernel's CPU count, unless the user sets the variable.
  if (auto names = CoreCountVariables(image.labels); !names.empty()) {
    std::size_t cores = CpuCount(layout.cpus.empty() ? CpuList(AllowedCpus()) : layout.cpus);
    for (auto const& n : names) set(n + "=" + std::to_string(std::max<std::size_t>(1, cores)));
  }
  for (auto const& [k, v] : spec.environ) {
    if (k.empty() || k.find('=') != std::string::npos || k.rfind("BACKENDAI_", 0) == 0) continue;
    set(k + "=" + v);
  }
  std::string hostname = "main1";
  set("BACKENDAI_SESSION_ID=" + spec.session_id);
  set("BACKENDAI_KERNEL_ID=" + spec.session_id);
  set("BACKENDAI_SESSION_NAME=" + spec.session_name);
  set("BACKENDAI_SESSION_TYPE=" + spec.session_type);
  set("BACKENDAI_KERNEL_IMAGE=" + spec.image);
  set("BACKENDAI_CLUSTER_ROLE=main");
  set("BACKENDAI_CLUSTER_IDX=1");
  set("BACKENDAI_CLUSTER_HOST=" + hostname);
  set("BACKENDAI_CLUSTER_SIZE=1");
  set("BACKENDAI_CLUSTER_MODE=single-node");
  set("BACKENDAI_AGENT_ID=" + o.agent_id);
  if (limits.memory_bytes >= 0) set("BACKENDAI_MEM_LIMIT=" + std::to_string(limits.memory_bytes));
  if (limits.cpu_quota_us >= 0) {
    set("BACKENDAI_CPU_LIMIT=" + std::to_string(static_cast<double>(limits.cpu_quota_us) /
                                                static_cast<double>(limits.cpu_period_us)));
  }
  GpuPlan const* gpus =
      layout.gpus != nullptr && !layout.gpus->devices.empty() ? layout.gpus : nullptr;
  if (gpus != nullptr) {
    for (auto const& [k, v] : gpus->env) set(k + "=" + v);
    // The driver's libraries and nvidia-smi, where the container's loader and PATH find them.
    std::string ld = "/opt/bai/nvidia/lib";
    for (auto const& e : env) {
      if (EnvKey(e) == "LD_LIBRARY_PATH" && e.size() > 16) ld += ":" + e.substr(16);
    }
    set("LD_LIBRARY_PATH=" + ld);
    std::string path;
    for (auto const& e : env) {
      if (EnvKey(e) == "PATH") path = e.substr(5);
    }
    set("PATH=" + path + (path.empty() ? "" : ":") + "/opt/bai/nvidia/bin");
  }

  json mounts = json::array();
  auto add = [&mounts](std::string dest, std::string type, std::string source, json options) {
    mounts.push_back({{"destination", std::move(dest)},
                      {"type", std::move(type)},
                      {"source", std::move(source)},
                      {"options", std::move(options)}});
  };
  add("/proc", "proc", "proc", json::array({"nosuid", "noexec", "nodev"}));
  add("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"});
  add("/dev/pts", "devpts", "devpts",
      {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"});
  add("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"});
  add("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"});
  add("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"});
  for (auto const& host : image.host_mounts)
    add(host, "bind", host, {"rbind", "ro", "nosuid", "nodev"});
  if (o.scratch == kScratchDisk) {
    // PrepareDiskScratch's loop-mounted image: its size is the quota, not the session's memory.
    add("/home/work", "bind", layout.kernel_dir + "/scratch/home",
        {"bind", "rw", "nosuid", "nodev"});
    add("/tmp", "bind", layout.kernel_dir + "/scratch/tmp", {"bind", "rw", "nosuid", "nodev"});
  } else {
    add("/home/work", "tmpfs", "tmpfs",
        {"nosuid", "nodev", "mode=755", "uid=" + uid, "gid=" + gid, "size=" + o.home_size});
    add("/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777", "size=" + o.tmp_size});
  }
  if (layout.network != nullptr) {
    add("/etc/resolv.conf", "bind", layout.kernel_dir + "/resolv.conf",
        {"bind", "ro", "nosuid", "nodev", "noexec"});
  }
  if (!layout.etc_dir.empty()) {
    for (char const* f : {"passwd", "group"}) {
      add(std::string("/etc/") + f, "bind", layout.etc_dir + "/" + f,
          {"bind", "ro", "nosuid", "nodev", "noexec"});
    }
  }
  add("/opt/bai/bin", "bind", layout.runner_dir, {"bind", "ro", "nosuid", "nodev"});
  add("/opt/bai/run", "bind", layout.kernel_dir + "/run",
      {"bind", "rw", "nosuid", "nodev", "noexec"});
  // Virtual folders (the vfolder issue fills them).
  for (auto const& v : VfolderMounts(spec.mounts)) {
    add(v.kernel_path, "bind", v.host_path,
        {"rbind", v.read_only ? "ro" : "rw", "nosuid", "nodev"});
  }
  json device_nodes = json::array();
  json device_rules = json::array({{{"allow", false}, {"access", "rwm"}}});
  if (gpus != nullptr) {
    GpuFiles const& f = o.gpu_files;
    json ro = {"bind", "ro", "nosuid", "nodev"};
    for (auto const& lib : f.libraries) {
      add("/opt/bai/nvidia/lib/" + lib, "bind", f.lib_dir + "/" + lib, ro);
    }
    if (!f.smi.empty()) add("/opt/bai/nvidia/bin/nvidia-smi", "bind", f.smi, ro);
    if (!gpus->limits.empty()) {
      // The shim, loaded into every process through /etc/ld.so.preload (which the work user
      // cannot change, unlike LD_PRELOAD), its limits, and the container's ledger.
      add(kShimLibInKernel, "bind", f.shim, ro);
      add("/etc/ld.so.preload", "bind", layout.kernel_dir + "/ld.so.preload", ro);
      add(kLimitsInKernel, "bind", layout.kernel_dir + "/gpushim.conf", ro);
      add(std::string(kShimDirInKernel) + "/state", "bind", layout.kernel_dir + "/gpushim",
          {"bind", "rw", "nosuid", "nodev", "noexec"});
      // Soft mode: the GPU's activity board read-only, this kernel's own stamp writable.
      for (auto const& [n, uuid] : gpus->activity) {
        std::string board = ActivityBoardDir(o, uuid);
        std::string in_kernel = std::string(kActivityInKernel) + "/" + std::to_string(n);
        add(in_kernel, "bind", board, ro);
        add(in_kernel + "/" + spec.session_id, "bind", board + "/" + spec.session_id,
            {"bind", "rw", "nosuid", "nodev", "noexec"});
      }
    }
    if (!gpus->mps_uuid.empty()) {
      std::string mps = MpsDir(o.state_dir, gpus->mps_uuid);
      add("/opt/bai/mps/pipe", "bind", mps + "/pipe", {"bind", "rw", "nosuid", "nodev", "noexec"});
      add("/opt/bai/mps/log", "bind", mps + "/log", {"bind", "rw", "nosuid", "nodev", "noexec"});
    }
    // Only this kernel's GPUs, and the control nodes every CUDA process opens.
    std::vector<std::string> nodes = f.device_nodes;
    for (auto const& d : gpus->devices) nodes.push_back("/dev/nvidia" + std::to_string(d.index));
    for (auto const& node : nodes) {
      struct stat st {};
      if (::stat(node.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) continue;
      auto major = static_cast<std::int64_t>(major(st.st_rdev));
      auto minor = static_cast<std::int64_t>(minor(st.st_rdev));
      device_nodes.push_back({{"path", node},
                              {"type", "c"},
                              {"major", major},
                              {"minor", minor},
                              {"fileMode", 0666},
                              {"uid", 0},
                              {"gid", 0}});
      device_rules.push_back(
          {{"allow", true}, {"type", "c"}, {"major", major}, {"minor", minor}, {"access", "rwm"}});
    }
  }

  json resources_spec = {{"devices", device_rules}, {"pids", {{"limit", limits.pids}}}};
  if (limits.memory_bytes >= 0) resources_spec["memory"] = {{"limit", limits.memory_bytes}};
  if (limits.cpu_quota_us >= 0) {
    resources_spec["cpu"] = {{"quota", limits.cpu_quota_us}, {"period", limits.cpu_period_us}};
  }
  if (!layout.cpus.empty()) resources_spec["cpu"]["cpus"] = layout.cpus;
  json empty = json::array();
  // As many open files as the host allows the agent, at most 65536.
  rlimit host_nofile{};
  getrlimit(RLIMIT_NOFILE, &host_nofile);
  auto nofile = static_cast<std::uint64_t>(std::min<rlim_t>(host_nofile.rlim_max, 65536));
  json config = {{"ociVersion", "1.0.2"},
                 {"process",
                  {{"terminal", false},
                   {"user", {{"uid", user.uid}, {"gid", user.gid}, {"additionalGids", {user.gid}}}},
                   {"args",
                    {"/opt/bai/bin/bai-kernel-runner", "--socket", "/opt/bai/run/runner.sock",
                     "--runtime", image.RuntimeType() == "python" ? "python" : "shell", "--python",
                     image.RuntimePath(), "--workdir", "/home/work"}},
                   {"env", env},
                   {"cwd", "/home/work"},
                   {"capabilities",
                    {{"bounding", empty},
                     {"effective", empty},
                     {"permitted", empty},
                     {"inheritable", empty},
                     {"ambient", empty}}},
                   {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", nofile}, {"soft", nofile}}}},
                   {"noNewPrivileges", true}}},
                 {"root", {{"path", image.rootfs}, {"readonly", true}}},
                 {"hostname", hostname},
                 {"mounts", mounts},
                 {"linux",
                  {{"devices", device_nodes},
                   {"namespaces",
                    {{{"type", "pid"}},
                     {{"type", "network"}},
                     {{"type", "ipc"}},
                     {{"type", "uts"}},
                     {{"type", "mount"}}}},
                   {"resources", resources_spec},
                   {"cgroupsPath", layout.cgroups_path},
                   {"seccomp", SeccompProfile(SandboxExceptionsFor(o.sandbox_exceptions, image))},
                   {"maskedPaths",
                    {"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                     "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                     "/proc/sched_debug", "/sys/firmware", "/proc/scsi"}},
                   {"readonlyPaths",
                    {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}}};
  if (!o.hook_path.empty()) {
    // Raises loopback in the new network namespace (mode "none"), or puts it on the bridge.
    json args = layout.network != nullptr ? json(NetworkHookArgs(*layout.network))
                                          : json({"bai-agent", "hook", "loopback-up"});
    config["hooks"] = {{"createRuntime", {{{"path", o.hook_path}, {"args", args}}}}};
  }
  return config.dump(2);
}

}  // namespace bai::agent
