// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/app_proxy.h"

#include "bai/protocol/errors.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace bai::webserver {
namespace {

namespace ps = protocol;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool ParseInt(std::string_view s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), and the ones the
// proxy sets itself.
bool HopByHop(std::string_view lower) {
  static constexpr std::array<std::string_view, 10> kHop = {"connection",
                                                            "keep-alive",
                                                            "proxy-authenticate",
                                                            "proxy-authorization",
                                                            "proxy-connection",
                                                            "te",
                                                            "trailer",
                                                            "transfer-encoding",
                                                            "upgrade",
                                                            "content-length"};
  return std::find(kHop.begin(), kHop.end(), lower) != kHop.end();
}

bool ValidHeaderText(std::string_view s) {
  return s.find_first_of("\r\n") == std::string_view::npos &&
         s.find('\0') == std::string_view::npos;
}

}  // namespace

StatusOr<PortRange> ParsePortRange(std::string_view text) {
  auto bad = [&] {
    return ps::MakeProblemStatus(ps::ProblemType::kInvalidApiParams,
                                 "App ports are a range like 10200-10299 (ports 1024 to 65535); "
                                 "got \"" +
                                     std::string(text) + "\".");
  };
  PortRange r;
  auto dash = text.find('-');
  if (!ParseInt(Trim(text.substr(0, dash)), r.first)) return bad();
  r.last = r.first;
  if (dash != std::string_view::npos && !ParseInt(Trim(text.substr(dash + 1)), r.last)) {
    return bad();
  }
  if (r.first < 1024 || r.last > 65535 || r.last < r.first) return bad();
  return r;
}

std::string HostName(std::string_view host) {
  host = Trim(host);
  if (!host.empty() && host.front() == '[') {
    auto end = host.find(']');
    if (end == std::string_view::npos) return {};
    auto name = host.substr(0, end + 1);
    if (name.find_first_not_of("[]0123456789abcdefABCDEF:.") != std::string_view::npos) return {};
    return std::string(name);
  }
  auto name = host.substr(0, host.find(':'));
  if (name.empty() ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
          std::string_view::npos) {
    return {};
  }
  return std::string(name);
}

std::string PermitCookieName(int port) { return "bai_app_permit_" + std::to_string(port); }

std::string PermitCookie(int port, std::string_view permit, bool secure) {
  std::string c =
      PermitCookieName(port) + "=" + std::string(permit) + "; Path=/; HttpOnly; SameSite=Strict";
  if (secure) c += "; Secure";
  return c;
}

bool IsWebserverCookie(std::string_view name) {
  return name == kSessionCookie || name.rfind("bai_app_permit_", 0) == 0;
}

std::string AppVisibleCookies(std::string_view header) {
  std::string out;
  while (!header.empty()) {
    auto semi = header.find(';');
    auto pair = Trim(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto name = Trim(pair.substr(0, eq));
    if (IsWebserverCookie(name)) continue;
    if (!out.empty()) out += "; ";
    out += pair;
  }
  return out;
}

std::string AppRequestBytes(std::string_view method, std::string_view target,
                            Headers const& headers, std::string_view body) {
  std::string out;
  out.reserve(256 + body.size());
  out.append(method).append(" ").append(target).append(" HTTP/1.0\r\n");
  std::string cookies;
  for (auto const& [name, value] : headers) {
    auto n = Lower(name);
    if (HopByHop(n) || !ValidHeaderText(n) || !ValidHeaderText(value)) continue;
    if (n == "cookie") {
      auto kept = AppVisibleCookies(value);
      if (!kept.empty()) cookies += (cookies.empty() ? "" : "; ") + kept;
      continue;
    }
    out.append(n).append(": ").append(value).append("\r\n");
  }
  if (!cookies.empty()) out.append("cookie: ").append(cookies).append("\r\n");
  if (!body.empty() || (method != "GET" && method != "HEAD")) {
    out.append("content-length: ").append(std::to_string(body.size())).append("\r\n");
  }
  out.append("connection: close\r\n\r\n");
  out.append(body);
  return out;
}

StatusOr<std::optional<AppResponseHead>> ParseAppResponseHead(std::string_view bytes) {
  constexpr std::size_t kMaxHead = 64 * 1024;
  auto bad = [](std::string why) {
    auto st = ps::MakeProblemStatus(ps::ProblemType::kServiceUnavailable,
                                    "The app did not answer in HTTP (" + why + ").");
    return st;
  };
  auto end = bytes.find("\r\n\r\n");
  std::size_t sep = 4;
  if (auto lf = bytes.find("\n\n"); lf != std::string_view::npos && lf < end) {
    end = lf;
    sep = 2;
  }
  if (end == std::string_view::npos) {
    if (bytes.size() > kMaxHead) return bad("a head over 64 KiB");
    if (bytes.size() >= 5 && bytes.substr(0, 5) != "HTTP/") return bad("no status line");
    return std::optional<AppResponseHead>();
  }
  if (end > kMaxHead) return bad("a head over 64 KiB");
  AppResponseHead head;
  head.body_offset = end + sep;
  std::string_view rest = bytes.substr(0, end);
  auto line_end = rest.find('\n');
  auto status_line = Trim(rest.substr(0, line_end));
  rest = line_end == std::string_view::npos ? std::string_view() : rest.substr(line_end + 1);
  // "HTTP/1.1 200 OK"
  if (status_line.substr(0, 5) != "HTTP/") return bad("no status line");
  auto sp = status_line.find(' ');
  if (sp == std::string_view::npos) return bad("no status code");
  auto code = status_line.substr(sp + 1, 3);
  if (!ParseInt(code, head.status) || head.status < 100 || head.status > 599) {
    return bad("a status code that is not one");
  }
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    auto line = Trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad("a header without a colon");
    head.headers.emplace_back(Lower(Trim(line.substr(0, colon))),
                              std::string(Trim(line.substr(colon + 1))));
  }
  return std::optional<AppResponseHead>(std::move(head));
}

Headers AppResponseHeaders(Headers const& app_headers) {
  Headers out;
  for (auto const& [name, value] : app_headers) {
    auto n = Lower(name);
    if (HopByHop(n) || n == "content-type" || !ValidHeaderText(value)) continue;
    if (n == "set-cookie") {
      auto eq = value.find('=');
      if (IsWebserverCookie(Trim(std::string_view(value).substr(0, eq)))) continue;
    }
    out.emplace_back(n, value);
  }
  return out;
}

AppAnswerPlan PlanAppAnswer(AppResponseHead const& head, bool head_request,
                            std::size_t keep_whole) {
  AppAnswerPlan plan;
  for (auto const& [name, value] : head.headers) {
    if (name != "content-length") continue;
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec == std::errc() && end == value.data() + value.size()) plan.length = n;
  }
  if (head_request || head.status == 204 || head.status == 304 || head.status / 100 == 1) {
    plan.length = 0;  // no body, whatever Content-Length says
    return plan;
  }
  plan.stream = !plan.length || *plan.length > keep_whole;
  return plan;
}

std::string AppUpgradeRequestBytes(std::string_view target, Headers const& headers) {
  std::string out;
  out.append("GET ").append(target).append(" HTTP/1.1\r\n");
  std::string cookies;
  for (auto const& [name, value] : headers) {
    auto n = Lower(name);
    if (!ValidHeaderText(n) || !ValidHeaderText(value)) continue;
    bool kept = n == "host" || n == "origin" || n == "user-agent" || n == "accept-language" ||
                n == "sec-websocket-key" || n == "sec-websocket-version" || n == "authorization" ||
                n.rfind("x-", 0) == 0;
    if (n == "cookie") {
      auto visible = AppVisibleCookies(value);
      if (!visible.empty()) cookies += (cookies.empty() ? "" : "; ") + visible;
      continue;
    }
    if (kept) out.append(n).append(": ").append(value).append("\r\n");
  }
  if (!cookies.empty()) out.append("cookie: ").append(cookies).append("\r\n");
  out.append("upgrade: websocket\r\nconnection: Upgrade\r\n\r\n");
  return out;
}

std::string EncodeClientFrame(WebSocketFrame const& frame, std::uint32_t mask) {
  std::string out;
  std::size_t n = frame.payload.size();
  out.push_back(static_cast<char>((frame.fin ? 0x80 : 0) | (frame.opcode & 0x0f)));
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xffff) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int i = 7; i >= 0; --i)
      out.push_back(static_cast<char>((std::uint64_t(n) >> (8 * i)) & 0xff));
  }
  unsigned char key[4] = {static_cast<unsigned char>(mask >> 24),
                          static_cast<unsigned char>(mask >> 16),
                          static_cast<unsigned char>(mask >> 8), static_cast<unsigned char>(mask)};
  out.append(reinterpret_cast<char const*>(key), 4);
  std::size_t at = out.size();
  out.append(frame.payload);
  for (std::size_t i = 0; i < n; ++i) out[at + i] = static_cast<char>(out[at + i] ^ key[i % 4]);
  return out;
}

StatusOr<std::vector<WebSocketFrame>> TakeFrames(std::string& buffer, std::size_t max_payload) {
  std::vector<WebSocketFrame> frames;
  std::size_t at = 0;
  auto bad = [](std::string why) {
    return ps::MakeProblemStatus(ps::ProblemType::kServiceUnavailable,
                                 "The app's WebSocket sent " + why + ".");
  };
  for (;;) {
    std::string_view rest(buffer.data() + at, buffer.size() - at);
    if (rest.size() < 2) break;
    auto b0 = static_cast<unsigned char>(rest[0]);
    auto b1 = static_cast<unsigned char>(rest[1]);
    if (b0 & 0x70) return bad("a frame with reserved bits (an extension nobody agreed to)");
    bool masked = b1 & 0x80;
    std::uint64_t n = b1 & 0x7f;
    std::size_t head = 2;
    if (n == 126) {
      if (rest.size() < 4) break;
      n = (std::uint64_t(static_cast<unsigned char>(rest[2])) << 8) |
          static_cast<unsigned char>(rest[3]);
      head = 4;
    } else if (n == 127) {
      if (rest.size() < 10) break;
      n = 0;
      for (int i = 0; i < 8; ++i) n = (n << 8) | static_cast<unsigned char>(rest[2 + i]);
      head = 10;
    }
    if (n > max_payload) return bad("a frame larger than the webserver relays");
    std::size_t mask_at = head;
    if (masked) head += 4;
    if (rest.size() < head + n) break;
    WebSocketFrame f;
    f.fin = b0 & 0x80;
    f.opcode = b0 & 0x0f;
    f.payload.assign(rest.data() + head, static_cast<std::size_t>(n));
    if (masked) {
      for (std::size_t i = 0; i < f.payload.size(); ++i) {
        f.payload[i] = static_cast<char>(f.payload[i] ^ rest[mask_at + i % 4]);
      }
    }
    bool control = f.opcode >= 8;
    if ((f.opcode > 2 && f.opcode < 8) || f.opcode > 10 || (control && (!f.fin || n > 125))) {
      return bad("a frame that is not WebSocket (opcode " + std::to_string(f.opcode) + ")");
    }
    frames.push_back(std::move(f));
    at += head + static_cast<std::size_t>(n);
  }
  buffer.erase(0, at);
  return frames;
}

}  // namespace bai::webserver
