// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/errors.h"
#include "bai/status.h"

#include "server-reference/common/http.h"
#include "server-reference/common/problem.h"
#include "server-reference/manager/api.h"
#include "server-reference/manager/sessions.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace bai::manager {

/// A JSON response.
inline server::HttpResponse JsonResponse(nlohmann::json const& body, int status = 200) {
  return server::HttpResponse::Json(status, body.dump());
}

/// Runs `body` (returning StatusOr<HttpResponse>), turning an error into its problem response.
template <typename F>
server::HttpResponse Guard(F&& body) {
  StatusOr<server::HttpResponse> r = body();
  if (!r.ok()) return server::ProblemResponse(r.status());
  return *std::move(r);
}

/// A session that can take kernel commands: RUNNING on an agent (else 400 invalid-api-params).
inline StatusOr<SessionRecord> ResolveRunning(SessionStore& sessions, RequestContext& ctx) {
  auto s = sessions.Resolve(ctx.params.at("id"), ctx.identity->access_key, false);
  if (!s.ok()) return s.status();
  if (s->status != "RUNNING" || !s->agent_id) {
    return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams,
                                       "The session is " + s->status + ", not RUNNING.");
  }
  return s;
}

/// Answers a request whose handler returned before the agent did, with its X-RateLimit-*
/// headers.
inline void RespondLate(server::Exchange& exchange,
                        std::vector<std::pair<std::string, std::string>> const& headers,
                        server::HttpResponse r) {
  for (auto const& h : headers) r.headers.push_back(h);
  exchange.Respond(std::move(r));
}

/// Why an agent request did not succeed, in words: the transport's error, the agent's `msg`
/// (`fallback` when it gave none), or a malformed reply.
template <class Reply>
std::string AgentFailure(StatusOr<std::string> const& result, StatusOr<Reply> const& reply,
                         std::string const& fallback) {
  if (!result.ok()) return result.status().message();
  if (!reply.ok()) return "malformed agent reply: " + reply.status().message();
  return reply->msg.empty() ? fallback : reply->msg;
}

}  // namespace bai::manager
