// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/api_version.h"

#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace bai::protocol {

std::optional<ApiVersion> ApiVersion::Parse(std::string_view text) {
  if (text.size() < 4 || text.front() != 'v') return std::nullopt;
  auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto major_text = text.substr(1, dot - 1);
  auto date_text = text.substr(dot + 1);
  if (major_text.empty() || major_text.size() > 4 || date_text.size() != 8) return std::nullopt;
  auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!all_digits(major_text) || !all_digits(date_text)) return std::nullopt;
  ApiVersion v;
  std::from_chars(major_text.data(), major_text.data() + major_text.size(), v.major);
  std::from_chars(date_text.data(), date_text.data() + date_text.size(), v.date);
  return v;
}

std::string ApiVersion::ToString() const {
  return "v" + std::to_string(major) + "." + std::to_string(date);
}

std::vector<ApiVersion> const& AcceptedApiVersions() {
  static auto const* const kVersions = new std::vector<ApiVersion>{
      {4, 20181215}, {4, 20190115}, {4, 20190315}, {4, 20190615}, {5, 20191215},
      {6, 20200815}, {6, 20210815}, {6, 20220315}, {6, 20220615}, {6, 20221201},
      {6, 20230315}, {7, 20230615}, {8, 20240315}, {8, 20240915}, {9, 20250722},
  };
  return *kVersions;
}

bool IsAcceptedApiVersion(std::string_view text) {
  auto v = ApiVersion::Parse(text);
  if (!v || v->ToString() != text) return false;  // no "v08.…" spellings
  auto const& all = AcceptedApiVersions();
  return std::find(all.begin(), all.end(), *v) != all.end();
}

std::string EncodeServerInfo(ServerInfo const& info) {
  return nlohmann::json{{"version", info.version}, {"manager", info.manager}}.dump();
}

ServerInfo DecodeServerInfo(std::string_view body) {
  ServerInfo out;
  auto j = internal::ParseJson(body);
  if (!j || !j->is_object()) return out;
  if (auto v = j->find("version"); v != j->end() && v->is_string()) {
    out.version = v->get<std::string>();
  }
  if (auto m = j->find("manager"); m != j->end() && m->is_string()) {
    out.manager = m->get<std::string>();
  }
  out.is_backend_ai = ApiVersion::Parse(out.version).has_value();
  return out;
}

}  // namespace bai::protocol
