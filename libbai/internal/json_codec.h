// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/status.h"

#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace bai::internal {

/// Fills type/title/detail/data_json from a problem+json body; false when the body is not one.
bool ParseProblem(std::string_view body, ErrorInfo& info);

/// Serialises a problem document (server side and tests): {"type","title","msg"?,"data"?}.
std::string ProblemJson(ErrorInfo const& info);

}  // namespace bai::internal
