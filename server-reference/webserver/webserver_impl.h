// SPDX-License-Identifier: Apache-2.0
#pragma once
// The webserver's inside, shared by its parts: the way in and the managers (webserver.cc),
// logins and CSRF (login.cc), /func, app tunnels and the SSE and WebSocket bridges
// (forward.cc), the storage relay (storage_relay.cc), the console's files (static_files.cc).

#include "bai/protocol/api_version.h"
#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/signing.h"
#include "bai/protocol/vfolder_wire.h"
#include "bai/transport.h"

#include "libbai/internal/curl_transport.h"
#include "libbai/internal/lws_websocket.h"
#include "libbai/util/url.h"
#include "server-reference/common/exec/thread_group.h"
#include "server-reference/common/exec/work_pool.h"
#include "server-reference/common/http/http_server.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/common/log/log.h"
#include "server-reference/webserver/app_ports.h"
#include "server-reference/webserver/app_proxy.h"
#include "server-reference/webserver/login_sessions.h"
#include "server-reference/webserver/session_mode.h"
#include "server-reference/webserver/webserver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace bai::webserver {

using server::Exchange;
using server::HttpRequest;
using server::HttpResponse;
using Clock = std::chrono::system_clock;
namespace ps = protocol;

inline std::int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
}

inline HttpResponse Problem(ps::ProblemType type, std::string detail) {
  return server::ProblemResponse(ps::MakeProblemStatus(type, std::move(detail)));
}

inline HttpResponse JsonAnswer(int status, nlohmann::json const& body) {
  return HttpResponse::Json(status,
                            body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

struct WebServer::Impl : std::enable_shared_from_this<WebServer::Impl> {
  Impl(WebServerOptions o, server::Database& db)
      : options(std::move(o)),
        logins(db),
        transport(internal::MakeCurlTransport({.connect_timeout = std::chrono::seconds(5),
                                               .read_timeout = std::chrono::seconds(0),
                                               .verify_tls = true,
                                               .ca_bundle = {},
                                               .user_agent = "bai-webserver"})),
        throttle(options.login_limits),
        pool(options.forward_threads, 1024) {}

  WebServerOptions options;
  LoginSessions logins;
  std::vector<internal::Endpoint> managers;
  std::atomic<std::size_t> next_manager{0};
  std::unique_ptr<Transport> transport;
  std::mutex throttle_mu;
  server::LoginThrottle throttle;  // under throttle_mu
  std::unique_ptr<server::HttpServer> http;
  std::unique_ptr<AppPorts> apps;  // null: no app launcher
  // Storage proxies' transfer URLs seen in the manager's tickets, by key (storage_relay).
  std::mutex storage_mu;
  std::map<std::string, std::string> storage_urls;  // under storage_mu

  // Event streams and WebSockets run on threads of their own; Stop() ends and waits for them.
  server::ThreadGroup stream_threads;  // closed when stopping
  std::mutex streams_mu;
  std::set<std::shared_ptr<StreamCancel>> cancels;  // under streams_mu
  std::set<WebSocketConnection*> upstream_sockets;  // under streams_mu

  server::WorkPool pool;  // last: its destructor waits for work that uses the members above

  bool Tls() const { return options.secure_cookies; }

  void Answer(std::shared_ptr<Exchange> const& ex, HttpResponse r, std::string_view nonce = {},
              std::vector<std::string> const& connect_origins = {});

  std::string OwnOrigin(HttpRequest const& req) const;

  // The request as the CSRF rule sees it; the token from the header or, for the event streams
  // and WebSockets a page cannot add headers to, the query.
  RequestOrigin OriginOf(HttpRequest const& req, bool websocket) const;

  // The request's login and its cookie's value. Cookies ignore ports, so a page on another port
  // of this host (a session's app) can replace the console's login cookie or add one of its own
  // (another Path): a page's request is the login whose CSRF token it shows, when one of its
  // cookies has it (else the first live one, which the CSRF rule then refuses); a program's
  // request (no Origin, no Sec-Fetch-Site) must bring exactly one.
  struct ChosenLogin {
    std::string token;
    std::optional<LoginSession> session;
    bool proven = false;  ///< a page showed this login's token
  };
  StatusOr<ChosenLogin> ChooseLogin(std::shared_ptr<Exchange> const& ex);
  StatusOr<ChosenLogin> ChooseLogin(HttpRequest const& req, bool websocket);

  // ---- the request's way in -------------------------------------------------------------

  void Handle(std::shared_ptr<Exchange> ex);

  void ServerRoute(std::shared_ptr<Exchange> ex);

  // Database and manager calls block: they run on the pool, never on an I/O thread.
  void Submit(std::shared_ptr<Exchange> const& ex, std::function<void()> work);

  // ---- the manager --------------------------------------------------------------------------

  // Sends `r` (target relative to the manager's base path) to a manager, the next one when a
  // manager cannot be reached. Signed with `keys` when given.
  struct Keys {
    std::string access_key, secret_key;
  };
  TransportRequest Upstream(internal::Endpoint const& m, std::string const& method,
                            std::string const& target, Headers headers, std::string body,
                            std::string const& api_version, Keys const* keys) const;

  template <typename Send>
  StatusOr<ApiResponse> ToManagers(Send&& send) {
    Status last(StatusCode::kUnavailable, "no manager configured");
    std::size_t n = managers.size();
    std::size_t first = next_manager.load() % std::max<std::size_t>(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t at = (first + i) % n;
      auto r = send(managers[at]);
      if (r.ok() || !internal::IsConnectFailure(r.status())) {
        next_manager.store(at);
        return r;
      }
      last = r.status();
    }
    return last;
  }

  static std::string VersionOf(HttpRequest const& req);

  // ---- /server/* ----------------------------------------------------------------------------

  void Login(std::shared_ptr<Exchange> const& ex);

  // The request's login (ChooseLogin), or an answer already given; `token`: its cookie's value.
  std::optional<LoginSession> RequireLogin(std::shared_ptr<Exchange> const& ex,
                                           std::string* token = nullptr);

  CsrfVerdict Verdict(std::shared_ptr<Exchange> const& ex, std::string_view session_token);

  bool PassesCsrf(std::shared_ptr<Exchange> const& ex, LoginSession const& s);

  void Logout(std::shared_ptr<Exchange> const& ex);

  // A page is signed in only when it shows its login's token (which it keeps in its own
  // origin's storage): a cookie tossed in by another port's page is nobody's login here, and its
  // token is never handed out to a page that cannot show it.
  void LoginCheck(std::shared_ptr<Exchange> const& ex);

  void ExtendLogin(std::shared_ptr<Exchange> const& ex);

  void UpdatePasswordNoAuth(std::shared_ptr<Exchange> const& ex);

  // ---- apps ---------------------------------------------------------------------------------

  // POST /server/apps {"session": ID, "app": NAME, "port"?: N}: starts the app (the manager's
  // start-service, with the login's keys) and answers {"url"} of a one-time link that opens it
  // on an app port of this webserver (app_ports.h).
  void OpenApp(std::shared_ptr<Exchange> const& ex);

  // The tunnel of one app request: the manager's httpproxy WebSocket, signed with the keys of
  // the login that opened the app (read again each time: a login that ended opens nothing).
  StatusOr<std::unique_ptr<WebSocketConnection>> AppTunnel(std::string const& token,
                                                           std::string const& target);

  // ---- /func/* ------------------------------------------------------------------------------

  void RelayAnswer(std::shared_ptr<Exchange> const& ex, StatusOr<ApiResponse> const& answer);

  void Forward(std::shared_ptr<Exchange> ex);

  // ---- storage transfers ---------------------------------------------------------------------
  // A page may talk to its own origin only (the policy's connect-src), and the storage proxy is
  // another one: a ticket (request-upload/-download) that passes here gains "console_url", a
  // path of this webserver that relays the transfer (tus uploads, downloads) to the URL in the
  // ticket. Only URLs seen in tickets are relayed; the ticket's token is what authorizes.

  static bool IsTransferTicketTarget(std::string const& target);

  // The relay path's key for a storage URL: its hash, the same on every webserver.
  static std::string RelayKey(std::string const& url);

  std::string WithConsoleUrl(std::string const& body);

  // The origins of the storage proxies configured and seen in tickets.
  std::vector<std::string> StorageOrigins();

  // The storage proxy's URL a relay path (`/storage/KEY`) stands for; "" when none is known.
  std::string RelayUrl(std::string const& key);

  // A relayed request as it goes to the storage proxy (its body set by the caller).
  std::optional<TransportRequest> RelayRequest(HttpRequest const& req);

  // The relay's answer, from the storage proxy's.
  HttpResponse RelayedAnswer(StatusOr<ApiResponse> const& answer);

  void StorageRelay(std::shared_ptr<Exchange> const& ex);

  // Relayed chunks in flight: each holds a thread, a connection to the storage proxy and up to
  // RelaySink::kRoom bytes, so a user has at most kRelaysPerUser at once (the console sends up
  // to 4 parts of a file at once) and the webserver kRelaysInAll.
  static constexpr int kRelaysPerUser = 8;
  static constexpr int kRelaysInAll = 64;
  std::mutex relay_mu;
  std::map<std::string, int> relays_by_user;  // under relay_mu
  int relays_in_all = 0;                      // under relay_mu

  // A relay's place under the caps, given back when its thread ends.
  class RelaySlot;

  std::shared_ptr<RelaySlot> TakeRelaySlot(std::string const& user);

  // A relayed chunk passed on to the storage proxy as it arrives (ADR 12's streamed chunks): the
  // client's pieces wait in a queue of at most kRoom bytes that a thread of stream_threads sends
  // from; the client is not read while it is full. A client that goes away mid-body has what it
  // sent passed on before the upstream request is cut, so the proxy keeps it.
  class RelaySink;

  // A body refused before it is read: answered at once, no 100 Continue, what the client
  // still sends is drained.
  class RefusedSink;

  // body_sink_for, once a body over 1 MiB has its headers: without a live login it is refused
  // before it is read (32 unauthenticated 64 MiB bodies to /func took 1.5 GiB); a relayed PATCH
  // chunk streams, within the relay caps; the rest is read whole (within the HTTP server's
  // max_buffered_body_bytes).
  std::unique_ptr<server::BodySink> BodyFor(HttpRequest const& head, std::uint64_t length);

  // A relayed PATCH chunk over 1 MiB streams to the storage proxy as it arrives.
  std::unique_ptr<server::BodySink> StreamRelay(HttpRequest const& head, std::uint64_t length,
                                                std::string const& user);

  // A thread for a long-lived stream; false when stopping.
  bool StartStreamThread(std::function<void()> body);

  // Server-Sent Events: the manager's stream written through as it comes.
  void BridgeEvents(std::shared_ptr<Exchange> const& ex, std::string const& target, Keys keys);

  // A WebSocket (/stream/…): the manager's socket opened with the login's signature, then the
  // two relayed both ways, each at its reader's pace.
  struct Bridge {
    std::unique_ptr<WebSocketConnection> upstream;
    std::mutex mu;
    std::condition_variable cv;
    std::shared_ptr<server::WebSocket> client;  // under mu
    std::deque<WebSocketMessage> to_upstream;   // under mu
    std::size_t queued = 0;                     // under mu
    bool paused = false;                        // under mu
    bool client_closed = false;                 // under mu
    int client_code = 1000;                     // under mu
    bool relaying = false;                      // under mu: the two threads were started
  };
  static constexpr std::size_t kHighWater = 4u << 20;
  static constexpr std::size_t kLowWater = 1u << 20;

  void BridgeWebSocket(std::shared_ptr<Exchange> const& ex, std::string const& target, Keys keys);

  void ClientToUpstream(std::shared_ptr<Bridge> const& b);

  void UpstreamToClient(std::shared_ptr<Bridge> const& b);

  // ---- the console's files ------------------------------------------------------------------

  void StaticFile(std::shared_ptr<Exchange> const& ex);

  // The console's page, with a fresh style nonce in its policy and in its markup
  // (`%NONCE%`), where the app finds it for the style elements it makes.
  void Page(std::shared_ptr<Exchange> const& ex, std::string const& full);

  void StopAll();
};

}  // namespace bai::webserver
