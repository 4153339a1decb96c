// SPDX-License-Identifier: Apache-2.0
// The agents' WebSocket endpoint: the cluster-secret handshake, then the registry's handlers.
#include "bai/protocol/errors.h"

#include "server-reference/common/http/problem.h"
#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/routes.h"

namespace bai::manager {

using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;

void RegisterAgentRoutes(ManagerApi& api, AgentRegistry& agents, std::string cluster_secret) {
  api.AddAsync(
      "GET", server::agent_protocol::kPath, AuthLevel::kAnonymous,
      [clock = api.options().clock, &agents, secret = std::move(cluster_secret)](
          RequestContext& ctx,
          std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
        auto header = ctx.request.Header("x-bai-agent-auth");
        if (!header) {
          return ProblemResponse(
              MakeProblemStatus(ProblemType::kAuthFailed, "Agent credentials required."));
        }
        auto id = server::agent_protocol::VerifyAuth(std::string(*header), secret, clock());
        if (!id.ok()) return ProblemResponse(id.status());
        if (!exchange->IsWebSocketUpgrade()) {
          return ProblemResponse(
              MakeProblemStatus(ProblemType::kGenericBadRequest, "Expected a WebSocket upgrade."));
        }
        exchange->AcceptWebSocket(agents.Handlers(*id));
        return std::nullopt;
      });
}

}  // namespace bai::manager
