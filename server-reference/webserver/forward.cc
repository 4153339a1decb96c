// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/webserver_impl.h"

namespace bai::webserver {

TransportRequest WebServer::Impl::Upstream(internal::Endpoint const& m, std::string const& method,
                                           std::string const& target, Headers headers,
                                           std::string body, std::string const& api_version,
                                           Keys const* keys) const {
  TransportRequest t;
  t.method = method;
  t.origin = m.origin;
  t.host = m.host;
  t.target = m.base_path + target;
  t.body = std::move(body);
  t.api_version = api_version;
  t.sign = false;  // signed here, with the login's keys
  bool has_version = false;
  for (auto const& [name, value] : headers) has_version |= name == "x-backendai-version";
  if (!has_version) headers.emplace_back("x-backendai-version", api_version);
  if (keys) {
    std::string date = ps::FormatRequestDate(Clock::now());
    std::optional<std::string> content_type;
    for (auto const& [name, value] : headers) {
      if (name == "content-type") content_type = value;
    }
    ps::SigningInput in;
    in.method = method;
    in.request_target = t.target;
    in.date = date;
    in.host = m.host;
    in.content_type = content_type;
    in.api_version = api_version;
    auto sig = ps::Sign(in, keys->secret_key);
    if (sig.ok()) {
      headers.emplace_back("date", date);
      headers.emplace_back("authorization",
                           ps::AuthorizationHeaderValue(keys->access_key, *sig, in.hash));
    }
  }
  t.headers = std::move(headers);
  return t;
}

std::string WebServer::Impl::VersionOf(HttpRequest const& req) {
  auto v = req.Header("x-backendai-version");
  if (v && ps::IsAcceptedApiVersion(*v)) return std::string(*v);
  return ps::kCurrentApiVersion.ToString();
}

// ---- apps ---------------------------------------------------------------------------------

void WebServer::Impl::OpenApp(std::shared_ptr<Exchange> const& ex) {
  std::string login_token;
  auto s = RequireLogin(ex, &login_token);
  if (!s || !PassesCsrf(ex, *s)) return;
  if (!apps) {
    return Answer(ex, Problem(ps::ProblemType::kNotImplemented,
                              "This webserver opens no apps (started with --app-ports 0); use "
                              "`bai session app` on your machine."));
  }
  auto const& req = ex->request();
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  auto text = [&](char const* key) {
    return body.is_object() && body.contains(key) && body[key].is_string()
               ? body[key].get<std::string>()
               : std::string();
  };
  std::string session = text("session"), app = text("app");
  int port = 0;
  if (body.is_object() && body.contains("port") && body["port"].is_number_integer()) {
    port = body["port"].get<int>();
  }
  if (session.empty() || app.empty() || port < 0 || port > 65535) {
    return Answer(ex, Problem(ps::ProblemType::kInvalidApiParams,
                              "Give {\"session\": ID, \"app\": NAME} (and \"port\" for an "
                              "app's other port)."));
  }
  Keys keys{s->identity.access_key, s->secret_key};
  nlohmann::json start = {{"app", app}};
  if (port != 0) start["port"] = port;
  auto started = ToManagers([&](internal::Endpoint const& m) {
    return transport->Send(
        Upstream(m, "POST", "/session/" + internal::EncodeSegment(session) + "/start-service",
                 {{"content-type", "application/json"}}, start.dump(),
                 ps::kCurrentApiVersion.ToString(), &keys));
  });
  if (!started.ok() || started->status != 200) return RelayAnswer(ex, started);
  auto host = req.Header("host");
  auto link = apps->Open(login_token, s->identity.access_key, session, app, port,
                         HostName(host ? *host : ""));
  if (!link.ok()) return Answer(ex, server::ProblemResponse(link.status()));
  Answer(ex, JsonAnswer(200, {{"url", *link}, {"app", app}}));
}

StatusOr<std::unique_ptr<WebSocketConnection>> WebServer::Impl::AppTunnel(
    std::string const& token, std::string const& target) {
  auto live = logins.Find(token, NowSeconds());
  if (!live.ok()) return live.status();
  if (!*live) return Status(StatusCode::kPermissionDenied, "the login has ended");
  Keys keys{(*live)->identity.access_key, (*live)->secret_key};
  Status last(StatusCode::kUnavailable, "no manager configured");
  for (std::size_t i = 0; i < managers.size(); ++i) {
    auto t = Upstream(managers[(next_manager.load() + i) % managers.size()], "GET", target, {}, {},
                      ps::kCurrentApiVersion.ToString(), &keys);
    auto opened = internal::OpenLwsWebSocket(t, {});
    if (opened.ok()) return opened;
    last = opened.status();
    if (last.error_info().http_status != 0) break;  // a manager answered: that is the answer
  }
  return last;
}

// ---- /func/* ------------------------------------------------------------------------------

void WebServer::Impl::RelayAnswer(std::shared_ptr<Exchange> const& ex,
                                  StatusOr<ApiResponse> const& answer) {
  if (!answer.ok()) {
    auto r = Problem(ps::ProblemType::kServiceUnavailable,
                     "No manager answers (" + answer.status().message() + "); try again later.");
    r.status = 502;
    return Answer(ex, std::move(r));
  }
  HttpResponse r;
  r.status = answer->status;
  r.content_type = answer->Header("content-type").value_or("");
  r.body = answer->body;
  r.headers = ForwardedResponseHeaders(answer->headers);
  Answer(ex, std::move(r));
}

void WebServer::Impl::Forward(std::shared_ptr<Exchange> ex) {
  Submit(ex, [this, ex] {
    auto s = RequireLogin(ex);
    if (!s || !PassesCsrf(ex, *s)) return;
    auto const& req = ex->request();
    auto target = UpstreamTarget(req.target);
    if (!target) {
      return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such route: " + req.path));
    }
    Keys keys{s->identity.access_key, s->secret_key};
    if (ex->IsWebSocketUpgrade()) return BridgeWebSocket(ex, *target, keys);
    auto accept = req.Header("accept");
    bool events = target->rfind("/events/", 0) == 0 ||
                  (accept && accept->find("text/event-stream") != std::string_view::npos);
    if (events) return BridgeEvents(ex, *target, keys);
    std::string method = req.method == "HEAD" ? "HEAD" : req.method;
    auto answer = ToManagers([&](internal::Endpoint const& m) {
      return transport->Send(Upstream(m, method, *target, ForwardedRequestHeaders(req.headers),
                                      req.body, VersionOf(req), &keys));
    });
    if (answer.ok() && answer->status == 200 && IsTransferTicketTarget(*target)) {
      answer->body = WithConsoleUrl(answer->body);
    }
    if (answer.ok() && answer->body.size() > options.max_response_bytes) {
      auto r = Problem(ps::ProblemType::kRequestTooLarge,
                       "The manager's answer is larger than the webserver relays (" +
                           std::to_string(options.max_response_bytes) +
                           " bytes); use the bai CLI for this.");
      r.status = 502;
      return Answer(ex, std::move(r));
    }
    RelayAnswer(ex, answer);
  });
}

bool WebServer::Impl::StartStreamThread(std::function<void()> body) {
  return stream_threads.Start([self = shared_from_this(), body = std::move(body)] { body(); });
}

void WebServer::Impl::BridgeEvents(std::shared_ptr<Exchange> const& ex, std::string const& target,
                                   Keys keys) {
  auto cancel = std::make_shared<StreamCancel>();
  bool started = StartStreamThread([this, ex, target, keys, cancel] {
    {
      std::lock_guard<std::mutex> lock(streams_mu);
      cancels.insert(cancel);
    }
    ex->OnClose([cancel] { cancel->Cancel(); });
    auto const& req = ex->request();
    bool opened = false;
    auto answer = ToManagers([&](internal::Endpoint const& m) {
      auto t = Upstream(m, "GET", target, ForwardedRequestHeaders(req.headers), {}, VersionOf(req),
                        &keys);
      t.cancel = cancel;
      return transport->SendStreaming(t, [&](std::string_view chunk) {
        if (!opened) {
          opened = true;
          auto h = SecurityHeaders(Tls());
          h.emplace_back("Cache-Control", "no-cache");
          h.emplace_back("X-Accel-Buffering", "no");
          ex->StartEventStream(std::move(h));
        }
        if (chunk.empty()) return !cancel->cancelled();
        return ex->WriteEvent(std::string(chunk));
      });
    });
    if (opened) {
      ex->EndEventStream();
    } else {
      RelayAnswer(ex, answer);
    }
    std::lock_guard<std::mutex> lock(streams_mu);
    cancels.erase(cancel);
  });
  if (!started) {
    Answer(ex, Problem(ps::ProblemType::kServiceUnavailable, "The webserver is stopping."));
  }
}

void WebServer::Impl::BridgeWebSocket(std::shared_ptr<Exchange> const& ex,
                                      std::string const& target, Keys keys) {
  auto const& req = ex->request();
  std::unique_ptr<WebSocketConnection> upstream;
  Status last(StatusCode::kUnavailable, "no manager configured");
  for (std::size_t i = 0; i < managers.size() && !upstream; ++i) {
    auto t = Upstream(managers[(next_manager.load() + i) % managers.size()], "GET", target,
                      ForwardedRequestHeaders(req.headers), {}, VersionOf(req), &keys);
    auto opened = internal::OpenLwsWebSocket(t, {});
    if (opened.ok()) {
      upstream = *std::move(opened);
    } else {
      last = opened.status();
      if (last.error_info().http_status != 0) break;  // a manager answered: that is the answer
    }
  }
  if (!upstream) {
    int code = last.error_info().http_status;
    auto r = code != 0 ? Problem(ps::ProblemType::kGenericBadRequest, last.message())
                       : Problem(ps::ProblemType::kServiceUnavailable,
                                 "No manager answers (" + last.message() + ").");
    r.status = code != 0 ? code : 502;
    return Answer(ex, std::move(r));
  }
  auto bridge = std::make_shared<Bridge>();
  bridge->upstream = std::move(upstream);
  {
    std::lock_guard<std::mutex> lock(streams_mu);
    if (stream_threads.closed()) {
      return Answer(ex, Problem(ps::ProblemType::kServiceUnavailable, "stopping"));
    }
    upstream_sockets.insert(bridge->upstream.get());
  }
  server::WebSocketHandlers h;
  h.on_open = [this, bridge](std::shared_ptr<server::WebSocket> const& ws) {
    {
      std::lock_guard<std::mutex> lock(bridge->mu);
      bridge->client = ws;
      bridge->relaying = true;
    }
    bool ok = StartStreamThread([this, bridge] { UpstreamToClient(bridge); }) &&
              StartStreamThread([this, bridge] { ClientToUpstream(bridge); });
    if (!ok) {
      ws->Close(1001, "stopping");
      bridge->upstream->Cancel();
    }
  };
  auto take = [bridge](std::shared_ptr<server::WebSocket> const& ws, std::string const& data,
                       bool binary) {
    std::lock_guard<std::mutex> lock(bridge->mu);
    bridge->queued += data.size();
    bridge->to_upstream.push_back({data, binary});
    if (bridge->queued > kHighWater && !bridge->paused) {
      bridge->paused = true;
      ws->PauseReading(true);
    }
    bridge->cv.notify_all();
  };
  h.on_message = [take](auto const& ws, std::string const& text) { take(ws, text, false); };
  h.on_binary = [take](auto const& ws, std::string const& bytes) { take(ws, bytes, true); };
  h.on_close = [this, bridge](int code) {
    bool relaying;
    {
      std::lock_guard<std::mutex> lock(bridge->mu);
      bridge->client_closed = true;
      bridge->client_code = code;
      relaying = bridge->relaying;
      bridge->cv.notify_all();
    }
    if (!relaying) {
      // The browser left before the upgrade completed: nobody relays, the manager's side goes.
      bridge->upstream->Cancel();
      std::lock_guard<std::mutex> lock(streams_mu);
      upstream_sockets.erase(bridge->upstream.get());
    }
  };
  ex->AcceptWebSocket(std::move(h));
}

void WebServer::Impl::ClientToUpstream(std::shared_ptr<Bridge> const& b) {
  for (;;) {
    WebSocketMessage m;
    {
      std::unique_lock<std::mutex> lock(b->mu);
      b->cv.wait(lock, [&] { return !b->to_upstream.empty() || b->client_closed; });
      if (b->to_upstream.empty()) break;
      m = std::move(b->to_upstream.front());
      b->to_upstream.pop_front();
      b->queued -= m.data.size();
      if (b->paused && b->queued < kLowWater) {
        b->paused = false;
        if (b->client) b->client->PauseReading(false);
      }
    }
    if (!b->upstream->Send(std::move(m)).ok()) return;
  }
  int code;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    code = b->client_code;
  }
  // 1005/1006 (no code, no close frame) cannot be sent on: a normal close stands for them.
  b->upstream->Close(code == 1005 || code == 1006 ? 1000 : code, "");
}

void WebServer::Impl::UpstreamToClient(std::shared_ptr<Bridge> const& b) {
  std::shared_ptr<server::WebSocket> client;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    client = b->client;
  }
  auto deadline = std::optional<std::chrono::steady_clock::time_point>();
  for (;;) {
    auto e = b->upstream->Receive(std::chrono::milliseconds(500));
    if (e.kind == WebSocketEvent::Kind::kClosed) {
      int code = b->upstream->close_code();
      client->Close(code == 0 || code == 1005 || code == 1006 ? 1000 : code, "");
      break;
    }
    if (e.kind == WebSocketEvent::Kind::kMessage) {
      bool sent = e.message.binary ? client->SendBinary(std::move(e.message.data))
                                   : client->Send(std::move(e.message.data));
      if (!sent) break;
      if (client->Backlog() > kHighWater) {
        // The browser reads slowly: stop taking from the manager until it catches up.
        auto drained = std::make_shared<std::atomic<bool>>(false);
        client->WhenDrained(kLowWater, [b, drained] {
          drained->store(true);
          std::lock_guard<std::mutex> lock(b->mu);
          b->cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(b->mu);
        b->cv.wait(lock, [&] { return drained->load() || b->client_closed; });
      }
    }
    bool closed;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      closed = b->client_closed;
    }
    if (closed) {
      // The browser left: the manager's side gets its close and a few seconds to answer.
      if (!deadline) deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      if (std::chrono::steady_clock::now() > *deadline) {
        b->upstream->Cancel();
        break;
      }
    }
  }
  {
    // The socket's handlers hold the bridge: letting go of the socket here breaks the cycle.
    std::lock_guard<std::mutex> lock(b->mu);
    b->client.reset();
  }
  std::lock_guard<std::mutex> lock(streams_mu);
  upstream_sockets.erase(b->upstream.get());
}

}  // namespace bai::webserver
