// SPDX-License-Identifier: Apache-2.0
#include "libbai/protocol/server_dialect.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace bai::protocol {

ServerKind KindOfManager(std::string_view manager) {
  if (manager.rfind("bai-manager", 0) == 0) return ServerKind::kBai;
  return ParseRelease(manager) ? ServerKind::kBackendAi : ServerKind::kOther;
}

std::optional<Release> ParseRelease(std::string_view manager) {
  // YEAR.MONTH[.PATCH][anything: rc1, .dev0, a local suffix]
  std::size_t i = 0;
  auto number = [&](int& out) {
    std::size_t start = i;
    out = 0;
    while (i < manager.size() && i - start < 4 &&
           std::isdigit(static_cast<unsigned char>(manager[i]))) {
      out = out * 10 + (manager[i++] - '0');
    }
    return i > start;
  };
  Release r;
  if (!number(r.year) || i >= manager.size() || manager[i] != '.') return std::nullopt;
  ++i;
  if (!number(r.month)) return std::nullopt;
  if (i < manager.size() && manager[i] == '.') {
    ++i;
    number(r.patch);
  }
  if (r.year < 19 || r.year > 99 || r.month < 1 || r.month > 12) return std::nullopt;
  return r;
}

std::set<std::string> FeaturesOf(ServerKind kind, ApiVersion const& v) {
  std::set<std::string> out;
  auto at_least = [&](char const* text) { return !(v < *ApiVersion::Parse(text)); };
  if (at_least("v7.20230615")) out.insert("quota-scopes");
  if (at_least("v8.20240315")) out.insert("vfolder-trash");
  if (at_least("v8.20240915")) {
    out.insert("session-priority");
    out.insert("usage-all-projects");
  }
  if (kind == ServerKind::kBai) {
    out.insert("session-name-optional");
    out.insert("usage-all-projects");
    out.insert("bai-extensions");
  }
  if (kind == ServerKind::kBackendAi) out.insert("graphql-introspection");
  return out;
}

std::string GeneratedSessionName(std::uint64_t random) {
  char hex[11];
  std::snprintf(hex, sizeof hex, "%010llx",
                static_cast<unsigned long long>(random & 0xffffffffffULL));
  return std::string("bai-") + hex;
}

std::string CheckSessionName(std::string_view name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  bool ok = name.size() >= 4 && name.size() <= 64 && word(name.front()) && word(name.back());
  for (char c : name) ok = ok && (word(c) || c == '.' || c == '-');
  if (ok) return "";
  return "the session name \"" + std::string(name) +
         "\" does not match ^(?=.{4,64}$)\\w[\\w.-]*\\w$ (4 to 64 letters, digits, '_', '.', "
         "'-'; starting and ending with a letter, digit or '_')";
}

}  // namespace bai::protocol
