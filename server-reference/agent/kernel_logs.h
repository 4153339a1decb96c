// SPDX-License-Identifier: Apache-2.0
#pragma once
// The output of the agent's kernels on disk: one file per kernel (`<dir>/<session_id>.log`),
// appended as the kernel writes, read back in pages for `GET /session/{id}/logs` and for
// followers catching up. A file is a sequence of records, each a header line
// "<stream> <length>\n" (stream o, e or n for stdout, stderr, notice) and the bytes. A kernel
// keeps up to `max_bytes` of output; what comes after is not stored, and one notice record says
// so in the log itself (followers still receive it live). Offsets count the kernel's output
// bytes, notices excluded, so the live relay and the stored log line up.

#include "bai/status.h"

#include "server-reference/common/agent_messages.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace bai::agent {

class KernelLogs {
 public:
  /// `dir` is created if missing; files of earlier runs are kept (a restarted agent serves
  /// them).
  KernelLogs(std::string dir, std::int64_t max_bytes);

  struct Appended {
    std::int64_t offset = 0;  ///< the kernel's output before these bytes
    /// Set when this append crossed the limit: the notice now stored (relay it too).
    std::optional<server::agent_protocol::OutputChunk> notice;
  };
  /// Adds output of `stream` (stdout or stderr). Thread-safe.
  Appended Append(std::string const& session_id, std::string const& stream,
                  std::string const& data);
  /// Stored output from `offset`, at most `limit` bytes of it; kNotFound for a kernel this agent
  /// has no log of.
  StatusOr<server::agent_protocol::LogsReply> Read(std::string const& session_id,
                                                   std::int64_t offset, std::int64_t limit);
  /// Nothing more will be added; logs of kernels ended more than `keep` ago are deleted.
  void MarkEnded(std::string const& session_id, std::chrono::hours keep = std::chrono::hours(24));
  std::string const& dir() const { return dir_; }

 private:
  struct State {
    std::int64_t produced = 0;  ///< output bytes so far, stored or not
    std::int64_t stored = 0;
    bool truncated = false;
    bool ended = false;
  };
  std::string Path(std::string const& session_id) const;
  State& StateOf(std::string const& session_id);  // mu_ held

  std::string dir_;
  std::int64_t max_bytes_;
  std::mutex mu_;
  std::map<std::string, State> states_;
};

}  // namespace bai::agent
