// SPDX-License-Identifier: Apache-2.0
// The per-container memory ledger: a small file the agent creates in a directory private to the
// container, mapped shared by every process of that container (never /tmp, never shared between
// tenants). Per device it holds the cap and the bytes in use; per process slot, what that process
// holds, so a process that dies (even by SIGKILL) gives its bytes back.
//
// Allocation is reserve → driver call → commit or roll back: `Reserve` is one compare-and-swap
// on the device's counter, so two processes can never both pass the cap, and a failed driver call
// is undone with `Release`. A slot is owned through a POSIX record lock on one byte of the file
// (process-owned, dropped by the kernel when the process dies, not inherited across fork), so a
// dead holder is found by trying its lock, not by polling /proc; the agent, outside the
// container, reads the same lock to learn each slot's host PID and writes it into the slot
// (NVML names processes by host PID; the shim inside maps them back).
//
// Reconciliation (reconcile.h): the agent compares the ledger with NVML's per-process usage and
// may write what the driver shows beyond the ledger as the device's `untracked` bytes, which
// count against the cap like the ledger's own.
#pragma once

#include "config.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bai::gpushim {

inline constexpr int kLedgerSlots = 256;

struct LedgerDeviceSpec {
  std::string uuid;
  std::uint64_t limit_bytes = 0;  ///< 0: not capped (usage is still counted)
};

/// One process's holdings, as the agent or a test reads them.
struct LedgerSlotView {
  int index = 0;
  int pid = 0;        ///< as the process wrote it (its own PID namespace)
  int owner_pid = 0;  ///< the lock owner seen from the reader's namespace; 0: dead or free
  int host_pid = 0;   ///< as the agent wrote it (0: not yet)
  std::vector<std::uint64_t> used;  ///< per device
};

class Ledger {
 public:
  /// Agent side: writes a fresh segment (atomically replacing any old one). Empty on success,
  /// else the reason.
  static std::string Create(std::string const& path, std::vector<LedgerDeviceSpec> const& devices,
                            int uid = -1, int gid = -1);
  /// Opens an existing segment; nullptr with *error set when missing or not a ledger.
  static std::unique_ptr<Ledger> Open(std::string const& path, std::string* error);

  ~Ledger();
  Ledger(Ledger const&) = delete;
  Ledger& operator=(Ledger const&) = delete;

  int DeviceCount() const;
  /// Index of the device with this UUID, or -1.
  int FindDevice(std::string const& uuid) const;
  std::string DeviceUuid(int device) const;
  std::uint64_t Limit(int device) const;
  /// What the processes' allocations hold (the ledger's own count).
  std::uint64_t Used(int device) const;
  /// What the agent found in use beyond the ledger (reconciliation; 0 unless enforced).
  std::uint64_t Untracked(int device) const;
  /// What counts against the cap: Used + Untracked.
  std::uint64_t Charged(int device) const;

  /// Claims a slot for the calling process (idempotent). False when every slot is held by a
  /// live process.
  bool Attach();
  /// Gives the slot and everything it holds back (a clean exit).
  void Detach();
  /// After fork(): the child holds no slot and no lock yet; forget the parent's.
  void ForgetSlotAfterFork();
  bool Attached() const { return slot_ >= 0; }

  /// Adds `bytes` to the device if Charged stays within the cap (sweeping dead processes once
  /// before refusing). Requires Attach().
  bool Reserve(int device, std::uint64_t bytes);
  /// Takes bytes off this process's holding and the device (never below zero).
  void Release(int device, std::uint64_t bytes);
  /// What this process holds on the device.
  std::uint64_t HeldByMe(int device) const;

  /// Reclaims the slots of processes that died holding them; returns how many.
  int SweepDead();
  /// Every slot in use, with its owner as seen from the caller's PID namespace.
  std::vector<LedgerSlotView> Slots() const;

  /// Agent side (reconciliation): the host PID of a slot's owner, as Slots() found it; the
  /// untracked bytes of a device.
  void SetHostPid(int slot, int host_pid);
  void SetUntracked(int device, std::uint64_t bytes);

  struct Segment;

 private:
  Ledger(int fd, Segment* segment) : fd_(fd), seg_(segment) {}
  bool TryLockSlot(int index) const;
  void UnlockSlot(int index) const;
  int LockOwner(int index) const;
  void ReclaimSlot(int index);

  int fd_ = -1;
  Segment* seg_ = nullptr;
  int slot_ = -1;
};

}  // namespace bai::gpushim
