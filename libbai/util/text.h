// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::internal {

/// ASCII-only case mapping: protocol tokens (methods, header names, MIME types) are ASCII, and
/// the locale must never change how they compare.
std::string AsciiLower(std::string_view text);
std::string AsciiUpper(std::string_view text);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

/// `text` without leading and trailing spaces and tabs.
std::string_view TrimSpaces(std::string_view text);

/// The value of the first header called `name` (case-insensitive).
std::optional<std::string> FindHeader(
    std::vector<std::pair<std::string, std::string>> const& headers, std::string_view name);

}  // namespace bai::internal
