// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finding values in JSON text without building the document: for answers passed through as
// they came (`bai -o json admin user ls` over 10,000 users writes the server's objects, not a
// decoded and re-encoded copy). Strings are skipped with their escapes; brackets balanced.

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

namespace bai::internal {

/// The text of the value at `path` (object keys, outermost first) of the JSON document `doc`,
/// without its surrounding blanks; nullopt when a key is absent, a value on the way is not an
/// object, or the text is malformed where it was read. Keys are compared as written (a key
/// spelled with escapes does not match).
std::optional<std::string_view> FindJsonValue(std::string_view doc,
                                              std::initializer_list<std::string_view> path);

/// The elements of a JSON array's text, each its own text; nullopt when `array` is not one
/// well-bracketed array.
std::optional<std::vector<std::string_view>> SplitJsonArray(std::string_view array);

}  // namespace bai::internal
