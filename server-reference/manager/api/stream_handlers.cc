// SPDX-License-Identifier: Apache-2.0
// `/stream/session/{id}/…`: the WebSocket streams of a session (PROTOCOL.md §5.7). Each is a
// thin shell around a pure core in ../streams/: it carries out the core's actions on the socket
// and the agent, and registers the stream so that it ends with its session.
#include "bai/protocol/errors.h"
#include "bai/protocol/service_ports.h"

#include "server-reference/common/http/problem.h"
#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/agent_relay.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/streams/execute_run.h"
#include "server-reference/manager/streams/stream_broker.h"
#include "server-reference/manager/streams/stream_registry.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
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

  std::string owner;  ///< the keypair that opened it (the per-user stream cap)

  server::WebSocketHandlers Handlers() {
    server::WebSocketHandlers h;
    auto self = shared_from_this();
    h.on_open = [self](std::shared_ptr<server::WebSocket> const& ws) {
      std::lock_guard<std::recursive_mutex> lock(self->mu_);
      self->socket_ = ws;
      std::weak_ptr<ExecuteStream> weak = self;
      self->token_ = self->registry_.Add(
          self->session_id_,
          [weak](std::string const& why) {
            if (auto s = weak.lock()) s->Apply([&] { return s->run_.OnSessionEnded(why); });
          },
          self->owner);
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

// The client offered block frames as a subprotocol (server::WebSocketHandlers::block_tunnel).
bool BlockTunnelAsked(server::HttpRequest const& request) {
  auto v = request.Header("sec-websocket-protocol");
  if (!v) return false;
  // A comma-separated list of tokens.
  std::string_view rest = *v;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto token = rest.substr(0, comma);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (token == server::kBlockSubprotocol) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// A relayed stream (terminal, service-port tunnel): the client's WebSocket and the one its
// session's agent opens for it (docs/agent-protocol.md, "Data streams"), frames passed both
// ways unchanged, each side read only as fast as the other takes.
class RelayStream : public std::enable_shared_from_this<RelayStream> {
 public:
  RelayStream(AgentRegistry& agents, streams::StreamRegistry& registry,
              streams::AgentStreamBroker& broker, std::string agent_id,
              server::agent_protocol::OpenStream open)
      : agents_(agents),
        registry_(registry),
        broker_(broker),
        agent_id_(std::move(agent_id)),
        open_(std::move(open)) {}

  std::string owner;  ///< the keypair that opened it (the per-user stream cap)
  /// For a terminal or command: where to learn that its session is ending, so that a shell
  /// killed with its kernel reads as the session's end (1001), not as the shell's own exit.
  SessionStore* sessions = nullptr;

  server::WebSocketHandlers ClientHandlers() {
    server::WebSocketHandlers h;
    auto self = shared_from_this();
    h.on_open = [self](std::shared_ptr<server::WebSocket> const& ws) { self->ClientOpened(ws); };
    h.on_message = [self](std::shared_ptr<server::WebSocket> const& ws, std::string&& t) {
      self->FromClient(ws, std::move(t), false);
    };
    h.on_binary = [self](std::shared_ptr<server::WebSocket> const& ws, std::string&& b) {
      self->FromClient(ws, std::move(b), true);
    };
    h.on_close = [self](int) {
      std::shared_ptr<server::WebSocket> agent;
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        self->client_gone_ = true;
        agent = std::move(self->agent_);
        self->client_.reset();
      }
      if (agent) agent->Close(1000, "the client closed the stream");
      self->registry_.Remove(self->token_);
      self->broker_.Forget(self->open_.stream_id);
    };
    return h;
  }

 private:
  static constexpr std::size_t kHigh = 1 << 20;
  static constexpr std::size_t kLow = 256 << 10;
  static constexpr std::chrono::steady_clock::duration kTouchEvery = std::chrono::seconds(1);
  std::atomic<std::chrono::steady_clock::rep> last_touch_{0};

  static void Forward(std::shared_ptr<server::WebSocket> const& from,
                      std::shared_ptr<server::WebSocket> const& to, std::string&& data,
                      bool binary) {
    if (!to) return;
    binary ? to->SendBinary(std::move(data)) : to->Send(std::move(data));
    if (to->Backlog() > kHigh) {
      from->PauseReading(true);
      std::weak_ptr<server::WebSocket> weak = from;
      to->WhenDrained(kLow, [weak] {
        if (auto f = weak.lock()) f->PauseReading(false);
      });
    }
  }

  // Traffic either way is the user's activity (idle_timeout): noted at most once a second.
  void Active() {
    auto now = std::chrono::steady_clock::now();
    auto last = last_touch_.load(std::memory_order_relaxed);
    if (now.time_since_epoch().count() - last < kTouchEvery.count()) return;
    last_touch_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    agents_.Touch(open_.session_id);
  }

  // A client frame goes to the agent's side, or waits for it: the client may write before the
  // agent has connected (reading pauses meanwhile, after a frame or so has come).
  void FromClient(std::shared_ptr<server::WebSocket> const& ws, std::string&& data, bool binary) {
    Active();
    std::shared_ptr<server::WebSocket> agent;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!agent_) {
        early_.push_back({std::move(data), binary});
        return;
      }
      agent = agent_;
    }
    Forward(ws, agent, std::move(data), binary);
  }

  void ClientOpened(std::shared_ptr<server::WebSocket> const& ws) {
    ws->PauseReading(true);  // until the agent's side is there to take it
    {
      std::lock_guard<std::mutex> lock(mu_);
      client_ = ws;
    }
    std::weak_ptr<RelayStream> weak = shared_from_this();
    token_ = registry_.Add(
        open_.session_id,
        [weak](std::string const&) {
          if (auto s = weak.lock()) s->CloseBoth(1001, "the session has ended");
        },
        owner);
    streams::StreamWaiter waiter;
    waiter.pair = [weak]() -> std::optional<server::WebSocketHandlers> {
      auto s = weak.lock();
      if (!s) return std::nullopt;
      std::lock_guard<std::mutex> lock(s->mu_);
      if (s->client_gone_) return std::nullopt;
      return s->AgentHandlers();
    };
    waiter.expired = [weak] {
      if (auto s = weak.lock()) s->CloseBoth(1011, "the agent did not open the stream");
    };
    broker_.Expect(open_.stream_id, agent_id_,
                   std::chrono::steady_clock::now() + std::chrono::seconds(15), std::move(waiter));
    if (!agents_.Notify(agent_id_, open_)) {
      broker_.Forget(open_.stream_id);
      CloseBoth(1011, "the session's agent is not connected to this manager");
    }
  }

  server::WebSocketHandlers AgentHandlers() {
    server::WebSocketHandlers h;
    auto self = shared_from_this();
    h.on_open = [self](std::shared_ptr<server::WebSocket> const& ws) {
      std::shared_ptr<server::WebSocket> client;
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        if (self->client_gone_) {
          ws->Close(1000, "the client has gone");
          return;
        }
        self->agent_ = ws;
        client = self->client_;
        for (auto& [data, binary] : self->early_) binary ? ws->SendBinary(data) : ws->Send(data);
        self->early_.clear();
      }
      if (client) client->PauseReading(false);
    };
    auto relay = [self](std::shared_ptr<server::WebSocket> const& ws, std::string&& data,
                        bool binary) {
      self->Active();
      std::shared_ptr<server::WebSocket> client;
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        client = self->client_;
      }
      Forward(ws, client, std::move(data), binary);
    };
    h.on_message = [relay](auto const& ws, std::string&& t) { relay(ws, std::move(t), false); };
    h.on_binary = [relay](auto const& ws, std::string&& b) { relay(ws, std::move(b), true); };
    h.on_close = [self](int code) {
      // A shell's side closed because its session is being ended: it may come before the
      // session's ending event reaches the registry (later on PostgreSQL), and is the same end.
      if (code == 1000 && self->SessionEnding()) {
        return self->CloseBoth(1001, "the session has ended");
      }
      // The kernel's side ended (1000 a shell's exit, 1001 a service's close, 1013 refused…):
      // the client hears the same; a dropped agent link is an internal error to it.
      self->CloseBoth(code == 1006 || code == 1005 ? 1011 : code,
                      code == 1006 ? "the agent's stream was lost" : "");
    };
    return h;
  }

  bool SessionEnding() {
    if (!sessions) return false;
    auto s = sessions->Get(open_.session_id);
    if (!s.ok() || !*s) return false;
    auto status = (*s)->status;
    return status == protocol::SessionStatus::kTerminating ||
           status == protocol::SessionStatus::kTerminated ||
           status == protocol::SessionStatus::kError ||
           status == protocol::SessionStatus::kCancelled;
  }

  void CloseBoth(int code, std::string const& why) {
    std::shared_ptr<server::WebSocket> client, agent;
    {
      std::lock_guard<std::mutex> lock(mu_);
      client = client_;
      agent = std::move(agent_);
    }
    if (agent) agent->Close(code == 1011 ? 1001 : 1000, why);
    if (!client) return;
    if (open_.kind == "tcp" && code != 1000 && code != 1001) {
      // RFC 6455's first registry, and so libwebsockets, refuse 1012-1014 as protocol errors:
      // a tunnel's refusal is also said in a text frame before the close (24.09's clients
      // ignore text frames on a tunnel), {"close_code", "reason"}.
      std::string reason = why;
      if (reason.empty() && code == 1013) reason = "nothing listens on the app's port (yet)";
      client->Send(nlohmann::json{{"close_code", code}, {"reason", reason}}.dump());
    }
    client->Close(code, why);
  }

  AgentRegistry& agents_;
  streams::StreamRegistry& registry_;
  streams::AgentStreamBroker& broker_;
  std::string agent_id_;
  server::agent_protocol::OpenStream open_;
  std::mutex mu_;
  std::shared_ptr<server::WebSocket> client_;
  std::shared_ptr<server::WebSocket> agent_;
  bool client_gone_ = false;
  std::vector<std::pair<std::string, bool>> early_;  ///< client frames before the agent came
  std::uint64_t token_ = 0;
};

std::string NewStreamId() {
  std::string id = GenerateUuid();
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return id;
}

// What an app request names (24.09's stream_proxy and start_service parameters): the app
// (`app`, alias `service`), optionally one of its ports, and the user's `arguments` and `envs`
// as JSON text of an object.
struct AppRequest {
  protocol::ServicePort app;
  int port = 0;
  std::map<std::string, std::string> arguments;
  std::map<std::string, std::string> envs;
};

StatusOr<AppRequest> ReadAppRequest(Params& p, SessionRecord const& s) {
  auto name = p.String({"app", "service"}, true);
  auto port = p.Int({"port"}, 1024, 65535);
  AppRequest out;
  for (auto [key, field] : {std::pair{"arguments", &out.arguments}, std::pair{"envs", &out.envs}}) {
    auto const* raw = p.Raw({key});
    if (raw == nullptr || raw->is_null()) continue;
    nlohmann::json j =
        raw->is_string() ? nlohmann::json::parse(raw->get<std::string>(), nullptr, false) : *raw;
    if (!j.is_object()) {
      p.Fail(key, "a JSON object (as text)");
      continue;
    }
    for (auto const& [k, v] : j.items()) {
      // 24.09's arguments take a value, null (a flag) or a list of values.
      if (v.is_string()) {
        (*field)[k] = v.get<std::string>();
      } else if (v.is_null()) {
        (*field)[k] = "";
      } else if (v.is_number()) {
        (*field)[k] = v.dump();
      } else {
        p.Fail(key, "an object of strings");
        break;
      }
    }
  }
  if (auto st = p.Check(); !st.ok()) return st;
  auto it = std::find_if(s.service_ports.begin(), s.service_ports.end(),
                         [&](protocol::ServicePort const& a) { return a.name == *name; });
  if (it == s.service_ports.end()) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such app service.");
  }
  out.app = *it;
  if (out.app.protocol == "pty") {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "The app \"" + *name +
                                 "\" is a terminal: open it with /stream/session/{id}/pty "
                                 "(bai shell), not as a tunnel.");
  }
  if (port) {
    auto const& ports = out.app.container_ports;
    if (std::find(ports.begin(), ports.end(), *port) == ports.end()) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams,
                               "Invalid port: " + std::to_string(*port) + " is not one of " +
                                   out.app.name + "'s ports.");
    }
    out.port = static_cast<int>(*port);
  } else if (!out.app.container_ports.empty()) {
    out.port = out.app.container_ports.front();
  }
  return out;
}

// Starts the app in the session's kernel (once; a preopen port is the user's to serve) and
// calls `done` with its state ("started" or "running"), or why not: the transport's failure, or
// the app's (24.09's 500 "Failed to launch the app service").
void StartApp(AgentRegistry& agents, SessionRecord const& s, AppRequest const& a,
              std::function<void(StatusOr<std::string>)> done) {
  if (a.app.protocol == "preopen") return done(std::string("running"));
  server::agent_protocol::StartService m;
  m.session_id = s.id;
  m.name = a.app.name;
  m.port = a.port;
  m.arguments = a.arguments;
  m.envs = a.envs;
  agents.Request(*s.agent_id, std::move(m), std::chrono::seconds(60),
                 [done = std::move(done)](StatusOr<std::string> result) {
                   if (!result.ok()) return done(result.status());
                   auto j = nlohmann::json::parse(*result, nullptr, false);
                   std::string status = j.is_object() ? j.value("status", "") : "";
                   if (status == "started" || status == "running") return done(status);
                   done(MakeProblemStatus(ProblemType::kInternalServerError,
                                          status == "failed"
                                              ? "Failed to launch the app service: " +
                                                    j.value("error", std::string("no reason given"))
                                              : std::string("The agent's answer is malformed.")));
                 });
}

std::optional<HttpResponse> NotAnUpgrade() {
  // 24.09 (aiohttp) answers a plain GET on a WebSocket route with 400 too.
  return ProblemResponse(
      MakeProblemStatus(ProblemType::kGenericBadRequest, "Expected a WebSocket upgrade."));
}

// What the stream routes share.
struct StreamEnv {
  SessionStore& sessions;
  AgentRegistry& agents;
  streams::StreamRegistry& registry;
  streams::AgentStreamBroker& broker;
  std::string cluster_secret;
  std::function<std::chrono::system_clock::time_point()> clock;
  int max_streams;  ///< per keypair on this manager (ApiOptions::max_streams_per_user)
};

// One user holding the most streams on this manager already: 429 before the upgrade (1,000
// terminals into one session took 2,022 descriptors here and 3,013 threads on the agent).
std::optional<HttpResponse> TooManyStreams(StreamEnv& env, RequestContext& ctx) {
  if (env.max_streams <= 0) return std::nullopt;
  auto open = env.registry.CountFor(ctx.identity->access_key);
  if (open < static_cast<std::size_t>(env.max_streams)) return std::nullopt;
  auto r = ProblemResponse(MakeProblemStatus(
      ProblemType::kRateLimitExceeded,
      "You have " + std::to_string(open) +
          " streams open on this manager (terminals, commands, apps), the most one user may: "
          "close some first."));
  r.status = 429;
  return r;
}

// GET /stream/session/{id}/pty and /exec: a terminal or a command on pipes in the session's
// main kernel, relayed to the agent's data stream.
std::optional<HttpResponse> OpenCommandStream(std::string const& kind, StreamEnv& env,
                                              RequestContext& ctx, LateExchange const& exchange) {
  auto p = Params::From(ctx.request, ParamSource::kStandard);
  if (!p.ok()) return ProblemResponse(p.status());
  auto rows = p->Int({"rows"}, 1, 10000);
  auto cols = p->Int({"cols"}, 1, 10000);
  // bai's `command` (a JSON list of strings): that program instead of a login shell; exec's
  // command, required.
  std::vector<std::string> command;
  auto text = p->String({"command"}, kind == "exec");
  if (text) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    bool ok = j.is_array() && !j.empty() && j.size() <= 4096;
    for (auto const& a : ok ? j : nlohmann::json::array()) {
      ok = ok && a.is_string();
      if (ok) command.push_back(a.get<std::string>());
    }
    if (!ok) p->Fail("command", "a JSON list of strings, the program first");
  }
  if (auto st = p->Check(); !st.ok()) return ProblemResponse(st);
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  // Before the upgrade check: a client that met the refusal and asks again without an upgrade
  // (to read the problem) gets the same answer.
  if (auto refused = TooManyStreams(env, ctx)) return refused;
  if (!exchange->IsWebSocketUpgrade()) return NotAnUpgrade();
  (void)env.sessions.CountQuery(s->id);
  server::agent_protocol::OpenStream open;
  open.stream_id = NewStreamId();
  open.session_id = s->id;
  open.kind = kind;
  open.command = std::move(command);
  open.rows = static_cast<int>(rows.value_or(24));
  open.cols = static_cast<int>(cols.value_or(80));
  auto relay = std::make_shared<RelayStream>(env.agents, env.registry, env.broker, *s->agent_id,
                                             std::move(open));
  relay->owner = ctx.identity->access_key;
  relay->sessions = &env.sessions;
  exchange->AcceptWebSocket(relay->ClientHandlers());
  return std::nullopt;
}

// A terminal: a login shell in the session's main kernel (PROTOCOL.md §5.7's frames; bai's
// optional `rows` and `cols` give its first size). bai's `exec`: a command on pipes instead
// (bai exec without a terminal; the same frames with `err` and `eof`), its output streamed as
// written, the client's stdin passed on, both ways held back by a slow side.
std::optional<HttpResponse> OpenPty(StreamEnv& env, RequestContext& ctx,
                                    LateExchange const& exchange) {
  return OpenCommandStream("pty", env, ctx, exchange);
}
std::optional<HttpResponse> OpenExec(StreamEnv& env, RequestContext& ctx,
                                     LateExchange const& exchange) {
  return OpenCommandStream("exec", env, ctx, exchange);
}

// GET /stream/session/{id}/apps: the session's apps (24.09: a plain GET, not a WebSocket).
StatusOr<HttpResponse> ListApps(StreamEnv& env, RequestContext& ctx) {
  auto s = ResolveSession(env.sessions, ctx, false);
  if (!s.ok()) return s.status();
  return HttpResponse::Json(200, protocol::EncodeApps(s->service_ports));
}

// The client's side of a TCP tunnel to `port` of the session's app, once the app runs.
void AcceptTunnel(AgentRegistry& agents, streams::StreamRegistry& registry,
                  streams::AgentStreamBroker& broker, LateExchange const& exchange,
                  SessionRecord const& session, int port, std::string const& owner) {
  server::agent_protocol::OpenStream open;
  open.stream_id = NewStreamId();
  open.session_id = session.id;
  open.kind = "tcp";
  open.port = port;
  auto relay =
      std::make_shared<RelayStream>(agents, registry, broker, *session.agent_id, std::move(open));
  relay->owner = owner;
  auto handlers = relay->ClientHandlers();
  handlers.block_tunnel = BlockTunnelAsked(exchange->request());
  exchange->AcceptWebSocket(std::move(handlers));
}

// GET /stream/session/{id}/tcpproxy|httpproxy: one TCP connection to an app, over one
// WebSocket (BINARY frames both ways): the app is started first (24.09 answers 500 when it
// fails to); 1013 when nothing listens yet, 1001 when the app closes its end.
std::optional<HttpResponse> OpenTunnel(StreamEnv& env, RequestContext& ctx,
                                       LateExchange const& exchange) {
  auto p = Params::From(ctx.request, ParamSource::kStandard);
  if (!p.ok()) return ProblemResponse(p.status());
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  auto a = ReadAppRequest(*p, *s);
  if (!a.ok()) return ProblemResponse(a.status());
  if (auto refused = TooManyStreams(env, ctx)) return refused;
  if (!exchange->IsWebSocketUpgrade()) return NotAnUpgrade();
  (void)env.sessions.CountQuery(s->id);
  StartApp(env.agents, *s, *a,
           [&agents = env.agents, &registry = env.registry, &broker = env.broker, exchange,
            headers = ctx.response_headers, session = *s, port = a->port,
            owner = ctx.identity->access_key](StatusOr<std::string> started) {
             if (!started.ok()) {
               return RespondLate(*exchange, headers, ProblemResponse(started.status()));
             }
             AcceptTunnel(agents, registry, broker, exchange, session, port, owner);
           });
  return std::nullopt;
}

// POST /session/{id}/start-service: starts an app once and waits for its port (24.09 then
// registers it with an app-proxy coordinator and answers {token, wsproxy_addr}; bai has no
// coordinator: the tunnel is /tcpproxy, and the answer is the app's state).
std::optional<HttpResponse> StartService(StreamEnv& env, RequestContext& ctx,
                                         LateExchange const& exchange) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return ProblemResponse(p.status());
  (void)p->String({"login_session_token"});
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  auto a = ReadAppRequest(*p, *s);
  if (!a.ok()) return ProblemResponse(a.status());
  auto headers = ctx.response_headers;
  std::string name = a->app.name;
  int port = a->port;
  StartApp(env.agents, *s, *a, [exchange, headers, name, port](StatusOr<std::string> started) {
    if (!started.ok()) return RespondLate(*exchange, headers, ProblemResponse(started.status()));
    RespondLate(
        *exchange, headers,
        HttpResponse::Json(
            200, nlohmann::json{{"status", *started}, {"app", name}, {"port", port}}.dump()));
  });
  return std::nullopt;
}

// The agent's answer to stopping a service, as the client's response: 204, or why not.
HttpResponse ServiceStopped(StatusOr<std::string> const& result) {
  auto j = result.ok() ? nlohmann::json::parse(*result, nullptr, false) : nlohmann::json();
  std::string status = j.is_object() ? j.value("status", "") : "";
  if (status == "stopped" || status == "not-running") return HttpResponse::NoContent();
  return ProblemResponse(!result.ok() ? result.status()
                                      : MakeProblemStatus(ProblemType::kInternalServerError,
                                                          "Failed to shut down the app service: " +
                                                              j.value("error", status)));
}

// POST /session/{id}/shutdown-service: ends an app's service (24.09: `service_name`, 204). A
// preopen port is the user's own: nothing to end. Started again by the next start-service or
// tunnel.
std::optional<HttpResponse> ShutdownService(StreamEnv& env, RequestContext& ctx,
                                            LateExchange const& exchange) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return ProblemResponse(p.status());
  auto name = p->String({"service_name"}, true);
  if (auto st = p->Check(); !st.ok()) return ProblemResponse(st);
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  auto it = std::find_if(s->service_ports.begin(), s->service_ports.end(),
                         [&](protocol::ServicePort const& a) { return a.name == *name; });
  if (it == s->service_ports.end()) {
    return ProblemResponse(MakeProblemStatus(ProblemType::kObjectNotFound, "No such app service."));
  }
  if (it->protocol == "pty") {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kInvalidApiParams,
                          "The app \"" + *name + "\" is a terminal: it ends with its shell."));
  }
  if (it->protocol == "preopen" || it->container_ports.empty()) return HttpResponse::NoContent();
  server::agent_protocol::StartService m;
  m.session_id = s->id;
  m.stop = true;
  m.name = it->name;
  m.port = it->container_ports.front();
  AnswerFromAgent(env.agents, *s->agent_id, std::move(m), std::chrono::seconds(30), ctx, exchange,
                  ServiceStopped);
  return std::nullopt;
}

// GET /agent-stream/{stream}: the agents' side of data streams, paired with the client's by
// the stream id.
std::optional<HttpResponse> AgentStream(StreamEnv& env, RequestContext& ctx,
                                        LateExchange const& exchange) {
  auto header = ctx.request.Header("x-bai-agent-auth");
  auto proof = ctx.request.Header("x-bai-stream-proof");
  if (!header || !proof) {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kAuthFailed, "Agent credentials required."));
  }
  auto agent =
      server::agent_protocol::VerifyAuth(std::string(*header), env.cluster_secret, env.clock());
  if (!agent.ok()) return ProblemResponse(agent.status());
  std::string stream_id = ctx.params.at("stream");
  if (!server::agent_protocol::VerifyStreamProof(std::string(*proof), *agent, env.cluster_secret,
                                                 stream_id)) {
    return ProblemResponse(MakeProblemStatus(ProblemType::kAuthFailed, "Wrong stream proof."));
  }
  if (!exchange->IsWebSocketUpgrade()) return NotAnUpgrade();
  auto waiter = env.broker.Claim(stream_id, *agent, std::chrono::steady_clock::now());
  if (!waiter.ok()) {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kObjectNotFound, waiter.status().message()));
  }
  auto handlers = waiter->pair();
  if (!handlers) {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kObjectNotFound, "The stream's client has gone."));
  }
  handlers->block_tunnel = BlockTunnelAsked(exchange->request());
  exchange->AcceptWebSocket(std::move(*handlers));
  return std::nullopt;
}

// GET /stream/session/{id}/execute: one WebSocket is one run of code.
std::optional<HttpResponse> OpenExecute(StreamEnv& env, RequestContext& ctx,
                                        LateExchange const& exchange) {
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  if (auto refused = TooManyStreams(env, ctx)) return refused;
  if (!exchange->IsWebSocketUpgrade()) return NotAnUpgrade();
  (void)env.sessions.CountQuery(s->id);
  // 16 hex digits, as 24.09's secrets.token_hex(8).
  std::string run_id = GenerateUuid();
  run_id.erase(std::remove(run_id.begin(), run_id.end(), '-'), run_id.end());
  run_id.resize(16);
  auto stream = std::make_shared<ExecuteStream>(env.agents, env.registry, s->id, *s->agent_id,
                                                std::move(run_id));
  stream->owner = ctx.identity->access_key;
  exchange->AcceptWebSocket(stream->Handlers());
  return std::nullopt;
}

}  // namespace

void RegisterStreamRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents,
                          streams::StreamRegistry& registry, streams::AgentStreamBroker& broker,
                          std::string cluster_secret) {
  using L = AuthLevel;
  auto env = std::make_shared<StreamEnv>(StreamEnv{sessions, agents, registry, broker,
                                                   std::move(cluster_secret), api.options().clock,
                                                   api.options().max_streams_per_user});
  std::string agent_streams = std::string(server::agent_protocol::kStreamPath) + "{stream}";
  AddRoutes<StreamEnv>(api, env,
                       {
                           {"GET", "/stream/session/{id}/pty", L::kUser, OpenPty},
                           {"GET", "/stream/session/{id}/exec", L::kUser, OpenExec},
                           {"GET", "/stream/session/{id}/apps", L::kUser, ListApps},
                           {"GET", "/stream/session/{id}/tcpproxy", L::kUser, OpenTunnel},
                           {"GET", "/stream/session/{id}/httpproxy", L::kUser, OpenTunnel},
                           {"POST", "/session/{id}/start-service", L::kUser, StartService},
                           {"POST", "/session/{id}/shutdown-service", L::kUser, ShutdownService},
                           {"GET", agent_streams.c_str(), L::kAnonymous, AgentStream},
                           {"GET", "/stream/session/{id}/execute", L::kUser, OpenExecute},
                       });
}

}  // namespace bai::manager
