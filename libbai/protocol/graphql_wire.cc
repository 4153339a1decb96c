// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/graphql_wire.h"

#include "libbai/protocol/json_fields.h"

#include <nlohmann/json.hpp>

namespace bai::protocol {

using internal::FieldReader;
using nlohmann::json;

std::string EncodeGraphqlRequest(GraphqlRequest const& request) {
  json j = {{"query", request.query}};
  if (!request.variables_json.empty()) {
    j["variables"] = json::parse(request.variables_json, nullptr, false);
  }
  if (!request.operation_name.empty()) j["operation_name"] = request.operation_name;
  return j.dump();
}

StatusOr<GraphqlRequest> DecodeGraphqlRequest(std::string_view body) {
  auto j = internal::ObjectOf(body, "GraphQL request");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  GraphqlRequest out;
  out.query = r.Required("query");
  out.operation_name = r.String("operation_name");
  if (out.operation_name.empty()) out.operation_name = r.String("operationName");
  if (auto const* vars = r.Object("variables")) out.variables_json = vars->dump();
  if (!r.ok()) return internal::FieldProblem(r);
  return out;
}

StatusOr<GraphqlResponse> DecodeGraphqlResponse(std::string_view body) {
  auto j = internal::ObjectOf(body, "GraphQL response");
  if (!j.ok()) return std::move(j).status();
  GraphqlResponse out;
  auto data = j->find("data");
  out.data_json = data == j->end() ? "null" : data->dump();
  FieldReader r(*j);
  if (auto const* errors = r.Array("errors")) {
    for (auto const& e : *errors) {
      GraphqlError err;
      err.message = e.is_object() ? e.value("message", std::string()) : e.dump();
      if (e.is_object() && e.contains("path") && e["path"].is_array()) {
        for (auto const& p : e["path"]) {
          if (!err.path.empty()) err.path += ".";
          err.path += p.is_string() ? p.get<std::string>() : p.dump();
        }
      }
      if (e.is_object() && e.contains("locations") && e["locations"].is_array() &&
          !e["locations"].empty() && e["locations"][0].is_object()) {
        auto const& at = e["locations"][0];
        if (at.contains("line") && at["line"].is_number_integer()) err.line = at["line"];
        if (at.contains("column") && at["column"].is_number_integer()) err.column = at["column"];
      }
      out.errors.push_back(std::move(err));
    }
  }
  if (!r.ok()) return internal::FieldProblem(r);
  return out;
}

std::string DescribeGraphqlErrors(std::vector<GraphqlError> const& errors) {
  std::string out;
  for (auto const& e : errors) {
    if (!out.empty()) out += "; ";
    out += e.message;
    if (!e.path.empty()) out += " (at " + e.path + ")";
  }
  return out;
}

}  // namespace bai::protocol
