// SPDX-License-Identifier: Apache-2.0
#pragma once
// A run's output between two polls of bai's execute API (PROTOCOL.md §5.5): what the runner
// sent, merged by stream, bounded, and taken in slices that fit one answer. Pure.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace bai::agent {

inline constexpr std::size_t kMaxConsole = 32u << 20;  // a run's output kept between two polls
// An execute step answers once this much output waits, and carries at most kMaxStepConsole:
// its answer crosses the control channel, which must never carry one huge message (20 MB of a
// query's output, answered whole, cut the agent's link).
inline constexpr std::size_t kStepConsole = 256u << 10;
inline constexpr std::size_t kMaxStepConsole = 1u << 20;

struct RunState {
  /// [stream, text] since the last poll; consecutive chunks of one stream merged.
  std::vector<std::pair<std::string, std::string>> console;
  std::size_t console_bytes = 0;
  std::string status = "running";  // running | waiting-input | finished
  int exit_code = 0;
  std::string prompt;  ///< of the latest waiting-input
  bool is_password = false;
};

/// Takes at most `budget` bytes of a run's output for one answer, oldest first (a chunk split
/// where the budget ends); the rest waits for the next poll.
std::vector<std::pair<std::string, std::string>> TakeConsole(RunState& run, std::size_t budget);

/// Adds output to what the next poll of a run returns; consecutive chunks of one stream merge.
/// A run nobody polls keeps its last kMaxConsole bytes and says what it dropped.
void AddConsole(RunState& run, std::string const& stream, std::string const& data);

}  // namespace bai::agent
