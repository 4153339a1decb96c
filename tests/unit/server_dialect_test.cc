// SPDX-License-Identifier: Apache-2.0
// Issue 44: what a server accepts, decided in one place. GraphQL queries cut down to a server's
// schema (read whole by introspection, or learnt from its refusals where introspection is off,
// as in a real 23.09.11 manager), and the version rules of server_dialect.
#include "libbai/protocol/server_dialect.h"

#include "libbai/protocol/graphql_adapt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr char kSessions[] =
    "query($limit: Int!, $ak: String) { compute_session_list(limit: $limit, access_key: $ak) "
    "{ total_count items { id name exit_code requested_slots status } } }";

// 23.09.11's facts for the fields above (from its schema: ComputeSession has no exit_code nor
// requested_slots; compute_session_list takes access_key).
graphql::SchemaFacts Facts2309() {
  graphql::SchemaFacts f;
  f.query_type = "Queries";
  f.types["Queries"]["compute_session_list"] = {"ComputeSessionList", {"limit", "access_key"}};
  f.types["ComputeSessionList"]["total_count"] = {"Int", {}};
  f.types["ComputeSessionList"]["items"] = {"ComputeSession", {}};
  for (char const* name : {"id", "name", "status", "occupied_slots"}) {
    f.types["ComputeSession"][name] = {"String", {}};
  }
  return f;
}

TEST(GraphqlAdaptTest, FieldsAndArgumentsTheSchemaLacksAreTakenOut) {
  auto f = Facts2309();
  auto a = graphql::AdaptToSchema(kSessions, f);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->query,
            "query($limit: Int!, $ak: String) { compute_session_list(limit: $limit, access_key: "
            "$ak) { total_count items { id name status } } }");
  EXPECT_THAT(a->dropped,
              ElementsAre("ComputeSession.exit_code", "ComputeSession.requested_slots"));
  // An argument the field does not take goes, and so does its variable.
  f.types["Queries"]["compute_session_list"].args = {"limit"};
  a = graphql::AdaptToSchema(kSessions, f);
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(a->query, HasSubstr("query($limit: Int!) { compute_session_list(limit: $limit) {"));
  EXPECT_THAT(a->dropped_variables, ElementsAre("ak"));
  // A field whose selections all go goes too; a query left with nothing says so.
  auto none =
      graphql::AdaptToSchema("{ compute_session_list(limit: 1) { items { exit_code } } }", f);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(none.status().message(), HasSubstr("ComputeSession.exit_code"));
  // A schema with everything changes nothing but spacing.
  f.types["ComputeSession"]["exit_code"] = {"Int", {}};
  f.types["ComputeSession"]["requested_slots"] = {"JSONString", {}};
  f.types["Queries"]["compute_session_list"].args = {"limit", "access_key"};
  a = graphql::AdaptToSchema(kSessions, f);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->dropped.empty());
  EXPECT_EQ(a->query, std::string(kSessions));
}

TEST(GraphqlAdaptTest, PrintedDocumentsParseBackToThemselves) {
  std::string q =
      "mutation M($n: String!, $p: DomainInput = {a: [1, 2.5, \"x\\\"y\"], b: null, c: true}) "
      "{ create_domain(name: $n, props: $p) @skip(if: false) { ok msg domain { name ... on "
      "Domain { description } } } }";
  auto parsed = graphql::Parse(q);
  ASSERT_TRUE(parsed.ok()) << parsed.error->message;
  auto printed = graphql::Print(parsed.document);
  auto again = graphql::Parse(printed);
  ASSERT_TRUE(again.ok()) << printed;
  EXPECT_EQ(graphql::Print(again.document), printed);
  EXPECT_EQ(printed, q);
}

// The location a field has in the query as it was sent (adapted queries are printed on one
// line, so errors point into that text).
graphql::QueryError ErrorAt(std::string const& query, std::string const& needle,
                            std::string message) {
  auto at = query.find(needle);
  return {std::move(message), 1, static_cast<int>(at) + 1};
}

TEST(GraphqlAdaptTest, WithIntrospectionOffTheServersRefusalsTeachWhatItLacks) {
  graphql::SchemaFacts learnt;  // 23.09.11 answers "introspection is disabled"
  auto first = graphql::AdaptToSchema(kSessions, learnt);
  ASSERT_TRUE(first.ok());
  std::string sent = first->query;  // unchanged: nothing known yet
  // 23.09.11's own answer (graphql-core 3).
  std::vector<graphql::QueryError> errors = {
      ErrorAt(sent, "exit_code", "Cannot query field 'exit_code' on type 'ComputeSession'."),
      ErrorAt(sent, "requested_slots",
              "Cannot query field 'requested_slots' on type 'ComputeSession'. Did you mean "
              "'occupied_slots'?"),
      ErrorAt(sent, "access_key:",
              "Unknown argument 'access_key' on field 'Queries.compute_session_list'.")};
  ASSERT_TRUE(graphql::LearnFromErrors(sent, errors, learnt));
  EXPECT_THAT(learnt.lacks["query:compute_session_list.items"],
              UnorderedElementsAre("exit_code", "requested_slots"));
  EXPECT_THAT(learnt.lacks_args["query:compute_session_list"], ElementsAre("access_key"));
  auto second = graphql::AdaptToSchema(kSessions, learnt);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->query,
            "query($limit: Int!) { compute_session_list(limit: $limit) { total_count items { id "
            "name status } } }");
  // The same refusal again teaches nothing new: not sent a third time.
  EXPECT_FALSE(graphql::LearnFromErrors(sent, errors, learnt));
  // Any other error is not a schema difference.
  graphql::SchemaFacts other;
  EXPECT_FALSE(graphql::LearnFromErrors(
      sent, {{"Variable '$limit' of required type 'Int!' was not provided.", 1, 7}}, other));
  // graphql-core 2's wording (22.03), with double quotes.
  graphql::SchemaFacts old;
  ASSERT_TRUE(graphql::LearnFromErrors(
      sent,
      {ErrorAt(sent, "exit_code", "Cannot query field \"exit_code\" on type \"ComputeSession\".")},
      old));
  EXPECT_THAT(old.lacks["query:compute_session_list.items"], ElementsAre("exit_code"));
  // What was learnt survives the profile cache.
  auto decoded = graphql::DecodeSchemaFacts(graphql::EncodeSchemaFacts(learnt));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(*decoded, learnt);
}

// A mutation's input object with a key the server's input type does not define (23.09.11's
// GroupInput has no `type`): learnt from the variable's refusal, the key leaves the value.
TEST(GraphqlAdaptTest, InputFieldsTheServerDoesNotDefineLeaveTheVariables) {
  std::string q =
      "mutation($name: String!, $props: GroupInput!) { create_group(name: $name, props: $props) "
      "{ ok msg } }";
  graphql::SchemaFacts learnt;
  ASSERT_TRUE(graphql::LearnFromErrors(
      q,
      {{"Variable '$props' got invalid value {'description': '', 'type': 'GENERAL'}; Field "
        "'type' is not defined by type 'GroupInput'.",
        1, 26}},
      learnt));
  EXPECT_THAT(learnt.lacks_input["GroupInput"], ElementsAre("type"));
  auto a = graphql::AdaptToSchema(q, learnt);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->variable_types["props"], "GroupInput");
  auto vars = nlohmann::json::parse(graphql::AdaptVariables(
      R"({"name": "p", "props": {"description": "", "type": "GENERAL"}})", *a, learnt));
  EXPECT_EQ(vars, nlohmann::json::parse(R"({"name": "p", "props": {"description": ""}})"));
  auto decoded = graphql::DecodeSchemaFacts(graphql::EncodeSchemaFacts(learnt));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, learnt);
}

TEST(GraphqlAdaptTest, IntrospectionIsReadAndKeptCompactly) {
  auto data = nlohmann::json::parse(R"({"__schema": {
      "queryType": {"name": "Queries"}, "mutationType": {"name": "Mutations"},
      "types": [
        {"name": "Queries", "kind": "OBJECT", "fields": [
          {"name": "keypairs", "args": [{"name": "is_active"}],
           "type": {"name": null, "kind": "LIST", "ofType": {"name": "KeyPair", "kind": "OBJECT"}}}]},
        {"name": "KeyPair", "kind": "OBJECT", "fields": [
          {"name": "access_key", "args": [],
           "type": {"name": null, "kind": "NON_NULL", "ofType": {"name": "String", "kind": "SCALAR"}}}]},
        {"name": "String", "kind": "SCALAR", "fields": null}]}})");
  auto facts = graphql::ReadIntrospection(data.dump());
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->query_type, "Queries");
  EXPECT_EQ(facts->mutation_type, "Mutations");
  EXPECT_EQ(facts->types["Queries"]["keypairs"].type, "KeyPair");
  EXPECT_THAT(facts->types["Queries"]["keypairs"].args, ElementsAre("is_active"));
  EXPECT_EQ(facts->types["KeyPair"]["access_key"].type, "String");
  EXPECT_EQ(facts->types.count("String"), 0u);
  auto decoded = graphql::DecodeSchemaFacts(graphql::EncodeSchemaFacts(*facts));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, *facts);
  auto a =
      graphql::AdaptToSchema("{ keypairs(is_active: true) { access_key modified_at } }", *facts);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->query, "query { keypairs(is_active: true) { access_key } }");
  EXPECT_FALSE(graphql::ReadIntrospection("{\"__schema\": null}").ok());
  EXPECT_FALSE(graphql::DecodeSchemaFacts("[]").ok());
}

TEST(ServerDialectTest, KindsReleasesAndFeatures) {
  using protocol::ServerKind;
  EXPECT_EQ(protocol::KindOfManager("bai-manager 0.1.0"), ServerKind::kBai);
  EXPECT_EQ(protocol::KindOfManager("23.09.11"), ServerKind::kBackendAi);
  EXPECT_EQ(protocol::KindOfManager("24.09.0rc1"), ServerKind::kBackendAi);
  EXPECT_EQ(protocol::KindOfManager("nginx"), ServerKind::kOther);
  auto r = protocol::ParseRelease("26.8.1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->year, 26);
  EXPECT_EQ(r->month, 8);
  EXPECT_EQ(r->patch, 1);
  EXPECT_FALSE(protocol::ParseRelease("1.2.3"));
  EXPECT_FALSE(protocol::ParseRelease("23.13.0"));
  auto v = [](char const* t) { return *protocol::ApiVersion::Parse(t); };
  auto f2309 = protocol::FeaturesOf(ServerKind::kBackendAi, v("v7.20230615"));
  EXPECT_TRUE(f2309.count("quota-scopes"));
  EXPECT_TRUE(f2309.count("graphql-introspection"));
  EXPECT_FALSE(f2309.count("usage-all-projects"));
  EXPECT_FALSE(f2309.count("session-name-optional"));
  auto f2409 = protocol::FeaturesOf(ServerKind::kBackendAi, v("v8.20240915"));
  EXPECT_TRUE(f2409.count("usage-all-projects"));
  EXPECT_TRUE(f2409.count("session-priority"));
  EXPECT_FALSE(f2409.count("session-name-optional"));  // 24.09 requires a name too
  auto bai = protocol::FeaturesOf(ServerKind::kBai, v("v8.20240915"));
  EXPECT_TRUE(bai.count("session-name-optional"));
  EXPECT_TRUE(bai.count("bai-extensions"));
  EXPECT_FALSE(bai.count("graphql-introspection"));
}

// Read from each release's manager/api/utils.py check_api_params and its route tables.
TEST(ServerDialectTest, ParametersOfOldDeleteAndGetRoutesGoWhereEachReleaseReadsThem) {
  using protocol::ParamsVia;
  auto via = [](char const* manager) {
    return protocol::ParamsViaFor(protocol::KindOfManager(manager),
                                  protocol::ParseRelease(manager));
  };
  EXPECT_EQ(via("bai-manager 0.1.0"), ParamsVia::kPostBody);
  EXPECT_EQ(via("22.03.9"), ParamsVia::kBody);
  EXPECT_EQ(via("23.09.10"), ParamsVia::kBody);
  EXPECT_EQ(via("23.09.11"), ParamsVia::kQuery);  // reads a DELETE's or GET's query only
  EXPECT_EQ(via("24.03.6"), ParamsVia::kBody);
  EXPECT_EQ(via("24.03.7"), ParamsVia::kPostBody);  // POST routes added
  EXPECT_EQ(via("24.09.9"), ParamsVia::kPostBody);
  EXPECT_EQ(via("26.8.1"), ParamsVia::kPostBody);
  EXPECT_EQ(protocol::FirstReleaseWith("vfolder-trash"), "24.03");
  EXPECT_EQ(protocol::FirstReleaseWith("session-priority"), "24.09");
  EXPECT_EQ(protocol::FirstReleaseWith("bai-extensions"), "");
  // batch_timeout came in 24.12, under 24.09's API version: the release decides.
  auto v2409 = *protocol::ApiVersion::Parse("v8.20240915");
  EXPECT_FALSE(protocol::FeaturesOf(protocol::ServerKind::kBackendAi, v2409,
                                    protocol::ParseRelease("24.09.9"))
                   .count("batch-timeout"));
  EXPECT_TRUE(protocol::FeaturesOf(protocol::ServerKind::kBackendAi, v2409,
                                   protocol::ParseRelease("24.12.0"))
                  .count("batch-timeout"));
  EXPECT_TRUE(protocol::FeaturesOf(protocol::ServerKind::kBai, v2409).count("batch-timeout"));
  EXPECT_EQ(protocol::FirstReleaseWith("batch-timeout"), "24.12");
}

TEST(ServerDialectTest, SessionNamesAsTheServerChecksThem) {
  auto name = protocol::GeneratedSessionName(0x0123456789abcdefULL);
  EXPECT_EQ(name, "bai-6789abcdef");
  EXPECT_EQ(protocol::CheckSessionName(name), "");
  for (char const* good : {"train", "a_b.c-d", "x123"}) {
    EXPECT_EQ(protocol::CheckSessionName(good), "") << good;
  }
  for (char const* bad : {"abc", "-abc", "abc-", "has space", "slash/no",
                          "0123456789012345678901234567890123456789012345678901234567890123x"}) {
    EXPECT_THAT(protocol::CheckSessionName(bad), HasSubstr("4 to 64")) << bad;
  }
}

// 23.09.11 answered 500 (KeyError: 'template') to a bare template: Backend.AI reads a list of
// {name?, template} or YAML documents with a `template` key.
TEST(ServerDialectTest, TemplatePayloadsAreWrappedForBackendAi) {
  auto json_bare = nlohmann::json::parse(protocol::TemplatePayloadForBackendAi(
      R"({"apiVersion": "v1", "kind": "taskTemplate", "spec": {}})"));
  EXPECT_EQ(json_bare,
            nlohmann::json::parse(
                R"([{"template": {"apiVersion": "v1", "kind": "taskTemplate", "spec": {}}}])"));
  std::string listed = R"([{"name": "x", "template": {"kind": "taskTemplate"}}])";
  EXPECT_EQ(protocol::TemplatePayloadForBackendAi(listed), listed);
  EXPECT_EQ(protocol::TemplatePayloadForBackendAi(
                "---\napiVersion: v1\nkind: taskTemplate\nspec:\n  kernel:\n    image: python\n"),
            "---\ntemplate:\n  apiVersion: v1\n  kind: taskTemplate\n  spec:\n    kernel:\n      "
            "image: python\n");
  // Two documents, one already wrapped.
  EXPECT_EQ(
      protocol::TemplatePayloadForBackendAi(
          "kind: taskTemplate\nmetadata: {name: a}\n---\nname: b\ntemplate:\n  kind: x\n"),
      "---\ntemplate:\n  kind: taskTemplate\n  metadata: {name: a}\n---\nname: b\ntemplate:\n  "
      "kind: x\n");
}

}  // namespace
}  // namespace bai
