// SPDX-License-Identifier: Apache-2.0
#pragma once
// YAML ⇄ JSON for documents people write by hand (session templates). Reading is libyaml's
// parser; plain scalars resolve as PyYAML's safe_load does (YAML 1.1: null, ~, true/false,
// yes/no, on/off, integers, floats; everything else, and every quoted scalar, is a string), so a
// template reads here as it read in Backend.AI. Writing is block style that reads back equal.

#include "bai/status.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace bai::server {

/// Every document of a YAML stream ("---" separated), each as JSON. Errors carry libyaml's
/// problem with its line and column. Mapping keys must be scalars; aliases expand, up to
/// kMaxYamlNodes nodes in all (a "billion laughs" stream is refused, not expanded).
StatusOr<std::vector<nlohmann::json>> ParseYamlStream(std::string_view text);
inline constexpr std::size_t kMaxYamlNodes = 100000;

/// `value` as a YAML block document (no "---"), ending with a newline.
std::string ToYaml(nlohmann::json const& value);

}  // namespace bai::server
