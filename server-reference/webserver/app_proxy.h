// SPDX-License-Identifier: Apache-2.0
#pragma once
// The app launcher's pure part (docs/console.md, "Apps"): how a browser's request to an app
// port becomes bytes for the app, how the app's answer is read back, and which cookies and
// headers never cross. No I/O, no clock; app_ports.cc is the shell around it.
//
// An app gets a port of its own on the webserver's host (so apps that assume the root path
// work); a browser reaches it only with the permit cookie that port's setup link sets. Cookies
// ignore ports: the console's login cookie and other apps' permits reach every app port, so
// they are taken out of what the app sees, and the app cannot set them.

#include "bai/status.h"

#include "server-reference/webserver/session_mode.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::webserver {

/// The path of an app port's setup link (`?token=` a one-time token).
inline constexpr std::string_view kAppSetupPath = "/bai-app-setup";

/// Ports for apps: "10200-10299" or a single "10200". 400 for anything else or ports < 1024.
struct PortRange {
  int first = 0;
  int last = 0;
  int size() const { return last - first + 1; }
};
StatusOr<PortRange> ParsePortRange(std::string_view text);

/// The host name of a Host header ("console.example.com:8090" → "console.example.com",
/// "[::1]:8090" → "[::1]"); empty when it is not a plain host name or address.
std::string HostName(std::string_view host_header);

/// The permit cookie's name for an app port: "bai_app_permit_10200".
std::string PermitCookieName(int port);
/// Set-Cookie for a permit: HttpOnly, SameSite=Strict, Path=/; Secure over TLS. A session
/// cookie: it goes with the browser.
std::string PermitCookie(int port, std::string_view permit, bool secure);

/// A Cookie header without the cookies that are the webserver's (the login, any app permit);
/// empty when none is left.
std::string AppVisibleCookies(std::string_view cookie_header);

/// The request as the app receives it: HTTP/1.0 (so its answer ends when it closes the
/// connection: no chunking, no keep-alive to track), the browser's own headers except
/// hop-by-hop ones, a Cookie header without the webserver's cookies, and Content-Length for the
/// body.
std::string AppRequestBytes(std::string_view method, std::string_view target,
                            Headers const& headers, std::string_view body);

/// The head of the app's answer.
struct AppResponseHead {
  int status = 0;
  Headers headers;  ///< names lowercased, in order
  std::size_t body_offset = 0;
};
/// Reads the head at the start of `bytes`: nullopt while it is incomplete; 502-type error for
/// a head that is not HTTP (or longer than 64 KiB).
StatusOr<std::optional<AppResponseHead>> ParseAppResponseHead(std::string_view bytes);

/// The app's headers that go on to the browser: not the hop-by-hop ones, not Content-Length or
/// Content-Type (the answer sets its own), and no Set-Cookie for the webserver's cookie names.
Headers AppResponseHeaders(Headers const& app_headers);

/// How the rest of an answer whose head has come goes to the browser.
struct AppAnswerPlan {
  bool stream = false;  ///< chunked, as it arrives (else: kept whole, then sent)
  /// The body's length when the app said it (Content-Length; 0 for an answer without a body):
  /// an answer that ends short of it is cut, not ended.
  std::optional<std::size_t> length;
};
/// A small answer of known length (up to `keep_whole` bytes) is kept whole, so the browser gets
/// its Content-Length; a larger one, or one without a length (it ends when the app closes: a
/// download, Server-Sent Events), streams. Answers without a body (to HEAD; 1xx, 204, 304) are
/// kept whole.
AppAnswerPlan PlanAppAnswer(AppResponseHead const& head, bool head_request, std::size_t keep_whole);

/// Whether `name` is one of the webserver's cookies (the login's, an app permit).
bool IsWebserverCookie(std::string_view name);

// ---- WebSocket apps ----------------------------------------------------------------------------
// The browser's WebSocket ends at the webserver (its HTTP server does the handshake); a second
// one, to the app, runs over the tunnel's bytes: the webserver is the app's WebSocket client.

/// The app's upgrade request (HTTP/1.1): the browser's target, Host, Origin, cookies (without
/// the webserver's), key and version. No subprotocol or extension: the browser's side was
/// accepted without them, so both sides speak plain WebSocket.
std::string AppUpgradeRequestBytes(std::string_view target, Headers const& headers);

struct WebSocketFrame {
  bool fin = true;
  int opcode = 1;  ///< 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong
  std::string payload;
};
/// A client frame (masked with `mask`, as RFC 6455 §5.3 requires of clients).
std::string EncodeClientFrame(WebSocketFrame const& frame, std::uint32_t mask);
/// Takes the complete frames off the front of `buffer` (the app's bytes; unmasked or masked).
/// 502-type error for a malformed frame or one over `max_payload`.
StatusOr<std::vector<WebSocketFrame>> TakeFrames(std::string& buffer, std::size_t max_payload);

}  // namespace bai::webserver
