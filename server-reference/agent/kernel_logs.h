// SPDX-License-Identifier: Apache-2.0
#pragma once
// The output of the agent's kernels on disk, appended as the kernel writes, read back in pages
// for `GET /session/{id}/logs` and for followers catching up. A kernel's log keeps the **head**
// and the **tail** of its output (a CI job's final traceback is what matters most):
//   `<dir>/<id>.log`          the first half of `max_bytes`;
//   `<dir>/<id>.tail0|tail1`  two segments of a quarter each, written in turn: when the one being
//                             written is full, the other is emptied and continues, so the last
//                             quarter to half of `max_bytes` is always kept.
// Each file is a sequence of records, a header line "<stream> <length>\n" (o, e: stdout,
// stderr) and the bytes; a tail segment begins with "s <offset>\n", the offset of its first
// byte. Offsets count the kernel's output bytes, so the live relay and the stored log line up;
// what was dropped between the head and the tail reads back as one notice at that place.

#include "bai/status.h"

#include "server-reference/common/wire/agent_messages.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace bai::agent {

class KernelLogs {
 public:
  /// `dir` is created if missing; files of earlier runs are kept (a restarted agent serves
  /// them). `budget_bytes` (0: none) bounds all the logs together: past it, the logs of ended
  /// kernels go, those that ended first first; when running kernels alone fill it, the kernel
  /// writing stores no more (its followers still see its output live; Read says so).
  KernelLogs(std::string dir, std::int64_t max_bytes, std::int64_t budget_bytes = 0);
  ~KernelLogs();
  KernelLogs(KernelLogs const&) = delete;
  KernelLogs& operator=(KernelLogs const&) = delete;

  /// Adds output of `stream` (stdout or stderr); returns the kernel's output offset before
  /// these bytes. Thread-safe.
  std::int64_t Append(std::string const& session_id, std::string const& stream,
                      std::string const& data);
  /// Stored output from `offset`, at most `limit` bytes of it. The reply's `offset` is where its
  /// data starts: past `offset` when that fell in the dropped middle, whose notice then comes
  /// first. A reply never spans two files. kNotFound for a kernel this agent has no log of.
  StatusOr<server::agent_protocol::LogsReply> Read(std::string const& session_id,
                                                   std::int64_t offset, std::int64_t limit);
  /// Nothing more will be added; logs of kernels ended more than `keep` ago are deleted.
  void MarkEnded(std::string const& session_id, std::chrono::hours keep = std::chrono::hours(24));
  std::string const& dir() const { return dir_; }

 private:
  struct Segment {
    bool valid = false;
    std::int64_t start = 0;  ///< the offset of its first byte
    std::int64_t bytes = 0;
  };
  struct State {
    std::int64_t head = 0;  ///< bytes in the head file
    Segment tail[2];
    int current = -1;          ///< the tail segment being written; -1 while the head has room
    int fd = -1;               ///< the file being written, open
    bool lost = false;         ///< a write failed (disk full): nothing more is stored
    bool over_budget = false;  ///< lost because running kernels filled the agent's budget
    bool ended = false;
    std::int64_t ended_at = 0;  ///< when it ended (seconds), for the budget's order
    std::int64_t produced = 0;  ///< output bytes so far, stored or not
    /// Output bytes in its files now (the head and the valid tail segments).
    std::int64_t Stored() const {
      return head + (tail[0].valid ? tail[0].bytes : 0) + (tail[1].valid ? tail[1].bytes : 0);
    }
  };
  std::string Path(std::string const& session_id, int segment = -1) const;
  State& StateOf(std::string const& session_id);                           // mu_ held
  bool Write(State& st, std::string const& record);                        // mu_ held
  bool StartSegment(State& st, std::string const& session_id, int index);  // mu_ held
  /// Keeps the logs within the budget after `writer` stored more (mu_ held).
  void KeepBudget(std::string const& writer);
  void Remove(std::string const& session_id);  // mu_ held

  std::string dir_;
  std::int64_t head_max_;
  std::int64_t segment_max_;
  std::int64_t budget_;
  std::int64_t stored_ = 0;  ///< State::Stored() of every state, kept as they change
  std::mutex mu_;
  std::map<std::string, State> states_;
};

}  // namespace bai::agent
