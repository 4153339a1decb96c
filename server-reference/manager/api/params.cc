// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/api/params.h"

#include "bai/protocol/errors.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"

namespace bai::manager {

using nlohmann::json;

namespace {

constexpr int kMaxDepth = 32;

Status Malformed(std::string const& why) {
  return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams,
                                     "Malformed body: " + why);
}

StatusOr<json> ParseBody(std::string const& body) {
  if (internal::JsonDepth(body) > kMaxDepth) {
    return Malformed("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  auto parsed = internal::ParseJson(body);
  if (!parsed) return Malformed("not valid JSON");
  if (!parsed->is_object()) return Malformed("expected a JSON object");
  return *parsed;
}

}  // namespace

StatusOr<Params> Params::From(server::HttpRequest const& request, ParamSource source) {
  json values = json::object();
  bool body_present =
      !request.body.empty() && request.body.find_first_not_of(" \t\r\n") != std::string::npos;
  bool use_query = source == ParamSource::kBoth || request.method == "GET" ||
                   request.method == "HEAD" || !body_present;
  bool use_body = body_present && (source == ParamSource::kBoth ||
                                   (request.method != "GET" && request.method != "HEAD"));
  if (use_query) {
    for (auto& [k, v] : server::ParseQuery(request.query)) {
      if (!values.contains(k)) values[k] = v;
    }
  }
  if (use_body) {
    auto body = ParseBody(request.body);
    if (!body.ok()) return std::move(body).status();
    // A null is an absent key: clients send `"unmanaged_path": null` for "not given".
    for (auto& [k, v] : body->items()) {
      if (!v.is_null()) values[k] = v;
    }
  }
  return Params(std::move(values));
}

std::optional<std::string> Params::String(std::initializer_list<char const*> names, bool required) {
  auto v = Reader().Str(names);
  if (!v && required && Raw(names) == nullptr) Fail(*names.begin(), "required");
  return v;
}

Status Params::Check() const {
  if (reader_.ok()) return {};
  json data = json::object();
  for (auto const& [k, v] : reader_.field_errors()) data[k] = v;
  return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams,
                                     "Input validation error", data.dump());
}

}  // namespace bai::manager
