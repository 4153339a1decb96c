// SPDX-License-Identifier: Apache-2.0
#include "libbai/internal/server_request.h"

#include "libbai/protocol/server_dialect.h"
#include "libbai/util/url.h"

namespace bai::internal {

std::string DescribeServer(ServerCapabilities const& server) {
  std::string name = server.kind == ServerCapabilities::Kind::kBackendAi
                         ? "Backend.AI " + server.manager
                         : server.manager;
  return name + ", API " + server.api_version;
}

Status Needs(ServerCapabilities const& server, std::string_view what, std::string_view release) {
  std::string message = "this server (" + DescribeServer(server) + ") has no " + std::string(what);
  message += release.empty() ? "; bai's own manager has it"
                             : ": it needs Backend.AI " + std::string(release) + " or later";
  return Status(StatusCode::kUnimplemented, message);
}

StatusOr<ApiRequest> RequestWithParams(Client const& client, std::string legacy_method,
                                       std::string path, nlohmann::json const& params,
                                       std::string_view what) {
  auto server = client.server();
  protocol::ParamsVia via = protocol::ParamsVia::kPostBody;
  if (server.ok() && server->kind == ServerCapabilities::Kind::kBackendAi) {
    via = protocol::ParamsViaFor(
        protocol::ServerKind::kBackendAi,
        protocol::Release{server->release_year, server->release_month, server->release_patch});
  }
  if (via == protocol::ParamsVia::kPostBody || via == protocol::ParamsVia::kBody) {
    ApiRequest r(via == protocol::ParamsVia::kPostBody ? "POST" : std::move(legacy_method),
                 std::move(path));
    r.body = params.dump();
    return r;
  }
  std::string query;
  for (auto const& [key, value] : params.items()) {
    if (value.is_array() || value.is_object()) {
      return Status(StatusCode::kUnimplemented,
                    "this server (" + DescribeServer(*server) + ") cannot " + std::string(what) +
                        ": it reads a " + legacy_method +
                        "'s parameters from the query string only, where the list '" + key +
                        "' cannot be given (a fault of 23.09.11; Backend.AI 23.09.10 and earlier, "
                        "and 24.03.7 or later, take it)");
    }
    std::string text = value.is_string() ? value.get<std::string>()
                       : value.is_null() ? std::string()
                                         : value.dump();
    query += (query.empty() ? "?" : "&") + EncodeSegment(key) + "=" + EncodeSegment(text);
  }
  return ApiRequest(std::move(legacy_method), std::move(path) + query);
}

}  // namespace bai::internal
