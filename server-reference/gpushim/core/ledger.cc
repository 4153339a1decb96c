// SPDX-License-Identifier: Apache-2.0
#include "ledger.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace bai::gpushim {

namespace {
constexpr std::uint32_t kMagic = 0x42414947;  // "BAIG"
constexpr std::uint32_t kVersion = 2;
constexpr off_t kLockBase = 1 << 20;  // slot i is locked at byte kLockBase + i (past the data)

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// Takes up to `bytes` off a counter, never below zero; returns what was taken.
std::uint64_t TakeAtMost(std::atomic<std::uint64_t>& counter, std::uint64_t bytes) {
  std::uint64_t cur = counter.load();
  while (!counter.compare_exchange_weak(cur, cur - std::min(cur, bytes))) {
  }
  return std::min(cur, bytes);
}
static_assert(std::atomic<std::int32_t>::is_always_lock_free);
}  // namespace

struct Ledger::Segment {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint32_t device_count;
  std::uint32_t reserved;
  struct Device {
    char uuid[64];
    std::uint64_t limit;
    std::atomic<std::uint64_t> used;
    std::atomic<std::uint64_t> untracked;
  } devices[kMaxDevices];
  struct Slot {
    std::atomic<std::int32_t> pid;
    std::atomic<std::int32_t> host_pid;
    std::atomic<std::uint64_t> used[kMaxDevices];
  } slots[kLedgerSlots];
};

std::string Ledger::Create(std::string const& path, std::vector<LedgerDeviceSpec> const& devices,
                           int uid, int gid) {
  if (devices.size() > static_cast<size_t>(kMaxDevices)) return "too many devices";
  auto seg = std::make_unique<Segment>();
  std::memset(static_cast<void*>(seg.get()), 0, sizeof(Segment));
  seg->magic = kMagic;
  seg->version = kVersion;
  seg->device_count = static_cast<std::uint32_t>(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    std::snprintf(seg->devices[i].uuid, sizeof seg->devices[i].uuid, "%s", devices[i].uuid.c_str());
    seg->devices[i].limit = devices[i].limit_bytes;
  }
  std::string tmp = path + ".new";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  auto const* bytes = reinterpret_cast<char const*>(seg.get());
  size_t left = sizeof(Segment);
  while (left > 0) {
    ssize_t n = ::write(fd, bytes + (sizeof(Segment) - left), left);
    if (n <= 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "cannot write " + tmp + ": " + err;
    }
    left -= static_cast<size_t>(n);
  }
  if ((uid >= 0 || gid >= 0) &&
      ::fchown(fd, static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return "cannot chown " + tmp + ": " + err;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename onto " + path + ": " + err;
  }
  return {};
}

std::unique_ptr<Ledger> Ledger::Open(std::string const& path, std::string* error) {
  // Never through a link: the ledger's directory is the kernel's to write, and the agent opens it
  // too.
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open ledger " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size != static_cast<off_t>(sizeof(Segment))) {
    ::close(fd);
    *error = "ledger " + path + " has the wrong size (not made by this agent version)";
    return nullptr;
  }
  void* map = ::mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    *error = "cannot map ledger " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  auto* seg = static_cast<Segment*>(map);
  if (seg->magic != kMagic || seg->version != kVersion ||
      seg->device_count > static_cast<std::uint32_t>(kMaxDevices)) {
    ::munmap(map, sizeof(Segment));
    ::close(fd);
    *error = "ledger " + path + " is not a version-" + std::to_string(kVersion) + " ledger";
    return nullptr;
  }
  return std::unique_ptr<Ledger>(new Ledger(fd, seg));
}

Ledger::~Ledger() {
  if (seg_ != nullptr) ::munmap(seg_, sizeof(Segment));
  if (fd_ >= 0) ::close(fd_);  // drops this process's slot lock
}

int Ledger::DeviceCount() const { return static_cast<int>(seg_->device_count); }

int Ledger::FindDevice(std::string const& uuid) const {
  for (int i = 0; i < DeviceCount(); ++i) {
    if (uuid == seg_->devices[i].uuid) return i;
  }
  return -1;
}

std::string Ledger::DeviceUuid(int device) const { return seg_->devices[device].uuid; }
std::uint64_t Ledger::Limit(int device) const { return seg_->devices[device].limit; }
std::uint64_t Ledger::Used(int device) const {
  return seg_->devices[device].used.load(std::memory_order_relaxed);
}
std::uint64_t Ledger::Untracked(int device) const {
  return seg_->devices[device].untracked.load(std::memory_order_relaxed);
}
std::uint64_t Ledger::Charged(int device) const { return Used(device) + Untracked(device); }

bool Ledger::TryLockSlot(int index) const {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = kLockBase + index;
  fl.l_len = 1;
  return ::fcntl(fd_, F_SETLK, &fl) == 0;
}

void Ledger::UnlockSlot(int index) const {
  struct flock fl {};
  fl.l_type = F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = kLockBase + index;
  fl.l_len = 1;
  ::fcntl(fd_, F_SETLK, &fl);
}

int Ledger::LockOwner(int index) const {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = kLockBase + index;
  fl.l_len = 1;
  if (::fcntl(fd_, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) return 0;
  return static_cast<int>(fl.l_pid);
}

void Ledger::ReclaimSlot(int index) {
  auto& slot = seg_->slots[index];
  for (int d = 0; d < DeviceCount(); ++d) {
    std::uint64_t held = slot.used[d].exchange(0);
    if (held != 0) TakeAtMost(seg_->devices[d].used, held);
  }
  slot.host_pid.store(0);
  slot.pid.store(0);
}

bool Ledger::Attach() {
  if (slot_ >= 0) return true;
  int const me = static_cast<int>(::getpid());
  for (int i = 0; i < kLedgerSlots; ++i) {
    if (!TryLockSlot(i)) continue;  // a live process holds it
    // Ours now. Whatever a dead former holder left is given back first.
    if (seg_->slots[i].pid.load() != 0) ReclaimSlot(i);
    seg_->slots[i].host_pid.store(0);
    seg_->slots[i].pid.store(me);
    slot_ = i;
    return true;
  }
  return false;
}

void Ledger::Detach() {
  if (slot_ < 0) return;
  ReclaimSlot(slot_);
  UnlockSlot(slot_);
  slot_ = -1;
}

void Ledger::ForgetSlotAfterFork() { slot_ = -1; }

bool Ledger::Reserve(int device, std::uint64_t bytes) {
  if (slot_ < 0 || device < 0 || device >= DeviceCount()) return false;
  auto& dev = seg_->devices[device];
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::uint64_t cur = dev.used.load();
    // What the ledger's processes may hold: the cap less what the agent found beyond them.
    std::uint64_t const untracked = dev.untracked.load();
    std::uint64_t const room = dev.limit > untracked ? dev.limit - untracked : 0;
    bool fits = true;
    do {
      if (dev.limit != 0 && (bytes > room || cur > room - bytes)) {
        fits = false;
        break;
      }
    } while (!dev.used.compare_exchange_weak(cur, cur + bytes));
    if (fits) {
      seg_->slots[slot_].used[device].fetch_add(bytes);
      return true;
    }
    if (SweepDead() == 0) break;
  }
  return false;
}

void Ledger::Release(int device, std::uint64_t bytes) {
  if (slot_ < 0 || device < 0 || device >= DeviceCount()) return;
  // What this process gives back is at most what it holds.
  TakeAtMost(seg_->devices[device].used, TakeAtMost(seg_->slots[slot_].used[device], bytes));
}

std::uint64_t Ledger::HeldByMe(int device) const {
  if (slot_ < 0 || device < 0 || device >= DeviceCount()) return 0;
  return seg_->slots[slot_].used[device].load();
}

int Ledger::SweepDead() {
  int reclaimed = 0;
  for (int i = 0; i < kLedgerSlots; ++i) {
    if (i == slot_ || seg_->slots[i].pid.load() == 0) continue;
    if (!TryLockSlot(i)) continue;  // its holder is alive
    ReclaimSlot(i);
    UnlockSlot(i);
    ++reclaimed;
  }
  return reclaimed;
}

std::vector<LedgerSlotView> Ledger::Slots() const {
  std::vector<LedgerSlotView> out;
  for (int i = 0; i < kLedgerSlots; ++i) {
    int pid = seg_->slots[i].pid.load();
    if (pid == 0) continue;
    LedgerSlotView view;
    view.index = i;
    view.pid = pid;
    view.owner_pid = i == slot_ ? static_cast<int>(::getpid()) : LockOwner(i);
    view.host_pid = seg_->slots[i].host_pid.load();
    for (int d = 0; d < DeviceCount(); ++d) view.used.push_back(seg_->slots[i].used[d].load());
    out.push_back(std::move(view));
  }
  return out;
}

void Ledger::SetHostPid(int slot, int host_pid) {
  if (slot >= 0 && slot < kLedgerSlots) seg_->slots[slot].host_pid.store(host_pid);
}

void Ledger::SetUntracked(int device, std::uint64_t bytes) {
  if (device >= 0 && device < DeviceCount()) seg_->devices[device].untracked.store(bytes);
}

}  // namespace bai::gpushim
