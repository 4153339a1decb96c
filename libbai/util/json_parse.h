// SPDX-License-Identifier: Apache-2.0
#pragma once
// Parsing untrusted JSON: the one entry point every decoder uses (also the static kernel runner,
// which links this file alone).

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

namespace bai::internal {

/// The deepest JSON ParseJson takes: no wire document of ours comes near it.
inline constexpr int kMaxJsonDepth = 64;

/// The nesting depth of JSON text (brackets outside strings); cheap guard before parsing.
int JsonDepth(std::string_view text);

/// Parses JSON without throwing; nullopt for malformed text and for text nested deeper than
/// kMaxJsonDepth (serialising or walking deeper documents recurses).
std::optional<nlohmann::json> ParseJson(std::string_view text);

}  // namespace bai::internal
