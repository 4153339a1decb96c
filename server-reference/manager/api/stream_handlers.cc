// SPDX-License-Identifier: Apache-2.0
// `/stream/session/{id}/…`: the WebSocket streams of a session (PROTOCOL.md §5.7). Each is a
// thin shell around a pure core in ../streams/: it carries out the core's actions on the socket
// and the agent, and registers the stream so that it ends with its session.
#include "bai/protocol/errors.h"

#include "server-reference/common/http/problem.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/streams/execute_run.h"
#include "server-reference/manager/streams/stream_registry.h"

#include <algorithm>
#include <memory>
#include <mutex>

namespace bai::manager {

using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;
using streams::ExecuteAction;

namespace {

// How often a streamed run's output is relayed (24.09's flush_timeout=0.2).
constexpr std::int64_t kFlushMs = 200;

// One `/execute` WebSocket: the core (streams::ExecuteRun) and the socket and agent it drives.
class ExecuteStream : public std::enable_shared_from_this<ExecuteStream> {
 public:
  ExecuteStream(AgentRegistry& agents, streams::StreamRegistry& registry, std::string session_id,
                std::string agent_id, std::string run_id)
      : agents_(agents),
        registry_(registry),
        session_id_(std::move(session_id)),
        agent_id_(std::move(agent_id)),
        run_(std::move(run_id)) {}

  server::WebSocketHandlers Handlers() {
    server::WebSocketHandlers h;
    auto self = shared_from_this();
    h.on_open = [self](std::shared_ptr<server::WebSocket> const& ws) {
      std::lock_guard<std::recursive_mutex> lock(self->mu_);
      self->socket_ = ws;
      std::weak_ptr<ExecuteStream> weak = self;
      self->token_ = self->registry_.Add(self->session_id_, [weak](std::string const& why) {
        if (auto s = weak.lock()) s->Apply([&] { return s->run_.OnSessionEnded(why); });
      });
    };
    h.on_message = [self](std::shared_ptr<server::WebSocket> const&, std::string const& text) {
      self->Apply([&] { return self->run_.OnText(text); });
    };
    h.on_binary = [](std::shared_ptr<server::WebSocket> const&, std::string const&) {
      // Binary frames are no part of the protocol ("future extension" in 24.09's client).
    };
    h.on_close = [self](int) {
      self->Apply([&] { return self->run_.OnClientGone(); });
      std::lock_guard<std::recursive_mutex> lock(self->mu_);
      self->registry_.Remove(self->token_);
      self->socket_.reset();
    };
    return h;
  }

 private:
  // Runs one core call and its actions under the stream's lock (recursive: an agent request
  // that fails at once calls back on this thread).
  template <class Call>
  void Apply(Call call) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto& a : call()) Do(std::move(a));
  }

  void Do(ExecuteAction a) {
    switch (a.kind) {
      case ExecuteAction::Kind::kSend:
        if (socket_) socket_->Send(std::move(a.text));
        break;
      case ExecuteAction::Kind::kClose:
        if (socket_) socket_->Close(a.code, std::move(a.text));
        break;
      case ExecuteAction::Kind::kExecute: {
        server::agent_protocol::Execute m;
        static_cast<protocol::ExecuteStep&>(m) = std::move(a.step);
        m.session_id = session_id_;
        m.flush_ms = kFlushMs;
        std::weak_ptr<ExecuteStream> weak = shared_from_this();
        agents_.Request(agent_id_, std::move(m), std::chrono::seconds(30),
                        [weak](StatusOr<std::string> result) {
                          auto s = weak.lock();
                          if (!s) return;
                          StatusOr<protocol::ExecuteResult> decoded =
                              result.ok() ? protocol::DecodeExecuteResult(*result)
                                          : StatusOr<protocol::ExecuteResult>(result.status());
                          s->Apply([&] { return s->run_.OnResult(decoded); });
                        });
        break;
      }
      case ExecuteAction::Kind::kInterrupt: {
        server::agent_protocol::Execute m;
        static_cast<protocol::ExecuteStep&>(m) = std::move(a.step);
        m.session_id = session_id_;
        agents_.Request(agent_id_, std::move(m), std::chrono::seconds(10),
                        [](StatusOr<std::string>) {});
        break;
      }
    }
  }

  AgentRegistry& agents_;
  streams::StreamRegistry& registry_;
  std::string session_id_;
  std::string agent_id_;
  std::recursive_mutex mu_;
  streams::ExecuteRun run_;
  std::shared_ptr<server::WebSocket> socket_;
  std::uint64_t token_ = 0;
};

std::optional<HttpResponse> NotAnUpgrade() {
  // 24.09 (aiohttp) answers a plain GET on a WebSocket route with 400 too.
  return ProblemResponse(
      MakeProblemStatus(ProblemType::kGenericBadRequest, "Expected a WebSocket upgrade."));
}

}  // namespace

void RegisterStreamRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents,
                          streams::StreamRegistry& registry) {
  api.AddAsync(
      "GET", "/stream/session/{id}/execute", AuthLevel::kUser,
      [&sessions, &agents, &registry](
          RequestContext& ctx,
          std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
        auto s = ResolveRunning(sessions, ctx);
        if (!s.ok()) return ProblemResponse(s.status());
        if (!exchange->IsWebSocketUpgrade()) return NotAnUpgrade();
        (void)sessions.CountQuery(s->id);
        // One WebSocket is one run; 16 hex digits, as 24.09's secrets.token_hex(8).
        std::string run_id = GenerateUuid();
        run_id.erase(std::remove(run_id.begin(), run_id.end(), '-'), run_id.end());
        run_id.resize(16);
        auto stream = std::make_shared<ExecuteStream>(agents, registry, s->id, *s->agent_id,
                                                      std::move(run_id));
        exchange->AcceptWebSocket(stream->Handlers());
        return std::nullopt;
      });
}

}  // namespace bai::manager
