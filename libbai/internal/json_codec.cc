// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/json_codec.h"

#include "bai/protocol/api_version.h"

namespace bai::internal {

using nlohmann::json;

bool ParseProblem(std::string_view body, ErrorInfo& info) {
  auto j = ParseJson(body);
  if (!j || !j->is_object()) return false;
  auto type = j->find("type");
  if (type == j->end() || !type->is_string()) return false;
  info.type = type->get<std::string>();
  if (auto t = j->find("title"); t != j->end() && t->is_string())
    info.title = t->get<std::string>();
  if (auto m = j->find("msg"); m != j->end() && !m->is_null()) {
    info.detail = m->is_string() ? m->get<std::string>() : m->dump();
  } else if (auto d = j->find("detail"); d != j->end() && d->is_string()) {
    info.detail = d->get<std::string>();
  }
  if (auto d = j->find("data"); d != j->end() && !d->is_null()) info.data_json = d->dump();
  return true;
}

std::string ProblemJson(ErrorInfo const& info) {
  json j = {{"type", info.type}, {"title", info.title}};
  if (!info.detail.empty()) j["msg"] = info.detail;
  if (!info.data_json.empty()) {
    if (auto data = ParseJson(info.data_json)) j["data"] = *data;
  }
  return j.dump();
}

}  // namespace bai::internal
