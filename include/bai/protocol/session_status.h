// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bai::protocol {

/// Session statuses (PROTOCOL.md §6). Our server emits the 24.09 set; the HEAD-only ones are
/// parsed so that the SDK understands newer managers.
enum class SessionStatus {
  kUnknown,  ///< a string this SDK does not know; the text is kept in SessionStatusValue
  kPending,
  kScheduled,
  kPulling,
  kPreparing,
  kRunning,
  kRestarting,
  kRunningDegraded,
  kTerminating,
  kTerminated,
  kError,
  kCancelled,
  // Newer managers (HEAD) only; never emitted by bai-manager.
  kDeprioritizing,
  kReserved,
  kPrepared,
  kCreating,
  kPreempted,
  kRescheduling,
};

/// Kernel (container) statuses.
enum class KernelStatus {
  kUnknown,
  kPending,
  kScheduled,
  kPreparing,
  kBuilding,
  kPulling,
  kRunning,
  kRestarting,
  kResizing,
  kSuspended,
  kTerminating,
  kTerminated,
  kError,
  kCancelled,
};

/// Background task statuses (`/events/background-task`, PROTOCOL.md §5.6).
enum class TaskStatus { kUnknown, kOngoing, kDone, kFailed, kCancelled };

/// A status as received: the enum plus the exact wire text, so unknown values survive a
/// round trip instead of failing a whole response.
template <typename Enum>
struct StatusValue {
  Enum status = Enum::kUnknown;
  std::string text;
};
using SessionStatusValue = StatusValue<SessionStatus>;
using KernelStatusValue = StatusValue<KernelStatus>;

BAI_EXPORT SessionStatusValue ParseSessionStatus(std::string_view text);
BAI_EXPORT KernelStatusValue ParseKernelStatus(std::string_view text);
/// True for any session or kernel status name of Backend.AI (24.09's and newer managers'), so
/// filters accept the whole vocabulary even where a name never describes a session.
BAI_EXPORT bool IsKnownStatusName(std::string_view text);
/// "ongoing", "done", "failed", "cancelled"; kUnknown for anything else.
BAI_EXPORT TaskStatus ParseTaskStatus(std::string_view text);
/// Wire name ("RUNNING_DEGRADED"); "UNKNOWN" for kUnknown.
BAI_EXPORT std::string_view ToString(SessionStatus status);
BAI_EXPORT std::string_view ToString(KernelStatus status);
/// "ongoing", … ("unknown" for kUnknown).
BAI_EXPORT std::string_view ToString(TaskStatus status);

/// True for statuses a session never leaves (TERMINATED, CANCELLED).
BAI_EXPORT bool IsTerminal(SessionStatus status);
/// True when the 24.09 lifecycle allows `from` → `to`.
BAI_EXPORT bool CanTransition(SessionStatus from, SessionStatus to);
/// True for the statuses our server may emit (the 24.09 set).
BAI_EXPORT bool IsEmittedStatus(SessionStatus status);
/// The session status a kernel status stands for (BUILDING→PREPARING, RESIZING→RUNNING,
/// SUSPENDED→ERROR, others one to one).
BAI_EXPORT SessionStatus ToSessionStatus(KernelStatus status);

/// A session's image being pulled onto its agent (issue 46): what its `status_info` says while
/// it is PREPARING, "pulling IMAGE (DONE/TOTAL bytes)", and its `kernel_pulling` events'
/// reason. One definition: the manager writes it, the SDK reads it back.
struct PullInfo {
  std::string image;
  std::int64_t done = 0, total = 0;
};
BAI_EXPORT std::string EncodePullInfo(PullInfo const& pull);
/// nullopt for any other text.
BAI_EXPORT std::optional<PullInfo> DecodePullInfo(std::string_view status_info);

}  // namespace bai::protocol
