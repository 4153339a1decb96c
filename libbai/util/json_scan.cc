// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/json_scan.h"

#include <cstddef>

namespace bai::internal {

namespace {

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t SkipBlanks(std::string_view s, std::size_t i) {
  while (i < s.size() && Blank(s[i])) ++i;
  return i;
}

// Past the string starting at s[i] == '"'; npos when it does not end.
std::size_t SkipString(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Past the value starting at s[i] (not a blank); npos when malformed.
std::size_t SkipValue(std::string_view s, std::size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
        if (depth < 0) return std::string_view::npos;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  // A number, true, false or null: up to the next delimiter.
  std::size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !Blank(s[i])) ++i;
  return i > start ? i : std::string_view::npos;
}

// The value of `key` in the object text `obj` (starting with '{').
std::optional<std::string_view> Member(std::string_view obj, std::string_view key) {
  std::size_t i = SkipBlanks(obj, 0);
  if (i >= obj.size() || obj[i] != '{') return std::nullopt;
  i = SkipBlanks(obj, i + 1);
  if (i < obj.size() && obj[i] == '}') return std::nullopt;
  while (i < obj.size()) {
    if (obj[i] != '"') return std::nullopt;
    std::size_t end = SkipString(obj, i);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view name = obj.substr(i + 1, end - i - 2);
    i = SkipBlanks(obj, end);
    if (i >= obj.size() || obj[i] != ':') return std::nullopt;
    i = SkipBlanks(obj, i + 1);
    std::size_t value_end = SkipValue(obj, i);
    if (value_end == std::string_view::npos) return std::nullopt;
    if (name == key) return obj.substr(i, value_end - i);
    i = SkipBlanks(obj, value_end);
    if (i >= obj.size() || obj[i] != ',') return std::nullopt;  // '}' (not found) or malformed
    i = SkipBlanks(obj, i + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> FindJsonValue(std::string_view doc,
                                              std::initializer_list<std::string_view> path) {
  std::size_t i = SkipBlanks(doc, 0);
  std::size_t end = doc.size();
  while (end > i && Blank(doc[end - 1])) --end;
  std::string_view here = doc.substr(i, end - i);
  for (auto key : path) {
    auto v = Member(here, key);
    if (!v) return std::nullopt;
    here = *v;
  }
  return here;
}

std::optional<std::vector<std::string_view>> SplitJsonArray(std::string_view array) {
  std::size_t i = SkipBlanks(array, 0);
  if (i >= array.size() || array[i] != '[') return std::nullopt;
  std::vector<std::string_view> out;
  i = SkipBlanks(array, i + 1);
  if (i < array.size() && array[i] == ']') {
    return SkipBlanks(array, i + 1) == array.size() ? std::optional(out) : std::nullopt;
  }
  while (i < array.size()) {
    std::size_t end = SkipValue(array, i);
    if (end == std::string_view::npos) return std::nullopt;
    out.push_back(array.substr(i, end - i));
    i = SkipBlanks(array, end);
    if (i >= array.size()) return std::nullopt;
    if (array[i] == ']') {
      return SkipBlanks(array, i + 1) == array.size() ? std::optional(out) : std::nullopt;
    }
    if (array[i] != ',') return std::nullopt;
    i = SkipBlanks(array, i + 1);
  }
  return std::nullopt;
}

}  // namespace bai::internal
