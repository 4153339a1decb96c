// SPDX-License-Identifier: Apache-2.0
#include "libbai/protocol/json_fields.h"

#include "bai/protocol/errors.h"

#include "libbai/util/json_parse.h"
#include "libbai/util/text.h"

#include <cerrno>
#include <cstdlib>

namespace bai::internal {

StatusOr<nlohmann::json> ParseObject(std::string_view text, char const* what) {
  auto j = ParseJson(text);
  if (!j || !j->is_object()) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + ": not an object");
  }
  return *std::move(j);
}

std::optional<bool> LenientBool(nlohmann::json const& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<std::int64_t>() != 0;
  if (!value.is_string()) return std::nullopt;
  auto s = AsciiLower(value.get_ref<std::string const&>());
  if (s == "true" || s == "yes" || s == "1" || s == "t" || s == "y") return true;
  if (s == "false" || s == "no" || s == "0" || s == "f" || s == "n") return false;
  return std::nullopt;
}

std::optional<std::int64_t> LenientInt(nlohmann::json const& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (!value.is_string()) return std::nullopt;
  auto const& s = value.get_ref<std::string const&>();
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0) return std::nullopt;
  return n;
}

StatusOr<nlohmann::json> ObjectOf(std::string_view text, char const* what) {
  if (JsonDepth(text) > kMaxJsonDepth) {
    return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams,
                                       std::string("Malformed ") + what + ": nested deeper than " +
                                           std::to_string(kMaxJsonDepth) + " levels");
  }
  auto j = ParseJson(text);
  if (!j || !j->is_object()) {
    return protocol::MakeProblemStatus(
        protocol::ProblemType::kInvalidApiParams,
        std::string("Malformed ") + what + ": expected a JSON object");
  }
  return *std::move(j);
}

Status FieldProblem(FieldReader const& r) {
  nlohmann::json data = nlohmann::json::object();
  for (auto const& [field, why] : r.field_errors()) data[field] = why;
  return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams,
                                     "Input validation error", data.dump());
}

}  // namespace bai::internal
