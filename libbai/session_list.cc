// SPDX-License-Identifier: Apache-2.0
// Session lists over GraphQL (`compute_session_list`), fetched a page at a time.
#include "bai/protocol/errors.h"
#include "bai/session_client.h"

#include "libbai/protocol/graphql_adapt.h"
#include "libbai/protocol/wire_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace bai {

using nlohmann::json;

StatusOr<std::string> RunGraphql(Client const& client, protocol::GraphqlRequest const& request) {
  // Cut down to what this server's schema has (graphql_adapt.h): the one place queries meet a
  // server's version. A field it lacks is then absent from the answer. Where the server will not
  // describe its schema, its refusals of a field or argument teach it (they come before anything
  // runs, so sending again is safe), kept for the next command.
  auto schema = internal::ServerSchema(client);
  for (int attempt = 0;; ++attempt) {
    protocol::GraphqlRequest sent = request;
    if (schema) {
      auto adapted = graphql::AdaptToSchema(request.query, *schema);
      if (!adapted.ok()) return std::move(adapted).status();
      sent.query = adapted->query;
      sent.variables_json = graphql::AdaptVariables(request.variables_json, *adapted, *schema);
    }
    ApiRequest call("POST", "/admin/gql");
    call.body = protocol::EncodeGraphqlRequest(sent);
    call.idempotent = true;  // queries change nothing; a refused mutation did not run
    auto response = client.Send(call);
    if (!response.ok()) return std::move(response).status();
    if (auto st = CheckResponse(*response); !st.ok()) return st;
    auto decoded = protocol::DecodeGraphqlResponse(response->body);
    if (!decoded.ok()) return std::move(decoded).status();
    if (decoded->errors.empty()) return std::move(decoded->data_json);
    if (schema && attempt < 8) {
      std::vector<graphql::QueryError> errors;
      for (auto const& e : decoded->errors) errors.push_back({e.message, e.line, e.column});
      graphql::SchemaFacts learnt = *schema;
      if (graphql::LearnFromErrors(sent.query, errors, learnt)) {
        schema = internal::LearnServerSchema(client, std::move(learnt));
        continue;
      }
    }
    return protocol::MakeProblemStatus(protocol::ProblemType::kGraphqlError,
                                       protocol::DescribeGraphqlErrors(decoded->errors));
  }
}

StatusOr<std::vector<SessionListItem>> SessionPages::Next() {
  std::vector<SessionListItem> out;
  if (done_) return out;
  std::int64_t size = std::clamp(options_.page_size, 1, 1000);
  if (options_.limit) size = std::min(size, *options_.limit - offset_);
  if (size <= 0) {
    done_ = true;
    return out;
  }
  json vars = {{"limit", size}, {"offset", offset_}};
  std::string status;
  for (auto const& s : options_.statuses) status += (status.empty() ? "" : ",") + s;
  if (!status.empty()) vars["status"] = status;
  if (!options_.filter.empty()) vars["filter"] = options_.filter;
  if (!options_.order.empty()) vars["order"] = options_.order;
  if (options_.access_key) vars["ak"] = *options_.access_key;
  protocol::GraphqlRequest request;
  request.query = std::string(
                      "query($limit: Int!, $offset: Int!, $status: String, $filter: String, "
                      "$order: String, $ak: String) { compute_session_list(limit: $limit, "
                      "offset: $offset, status: $status, filter: $filter, order: $order, "
                      "access_key: $ak) { total_count items { ") +
                  protocol::kSessionListItemFields +
                  (options_.with_usage ? std::string(" ") + protocol::kSessionUseFields : "") +
                  " } } }";
  request.variables_json = vars.dump();
  auto data = RunGraphql(client_, request);
  if (!data.ok()) return std::move(data).status();
  auto j = internal::ParseJson(*data);
  json const* list = j && j->is_object() ? &(*j)["compute_session_list"] : nullptr;
  if (list == nullptr || !list->is_object() || !(*list)["items"].is_array()) {
    return Status(StatusCode::kInternal, "malformed session list from the server");
  }
  total_ = list->value("total_count", std::int64_t{0});
  for (auto const& item : (*list)["items"]) out.push_back(internal::SessionListItemFromJson(item));
  offset_ += static_cast<std::int64_t>(out.size());
  if (static_cast<std::int64_t>(out.size()) < size || offset_ >= total_ ||
      (options_.limit && offset_ >= *options_.limit)) {
    done_ = true;
  }
  return out;
}

StatusOr<std::vector<SessionListItem>> SessionClient::ListAll(SessionListOptions options) const {
  auto pages = List(std::move(options));
  std::vector<SessionListItem> all;
  while (!pages.done()) {
    auto page = pages.Next();
    if (!page.ok()) return std::move(page).status();
    for (auto& item : *page) all.push_back(std::move(item));
  }
  return all;
}

}  // namespace bai
