// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/url.h"

namespace bai::internal {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool IsAllowed(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-._~!$&'()*+,;=:@/?").find(c) != std::string_view::npos;
}

Status BadEndpoint(std::string_view url, std::string const& why) {
  return Status(StatusCode::kInvalidArgument,
                "invalid endpoint \"" + std::string(url) + "\": " + why +
                    " (expected http://HOST[:PORT][/BASE] or https://…)");
}

}  // namespace

StatusOr<Endpoint> ParseEndpoint(std::string_view url) {
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    rest = url.substr(8);
  } else {
    return BadEndpoint(url, "the scheme must be http or https");
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.empty()) return BadEndpoint(url, "no host");
  for (char c : authority) {
    if (c == '@') return BadEndpoint(url, "user info is not allowed");
    if (!IsAllowed(c) && c != '[' && c != ']') return BadEndpoint(url, "invalid host");
  }
  if (path.find_first_of("?#") != std::string_view::npos) {
    return BadEndpoint(url, "no query or fragment allowed");
  }
  Endpoint e;
  e.url = std::string(url);
  e.origin = std::string(url.substr(0, url.size() - rest.size())) + std::string(authority);
  e.host = std::string(authority);
  e.base_path = EncodeTarget(path);
  if (e.base_path == "/") e.base_path.clear();
  return e;
}

std::string EncodeTarget(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size() + 1);
  if (in.empty() || in.front() != '/') out.push_back('/');
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%' && i + 2 < in.size() && IsHex(in[i + 1]) && IsHex(in[i + 2])) {
      out.push_back(c);
    } else if (IsAllowed(c)) {
      out.push_back(c);
    } else {
      auto u = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::string EncodeSegment(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace bai::internal
