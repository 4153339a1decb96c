// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/webserver.h"

#include "server-reference/webserver/webserver_impl.h"

namespace bai::webserver {

void WebServer::Impl::Answer(std::shared_ptr<Exchange> const& ex, HttpResponse r,
                             std::string_view nonce,
                             std::vector<std::string> const& connect_origins) {
  for (auto& h : SecurityHeaders(Tls(), nonce, connect_origins)) r.headers.push_back(std::move(h));
  ex->Respond(std::move(r));
}

std::string WebServer::Impl::OwnOrigin(HttpRequest const& req) const {
  auto host = req.Header("host");
  return std::string(Tls() ? "https://" : "http://") + std::string(host ? *host : "");
}

// ---- the request's way in -------------------------------------------------------------

void WebServer::Impl::Handle(std::shared_ptr<Exchange> ex) {
  auto const& req = ex->request();
  if (req.path == "/func" || req.path.rfind("/func/", 0) == 0) return Forward(std::move(ex));
  if (req.path.rfind("/server/", 0) == 0) return ServerRoute(std::move(ex));
  if (req.path.rfind("/storage/", 0) == 0) {
    // The relay is the console's: only for a signed-in user (issue 43, 5e: 300 slow
    // unauthenticated PATCHes held 332 descriptors); the ticket's token still decides at the
    // storage proxy.
    if (!RequireLogin(ex)) return;
    return Submit(ex, [this, ex] { StorageRelay(ex); });
  }
  if (req.method != "GET" && req.method != "HEAD") {
    return Answer(ex, Problem(ps::ProblemType::kMethodNotAllowed, "Only GET reads the console."));
  }
  StaticFile(ex);
}

void WebServer::Impl::ServerRoute(std::shared_ptr<Exchange> ex) {
  auto const& req = ex->request();
  if (req.method != "POST") {
    return Answer(ex, Problem(ps::ProblemType::kMethodNotAllowed, req.path + " takes POST."));
  }
  if (req.path == "/server/login") return Submit(ex, [this, ex] { Login(ex); });
  if (req.path == "/server/logout") return Submit(ex, [this, ex] { Logout(ex); });
  if (req.path == "/server/login-check") return Submit(ex, [this, ex] { LoginCheck(ex); });
  if (req.path == "/server/extend-login-session") {
    return Submit(ex, [this, ex] { ExtendLogin(ex); });
  }
  if (req.path == "/server/update-password-no-auth") {
    return Submit(ex, [this, ex] { UpdatePasswordNoAuth(ex); });
  }
  if (req.path == "/server/apps") return Submit(ex, [this, ex] { OpenApp(ex); });
  Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such route: " + req.path));
}

void WebServer::Impl::Submit(std::shared_ptr<Exchange> const& ex, std::function<void()> work) {
  if (!pool.TrySubmit(std::move(work))) {
    Answer(ex, Problem(ps::ProblemType::kServiceUnavailable,
                       "The webserver is busy; retry in a moment."));
  }
}

void WebServer::Impl::StopAll() {
  // Closed first: a bridge registers its upstream socket under streams_mu only while the
  // group is open, so the cancelling below reaches every one registered.
  stream_threads.Close();
  if (http) http->Stop();
  if (apps) apps->Stop();
  {
    std::lock_guard<std::mutex> lock(streams_mu);
    for (auto const& c : cancels) c->Cancel();
    for (auto* s : upstream_sockets) s->Cancel();
  }
  stream_threads.WaitIdle(std::chrono::seconds(10));
}

StatusOr<std::unique_ptr<WebServer>> WebServer::Start(WebServerOptions options,
                                                      server::Database& db) {
  if (options.managers.empty()) {
    return Status(StatusCode::kInvalidArgument, "bai-webserver needs a manager's URL");
  }
  auto impl = std::make_shared<Impl>(std::move(options), db);
  for (auto const& url : impl->options.managers) {
    auto e = internal::ParseEndpoint(url);
    if (!e.ok()) {
      return Status(StatusCode::kInvalidArgument,
                    "manager URL '" + url + "': " + e.status().message());
    }
    impl->managers.push_back(*std::move(e));
  }
  server::HttpServerOptions http;
  http.address = impl->options.address;
  http.port = impl->options.port;
  http.threads = impl->options.io_threads;
  http.max_body_bytes = 1 << 20;
  // Large bodies read into memory (signed-in /func requests) hold at most this together;
  // a body must keep coming at 16 KiB/s on average after the first read timeout (issue 43, 5e).
  http.max_buffered_body_bytes = impl->options.max_buffered_body_bytes;
  http.min_body_bytes_per_second = impl->options.min_body_bytes_per_second;
  std::size_t func_limit = impl->options.max_body_bytes;
  http.body_limit_for = [func_limit](std::string_view, std::string_view path) -> std::size_t {
    return path.rfind("/func/", 0) == 0 || path.rfind("/storage/", 0) == 0 ? func_limit : 0;
  };
  std::weak_ptr<Impl> weak = impl;
  http.body_sink_for = [weak](HttpRequest const& head,
                              std::uint64_t length) -> std::unique_ptr<server::BodySink> {
    auto self = weak.lock();
    return self ? self->BodyFor(head, length) : nullptr;
  };
  auto server = server::HttpServer::Start(http, [weak](std::shared_ptr<Exchange> ex) {
    if (auto self = weak.lock()) self->Handle(std::move(ex));
  });
  if (!server.ok()) return std::move(server).status();
  impl->http = *std::move(server);
  if (impl->options.app_first_port > 0) {
    AppPortsOptions a;
    a.bind_address = impl->options.address;
    a.advertised_host = impl->options.app_host;
    a.first_port = impl->options.app_first_port;
    a.last_port = impl->options.app_last_port;
    a.tls = impl->options.secure_cookies;
    a.max_body_bytes = impl->options.max_body_bytes;
    a.max_per_user = impl->options.app_ports_per_user;
    impl->apps = std::make_unique<AppPorts>(
        a,
        [weak](std::string const& token,
               std::string const& target) -> StatusOr<std::unique_ptr<WebSocketConnection>> {
          auto self = weak.lock();
          if (!self) return Status(StatusCode::kUnavailable, "the webserver is stopping");
          return self->AppTunnel(token, target);
        });
  }
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

WebServer::WebServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebServer::~WebServer() { Stop(); }
std::uint16_t WebServer::port() const { return impl_->http->port(); }
void WebServer::Stop() {
  if (impl_) impl_->StopAll();
}

}  // namespace bai::webserver
