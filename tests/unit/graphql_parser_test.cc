// SPDX-License-Identifier: Apache-2.0
// The GraphQL document parser: what the official clients send, every value form, and every
// limit and syntax error answered with a message and a location.
#include "libbai/protocol/graphql_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace bai::graphql {
namespace {

using ::testing::HasSubstr;

TEST(GraphqlParserTest, ReadsAnOfficialClientsSessionListQuery) {
  auto r = Parse(R"(
    query($limit: Int!, $offset: Int!, $status: String, $ak: String) {
      compute_session_list(limit: $limit, offset: $offset, status: $status, access_key: $ak) {
        items { id name status created_at ...Slots }
        total_count
      }
    }
    fragment Slots on ComputeSession { occupying_slots requested_slots }
  )");
  ASSERT_TRUE(r.ok()) << r.error->message;
  ASSERT_EQ(r.document.operations.size(), 1u);
  auto const& op = r.document.operations[0];
  EXPECT_EQ(op.kind, "query");
  EXPECT_EQ(op.name, "");
  ASSERT_EQ(op.variables.size(), 4u);
  EXPECT_EQ(op.variables[0].name, "limit");
  EXPECT_EQ(op.variables[0].type, "Int!");
  ASSERT_EQ(op.selections.size(), 1u);
  auto const& list = op.selections[0];
  EXPECT_EQ(list.name, "compute_session_list");
  ASSERT_EQ(list.arguments.size(), 4u);
  EXPECT_EQ(list.arguments[0].value.kind, Value::Kind::kVariable);
  EXPECT_EQ(list.arguments[0].value.text, "limit");
  ASSERT_EQ(list.selections.size(), 2u);
  auto const& items = list.selections[0].selections;
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[4].kind, Selection::Kind::kFragmentSpread);
  EXPECT_EQ(items[4].name, "Slots");
  ASSERT_EQ(r.document.fragments.size(), 1u);
  EXPECT_EQ(r.document.fragments[0].type_condition, "ComputeSession");
  EXPECT_EQ(r.document.fragments[0].selections.size(), 2u);
  EXPECT_EQ(list.location.line, 3);
  EXPECT_EQ(list.location.column, 7);
}

TEST(GraphqlParserTest, EveryValueFormAliasesDirectivesAndInlineFragments) {
  auto r = Parse(R"(mutation Make($p: [ID!]! = ["a"]) @frozen {
    made: create_user(email: "a\"b\u00e9\ud83d\ude00", props: {n: -1, f: 1.5e3, ok: true,
                      none: null, role: ADMIN, list: [1, [2]], who: $p}) @include(if: true) {
      ok
      ... on Payload { msg }
      ... @skip(if: false) { user { id } }
    }
  })");
  ASSERT_TRUE(r.ok()) << r.error->message;
  auto const& op = r.document.operations[0];
  EXPECT_EQ(op.kind, "mutation");
  EXPECT_EQ(op.name, "Make");
  EXPECT_EQ(op.variables[0].type, "[ID!]!");
  ASSERT_TRUE(op.variables[0].default_value);
  EXPECT_EQ(op.variables[0].default_value->kind, Value::Kind::kList);
  EXPECT_EQ(op.directives.size(), 1u);
  auto const& f = op.selections[0];
  EXPECT_EQ(f.alias, "made");
  EXPECT_EQ(f.name, "create_user");
  EXPECT_EQ(f.ResponseKey(), "made");
  EXPECT_EQ(f.arguments[0].value.text, "a\"b\xC3\xA9\xF0\x9F\x98\x80");
  auto const& props = f.arguments[1].value;
  ASSERT_EQ(props.kind, Value::Kind::kObject);
  ASSERT_EQ(props.names.size(), 7u);
  EXPECT_EQ(props.items[0].kind, Value::Kind::kInt);
  EXPECT_EQ(props.items[0].text, "-1");
  EXPECT_EQ(props.items[1].kind, Value::Kind::kFloat);
  EXPECT_TRUE(props.items[2].boolean);
  EXPECT_EQ(props.items[3].kind, Value::Kind::kNull);
  EXPECT_EQ(props.items[4].kind, Value::Kind::kEnum);
  EXPECT_EQ(props.items[5].items[1].items[0].text, "2");
  EXPECT_EQ(props.items[6].kind, Value::Kind::kVariable);
  EXPECT_EQ(f.directives[0].name, "include");
  EXPECT_EQ(f.selections[1].kind, Selection::Kind::kInlineFragment);
  EXPECT_EQ(f.selections[1].type_condition, "Payload");
  EXPECT_EQ(f.selections[2].type_condition, "");
  EXPECT_EQ(f.selections[2].directives[0].name, "skip");
}

TEST(GraphqlParserTest, BlockStringsCommasCommentsAndLineEndings) {
  auto r = Parse(
      "# a comment\r\n{ a(s: \"\"\"\n    first\n      second\n    \\\"\"\"\n  \"\"\"),,, "
      "b }\r{ c }");
  ASSERT_TRUE(r.ok()) << r.error->message;
  ASSERT_EQ(r.document.operations.size(), 2u);
  EXPECT_EQ(r.document.operations[0].selections[0].arguments[0].value.text,
            "first\n  second\n\"\"\"");
  EXPECT_EQ(r.document.operations[1].location.line, 7) << "\r\n and a lone \r end lines too";
}

TEST(GraphqlParserTest, SyntaxErrorsSayWhatAndWhere) {
  struct Case {
    char const* source;
    char const* message;
    int line;
    int column;
  };
  Case cases[] = {
      {"", "Unexpected <EOF>", 1, 1},
      {"{ a", "Expected Name, found <EOF>", 1, 4},
      {"{ a(b: ) }", "Unexpected ')'", 1, 8},
      {"{\n  a(b: \"open\n) }", "Unterminated string", 2, 13},
      {"{ a(b: 01) }", "unexpected digit after 0", 1, 8},
      {"{ a(b: 1.) }", "Invalid number", 1, 10},
      {"{ a(b: \"\\q\") }", "Invalid character escape", 1, 11},
      {"{ a(b: \"\\udc00\") }", "Invalid Unicode escape", 1, 15},
      {"{ a(b: 1x) }", "Invalid number", 1, 9},
      {"{ a ~ }", "Unexpected character '~'", 1, 5},
      {"{ a .. }", "did you mean '...'", 1, 5},
      {"query q($v: Int = $w) { a }", "variable in a constant", 1, 19},
      {"fragment on on T { a }", "Unexpected Name 'on'", 1, 10},
      {"fragment F T { a }", "Expected 'on'", 1, 12},
      {"type Query { a: Int }", "Type system definitions are not accepted", 1, 1},
      {"{ }", "Expected Name, found '}'", 1, 3},
  };
  for (auto const& c : cases) {
    auto r = Parse(c.source);
    ASSERT_FALSE(r.ok()) << c.source;
    EXPECT_THAT(r.error->message, HasSubstr(c.message)) << c.source;
    ASSERT_EQ(r.error->locations.size(), 1u) << c.source;
    EXPECT_EQ(r.error->locations[0].line, c.line) << c.source << ": " << r.error->message;
    EXPECT_EQ(r.error->locations[0].column, c.column) << c.source << ": " << r.error->message;
  }
}

TEST(GraphqlParserTest, EveryLimitHolds) {
  Limits small;
  small.max_bytes = 100;
  EXPECT_THAT(Parse(std::string(101, ' '), small).error->message, HasSubstr("larger than 100"));

  // Deep selection sets, lists and types stop at the depth limit (no stack exhaustion even for
  // a very deep document).
  std::string deep = "{";
  for (int i = 0; i < 50000; ++i) deep += "a{";
  deep += "b" + std::string(50001, '}');
  Limits big;
  big.max_bytes = 1 << 20;
  EXPECT_THAT(Parse(deep, big).error->message, HasSubstr("nested deeper than 16"));
  EXPECT_THAT(Parse("{ a(b: " + std::string(50000, '[') + ") }", big).error->message,
              HasSubstr("nested deeper"));
  EXPECT_THAT(Parse("query($v: " + std::string(50000, '[') + "Int) { a }", big).error->message,
              HasSubstr("nested deeper"));
  std::string nested = "{";
  for (int i = 0; i < 16; ++i) nested += "a{";
  nested += "b" + std::string(17, '}');
  EXPECT_THAT(Parse(nested).error->message, HasSubstr("nested deeper"));
  nested = "{";
  for (int i = 0; i < 15; ++i) nested += "a{";
  nested += "b" + std::string(16, '}');
  EXPECT_TRUE(Parse(nested).ok()) << "16 levels are allowed";

  std::string wide = "{";
  for (int i = 0; i < 1001; ++i) wide += " f" + std::to_string(i);
  wide += "}";
  EXPECT_THAT(Parse(wide, big).error->message, HasSubstr("more than 1000 fields"));
  std::string aliased = "{";
  for (int i = 0; i < 65; ++i) aliased += " a" + std::to_string(i) + ": f";
  aliased += "}";
  EXPECT_THAT(Parse(aliased).error->message, HasSubstr("more than 64 aliases"));
  Limits few_tokens;
  few_tokens.max_tokens = 10;
  EXPECT_THAT(Parse("{ a b c d e f g h i j k }", few_tokens).error->message,
              HasSubstr("more than 10 tokens"));
}

}  // namespace
}  // namespace bai::graphql
