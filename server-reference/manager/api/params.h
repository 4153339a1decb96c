// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace bai::manager {

/// Where a handler reads its parameters (PROTOCOL.md §4.1, §13).
enum class ParamSource {
  kStandard,  ///< GET/HEAD: query; others: the JSON body, or the query when the body is empty
  kBoth,      ///< query and JSON body merged (body wins), whatever the method
};

/// Request parameters with alias lookup and per-field validation errors. Unknown keys are
/// ignored; known keys are checked strictly; every problem is collected and reported at once as
/// 400 invalid-api-params with a `data` map of field → message.
class Params {
 public:
  /// Malformed JSON, a non-object body or nesting deeper than 32 levels → 400 "Malformed body".
  static StatusOr<Params> From(server::HttpRequest const& request,
                               ParamSource source = ParamSource::kStandard);
  explicit Params(nlohmann::json values) : values_(std::move(values)) {}

  /// The first present alias; the first name is the one reported in errors.
  std::optional<std::string> String(std::initializer_list<char const*> names,
                                    bool required = false);
  std::optional<bool> Bool(std::initializer_list<char const*> names);
  std::optional<std::int64_t> Int(std::initializer_list<char const*> names, std::int64_t min,
                                  std::int64_t max);
  /// The raw JSON value of the first present alias (objects, lists).
  nlohmann::json const* Raw(std::initializer_list<char const*> names);

  void Fail(std::string const& field, std::string const& message) { errors_[field] = message; }
  /// Every parameter, as one object (query values are strings).
  nlohmann::json const& values() const { return values_; }
  /// Ok, or the collected errors as one problem.
  Status Check() const;

 private:
  nlohmann::json const* Find(std::initializer_list<char const*> names, char const** found);
  nlohmann::json values_;
  std::map<std::string, std::string> errors_;
};

}  // namespace bai::manager
