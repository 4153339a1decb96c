// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/streams/execute_run.h"

#include <utility>

namespace bai::manager::streams {

using Kind = ExecuteAction::Kind;

ExecuteRun::ExecuteRun(std::string run_id) : run_id_(std::move(run_id)) {}

ExecuteAction ExecuteRun::Step(std::string mode, std::string code) {
  ExecuteAction a{Kind::kExecute, {}, {}, 1000};
  a.step.mode = std::move(mode);
  a.step.run_id = run_id_;
  a.step.code = std::move(code);
  return a;
}

std::vector<ExecuteAction> ExecuteRun::Fail(std::string msg, int code) {
  state_ = State::kDone;
  protocol::ExecuteResult frame;
  frame.run_id = run_id_;
  frame.status = "error";
  frame.msg = std::move(msg);
  return {{Kind::kSend, protocol::EncodeExecuteResult(frame), {}, 1000},
          {Kind::kClose, "", {}, code}};
}

std::vector<ExecuteAction> ExecuteRun::OnText(std::string_view text) {
  switch (state_) {
    case State::kAwaitingCode: {
      auto step = protocol::DecodeExecuteStep(text);
      if (!step.ok()) return Fail("Invalid API parameters: " + step.status().message(), 1000);
      if (step->mode != "query" && step->mode != "batch") {
        return Fail(
            "Invalid API parameters: mode must be query or batch, not \"" + step->mode + "\"",
            1000);
      }
      state_ = State::kRunning;
      ExecuteAction a = Step(step->mode, step->code);
      a.step.options = std::move(step->options);
      return {std::move(a)};
    }
    case State::kAwaitingInput:
      state_ = State::kRunning;
      return {Step("input", std::string(text))};
    case State::kRunning:
      // Typed ahead: kept, within bounds, for the next waiting-input.
      if (ahead_.size() < kMaxFramesAhead && ahead_bytes_ + text.size() <= kMaxBytesAhead) {
        ahead_bytes_ += text.size();
        ahead_.emplace_back(text);
      }
      return {};
    case State::kDone:
      return {};
  }
  return {};
}

std::vector<ExecuteAction> ExecuteRun::OnResult(StatusOr<protocol::ExecuteResult> const& result) {
  if (state_ != State::kRunning) return {};
  if (!result.ok()) return Fail("BackendError: " + result.status().message(), 1011);
  protocol::ExecuteResult frame = *result;
  frame.run_id = run_id_;
  std::vector<ExecuteAction> out{{Kind::kSend, protocol::EncodeExecuteResult(frame), {}, 1000}};
  if (result->status == "finished") {
    state_ = State::kDone;
    out.push_back({Kind::kClose, "", {}, 1000});
  } else if (result->status == "waiting-input") {
    if (ahead_.empty()) {
      state_ = State::kAwaitingInput;
    } else {
      ahead_bytes_ -= ahead_.front().size();
      out.push_back(Step("input", std::move(ahead_.front())));
      ahead_.pop_front();
    }
  } else {
    // continued, clean-finished, build-finished: go on with the run.
    out.push_back(Step("continue", ""));
  }
  return out;
}

std::vector<ExecuteAction> ExecuteRun::OnClientGone() {
  bool mid_run = state_ == State::kRunning || state_ == State::kAwaitingInput;
  state_ = State::kDone;
  if (!mid_run) return {};
  ExecuteAction a{Kind::kInterrupt, {}, {}, 1000};
  a.step.mode = "interrupt";
  a.step.run_id = run_id_;
  return {std::move(a)};
}

std::vector<ExecuteAction> ExecuteRun::OnSessionEnded(std::string_view why) {
  if (state_ == State::kDone) return {};
  return Fail("The session has ended (" + std::string(why) + ").", 1001);
}

}  // namespace bai::manager::streams
