// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/run_console.h"

namespace bai::agent {

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

}  // namespace bai::agent
