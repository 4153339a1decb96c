// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/gpu_reconcile.h"

#include "server-reference/common/log/log.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

namespace bai::agent {

using nlohmann::json;

std::string UsageJson(std::vector<gpushim::DeviceUsage> const& devices) {
  json out = json::array();
  for (auto const& d : devices) {
    out.push_back({{"uuid", d.uuid},
                   {"limit", d.limit},
                   {"ledger", d.ledger},
                   {"nvml", d.nvml},
                   {"drift", d.drift},
                   {"untracked", d.untracked},
                   {"unshimmed", d.unshimmed}});
  }
  return json{{"devices", out}}.dump();
}

std::set<unsigned> ReadPids(std::string const& procs_file) {
  std::set<unsigned> pids;
  std::ifstream in(procs_file);
  unsigned pid = 0;
  while (in >> pid) pids.insert(pid);
  return pids;
}

namespace {

bool WriteAtomically(std::string const& path, std::string const& text) {
  std::string tmp = path + ".new";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// What is worth a log line about a kernel: memory the shim did not see. `key` changes only when
// that state does (not with every MiB), so the log says it once.
std::string Note(std::vector<gpushim::DeviceUsage> const& devices, std::string* key) {
  std::ostringstream note;
  key->clear();
  for (auto const& d : devices) {
    if (d.unshimmed.empty() && d.untracked == 0) continue;
    *key += d.uuid + (d.untracked != 0 ? "+" : "-");
    note << ' ' << d.uuid << ": NVML " << (d.nvml >> 20) << " MiB, ledger " << (d.ledger >> 20)
         << " MiB";
    if (d.untracked != 0) note << ", " << (d.untracked >> 20) << " MiB charged as untracked";
    for (unsigned pid : d.unshimmed) {
      note << ", pid " << pid << " without the shim";
      *key += ' ' + std::to_string(pid);
    }
    note << ';';
  }
  return note.str();
}

}  // namespace

GpuReconciler::GpuReconciler(std::string nvml_library, gpushim::ReconcilePolicy policy,
                             Targets targets)
    : library_(std::move(nvml_library)), policy_(policy), targets_(std::move(targets)) {}

GpuReconciler::~GpuReconciler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuReconciler::Start(std::chrono::milliseconds interval) {
  thread_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, interval, [this] { return stopping_; })) {
      lock.unlock();
      RunOnce();
      lock.lock();
    }
  });
}

std::map<std::string, std::vector<gpushim::DeviceUsage>> GpuReconciler::RunOnce() {
  std::lock_guard<std::mutex> run(run_mu_);
  std::map<std::string, std::vector<gpushim::DeviceUsage>> out;
  auto targets = targets_();
  // Ledgers of kernels that are gone are closed.
  std::set<std::string> live;
  for (auto const& t : targets) live.insert(t.ledger);
  for (auto it = ledgers_.begin(); it != ledgers_.end();) {
    it = live.count(it->first) != 0 ? std::next(it) : ledgers_.erase(it);
  }
  if (targets.empty()) return out;
  if (!nvml_) {
    auto opened = Nvml::Open(library_);
    if (!opened.ok()) {
      if (!nvml_failed_logged_) {
        server::log::Warn("GPU reconciliation paused", {{"reason", opened.status().message()}});
        nvml_failed_logged_ = true;
      }
      return out;
    }
    nvml_ = std::move(*opened);
    nvml_failed_logged_ = false;
  }
  // One query per device per pass; nullopt when NVML failed (the device is then left as it was).
  std::map<std::string, std::optional<std::vector<gpushim::GpuProcess>>> on_device;
  for (auto const& t : targets) {
    auto& ledger = ledgers_[t.ledger];
    if (!ledger) {
      std::string error;
      ledger = gpushim::Ledger::Open(t.ledger, &error);
      if (!ledger) continue;  // not written yet, or a kernel of an older agent
    }
    std::set<unsigned> container = ReadPids(t.procs);
    if (container.empty()) {
      // A running kernel has at least its runner: the cgroup is not where we look. Nothing is
      // changed rather than everything cleared.
      if (last_note_[t.session_id] != "unreadable") {
        server::log::Warn("no processes in a kernel's cgroup; its GPU usage is not reconciled",
                          {{"session", t.session_id}, {"cgroup", t.procs}});
        last_note_[t.session_id] = "unreadable";
      }
      continue;
    }
    std::set<unsigned> shimmed;
    for (auto const& slot : ledger->Slots()) {
      if (slot.owner_pid <= 0) continue;  // its holder died: the next reservation sweeps it
      if (slot.host_pid != slot.owner_pid) ledger->SetHostPid(slot.index, slot.owner_pid);
      shimmed.insert(static_cast<unsigned>(slot.owner_pid));
    }
    std::vector<gpushim::DeviceUsage> devices;
    for (int d = 0; d < ledger->DeviceCount(); ++d) {
      std::string uuid = ledger->DeviceUuid(d);
      auto known = on_device.find(uuid);
      if (known == on_device.end()) {
        auto procs = nvml_->ComputeProcesses(uuid);
        if (!procs.ok() && failing_.insert(uuid).second) {
          server::log::Warn("GPU reconciliation of a device paused",
                            {{"gpu", uuid}, {"reason", procs.status().message()}});
        }
        if (procs.ok()) failing_.erase(uuid);
        known = on_device.emplace(uuid, procs.ok() ? std::optional(*procs) : std::nullopt).first;
      }
      if (!known->second) continue;
      auto usage = gpushim::ReconcileDevice(uuid, ledger->Limit(d), ledger->Used(d), *known->second,
                                            container, shimmed, policy_);
      ledger->SetUntracked(d, usage.untracked);
      devices.push_back(std::move(usage));
    }
    WriteAtomically(t.report, UsageJson(devices));
    std::string key;
    std::string note = Note(devices, &key);
    if (key != last_note_[t.session_id]) {
      if (!note.empty()) {
        server::log::Warn("a kernel's GPU memory is beyond its ledger",
                          {{"session", t.session_id}, {"devices", note}});
      }
      last_note_[t.session_id] = key;
    }
    out[t.session_id] = std::move(devices);
  }
  std::set<std::string> sessions;
  for (auto const& t : targets) sessions.insert(t.session_id);
  for (auto it = last_note_.begin(); it != last_note_.end();) {
    it = sessions.count(it->first) != 0 ? std::next(it) : last_note_.erase(it);
  }
  return out;
}

}  // namespace bai::agent
