// SPDX-License-Identifier: Apache-2.0
// The GraphQL engine's pure core: validation against the served schema (every rule with the
// message a client sees), execution (projection, aliases, fragments, null propagation,
// scalar serialisation) and the filter/order mini-language compiled to bound SQL.
#include "server-reference/manager/graphql/backend_ai_schema.h"
#include "server-reference/manager/graphql/execute.h"
#include "server-reference/manager/graphql/minilang.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace bai::graphql {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Prepared PrepareText(std::string const& text, json const& variables = nullptr,
                     std::string const& op = "", Limits const& limits = {}) {
  auto parsed = Parse(text, limits);
  EXPECT_TRUE(parsed.ok()) << parsed.error->message;
  return Prepare(parsed.document, BackendAiSchema(), variables, op, limits);
}

// The first error's message, or "" when the document is valid.
std::string FirstError(std::string const& text, json const& variables = nullptr,
                       Limits const& limits = {}) {
  auto p = PrepareText(text, variables, "", limits);
  return p.errors.empty() ? "" : p.errors.front().message;
}

json Session(std::string id, std::string name) {
  return {{"id", id},
          {"name", name},
          {"status", "RUNNING"},
          {"occupied_slots", {{"cpu", "1"}}},
          {"num_queries", 3},
          {"containers", json::array({{{"id", "k1"}, {"status", "RUNNING"}}})}};
}

TEST(GraphqlEngineTest, PlansTheOfficialListQueryWithVariablesAndFragments) {
  auto p = PrepareText(R"(
    query($limit: Int!, $offset: Int!, $status: String) {
      compute_session_list(limit: $limit, offset: $offset, status: $status) {
        items { id name ...Slots containers { id } }
        total_count
      }
    }
    fragment Slots on ComputeSession { occupied_slots name }
  )",
                       {{"limit", 20}, {"offset", 0}});
  ASSERT_TRUE(p.ok()) << p.errors[0].message;
  ASSERT_EQ(p.plan.fields.size(), 1u);
  auto const& list = p.plan.fields[0];
  EXPECT_EQ(list.args, json({{"limit", 20}, {"offset", 0}}));  // unset $status: absent
  auto const* items = list.Find("items");
  ASSERT_NE(items, nullptr);
  std::vector<std::string> keys;
  for (auto const& f : items->selections) keys.push_back(f.key);
  EXPECT_THAT(keys, ElementsAre("id", "name", "occupied_slots", "containers"));  // merged
  EXPECT_TRUE(items->Selects("containers"));
  EXPECT_FALSE(items->Selects("mounts"));
}

TEST(GraphqlEngineTest, InputObjectsAreCoercedFromLiteralsAndVariables) {
  // A literal: given fields, defaults for the rest; an absent field without one stays absent.
  auto p = PrepareText(R"(mutation {
    create_domain(name: "d1", props: {description: "x", is_active: false}) { ok msg }
  })");
  ASSERT_TRUE(p.ok()) << p.errors[0].message;
  EXPECT_EQ(p.plan.operation, "mutation");
  EXPECT_EQ(p.plan.fields[0].args["props"], json({{"description", "x"},
                                                  {"is_active", false},
                                                  {"total_resource_slots", "{}"},
                                                  {"allowed_vfolder_hosts", "{}"},
                                                  {"allowed_docker_registries", json::array()}}));
  // A variable: the same coercion of its JSON, nulls kept (22.03's client sends them for
  // fields it does not change), any JSON as a JSONString.
  auto v = PrepareText(
      R"(mutation($name: String!, $input: ModifyDomainInput!) {
           modify_domain(name: $name, props: $input) { ok msg } })",
      {{"name", "d1"},
       {"input", {{"name", nullptr}, {"allowed_vfolder_hosts", json::array({"local"})}}}});
  ASSERT_TRUE(v.ok()) << v.errors[0].message;
  EXPECT_EQ(v.plan.fields[0].args["props"],
            json({{"name", nullptr}, {"allowed_vfolder_hosts", "[\"local\"]"}}));
  // Refusals name the field and the type.
  EXPECT_EQ(FirstError(R"(mutation { create_domain(name: "d", props: {nope: 1}) { ok } })"),
            "Field \"nope\" is not defined by type \"DomainInput\".");
  EXPECT_EQ(
      FirstError(R"(mutation { create_domain(name: "d", props: {is_active: "yes"}) { ok } })"),
      "Field \"DomainInput.is_active\" has an invalid value \"yes\"; expected type "
      "\"Boolean\".");
  EXPECT_EQ(FirstError(R"(mutation { create_domain(name: "d", props: "x") { ok } })"),
            "Argument \"props\" of field \"create_domain\" has an invalid value; expected type "
            "\"DomainInput!\".");
  EXPECT_THAT(FirstError("mutation($i: DomainInput!) { create_domain(name: \"d\", props: $i) "
                         "{ ok } }",
                         {{"i", {{"bogus", true}}}}),
              HasSubstr("field \"bogus\" is not defined by type \"DomainInput\""));
  EXPECT_THAT(FirstError("mutation($i: DomainInput!) { create_domain(name: \"d\", props: $i) "
                         "{ ok } }",
                         {{"i", {{"is_active", "no"}}}}),
              HasSubstr("expected type \"Boolean\""));
  // Output types are not input types.
  EXPECT_THAT(FirstError("mutation($i: Domain) { delete_domain(name: \"d\") { ok } }"),
              HasSubstr("not a known input type"));
}

TEST(GraphqlEngineTest, NamesUnknownFieldsArgumentsAndTypes) {
  EXPECT_EQ(FirstError("{ compute_session(id: \"x\") { id nmae } }"),
            "Cannot query field \"nmae\" on type \"ComputeSession\".");
  EXPECT_EQ(FirstError("{ no_such_thing }"),
            "Cannot query field \"no_such_thing\" on type \"Query\".");
  EXPECT_EQ(FirstError("{ compute_session(id: \"x\", nope: 1) { id } }"),
            "Unknown argument \"nope\" on field \"Query.compute_session\".");
  EXPECT_THAT(FirstError("{ compute_session_list(limit: \"ten\", offset: 0) { total_count } }"),
              HasSubstr("Argument \"limit\" of field \"compute_session_list\" has an invalid value "
                        "\"ten\"; expected type \"Int!\""));
  EXPECT_THAT(FirstError("{ compute_session_list(limit: 5000000000, offset: 0) { total_count } }"),
              HasSubstr("expected type \"Int!\""));
  EXPECT_EQ(FirstError("{ compute_session_list(offset: 0) { total_count } }"),
            "Field \"compute_session_list\" argument \"limit\" of type \"Int!\" is required, but "
            "it was not provided.");
  EXPECT_EQ(FirstError("{ compute_session(id: \"x\") }"),
            "Field \"compute_session\" of type \"ComputeSession\" must have a selection of "
            "subfields.");
  EXPECT_EQ(FirstError("{ compute_session(id: \"x\") { id { x } } }"),
            "Field \"id\" must not have a selection since type \"UUID\" has no subfields.");
  EXPECT_EQ(FirstError("{ compute_session(id: null) { id } }"),
            "Argument \"id\" of field \"compute_session\" of type \"UUID!\" must not be null.");
  EXPECT_EQ(FirstError("mutation { x }"), "Cannot query field \"x\" on type \"Mutations\".");
  EXPECT_THAT(FirstError("subscription { x }"), HasSubstr("Subscriptions are not supported"));
}

TEST(GraphqlEngineTest, ChecksVariables) {
  char const* q = "query($id: UUID!) { compute_session(id: $id) { id } }";
  EXPECT_EQ(FirstError(q), "Variable \"$id\" of required type \"UUID!\" was not provided.");
  EXPECT_THAT(FirstError(q, {{"id", 5}}), HasSubstr("Variable \"$id\" got invalid value 5"));
  EXPECT_EQ(FirstError(q, json::array()), "Variables must be given as a JSON object.");
  EXPECT_EQ(FirstError("{ compute_session(id: $id) { id } }"), "Variable \"$id\" is not defined.");
  EXPECT_EQ(FirstError("query($x: Int) { agents { id } }"), "Variable \"$x\" is never used.");
  EXPECT_EQ(FirstError("query($id: String) { compute_session(id: $id) { id } }", {{"id", "a"}}),
            "Variable \"$id\" of type \"String\" used in position expecting type \"UUID!\".");
  EXPECT_EQ(FirstError("query($x: Nope) { agents(status: $x) { id } }"),
            "Variable \"$x\" cannot be of type \"Nope\": it is not a known input type.");
  // A default satisfies a non-null position; a list position takes one value.
  EXPECT_EQ(FirstError("query($l: Int = 5) { compute_session_list(limit: $l, offset: 0) { "
                       "total_count } }"),
            "");
  auto p =
      PrepareText("query($f: String) { images(load_filters: $f) { name } }", {{"f", "general"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.plan.fields[0].args["load_filters"], json::array({"general"}));
}

TEST(GraphqlEngineTest, ChecksFragmentsAndOperations) {
  EXPECT_EQ(FirstError("{ agents { ...A } } fragment A on Agent { ...B } fragment B on Agent { "
                       "...A }"),
            "Cannot spread fragment \"A\" within itself.");
  EXPECT_EQ(FirstError("{ agents { id } } fragment A on Agent { id }"),
            "Fragment \"A\" is never used.");
  EXPECT_EQ(FirstError("{ agents { ...Missing } }"), "Unknown fragment \"Missing\".");
  EXPECT_EQ(FirstError("{ agents { ...A } } fragment A on Nope { id }"), "Unknown type \"Nope\".");
  EXPECT_EQ(FirstError("{ agents { ...A } } fragment A on Image { name }"),
            "Fragment \"A\" cannot be spread here as objects of type \"Agent\" can never be of "
            "type \"Image\".");
  EXPECT_EQ(FirstError("{ agents { id: status id } }"),
            "Fields \"id\" conflict because they select different fields or arguments; use "
            "different aliases on the fields to fetch both.");
  EXPECT_EQ(FirstError("query A { agents { id } } query A { agents { id } }"),
            "There can be only one operation named \"A\".");
  EXPECT_EQ(FirstError("query A { agents { id } } query B { agents { id } }"),
            "Must provide operation name if query contains multiple operations.");
  auto parsed = Parse("query A { agents { id } } query B { images { name } }");
  auto p = Prepare(parsed.document, BackendAiSchema(), nullptr, "B");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.plan.fields[0].name, "images");
  EXPECT_EQ(Prepare(parsed.document, BackendAiSchema(), nullptr, "C").errors[0].message,
            "Unknown operation named \"C\".");
  EXPECT_EQ(FirstError("{ agents @bogus { id } }"), "Unknown directive \"@bogus\".");
}

TEST(GraphqlEngineTest, LimitsHoldAfterFragmentExpansion) {
  // Each fragment doubles the fields: 2^12 fields from a document of a few hundred bytes.
  std::string q = "{ agents { ...F0 } }";
  for (int i = 0; i < 12; ++i) {
    q += " fragment F" + std::to_string(i) + " on Agent { a" + std::to_string(i) + ": id ...F" +
         std::to_string(i + 1) + " b" + std::to_string(i) + ": status ...F" +
         std::to_string(i + 1) + " }";
  }
  q += " fragment F12 on Agent { id }";
  Limits limits;
  limits.max_aliases = 100;
  auto p = PrepareText(q, nullptr, "", limits);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.errors.back().message,
              HasSubstr("selects more than 1000 fields once its fragments are expanded"));
  EXPECT_TRUE(p.plan.fields.empty());

  // Depth through fragments: each fragment is shallow, the expansion is not.
  Limits shallow;
  shallow.max_depth = 3;
  EXPECT_THAT(FirstError("{ keypair { ...K } } fragment K on KeyPair { compute_sessions { ...S1 } "
                         "} fragment S1 on ComputeSession { dependencies { ...S2 } } "
                         "fragment S2 on ComputeSession { dependencies { id } }",
                         nullptr, shallow),
              HasSubstr("nested deeper than 3 levels once its fragments are expanded"));
}

// Hardening (hostile testing): fragments F_i { ...F_{i-1} ...F_{i-1} } to depth 30 took the
// cycle check 2^30 steps and stopped the manager; with every field @skip'ed, planning did the
// same without planning a field. Property: for every shape and depth, the work done is linear
// in the document plus a fixed expansion budget, and such documents are refused.
TEST(GraphqlEngineTest, ValidationWorkStaysLinearForFragmentBombs) {
  Limits limits;
  std::int64_t budget = 4 * limits.max_selections;
  for (std::string leaf : {"id", "id @skip(if: true)", "a: id @include(if: false) b: status"}) {
    for (int depth : {1, 2, 5, 10, 20, 30, 40}) {
      std::string q = "{ agents { ...F" + std::to_string(depth) + " } }";
      q += " fragment F0 on Agent { " + leaf + " }";
      for (int i = 1; i <= depth; ++i) {
        std::string prev = "...F" + std::to_string(i - 1);
        q += " fragment F" + std::to_string(i) + " on Agent { " + prev + " " + prev + " }";
      }
      auto parsed = Parse(q, limits);
      ASSERT_TRUE(parsed.ok()) << parsed.error->message;
      auto p = Prepare(parsed.document, BackendAiSchema(), nullptr, "", limits);
      std::int64_t size = 4 * (depth + 2);  // selections written in the document
      EXPECT_LE(p.work, 8 * size + budget) << leaf << " at depth " << depth;
      if (depth >= 12) {
        ASSERT_FALSE(p.ok()) << leaf << " at depth " << depth;
        EXPECT_THAT(p.errors.front().message, HasSubstr("once its fragments are expanded"));
      }
    }
  }
  // A cycle behind a wide fan-out is still found, once.
  std::string q = "{ agents { ...F20 } } fragment F0 on Agent { ...F20 }";
  for (int i = 1; i <= 20; ++i) {
    std::string prev = "...F" + std::to_string(i - 1);
    q += " fragment F" + std::to_string(i) + " on Agent { " + prev + " " + prev + " }";
  }
  auto parsed = Parse(q, limits);
  ASSERT_TRUE(parsed.ok());
  auto p = Prepare(parsed.document, BackendAiSchema(), nullptr, "", limits);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.errors.front().message, HasSubstr("within itself"));
  EXPECT_LE(p.work, 8 * 4 * 22);
}

TEST(GraphqlEngineTest, SkipAndIncludeDirectives) {
  auto p = PrepareText(
      "query($on: Boolean!) { agents { id status @include(if: $on) version "
      "@skip(if: true) } }",
      {{"on", false}});
  ASSERT_TRUE(p.ok()) << p.errors[0].message;
  ASSERT_EQ(p.plan.fields[0].selections.size(), 1u);
  EXPECT_EQ(p.plan.fields[0].selections[0].name, "id");
}

TEST(GraphqlEngineTest, ExecutesWithAliasesTypenameAndSerialisation) {
  auto p = PrepareText(R"({
    first: compute_session(id: "a") { id nick: name status occupied_slots num_queries __typename
                                       containers { id } }
    gone: compute_session(id: "b") { id }
  })");
  ASSERT_TRUE(p.ok()) << p.errors[0].message;
  auto out = Execute(p.plan, [](PlannedField const& f) -> StatusOr<json> {
    if (f.args["id"] == "a") return Session("a", "job");
    return json(nullptr);
  });
  EXPECT_EQ(out.dump(),
            R"({"data":{"first":{"id":"a","nick":"job","status":"RUNNING",)"
            R"("occupied_slots":"{\"cpu\":\"1\"}","num_queries":3,)"
            R"("__typename":"ComputeSession","containers":[{"id":"k1"}]},"gone":null}})");
}

TEST(GraphqlEngineTest, ResolverErrorsAndNullsInNonNullPositions) {
  auto p = PrepareText(R"({
    compute_session_list(limit: 10, offset: 0) { items { id } total_count }
    compute_session(id: "x") { id }
  })");
  ASSERT_TRUE(p.ok());
  auto out = Execute(p.plan, [](PlannedField const& f) -> StatusOr<json> {
    if (f.name == "compute_session") return Status(StatusCode::kPermissionDenied, "Not yours.");
    return json{{"items", json::array()}, {"total_count", nullptr}};  // total_count is Int!
  });
  EXPECT_EQ(out["data"], nlohmann::ordered_json(
                             {{"compute_session_list", nullptr}, {"compute_session", nullptr}}));
  ASSERT_EQ(out["errors"].size(), 2u);
  EXPECT_EQ(out["errors"][0]["message"], "Cannot return null for non-nullable field total_count.");
  EXPECT_EQ(out["errors"][0]["path"],
            nlohmann::ordered_json::parse(R"(["compute_session_list","total_count"])"));
  EXPECT_EQ(out["errors"][1]["message"], "Not yours.");
  EXPECT_EQ(out["errors"][1]["path"], nlohmann::ordered_json::parse(R"(["compute_session"])"));
  EXPECT_EQ(out["errors"][1]["locations"][0]["line"], 3);
}

TEST(GraphqlEngineTest, ErrorResponseCarriesEveryError) {
  auto p = PrepareText("{ a b }");
  auto out = ErrorResponse(p.errors);
  EXPECT_TRUE(out["data"].is_null());
  ASSERT_EQ(out["errors"].size(), 2u);
  EXPECT_EQ(out["errors"][1]["locations"][0]["column"], 5);
}

// ---- the mini-language ----------------------------------------------------------------------

ColumnMap const& Columns() {
  static ColumnMap const kColumns{
      {"name", {"s.name", ColumnSpec::Kind::kText, {}}},
      {"priority", {"s.priority", ColumnSpec::Kind::kInt, {}}},
      {"created_at", {"s.created_at", ColumnSpec::Kind::kTime, {}}},
      {"status", {"s.status", ColumnSpec::Kind::kEnum, {"PENDING", "RUNNING", "TERMINATED"}}},
      {"tag", {"s.tag", ColumnSpec::Kind::kText, {}}},
  };
  return kColumns;
}

std::string Params(SqlCondition const& c) {
  std::string out;
  for (auto const& p : c.params) {
    if (!out.empty()) out += "|";
    if (auto const* s = std::get_if<std::string>(&p))
      out += *s;
    else if (auto const* i = std::get_if<std::int64_t>(&p))
      out += std::to_string(*i);
    else
      out += "NULL";
  }
  return out;
}

TEST(MinilangTest, CompilesFiltersToBoundSql) {
  auto c = CompileFilter(R"(name ilike "%train%" & status in ["running", "pending"])", Columns());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->sql, "(LOWER(s.name) LIKE LOWER(?) AND s.status IN (?, ?))");
  EXPECT_EQ(Params(*c), "%train%|RUNNING|PENDING");

  // '&' and '|' group to the right, '!' takes the rest, as Backend.AI parses them.
  c = CompileFilter("priority >= 5 & priority < 10 | tag == null", Columns());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sql, "(s.priority >= ? AND (s.priority < ? OR s.tag IS NULL))");
  c = CompileFilter("!(name == \"a\") & tag isnot null", Columns());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sql, "NOT (((s.name = ?) AND s.tag IS NOT NULL))");

  // contains escapes LIKE's wildcards; strings keep quotes written \".
  c = CompileFilter(R"(name contains "50%_\"x\"")", Columns());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sql, "s.name LIKE ? ESCAPE '\\'");
  EXPECT_EQ(Params(*c), R"(%50\%\_"x"%)");

  // Times compare in the stored form, whatever offset the client wrote.
  c = CompileFilter(R"(created_at >= "2026-11-23T09:30:00+09:00")", Columns());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Params(*c), "2026-11-23T00:30:00.000000+00:00");
  c = CompileFilter(R"(created_at < "2026-11-23")", Columns());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Params(*c), "2026-11-23T00:00:00.000000+00:00");
}

TEST(MinilangTest, InjectionAttemptsStayValues) {
  auto c = CompileFilter(R"(name == "x' OR 1=1 --")", Columns());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sql, "s.name = ?");
  EXPECT_EQ(Params(*c), "x' OR 1=1 --");
  // A column name that is not in the map is refused, whatever it looks like.
  auto bad = CompileFilter("sqlite_master == 1", Columns());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("Unknown or unsupported field name \"sqlite_master\""));
  EXPECT_FALSE(CompileOrder("name; DROP TABLE sessions", Columns()).ok());
}

TEST(MinilangTest, RefusesMalformedExpressionsWithPositions) {
  EXPECT_THAT(CompileFilter("name ==", Columns()).status().message(),
              HasSubstr("at position 8: expected a value"));
  EXPECT_THAT(CompileFilter("name = \"a\"", Columns()).status().message(),
              HasSubstr("expected an operator"));
  EXPECT_THAT(CompileFilter("(name == \"a\"", Columns()).status().message(),
              HasSubstr("expected ')'"));
  EXPECT_THAT(CompileFilter("name == \"a", Columns()).status().message(),
              HasSubstr("closing '\"'"));
  EXPECT_THAT(CompileFilter("priority == \"high\"", Columns()).status().message(),
              HasSubstr("\"priority\" compares with an integer"));
  EXPECT_THAT(CompileFilter("status == \"sleeping\"", Columns()).status().message(),
              HasSubstr("one of PENDING, RUNNING, TERMINATED"));
  EXPECT_THAT(CompileFilter("created_at > \"yesterday\"", Columns()).status().message(),
              HasSubstr("a time string"));
  EXPECT_THAT(CompileFilter("name in \"a\"", Columns()).status().message(),
              HasSubstr("\"in\" takes a [list]"));
  EXPECT_THAT(CompileFilter("priority like \"1%\"", Columns()).status().message(),
              HasSubstr("applies to text fields"));
  EXPECT_THAT(
      CompileFilter(std::string(40, '(') + "name == \"a\"" + std::string(40, ')'), Columns())
          .status()
          .message(),
      HasSubstr("nested deeper than 32"));
  EXPECT_EQ(CompileFilter(std::string(5000, ' '), Columns()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(MinilangTest, CompilesOrders) {
  auto o = CompileOrder("-created_at, +name,priority", Columns());
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(*o, "s.created_at DESC, s.name ASC, s.priority ASC");
  EXPECT_EQ(*CompileOrder("", Columns()), "");
  EXPECT_THAT(CompileOrder("-nope", Columns()).status().message(),
              HasSubstr("unknown or unsupported field name \"nope\""));
  EXPECT_THAT(CompileOrder("name name", Columns()).status().message(), HasSubstr("expected ','"));
}

}  // namespace
}  // namespace bai::graphql
