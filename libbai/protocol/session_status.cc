// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/session_status.h"

#include <array>
#include <initializer_list>
#include <utility>

namespace bai::protocol {
namespace {

using S = SessionStatus;
using K = KernelStatus;

constexpr std::array<std::pair<S, std::string_view>, 17> kSessionNames{{
    {S::kPending, "PENDING"},
    {S::kScheduled, "SCHEDULED"},
    {S::kPulling, "PULLING"},
    {S::kPreparing, "PREPARING"},
    {S::kRunning, "RUNNING"},
    {S::kRestarting, "RESTARTING"},
    {S::kRunningDegraded, "RUNNING_DEGRADED"},
    {S::kTerminating, "TERMINATING"},
    {S::kTerminated, "TERMINATED"},
    {S::kError, "ERROR"},
    {S::kCancelled, "CANCELLED"},
    {S::kDeprioritizing, "DEPRIORITIZING"},
    {S::kReserved, "RESERVED"},
    {S::kPrepared, "PREPARED"},
    {S::kCreating, "CREATING"},
    {S::kPreempted, "PREEMPTED"},
    {S::kRescheduling, "RESCHEDULING"},
}};

constexpr std::array<std::pair<K, std::string_view>, 13> kKernelNames{{
    {K::kPending, "PENDING"},
    {K::kScheduled, "SCHEDULED"},
    {K::kPreparing, "PREPARING"},
    {K::kBuilding, "BUILDING"},
    {K::kPulling, "PULLING"},
    {K::kRunning, "RUNNING"},
    {K::kRestarting, "RESTARTING"},
    {K::kResizing, "RESIZING"},
    {K::kSuspended, "SUSPENDED"},
    {K::kTerminating, "TERMINATING"},
    {K::kTerminated, "TERMINATED"},
    {K::kError, "ERROR"},
    {K::kCancelled, "CANCELLED"},
}};

constexpr std::array<std::pair<TaskStatus, std::string_view>, 4> kTaskNames = {{
    {TaskStatus::kOngoing, "ongoing"},
    {TaskStatus::kDone, "done"},
    {TaskStatus::kFailed, "failed"},
    {TaskStatus::kCancelled, "cancelled"},
}};

template <typename Enum, std::size_t N>
StatusValue<Enum> ParseIn(std::array<std::pair<Enum, std::string_view>, N> const& names,
                          std::string_view text) {
  for (auto const& [value, name] : names) {
    if (name == text) return {value, std::string(text)};
  }
  return {Enum::kUnknown, std::string(text)};
}

template <typename Enum, std::size_t N>
std::string_view NameIn(std::array<std::pair<Enum, std::string_view>, N> const& names,
                        Enum status) {
  for (auto const& [value, name] : names) {
    if (value == status) return name;
  }
  return "UNKNOWN";
}

bool OneOf(S s, std::initializer_list<S> set) {
  for (auto x : set) {
    if (x == s) return true;
  }
  return false;
}

}  // namespace

SessionStatusValue ParseSessionStatus(std::string_view text) {
  return ParseIn(kSessionNames, text);
}
KernelStatusValue ParseKernelStatus(std::string_view text) { return ParseIn(kKernelNames, text); }
bool IsKnownStatusName(std::string_view text) {
  return ParseSessionStatus(text).status != S::kUnknown ||
         ParseKernelStatus(text).status != KernelStatus::kUnknown;
}
std::string_view ToString(SessionStatus status) { return NameIn(kSessionNames, status); }
std::string_view ToString(KernelStatus status) { return NameIn(kKernelNames, status); }
TaskStatus ParseTaskStatus(std::string_view text) { return ParseIn(kTaskNames, text).status; }
std::string_view ToString(TaskStatus status) {
  return status == TaskStatus::kUnknown ? "unknown" : NameIn(kTaskNames, status);
}

bool IsTerminal(SessionStatus status) {
  return status == S::kTerminated || status == S::kCancelled;
}

bool IsEmittedStatus(SessionStatus status) {
  return status != S::kUnknown && static_cast<int>(status) <= static_cast<int>(S::kCancelled);
}

bool CanTransition(SessionStatus from, SessionStatus to) {
  switch (from) {
    case S::kPending:
      return OneOf(to, {S::kScheduled, S::kTerminating, S::kTerminated, S::kError, S::kCancelled});
    case S::kScheduled:
      return OneOf(to, {S::kPulling, S::kPreparing, S::kTerminated, S::kError, S::kCancelled});
    case S::kPulling:
      return OneOf(to, {S::kPreparing, S::kRunning, S::kRunningDegraded, S::kTerminated, S::kError,
                        S::kCancelled});
    case S::kPreparing:
      return OneOf(to, {S::kPulling, S::kRunning, S::kRunningDegraded, S::kTerminating,
                        S::kTerminated, S::kError, S::kCancelled});
    case S::kRunning:
      return OneOf(
          to, {S::kRestarting, S::kRunningDegraded, S::kTerminating, S::kTerminated, S::kError});
    case S::kRestarting:
      return OneOf(to,
                   {S::kRunning, S::kRunningDegraded, S::kTerminating, S::kTerminated, S::kError});
    case S::kRunningDegraded:
      return OneOf(to, {S::kRunning, S::kTerminating, S::kTerminated, S::kError});
    case S::kTerminating:
      return OneOf(to, {S::kTerminated, S::kError});
    case S::kError:
      return OneOf(to, {S::kTerminating, S::kTerminated});
    default:
      return false;
  }
}

SessionStatus ToSessionStatus(KernelStatus status) {
  switch (status) {
    case K::kPending:
      return S::kPending;
    case K::kScheduled:
      return S::kScheduled;
    case K::kPreparing:
    case K::kBuilding:
      return S::kPreparing;
    case K::kPulling:
      return S::kPulling;
    case K::kRunning:
    case K::kResizing:
      return S::kRunning;
    case K::kRestarting:
      return S::kRestarting;
    case K::kSuspended:
    case K::kError:
      return S::kError;
    case K::kTerminating:
      return S::kTerminating;
    case K::kTerminated:
      return S::kTerminated;
    case K::kCancelled:
      return S::kCancelled;
    case K::kUnknown:
      break;
  }
  return S::kUnknown;
}

std::string EncodePullInfo(PullInfo const& pull) {
  return "pulling " + pull.image + " (" + std::to_string(pull.done) + "/" +
         std::to_string(pull.total) + " bytes)";
}

std::optional<PullInfo> DecodePullInfo(std::string_view text) {
  constexpr std::string_view kHead = "pulling ", kTail = " bytes)";
  if (text.substr(0, kHead.size()) != kHead || text.size() < kHead.size() + kTail.size() ||
      text.substr(text.size() - kTail.size()) != kTail) {
    return std::nullopt;
  }
  std::string_view body = text.substr(kHead.size(), text.size() - kHead.size() - kTail.size());
  auto open = body.rfind(" (");
  if (open == std::string_view::npos) return std::nullopt;
  std::string_view figures = body.substr(open + 2);
  auto slash = figures.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<std::int64_t> {
    if (digits.empty() || digits.size() > 18) return std::nullopt;
    std::int64_t n = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  };
  auto done = number(figures.substr(0, slash));
  auto total = number(figures.substr(slash + 1));
  if (!done || !total || open == 0) return std::nullopt;
  return PullInfo{std::string(body.substr(0, open)), *done, *total};
}

}  // namespace bai::protocol
