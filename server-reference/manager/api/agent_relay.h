// SPDX-License-Identifier: Apache-2.0
#pragma once
// A request relayed to a session's agent, answered when the agent replies: what execute,
// interrupt, restart, commit and shutdown-service share.

#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/handler_util.h"

#include <chrono>
#include <functional>
#include <utility>

namespace bai::manager {

/// Sends `request` to the agent of `agent_id` and answers `exchange` with `answer(result)` once
/// the agent replies (or the transport fails: `result`'s status), with the request's
/// X-RateLimit-* headers.
inline void AnswerFromAgent(
    AgentRegistry& agents, std::string const& agent_id,
    server::agent_protocol::AgentRequest request, std::chrono::milliseconds timeout,
    RequestContext const& ctx, LateExchange const& exchange,
    std::function<server::HttpResponse(StatusOr<std::string> const&)> answer) {
  agents.Request(
      agent_id, std::move(request), timeout,
      [exchange, headers = ctx.response_headers, answer = std::move(answer)](
          StatusOr<std::string> result) { RespondLate(*exchange, headers, answer(result)); });
}

}  // namespace bai::manager
