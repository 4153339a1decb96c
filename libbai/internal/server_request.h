// SPDX-License-Identifier: Apache-2.0
#pragma once
// Requests shaped for the server that will read them (issue 44): the thin shell around
// protocol/server_dialect.h's decisions, and the one wording for "this server cannot".

#include "bai/client.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace bai::internal {

/// "Backend.AI 23.09.11, API v7.20230615" or "bai-manager 0.1.0, API v9.20250722".
std::string DescribeServer(ServerCapabilities const& server);

/// kUnimplemented (exit 1): "this server (Backend.AI 23.09.11, API v7.20230615) has no WHAT:
/// it needs Backend.AI RELEASE or later" (no release: "bai's own manager has it").
Status Needs(ServerCapabilities const& server, std::string_view what, std::string_view release);

/// A request whose parameters Backend.AI first took in the body of a DELETE or GET
/// (`legacy_method`), as this server reads them (protocol::ParamsViaFor): POST with the body, the
/// old method with the body, or the old method with the parameters in the query. `what` names
/// the operation for the error a server that cannot take `params` at all gets (a list in
/// 23.09.11's query).
StatusOr<ApiRequest> RequestWithParams(Client const& client, std::string legacy_method,
                                       std::string path, nlohmann::json const& params,
                                       std::string_view what);

}  // namespace bai::internal
