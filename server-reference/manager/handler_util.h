// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http.h"
#include "server-reference/common/problem.h"

#include <nlohmann/json.hpp>

namespace bai::manager {

/// A JSON response.
inline server::HttpResponse JsonResponse(nlohmann::json const& body, int status = 200) {
  return server::HttpResponse::Json(status, body.dump());
}

/// Runs `body` (returning StatusOr<HttpResponse>), turning an error into its problem response.
template <typename F>
server::HttpResponse Guard(F&& body) {
  StatusOr<server::HttpResponse> r = body();
  if (!r.ok()) return server::ProblemResponse(r.status());
  return *std::move(r);
}

}  // namespace bai::manager
