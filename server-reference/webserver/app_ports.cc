// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/app_ports.h"

#include "bai/protocol/errors.h"

#include "libbai/util/url.h"
#include "server-reference/common/exec/thread_group.h"
#include "server-reference/common/exec/work_pool.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/common/log/log.h"
#include "server-reference/webserver/app_proxy.h"
#include "server-reference/webserver/login_sessions.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace bai::webserver {
namespace {

namespace ps = protocol;
using server::Exchange;
using server::HttpResponse;
using Steady = std::chrono::steady_clock;

// Constant-time comparison of secrets.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// An app's answer of known length up to this is kept whole (its Content-Length reaches the
// browser); a longer one streams.
constexpr std::size_t kKeepWhole = 1u << 20;
// How far a streamed answer may run ahead of the browser reading it.
constexpr std::size_t kStreamAhead = 4u << 20;

// The app port's own answers are short pages a person reads in the app's tab.
HttpResponse Page(int status, std::string_view title, std::string_view text) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.body = "<!doctype html><meta charset=utf-8><title>" + HtmlEscape(title) + "</title><h1>" +
           HtmlEscape(title) + "</h1><p>" + HtmlEscape(text) + "</p>\n";
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("Content-Security-Policy", "default-src 'none'");
  return r;
}

std::int64_t SteadySeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(Steady::now().time_since_epoch()).count();
}

}  // namespace

struct Circuit {
  int port = 0;
  std::string login_token;
  std::string owner;  // the user's access key
  std::string session_id;
  std::string app;
  int app_port = 0;
  std::string permit;
  std::string setup_token;  // under AppPorts::Impl::mu
  Steady::time_point setup_expires;
  std::unique_ptr<server::HttpServer> http;
  std::atomic<std::int64_t> last_used{0};
  std::atomic<bool> ended{false};
};

struct AppPorts::Impl : std::enable_shared_from_this<AppPorts::Impl> {
  Impl(AppPortsOptions o, OpenAppTunnel t)
      : options(std::move(o)), open(std::move(t)), pool(options.relay_threads, 1024) {}

  AppPortsOptions options;
  OpenAppTunnel open;
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::map<int, std::shared_ptr<Circuit>> circuits;  // by port, under mu
  std::set<WebSocketConnection*> tunnels;            // WebSocket apps' tunnels, under mu
  server::ThreadGroup relay_threads;                 // closed by Stop()
  std::thread reaper;
  server::WorkPool pool;  // last: its destructor waits for relays that use the members above

  std::string Link(Circuit const& c, std::string const& browser_host) const {
    std::string host = !options.advertised_host.empty() ? options.advertised_host
                       : !browser_host.empty()          ? browser_host
                                                        : options.bind_address;
    return std::string(options.tls ? "https://" : "http://") + host + ":" + std::to_string(c.port) +
           std::string(kAppSetupPath) + "?token=" + c.setup_token;
  }

  StatusOr<std::string> Open(std::string const& login_token, std::string const& owner,
                             std::string const& session_id, std::string const& app, int app_port,
                             std::string const& browser_host) {
    std::unique_lock<std::mutex> lock(mu);
    if (stopping) {
      return ps::MakeProblemStatus(ps::ProblemType::kServiceUnavailable, "stopping");
    }
    for (auto& [port, c] : circuits) {
      if (!c->ended && c->login_token == login_token && c->session_id == session_id &&
          c->app == app && c->app_port == app_port) {
        c->setup_token = LoginSessions::RandomToken(24);
        c->setup_expires = Steady::now() + options.setup_token_lifetime;
        return Link(*c, browser_host);
      }
    }
    // One user holds at most max_per_user: their least recently used goes (the reaper stops it).
    if (options.max_per_user > 0) {
      std::vector<Circuit*> mine;
      for (auto& [port, c] : circuits) {
        if (!c->ended && c->owner == owner) mine.push_back(c.get());
      }
      if (mine.size() >= static_cast<std::size_t>(options.max_per_user)) {
        auto* oldest = *std::min_element(mine.begin(), mine.end(), [](auto* a, auto* b) {
          return a->last_used.load() < b->last_used.load();
        });
        oldest->ended = true;
        cv.notify_all();
        server::log::Info("closed a user's least recently used app port",
                          {{"port", std::to_string(oldest->port)},
                           {"limit", std::to_string(options.max_per_user)}});
      }
    }
    // A free port of the range: one no circuit holds and the system lets us bind.
    Status last = ps::MakeProblemStatus(
        ps::ProblemType::kServiceUnavailable,
        "Every app port (" + std::to_string(options.first_port) + "-" +
            std::to_string(options.last_port) +
            ") is in use; close apps you no longer use (signing out closes yours) or ask the "
            "operator to widen bai-webserver's --app-ports.");
    for (int port = options.first_port; port <= options.last_port; ++port) {
      if (circuits.count(port)) continue;
      auto c = std::make_shared<Circuit>();
      c->port = port;
      c->login_token = login_token;
      c->owner = owner;
      c->session_id = session_id;
      c->app = app;
      c->app_port = app_port;
      c->permit = LoginSessions::RandomToken(32);
      c->setup_token = LoginSessions::RandomToken(24);
      c->setup_expires = Steady::now() + options.setup_token_lifetime;
      c->last_used = SteadySeconds();
      server::HttpServerOptions h;
      h.address = options.bind_address;
      h.port = static_cast<std::uint16_t>(port);
      h.threads = 1;
      h.max_body_bytes = options.max_body_bytes;
      h.read_timeout = std::chrono::seconds(120);
      std::weak_ptr<Impl> weak = shared_from_this();
      std::weak_ptr<Circuit> wc = c;
      auto started = server::HttpServer::Start(h, [weak, wc](std::shared_ptr<Exchange> ex) {
        auto self = weak.lock();
        auto circuit = wc.lock();
        if (!self || !circuit) {
          return ex->Respond(Page(503, "App closed", "Open the app again from the console."));
        }
        self->Handle(circuit, std::move(ex));
      });
      if (!started.ok()) continue;  // taken by another program: the next port
      c->http = *std::move(started);
      circuits[port] = c;
      server::log::Info("opened an app port",
                        {{"port", std::to_string(port)}, {"session", session_id}, {"app", app}});
      return Link(*c, browser_host);
    }
    return last;
  }

  void Handle(std::shared_ptr<Circuit> const& c, std::shared_ptr<Exchange> ex) {
    auto const& req = ex->request();
    if (c->ended) {
      return ex->Respond(Page(403, "App closed",
                              "This app's link has ended (sign-out, or unused for a while). "
                              "Open the app again from the console."));
    }
    if (req.path == kAppSetupPath) return Setup(c, ex);
    auto cookies = req.Header("cookie");
    auto permit = cookies ? CookieValue(*cookies, PermitCookieName(c->port)) : std::nullopt;
    if (!permit || !SameSecret(*permit, c->permit)) {
      return ex->Respond(Page(403, "Open this app from the console",
                              "This port serves an app of a bai session to the person who "
                              "opened it. Open it from the session's Apps in the console."));
    }
    c->last_used = SteadySeconds();
    if (ex->IsWebSocketUpgrade()) {
      if (!StartThread([self = shared_from_this(), c, ex] { self->RelayWebSocket(c, ex); })) {
        ex->Respond(Page(503, "Stopping", "The webserver is stopping; reload in a moment."));
      }
      return;
    }
    if (!pool.TrySubmit([self = shared_from_this(), c, ex] { self->Relay(c, ex); })) {
      ex->Respond(Page(503, "Busy", "The webserver is busy; reload in a moment."));
    }
  }

  void Setup(std::shared_ptr<Circuit> const& c, std::shared_ptr<Exchange> const& ex) {
    auto const& query = ex->request().query;
    std::string token;
    if (query.rfind("token=", 0) == 0) token = query.substr(6, query.find('&') - 6);
    bool good;
    {
      std::lock_guard<std::mutex> lock(mu);
      good = SameSecret(token, c->setup_token) && Steady::now() < c->setup_expires;
      if (good) c->setup_token.clear();  // once
    }
    if (!good) {
      return ex->Respond(Page(403, "This link has been used or has expired",
                              "App links work once, for two minutes. Open the app again from "
                              "the console."));
    }
    HttpResponse r;
    r.status = 303;
    r.content_type.clear();
    r.headers.emplace_back("Location", "/");
    r.headers.emplace_back("Set-Cookie", PermitCookie(c->port, c->permit, options.tls));
    r.headers.emplace_back("Cache-Control", "no-store");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
    c->last_used = SteadySeconds();
    ex->Respond(std::move(r));
  }

  // One request: a tunnel to the app, the request written, the answer read to its end.
  void Relay(std::shared_ptr<Circuit> const& c, std::shared_ptr<Exchange> const& ex) {
    auto const& req = ex->request();
    auto tunnel = open(c->login_token, Target(*c));
    if (!tunnel.ok()) {
      auto const& st = tunnel.status();
      if (st.code() == StatusCode::kPermissionDenied || st.code() == StatusCode::kUnauthenticated) {
        c->ended = true;
        return ex->Respond(Page(403, "Sign in again",
                                "Your console sign-in has ended. Sign in and open the app again."));
      }
      return ex->Respond(Page(502, "The app cannot be reached",
                              st.message() + " Check that the session is running; reload."));
    }
    auto& ws = **tunnel;
    std::string bytes = AppRequestBytes(req.method, req.target, req.headers, req.body);
    constexpr std::size_t kFrame = 64 * 1024;
    for (std::size_t at = 0; at < bytes.size(); at += kFrame) {
      if (!ws.Send({bytes.substr(at, kFrame), true}).ok()) break;
    }
    // The answer is read until its head has come; then it streams or is kept whole (PlanAppAnswer).
    std::string answer;
    std::optional<AppResponseHead> head;
    AppAnswerPlan plan;
    auto deadline = Steady::now() + std::chrono::minutes(5);
    for (;;) {
      auto e = ws.Receive(std::chrono::milliseconds(500));
      if (e.kind == WebSocketEvent::Kind::kClosed) break;
      if (e.kind != WebSocketEvent::Kind::kMessage) {
        if (Steady::now() > deadline || stopping_now()) {
          ws.Cancel();
          return ex->Respond(Page(504, "The app did not finish answering",
                                  "It took over five minutes; reload to try again."));
        }
        continue;
      }
      answer += e.message.data;
      if (!head) {
        auto parsed = ParseAppResponseHead(answer);
        if (!parsed.ok()) {
          ws.Cancel();
          return ex->Respond(Page(502, "The app did not answer", parsed.status().message()));
        }
        if (!*parsed) continue;
        head = **parsed;
        for (auto const& [name, value] : head->headers) {
          if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
            ws.Cancel();
            return ex->Respond(Page(502, "The app did not answer in HTTP/1.0",
                                    "It sent a chunked answer to an HTTP/1.0 request."));
          }
        }
        plan = PlanAppAnswer(*head, req.method == "HEAD", kKeepWhole);
        if (plan.stream) {
          return Stream(c, ex, std::shared_ptr<WebSocketConnection>(std::move(*tunnel)), *head,
                        answer.substr(head->body_offset), plan.length);
        }
      }
      if (plan.length && answer.size() - head->body_offset >= *plan.length) {
        ws.Cancel();  // whole: an app that keeps its connection open is not waited for
        break;
      }
    }
    if (!head) {
      if (ws.close_code() == 1013) {
        return ex->Respond(Page(503, "The app is starting",
                                "Nothing listens on the app's port yet; reload in a moment."));
      }
      return ex->Respond(
          Page(502, "The app did not answer",
               "it closed without answering (code " + std::to_string(ws.close_code()) + ")"));
    }
    HttpResponse r;
    r.status = head->status;
    r.content_type.clear();
    for (auto const& [name, value] : head->headers) {
      if (name == "content-type") r.content_type = value;
    }
    r.body = answer.substr(head->body_offset);
    if (plan.length && r.body.size() < *plan.length) {  // HEAD's plan says 0
      return ex->Respond(Page(502, "The app's answer was cut short",
                              "The connection to the app ended early; reload."));
    }
    if (plan.length && r.body.size() > *plan.length) r.body.resize(*plan.length);
    r.headers = AppResponseHeaders(head->headers);
    c->last_used = SteadySeconds();
    ex->Respond(std::move(r));
  }

  // An answer that streams (PlanAppAnswer): chunked to the browser as it comes, at the
  // browser's pace, on a thread of its own (a Server-Sent Events answer may last for hours and
  // must not hold one of the pool's). Ends when the app closes (cut, not ended, when short of
  // its Content-Length), the browser leaves, or the webserver stops.
  void Stream(std::shared_ptr<Circuit> const& c, std::shared_ptr<Exchange> const& ex,
              std::shared_ptr<WebSocketConnection> tunnel, AppResponseHead const& head,
              std::string first, std::optional<std::size_t> length) {
    auto headers = AppResponseHeaders(head.headers);
    for (auto const& [name, value] : head.headers) {
      if (name == "content-type") headers.emplace_back("Content-Type", value);
    }
    ex->StartChunked(head.status, std::move(headers));
    auto gone = std::make_shared<std::atomic<bool>>(false);
    ex->OnClose([gone] { *gone = true; });
    bool started = StartThread([this, c, ex, tunnel, gone, length, first = std::move(first)] {
      std::size_t sent = 0;
      auto forward = [&](std::string data) {
        if (length) data.resize(std::min(data.size(), *length - sent));
        sent += data.size();
        return data.empty() || ex->WriteEvent(std::move(data));
      };
      auto whole = [&] { return length && sent >= *length; };
      bool ok = forward(first);
      while (ok && !whole()) {
        // Held while the browser is behind: the app's bytes wait in its socket, not here.
        while (ex->StreamBacklog() > kStreamAhead && !*gone && !stopping_now()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (*gone || stopping_now()) break;
        auto e = tunnel->Receive(std::chrono::milliseconds(500));
        c->last_used = SteadySeconds();
        if (e.kind == WebSocketEvent::Kind::kMessage) {
          ok = forward(std::move(e.message.data));
        } else if (e.kind == WebSocketEvent::Kind::kClosed) {
          if (length && sent < *length) break;  // cut short
          return ex->EndEventStream();
        }
      }
      tunnel->Cancel();
      if (ok && whole()) return ex->EndEventStream();  // all it said it would send
      ex->AbortStream();
    });
    if (!started) {
      tunnel->Cancel();
      ex->AbortStream();
    }
  }

  // ---- WebSocket apps: the browser's socket here, the app's over the tunnel -----------------

  std::string Target(Circuit const& c) const {
    std::string target = "/stream/session/" + internal::EncodeSegment(c.session_id) +
                         "/httpproxy?app=" + internal::EncodeSegment(c.app);
    if (c.app_port != 0) target += "&port=" + std::to_string(c.app_port);
    return target;
  }

  // A thread for a long-lived relay; Stop() waits for it.
  bool StartThread(std::function<void()> body) {
    return relay_threads.Start([self = shared_from_this(), body = std::move(body)] { body(); });
  }

  struct WsRelay {
    std::unique_ptr<WebSocketConnection> tunnel;
    std::mutex mu;
    std::shared_ptr<server::WebSocket> client;  // under mu
    bool client_closed = false;                 // under mu
    std::mt19937 rng{std::random_device{}()};   // under mu: frame masks
    bool SendToApp(int opcode, std::string payload) {
      std::uint32_t mask;
      {
        std::lock_guard<std::mutex> lock(mu);
        mask = static_cast<std::uint32_t>(rng());
      }
      return tunnel->Send({EncodeClientFrame({true, opcode, std::move(payload)}, mask), true}).ok();
    }
  };
  static constexpr std::size_t kMaxWsMessage = 64u << 20;

  void RelayWebSocket(std::shared_ptr<Circuit> const& c, std::shared_ptr<Exchange> const& ex) {
    auto const& req = ex->request();
    auto tunnel = open(c->login_token, Target(*c));
    if (!tunnel.ok()) {
      return ex->Respond(Page(502, "The app cannot be reached", tunnel.status().message()));
    }
    auto relay = std::make_shared<WsRelay>();
    relay->tunnel = *std::move(tunnel);
    {
      std::lock_guard<std::mutex> lock(mu);
      tunnels.insert(relay->tunnel.get());
    }
    auto forget = [this, relay] {
      std::lock_guard<std::mutex> lock(mu);
      tunnels.erase(relay->tunnel.get());
    };
    // The app's handshake: its 101 (and any frames right behind it).
    (void)relay->tunnel->Send({AppUpgradeRequestBytes(req.target, req.headers), true});
    std::string bytes;
    std::optional<AppResponseHead> head;
    auto deadline = Steady::now() + std::chrono::seconds(30);
    while (!head && Steady::now() < deadline) {
      auto e = relay->tunnel->Receive(std::chrono::milliseconds(500));
      if (e.kind == WebSocketEvent::Kind::kClosed) break;
      if (e.kind != WebSocketEvent::Kind::kMessage) continue;
      bytes += e.message.data;
      auto parsed = ParseAppResponseHead(bytes);
      if (!parsed.ok()) break;
      if (*parsed) head = **parsed;
    }
    if (!head || head->status != 101) {
      relay->tunnel->Cancel();
      forget();
      return ex->Respond(Page(502, "The app refused the WebSocket",
                              head ? "It answered HTTP " + std::to_string(head->status) + "."
                                   : "It did not answer the upgrade."));
    }
    bytes.erase(0, head->body_offset);
    server::WebSocketHandlers h;
    h.on_open = [this, relay, c, bytes, forget](std::shared_ptr<server::WebSocket> const& ws) {
      {
        std::lock_guard<std::mutex> lock(relay->mu);
        relay->client = ws;
      }
      if (!StartThread([this, relay, c, bytes, forget] {
            AppToBrowser(relay, c, bytes);
            forget();
          })) {
        ws->Close(1001, "stopping");
        relay->tunnel->Cancel();
        forget();
      }
    };
    h.on_message = [relay, c](auto const&, std::string const& text) {
      c->last_used = SteadySeconds();
      relay->SendToApp(1, text);
    };
    h.on_binary = [relay, c](auto const&, std::string const& data) {
      c->last_used = SteadySeconds();
      relay->SendToApp(2, data);
    };
    h.on_close = [relay](int code) {
      {
        std::lock_guard<std::mutex> lock(relay->mu);
        relay->client_closed = true;
      }
      std::string payload;
      if (code != 1005 && code != 1006) {
        payload = {static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
      }
      relay->SendToApp(8, payload);
    };
    ex->AcceptWebSocket(std::move(h));
  }

  // The app's frames to the browser as messages; its pings answered; its close passed on.
  void AppToBrowser(std::shared_ptr<WsRelay> const& r, std::shared_ptr<Circuit> const& c,
                    std::string bytes) {
    std::shared_ptr<server::WebSocket> client;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      client = r->client;
    }
    std::string message;
    int message_opcode = 0;
    std::optional<Steady::time_point> closing;
    bool done = false;
    while (!done) {
      auto frames = TakeFrames(bytes, kMaxWsMessage);
      if (!frames.ok()) {
        client->Close(1011, "the app's WebSocket broke");
        break;
      }
      for (auto& f : *frames) {
        if (f.opcode == 9) {
          r->SendToApp(10, f.payload);
        } else if (f.opcode == 8) {
          int code = f.payload.size() >= 2 ? (static_cast<unsigned char>(f.payload[0]) << 8) |
                                                 static_cast<unsigned char>(f.payload[1])
                                           : 1000;
          client->Close(code == 1005 || code == 1006 ? 1000 : code, "");
          done = true;
          break;
        } else if (f.opcode != 10) {
          if (f.opcode != 0) message_opcode = f.opcode;
          message += f.payload;
          if (message.size() > kMaxWsMessage) {
            client->Close(1009, "message too large");
            done = true;
            break;
          }
          if (f.fin) {
            bool sent = message_opcode == 2 ? client->SendBinary(std::move(message))
                                            : client->Send(std::move(message));
            message.clear();
            c->last_used = SteadySeconds();
            if (!sent) done = true;
          }
        }
      }
      if (done) break;
      bool closed;
      {
        std::lock_guard<std::mutex> lock(r->mu);
        closed = r->client_closed;
      }
      if (closed) {
        // The browser left: the app gets a few seconds to answer its close.
        if (!closing) closing = Steady::now() + std::chrono::seconds(5);
        if (Steady::now() > *closing) break;
      }
      auto e = r->tunnel->Receive(std::chrono::milliseconds(500));
      if (e.kind == WebSocketEvent::Kind::kClosed) {
        client->Close(1001, "the app went away");
        break;
      }
      if (e.kind == WebSocketEvent::Kind::kMessage) bytes += e.message.data;
    }
    r->tunnel->Cancel();
    std::lock_guard<std::mutex> lock(r->mu);
    r->client.reset();  // the socket's handlers hold the relay: this breaks the cycle
  }

  bool stopping_now() const {
    std::lock_guard<std::mutex> lock(mu);
    return stopping;
  }

  // Ends circuits whose login has ended (found by a relay or sign-out) or that were not used
  // for a while. Their servers stop outside the lock (a handler may be waiting for it).
  void Reap() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::seconds(10));
      if (stopping) break;
      auto now = SteadySeconds();
      std::vector<std::shared_ptr<Circuit>> done;
      for (auto it = circuits.begin(); it != circuits.end();) {
        auto& c = it->second;
        if (c->ended || now - c->last_used > options.idle_timeout.count()) {
          c->ended = true;
          done.push_back(c);
          it = circuits.erase(it);
        } else {
          ++it;
        }
      }
      if (done.empty()) continue;
      lock.unlock();
      for (auto& c : done) {
        server::log::Info("closed an app port", {{"port", std::to_string(c->port)}});
        if (c->http) c->http->Stop();
      }
      done.clear();
      lock.lock();
    }
  }
};

AppPorts::AppPorts(AppPortsOptions options, OpenAppTunnel open)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(open))) {
  impl_->reaper = std::thread([impl = impl_.get()] { impl->Reap(); });
}

AppPorts::~AppPorts() { Stop(); }

StatusOr<std::string> AppPorts::Open(std::string const& login_token, std::string const& owner,
                                     std::string const& session_id, std::string const& app,
                                     int app_port, std::string const& browser_host) {
  return impl_->Open(login_token, owner, session_id, app, app_port, browser_host);
}

void AppPorts::EndLogin(std::string const& login_token) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  for (auto& [port, c] : impl_->circuits) {
    if (c->login_token == login_token) c->ended = true;
  }
  impl_->cv.notify_all();
}

std::size_t AppPorts::open_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::size_t n = 0;
  for (auto const& [port, c] : impl_->circuits) n += c->ended ? 0 : 1;
  return n;
}

void AppPorts::Stop() {
  std::map<int, std::shared_ptr<Circuit>> all;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping && !impl_->reaper.joinable()) return;
    impl_->stopping = true;
    all.swap(impl_->circuits);
    impl_->cv.notify_all();
  }
  if (impl_->reaper.joinable()) impl_->reaper.join();
  for (auto& [port, c] : all) {
    c->ended = true;
    if (c->http) c->http->Stop();
  }
  impl_->relay_threads.Close();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto* t : impl_->tunnels) t->Cancel();
  }
  impl_->relay_threads.WaitIdle(std::chrono::seconds(10));
}

}  // namespace bai::webserver
