// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GraphQL request and response documents of `POST /admin/gql` (PROTOCOL.md §8.1), with
// their one codec: the SDK encodes requests and decodes responses, the manager decodes
// requests (and writes responses with its engine, in the shape decoded here).

#include "bai/export.h"
#include "bai/status.h"

#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

struct GraphqlRequest {
  std::string query;
  std::string variables_json;  ///< a JSON object as text; "" for none
  std::string operation_name;  ///< "" for none; read as `operation_name` or `operationName`
};
BAI_EXPORT std::string EncodeGraphqlRequest(GraphqlRequest const& request);
/// 400 invalid-api-params naming the field for a body that is not one (no query, variables that
/// are not an object).
BAI_EXPORT StatusOr<GraphqlRequest> DecodeGraphqlRequest(std::string_view body);

struct GraphqlError {
  std::string message;
  std::string path;  ///< "compute_session_list.items.0.name"; "" when the error has none
  int line = 0;      ///< where in the query (its first location); 0 when the error has none
  int column = 0;
};

struct GraphqlResponse {
  std::string data_json;  ///< the `data` member as JSON text ("null" when absent)
  std::vector<GraphqlError> errors;
};
BAI_EXPORT StatusOr<GraphqlResponse> DecodeGraphqlResponse(std::string_view body);

/// The errors as one line: "message (at path); message …".
BAI_EXPORT std::string DescribeGraphqlErrors(std::vector<GraphqlError> const& errors);

}  // namespace bai::protocol
