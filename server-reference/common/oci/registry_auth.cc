// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/oci/registry_auth.h"

#include "libbai/util/url.h"

#include <nlohmann/json.hpp>

#include <cctype>

namespace bai::server::oci {
namespace {

bool TokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void SkipSpace(std::string_view s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

std::string Token68(std::string_view s, std::size_t& i) {
  std::size_t start = i;
  while (i < s.size() && TokenChar(s[i])) ++i;
  return std::string(s.substr(start, i - start));
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A quoted string at s[i] == '"'; false when it does not end.
bool Quoted(std::string_view s, std::size_t& i, std::string& out) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += s[++i];
    } else if (s[i] == '"') {
      ++i;
      return true;
    } else {
      out += s[i];
    }
  }
  return false;
}

// `name=value` pairs after a scheme, up to the next scheme; false on a malformed pair.
bool Params(std::string_view s, std::size_t& i, Challenge& c) {
  for (;;) {
    SkipSpace(s, i);
    std::size_t mark = i;
    std::string name = Token68(s, i);
    SkipSpace(s, i);
    if (name.empty() || i >= s.size() || s[i] != '=') {
      i = mark;  // the next challenge's scheme, or the end
      return true;
    }
    ++i;
    SkipSpace(s, i);
    std::string value;
    if (i < s.size() && s[i] == '"') {
      if (!Quoted(s, i, value)) return false;
    } else {
      value = Token68(s, i);
    }
    c.params[Lower(name)] = value;
    SkipSpace(s, i);
    if (i < s.size() && s[i] == ',') ++i;
  }
}

}  // namespace

std::vector<Challenge> ParseWwwAuthenticate(std::string_view header) {
  std::vector<Challenge> out;
  std::size_t i = 0;
  while (i < header.size()) {
    SkipSpace(header, i);
    while (i < header.size() && header[i] == ',') ++i;
    SkipSpace(header, i);
    Challenge c;
    c.scheme = Lower(Token68(header, i));
    if (c.scheme.empty()) break;
    if (!Params(header, i, c)) break;
    out.push_back(std::move(c));
  }
  return out;
}

StatusOr<std::string> TokenUrl(Challenge const& bearer, std::string const& scope) {
  auto realm = bearer.params.find("realm");
  if (realm == bearer.params.end() ||
      (realm->second.rfind("https://", 0) != 0 && realm->second.rfind("http://", 0) != 0)) {
    return Status(StatusCode::kInvalidArgument,
                  "the registry's Bearer challenge names no http(s) realm");
  }
  std::string url = realm->second;
  char sep = url.find('?') == std::string::npos ? '?' : '&';
  auto add = [&](char const* name, std::string const& value) {
    if (value.empty()) return;
    url += sep + std::string(name) + "=" + internal::EncodeSegment(value);
    sep = '&';
  };
  if (auto service = bearer.params.find("service"); service != bearer.params.end()) {
    add("service", service->second);
  }
  auto given = bearer.params.find("scope");
  add("scope", !scope.empty() ? scope : given != bearer.params.end() ? given->second : "");
  return url;
}

StatusOr<Token> ParseTokenAnswer(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(StatusCode::kUnauthenticated, "the token server's answer is not JSON");
  }
  Token t;
  for (char const* key : {"token", "access_token"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_string() && !it->get<std::string>().empty()) {
      t.token = it->get<std::string>();
      break;
    }
  }
  if (t.token.empty()) {
    return Status(StatusCode::kUnauthenticated, "the token server's answer has no token");
  }
  if (auto e = j.find("expires_in"); e != j.end() && e->is_number_integer() && *e > 0) {
    t.expires_in = e->get<std::int64_t>();
  }
  return t;
}

std::optional<std::string> NextLink(std::string_view link) {
  // <URL>; rel="next" (several links separated by commas).
  std::size_t i = 0;
  while ((i = link.find('<', i)) != std::string_view::npos) {
    std::size_t close = link.find('>', i);
    if (close == std::string_view::npos) return std::nullopt;
    std::string url(link.substr(i + 1, close - i - 1));
    std::size_t end = link.find('<', close);
    auto params =
        Lower(std::string(link.substr(close + 1, end == link.npos ? link.npos : end - close - 1)));
    if (params.find("rel=\"next\"") != std::string::npos ||
        params.find("rel=next") != std::string::npos) {
      return url;
    }
    i = close;
  }
  return std::nullopt;
}

std::string RegistryErrorWords(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  std::string out;
  if (j.is_object() && j.contains("errors") && j["errors"].is_array()) {
    for (auto const& e : j["errors"]) {
      if (!e.is_object()) continue;
      auto text = [&e](char const* key) {
        auto it = e.find(key);
        return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      std::string code = text("code"), message = text("message");
      out += (out.empty() ? "" : "; ") + code + (message.empty() ? "" : ": " + message);
    }
  }
  if (!out.empty()) return out;
  std::string text(body.substr(0, 200));
  return text.empty() ? "no details" : text;
}

}  // namespace bai::server::oci
