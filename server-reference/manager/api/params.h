// SPDX-License-Identifier: Apache-2.0
#pragma once
// A handler's request parameters: where they come from (query, JSON body or both), read through
// libbai's one lenient reader (internal::Lenient over a FieldReader: aliases, lenient booleans
// and integers, the errors collected), answered as one 400 naming every field.

#include "bai/status.h"

#include "libbai/protocol/json_fields.h"
#include "server-reference/common/http/http.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
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
/// 400 invalid-api-params with a `data` map of field → message (the spelling the client sent).
class Params {
 public:
  /// Malformed JSON, a non-object body or nesting deeper than 32 levels → 400 "Malformed body".
  static StatusOr<Params> From(server::HttpRequest const& request,
                               ParamSource source = ParamSource::kStandard);

  explicit Params(nlohmann::json values)
      : values_(std::make_unique<nlohmann::json>(std::move(values))), reader_(*values_) {}

  /// The first present alias; a missing required one is reported under the first name.
  std::optional<std::string> String(std::initializer_list<char const*> names,
                                    bool required = false);
  std::optional<bool> Bool(std::initializer_list<char const*> names) {
    return Reader().Bool(names);
  }
  std::optional<std::int64_t> Int(std::initializer_list<char const*> names, std::int64_t min,
                                  std::int64_t max) {
    return Reader().Int(names, min, max);
  }
  /// The raw JSON value of the first present alias (objects, lists).
  nlohmann::json const* Raw(std::initializer_list<char const*> names) const {
    return internal::FirstPresent(*values_, names);
  }

  /// Records a problem with `field` in the handler's words (the first one per field counts).
  void Fail(std::string const& field, std::string const& message) {
    reader_.Refuse(field, message);
  }

  /// Every parameter, as one object (query values are strings).
  nlohmann::json const& values() const { return *values_; }

  /// Ok, or the collected errors as one problem.
  Status Check() const;

 private:
  internal::Lenient Reader() { return internal::Lenient(*values_, reader_); }

  std::unique_ptr<nlohmann::json> values_;  // on the heap: reader_ refers to it across moves
  internal::FieldReader reader_;
};

/// A request type read from a handler's parameters by its codec (`from`: one of the *FromJson of
/// libbai/protocol/wire_json.h), the one reading of its fields.
template <class Request>
StatusOr<Request> ReadRequest(server::HttpRequest const& request,
                              StatusOr<Request> (*from)(nlohmann::json const&),
                              ParamSource source = ParamSource::kStandard) {
  auto params = Params::From(request, source);
  if (!params.ok()) return params.status();
  return from(params->values());
}

}  // namespace bai::manager
