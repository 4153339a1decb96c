// SPDX-License-Identifier: Apache-2.0
#include "libbai/util/json_parse.h"

#include <algorithm>

namespace bai::internal {

using nlohmann::json;

int JsonDepth(std::string_view text) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

std::optional<json> ParseJson(std::string_view text) {
  // Deeper documents are refused before parsing: serialising or walking them recurses.
  if (JsonDepth(text) > kMaxJsonDepth) return std::nullopt;
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace bai::internal
