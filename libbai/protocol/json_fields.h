// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::internal {

/// A boolean as request parameters spell it: true/false, 1/0, or "true", "yes", "1", "t", "y"
/// (and their negatives, any case); nullopt for anything else.
std::optional<bool> LenientBool(nlohmann::json const& value);
/// An integer, or a string of one ("30"); nullopt for anything else.
std::optional<std::int64_t> LenientInt(nlohmann::json const& value);

/// Reads the fields of one JSON object without throwing, for the protocol codecs (the public
/// session wire types and the server's internal messages): a missing or null field takes its
/// default, a field of the wrong type records an error naming it and reads as the default.
/// Unknown fields are not looked at.
class FieldReader {
 public:
  explicit FieldReader(nlohmann::json const& object) : object_(object) {}

  std::optional<std::string> OptString(char const* key) {
    auto const* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) return Fail(key, "a string"), std::nullopt;
    return v->get<std::string>();
  }
  std::string String(char const* key, std::string fallback = {}) {
    return OptString(key).value_or(std::move(fallback));
  }
  /// A string that must be present and non-empty.
  std::string Required(char const* key) {
    auto v = OptString(key);
    if (!v || v->empty()) Fail(key, "a non-empty string");
    return v.value_or(std::string());
  }
  std::optional<std::int64_t> OptInt(char const* key) {
    auto const* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) return Fail(key, "an integer"), std::nullopt;
    return v->get<std::int64_t>();
  }
  std::int64_t Int(char const* key, std::int64_t fallback) {
    return OptInt(key).value_or(fallback);
  }
  bool Bool(char const* key, bool fallback) {
    auto const* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return Fail(key, "a boolean"), fallback;
    return v->get<bool>();
  }
  /// The object at `key`, or nullptr when absent (or of the wrong type: an error).
  nlohmann::json const* Object(char const* key) { return Typed(key, true); }
  /// The array at `key`, or nullptr when absent (or of the wrong type: an error).
  nlohmann::json const* Array(char const* key) { return Typed(key, false); }

  /// Records an error about `key` found by the caller ("must be …").
  void Fail(std::string const& key, std::string const& expected) {
    Refuse(key, "must be " + expected);
  }
  /// Records an error about `key` in the caller's words ("required", "Unknown slot type").
  void Refuse(std::string const& key, std::string const& reason) {
    if (error_.empty()) error_ = "field '" + key + "': " + reason;
    fields_.emplace(key, reason);  // the first reason per field
  }
  bool ok() const { return error_.empty(); }
  /// The first error, in words.
  std::string const& error() const { return error_; }
  /// Every field with an error → why.
  std::map<std::string, std::string> const& field_errors() const { return fields_; }

 private:
  nlohmann::json const* Find(char const* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  nlohmann::json const* Typed(char const* key, bool object) {
    auto const* v = Find(key);
    if (v == nullptr) return nullptr;
    if (object ? !v->is_object() : !v->is_array()) {
      Fail(key, object ? "an object" : "an array");
      return nullptr;
    }
    return v;
  }

  nlohmann::json const& object_;
  std::string error_;
  std::map<std::string, std::string> fields_;
};

/// The object in `text`, or 400 invalid-api-params "Malformed <what>: expected a JSON object".
StatusOr<nlohmann::json> ObjectOf(std::string_view text, char const* what);
/// 400 invalid-api-params naming every field `r` refused, as the manager's own validation
/// answers.
Status FieldProblem(FieldReader const& r);

// The value of the first of `keys` present (not null) in `j`, the spellings of one field;
// `found` (when given) says which spelling, or the first when none is present.
inline nlohmann::json const* FirstPresent(nlohmann::json const& j,
                                          std::initializer_list<char const*> keys,
                                          char const** found = nullptr) {
  for (char const* k : keys) {
    auto it = j.find(k);
    if (it != j.end() && !it->is_null()) {
      if (found) *found = k;
      return &*it;
    }
  }
  if (found) *found = *keys.begin();
  return nullptr;
}

/// `text` as a JSON object, or kInvalidArgument "WHAT: not an object" (the decoders' first
/// step).
StatusOr<nlohmann::json> ParseObject(std::string_view text, char const* what);

/// Reads the fields of an answer's object leniently, for the SDK's decoders of what a manager
/// sent: a missing or null field, or one of another type, reads as the default; JSONString
/// fields that arrive as JSON read as their text.
class AnswerFields {
 public:
  explicit AnswerFields(nlohmann::json const& j) : j_(j) {}
  std::string Str(char const* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return {};
    return it->is_string() ? it->get<std::string>() : it->dump();
  }
  std::optional<std::string> OptStr(char const* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    return Str(key);
  }
  bool Bool(char const* key, bool fallback) const {
    auto it = j_.find(key);
    return it != j_.end() && it->is_boolean() ? it->get<bool>() : fallback;
  }
  double Num(char const* key) const {
    auto it = j_.find(key);
    return it != j_.end() && it->is_number() ? it->get<double>() : 0;
  }
  /// An integer; a float within range is truncated; anything else reads as `fallback`.
  std::int64_t Int(char const* key, std::int64_t fallback = 0) const {
    return OptInt(key).value_or(fallback);
  }
  std::optional<std::int64_t> OptInt(char const* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_number()) return std::nullopt;
    if (it->is_number_integer()) return it->get<std::int64_t>();
    double d = it->get<double>();
    if (!(d > -9.2e18 && d < 9.2e18)) return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  std::vector<std::string> Strings(char const* key) const {
    std::vector<std::string> out;
    if (auto it = j_.find(key); it != j_.end() && it->is_array()) {
      for (auto const& v : *it) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
    return out;
  }

 private:
  nlohmann::json const& j_;
};

// Reads request fields under any of their spellings (the first present, not null, wins), with
// the leniency of request parameters (booleans and integers may come as strings); an error names
// the spelling the client sent. The one reader of lenient requests: the SDK's and server's
// request codecs, and the manager's handler parameters (manager/api/params.h) over it.
class Lenient {
 public:
  Lenient(nlohmann::json const& object, FieldReader& r) : object_(object), r_(r) {}

  nlohmann::json const* Find(std::initializer_list<char const*> names,
                             char const** found = nullptr) const {
    return FirstPresent(object_, names, found);
  }
  std::optional<std::string> Str(std::initializer_list<char const*> names) {
    char const* found = nullptr;
    auto const* v = Find(names, &found);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) return r_.Fail(found, "a string"), std::nullopt;
    return v->get<std::string>();
  }
  /// A string that must be there: "required" under the first name when absent.
  std::string Required(std::initializer_list<char const*> names) {
    auto v = Str(names);
    if (!v && Find(names) == nullptr) r_.Refuse(*names.begin(), "required");
    return v.value_or(std::string());
  }
  std::optional<bool> Bool(std::initializer_list<char const*> names) {
    char const* found = nullptr;
    auto const* v = Find(names, &found);
    if (v == nullptr) return std::nullopt;
    auto b = LenientBool(*v);
    if (!b) r_.Fail(found, "a boolean");
    return b;
  }
  std::optional<std::int64_t> Int(std::initializer_list<char const*> names, std::int64_t min,
                                  std::int64_t max) {
    char const* found = nullptr;
    auto const* v = Find(names, &found);
    if (v == nullptr) return std::nullopt;
    auto n = LenientInt(*v);
    if (!n) return r_.Fail(found, "an integer"), std::nullopt;
    if (*n < min || *n > max) {
      r_.Fail(found, "between " + std::to_string(min) + " and " + std::to_string(max));
      return std::nullopt;
    }
    return n;
  }
  /// An object of strings with non-empty keys, reported as `field`.
  std::map<std::string, std::string> StrMap(std::initializer_list<char const*> names,
                                            std::string const& field) {
    std::map<std::string, std::string> out;
    auto const* v = Find(names);
    if (v == nullptr) return out;
    bool ok = v->is_object();
    if (ok) {
      for (auto const& [k, item] : v->items()) {
        ok = ok && item.is_string() && !k.empty();
        if (ok) out[k] = item.get<std::string>();
      }
    }
    if (!ok) r_.Fail(field, "an object of strings");
    return out;
  }
  /// A list of non-empty strings, reported as `field`.
  std::vector<std::string> StrList(std::initializer_list<char const*> names,
                                   std::string const& field, char const* what) {
    std::vector<std::string> out;
    auto const* v = Find(names);
    if (v == nullptr) return out;
    bool ok = v->is_array();
    for (auto const& item : ok ? *v : nlohmann::json::array()) {
      ok = ok && item.is_string() && !item.get_ref<std::string const&>().empty();
      if (ok) out.push_back(item.get<std::string>());
    }
    if (!ok) r_.Fail(field, what);
    return out;
  }

 private:
  nlohmann::json const& object_;
  FieldReader& r_;
};

}  // namespace bai::internal
