// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/http/http.h"

#include <strings.h>
#include <unistd.h>

namespace bai::server {

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  // Header names are case-insensitive (RFC 9110 §5.1).
  for (auto const& [k, v] : headers) {
    if (k.size() == name.size() && ::strncasecmp(k.data(), name.data(), k.size()) == 0) {
      return std::string_view(v);
    }
  }
  return std::nullopt;
}

FileBody::~FileBody() {
  if (fd >= 0) ::close(fd);
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::NoContent() {
  HttpResponse r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

std::optional<std::string> PercentDecode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || hex(text[i + 1]) < 0 || hex(text[i + 2]) < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
    i += 2;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    // Form encoding: '+' is a space in query strings.
    std::string k(key), v(value);
    for (char& c : k) c = c == '+' ? ' ' : c;
    for (char& c : v) c = c == '+' ? ' ' : c;
    auto dk = PercentDecode(k);
    auto dv = PercentDecode(v);
    out.emplace_back(dk ? *dk : k, dv ? *dv : v);
  }
  return out;
}

}  // namespace bai::server
