// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/session_wire.h"
#include "bai/status.h"

#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace bai::manager::streams {

/// What the shell of a streamed execute does next, in order.
struct ExecuteAction {
  enum class Kind {
    kSend,       ///< a text frame `text` to the client
    kExecute,    ///< `step` to the session's agent; its answer goes to OnResult
    kInterrupt,  ///< interrupt the run (`step.run_id`): the client has gone mid-run
    kClose,      ///< close the WebSocket with `code` and reason `text`
  };
  Kind kind;
  std::string text;
  protocol::ExecuteStep step;
  int code = 1000;
};

/// One `/stream/session/{id}/execute` WebSocket, which is one run (PROTOCOL.md §5.7, 24.09's
/// `stream_execute`): the client's first frame `{"code", "mode": "query"|"batch", "options"}`
/// starts it; each agent answer goes to the client as `{"status", "console", "exitCode",
/// "options", "files"}`; `waiting-input` takes the client's next frame, as plain text, as the
/// input; `finished` closes (1000). A bad first frame gets `{"status": "error", "msg":
/// "Invalid API parameters: …"}`, an agent failure `"BackendError: …"`, then the close. A client
/// gone before `finished` interrupts the run; a session that ends closes with 1001.
/// Frames that come while the run goes on are typed-ahead input, as 24.09 (whose socket queues
/// them) takes them: the next waiting-input answers with the first at once. At most
/// kMaxFramesAhead frames and kMaxBytesAhead bytes wait; more are dropped, so a client flooding
/// frames neither grows the manager nor changes the run (issue 43, 5h).
/// Pure: no socket, no clock, no agent; the shell (api/stream_handlers.cc) carries out the
/// actions.
class ExecuteRun {
 public:
  explicit ExecuteRun(std::string run_id);

  /// A text frame from the client.
  std::vector<ExecuteAction> OnText(std::string_view text);
  /// The agent's answer to the last kExecute.
  std::vector<ExecuteAction> OnResult(StatusOr<protocol::ExecuteResult> const& result);
  /// The client closed or lost its connection.
  std::vector<ExecuteAction> OnClientGone();
  /// The session is ending (`why`: its event, such as "session_terminating").
  std::vector<ExecuteAction> OnSessionEnded(std::string_view why);

  static constexpr std::size_t kMaxFramesAhead = 64;
  static constexpr std::size_t kMaxBytesAhead = 1 << 20;

  bool done() const { return state_ == State::kDone; }
  /// Typed-ahead frames waiting for a waiting-input (for tests).
  std::size_t frames_ahead() const { return ahead_.size(); }
  std::string const& run_id() const { return run_id_; }

 private:
  enum class State { kAwaitingCode, kRunning, kAwaitingInput, kDone };
  ExecuteAction Step(std::string mode, std::string code);
  std::vector<ExecuteAction> Fail(std::string msg, int code);

  std::string run_id_;
  State state_ = State::kAwaitingCode;
  std::deque<std::string> ahead_;
  std::size_t ahead_bytes_ = 0;
};

}  // namespace bai::manager::streams
