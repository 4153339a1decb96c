// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/ranges.h"

#include <charconv>
#include <cstdio>
#include <ctime>

namespace bai::storage {
namespace {

std::optional<std::int64_t> Number(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

RangeVerdict DecideRange(std::optional<std::string_view> range,
                         std::optional<std::string_view> if_range, std::string_view etag,
                         std::string_view last_modified, std::int64_t size) {
  RangeVerdict whole{RangeVerdict::kWhole, 0, size};
  if (!range) return whole;
  if (if_range) {
    auto v = Trim(*if_range);
    // A weak tag never matches (strong comparison).
    if (v != etag && v != last_modified) return whole;
  }
  auto spec = Trim(*range);
  constexpr std::string_view kUnit = "bytes=";
  if (spec.substr(0, kUnit.size()) != kUnit) return whole;
  spec = Trim(spec.substr(kUnit.size()));
  if (spec.find(',') != std::string_view::npos) return whole;
  auto dash = spec.find('-');
  if (dash == std::string_view::npos) return whole;
  auto first = Trim(spec.substr(0, dash));
  auto last = Trim(spec.substr(dash + 1));
  RangeVerdict unsatisfiable{RangeVerdict::kUnsatisfiable, 0, 0};
  if (first.empty()) {
    auto n = Number(last);
    if (!n) return whole;
    if (*n == 0 || size == 0) return unsatisfiable;
    std::int64_t len = *n < size ? *n : size;
    return {RangeVerdict::kPartial, size - len, len};
  }
  auto from = Number(first);
  if (!from) return whole;
  std::int64_t to = size - 1;
  if (!last.empty()) {
    auto l = Number(last);
    if (!l || *l < *from) return whole;
    if (*l < to) to = *l;
  }
  if (*from >= size) return unsatisfiable;
  return {RangeVerdict::kPartial, *from, to - *from + 1};
}

}  // namespace bai::storage
