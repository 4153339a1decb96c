// SPDX-License-Identifier: Apache-2.0
#include "libbai/protocol/server_dialect.h"

#include <nlohmann/json.hpp>

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

std::set<std::string> FeaturesOf(ServerKind kind, ApiVersion const& v,
                                 std::optional<Release> release) {
  std::set<std::string> out;
  auto at_least = [&](char const* text) { return !(v < *ApiVersion::Parse(text)); };
  if (at_least("v7.20230615")) out.insert("quota-scopes");
  if (at_least("v8.20240315")) out.insert("vfolder-trash");
  if (at_least("v8.20240915")) {
    out.insert("session-priority");
    out.insert("usage-all-projects");
  }
  if (kind == ServerKind::kBackendAi && release &&
      (release->year > 24 || (release->year == 24 && release->month >= 12))) {
    out.insert("batch-timeout");
  }
  if (kind == ServerKind::kBai) {
    out.insert("batch-timeout");
    out.insert("session-name-optional");
    out.insert("usage-all-projects");
    out.insert("bai-extensions");
  }
  if (kind == ServerKind::kBackendAi) out.insert("graphql-introspection");
  return out;
}

std::string FirstReleaseWith(std::string_view feature) {
  if (feature == "quota-scopes") return "23.09";
  if (feature == "vfolder-trash") return "24.03";
  if (feature == "session-priority" || feature == "usage-all-projects") return "24.09";
  if (feature == "batch-timeout") return "24.12";
  return "";
}

ParamsVia ParamsViaFor(ServerKind kind, std::optional<Release> release) {
  if (kind != ServerKind::kBackendAi || !release) return ParamsVia::kPostBody;
  auto at_least = [&](int year, int month, int patch) {
    if (release->year != year) return release->year > year;
    if (release->month != month) return release->month > month;
    return release->patch >= patch;
  };
  if (at_least(24, 3, 7)) return ParamsVia::kPostBody;
  if (release->year == 23 && release->month == 9 && release->patch >= 11) return ParamsVia::kQuery;
  return ParamsVia::kBody;
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

namespace {

// Whether a YAML document (its lines) is a bare template: a top-level `kind`, `apiVersion` or
// `api_version` key and no top-level `template`.
bool BareYamlTemplate(std::vector<std::string> const& lines) {
  bool template_key = false, bare_key = false;
  for (auto const& line : lines) {
    if (line.empty() || line[0] == ' ' || line[0] == '\t' || line[0] == '#') continue;
    auto key = line.substr(0, line.find(':'));
    if (key == "template") template_key = true;
    if (key == "kind" || key == "apiVersion" || key == "api_version") bare_key = true;
  }
  return bare_key && !template_key;
}

}  // namespace

std::string TemplatePayloadForBackendAi(std::string_view payload) {
  auto j = nlohmann::json::parse(payload, nullptr, false);
  if (!j.is_discarded()) {
    if (j.is_object() && !j.contains("template") && !j.contains("session_templates") &&
        (j.contains("kind") || j.contains("apiVersion") || j.contains("api_version"))) {
      return nlohmann::json::array({{{"template", j}}}).dump();
    }
    if (j.is_object() && j.contains("template")) return nlohmann::json::array({j}).dump();
    return std::string(payload);
  }
  // YAML: split into documents at "---" lines, wrap each bare one.
  std::vector<std::vector<std::string>> docs(1);
  std::size_t start = 0;
  while (start < payload.size()) {
    auto end = payload.find('\n', start);
    std::string line(payload.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("---", 0) == 0 && line.find_first_not_of("- \t", 3) == std::string::npos) {
      if (!docs.back().empty()) docs.emplace_back();
    } else {
      docs.back().push_back(line);
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::string out;
  for (auto const& doc : docs) {
    if (doc.empty()) continue;
    out += "---\n";
    bool wrap = BareYamlTemplate(doc);
    if (wrap) out += "template:\n";
    for (auto const& line : doc) out += (wrap && !line.empty() ? "  " : "") + line + "\n";
  }
  return out;
}

}  // namespace bai::protocol
