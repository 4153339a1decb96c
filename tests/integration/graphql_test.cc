// SPDX-License-Identifier: Apache-2.0
// POST /admin/gql and /admin/graphql against an in-process bai-manager: the session queries
// the official clients send, role scoping (superadmin, admin of a domain, users), the filter and
// order mini-language over real rows, limits and errors answered as GraphQL errors (never 5xx),
// and the legacy endpoint's shapes.
#include "bai/client.h"
#include "bai/protocol/graphql_wire.h"

#include "server-reference/manager/manager.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::TempDir;

class GraphqlTest : public testing_util::ManagerFixture {
 protected:
  void SetUp() override {
    ManagerFixture::SetUp();
    root_key_ = access_key_;
    auto alice = AddUser("default", "alice", "user", "Alice A");
    alice_key_ = alice.first;
    alice_ = ClientFor(alice.first, alice.second);
    bob_ = SignUp("default", "bob", "user", "Bob B");
    // An admin of another domain.
    AddDomain("other");
    carol_ = SignUp("other", "carol", "admin", "Carol C");
  }

  // A session for `who`, queued (no agent), with a name and a tag.
  std::string Create(Client& who, std::string const& name, std::string const& tag = "t") {
    json body = {{"name", name},
                 {"image", "python"},
                 {"enqueueOnly", true},
                 {"tag", tag},
                 {"type", "batch"},
                 {"startupCommand", "true"},
                 {"config", {{"resources", {{"cpu", 1}, {"mem", "1g"}}}}}};
    auto r = Post(who, "/session", body);
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body, nullptr, false).value("sessionId", "");
  }

  ApiResponse Post(Client& who, std::string const& path, json const& body) {
    ApiRequest request("POST", path);
    request.body = body.dump();
    auto r = who.Send(request);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : ApiResponse{};
  }

  // The response of /admin/gql (always 200).
  json Gql(Client& who, std::string const& query, json variables = nullptr) {
    json body = {{"query", query}};
    if (!variables.is_null()) body["variables"] = variables;
    auto r = Post(who, "/admin/gql", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }

  static std::vector<std::string> Names(json const& items) {
    std::vector<std::string> out;
    for (auto const& i : items) out.push_back(i["name"]);
    return out;
  }

  std::unique_ptr<Client> alice_, bob_, carol_;
  std::string alice_key_, root_key_;
};

constexpr char kList[] = R"(
  query($limit: Int!, $offset: Int!, $filter: String, $order: String, $status: String,
        $ak: String) {
    compute_session_list(limit: $limit, offset: $offset, filter: $filter, order: $order,
                         status: $status, access_key: $ak) {
      items { id name status access_key user_email group_name type result requested_slots
              containers { id status cluster_role } }
      total_count
    }
  })";

TEST_F(GraphqlTest, ASessionsAppsAreItsServicePorts) {
  json body = {{"name", "web-apps"},
               {"image", "python"},
               {"enqueueOnly", true},
               {"type", "interactive"},
               {"config", {{"resources", {{"cpu", 1}, {"mem", "1g"}}}, {"preopen_ports", {8080}}}}};
  auto r = Post(*alice_, "/session", body);
  ASSERT_EQ(r.status, 201) << r.body;
  std::string id = json::parse(r.body, nullptr, false).value("sessionId", "");
  auto g = Gql(*alice_,
               "query($id: UUID!) { compute_session(id: $id) { service_ports "
               "containers { preopen_ports } } }",
               {{"id", id}});
  auto const& s = g["data"]["compute_session"];
  ASSERT_TRUE(s.is_object()) << g.dump();
  // JSONString: the app list as text, as 24.09 sends it.
  auto ports = json::parse(s["service_ports"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(ports.is_array()) << s.dump();
  ASSERT_EQ(ports.size(), 1u) << ports.dump();
  EXPECT_EQ(ports[0]["name"], "8080");
  EXPECT_EQ(ports[0]["protocol"], "preopen");
  EXPECT_EQ(s["containers"][0]["preopen_ports"], json::array({8080})) << s.dump();
}

constexpr char kCreateDomain[] = R"(
  mutation($name: String!, $input: DomainInput!) {
    create_domain(name: $name, props: $input) {
      ok msg domain { name description is_active total_resource_slots allowed_docker_registries
                      scaling_groups created_at }
    }
  })";

// Domains through GraphQL as 24.09: superadmins create, change, deactivate and purge them;
// admins and users get {ok: false, msg: "no permission to execute …"}; nobody but a
// superadmin reads another domain.
TEST_F(GraphqlTest, DomainsAreTheSuperadminsAndMutationsAnswerOkAndMsg) {
  json input = {{"description", "Lab"},
                {"total_resource_slots", R"({"cpu": "8", "mem": "16g"})"},
                {"allowed_docker_registries", {"cr.example.com"}}};
  auto made = Gql(*root_, kCreateDomain, {{"name", "lab"}, {"input", input}});
  auto const& c = made["data"]["create_domain"];
  ASSERT_EQ(c["ok"], true) << made.dump();
  EXPECT_EQ(c["msg"], "success");
  EXPECT_EQ(c["domain"]["name"], "lab");
  EXPECT_EQ(c["domain"]["description"], "Lab");
  EXPECT_EQ(c["domain"]["is_active"], true);
  EXPECT_EQ(json::parse(c["domain"]["total_resource_slots"].get<std::string>()),
            json({{"cpu", "8"}, {"mem", "17179869184"}}));  // exact, in bytes, as 24.09
  EXPECT_EQ(c["domain"]["allowed_docker_registries"], json::array({"cr.example.com"}));
  // Again: an integrity error, not a 5xx.
  auto again = Gql(*root_, kCreateDomain, {{"name", "lab"}, {"input", json::object()}});
  EXPECT_EQ(again["data"]["create_domain"]["ok"], false);
  EXPECT_THAT(again["data"]["create_domain"]["msg"].get<std::string>(),
              HasSubstr("integrity error"));
  auto bad =
      Gql(*root_, kCreateDomain, {{"name", "lab2"}, {"input", {{"total_resource_slots", "[1]"}}}});
  EXPECT_EQ(bad["data"]["create_domain"]["ok"], false);
  EXPECT_THAT(bad["data"]["create_domain"]["msg"].get<std::string>(),
              HasSubstr("total_resource_slots"));

  // Every mutation, by every role below superadmin: refused with 24.09's message, nothing done.
  for (auto* who : {alice_.get(), carol_.get()}) {
    for (auto const& [mutation, text] : std::vector<std::pair<std::string, std::string>>{
             {"create_domain", R"(create_domain(name: "x", props: {}) { ok msg })"},
             {"modify_domain",
              R"(modify_domain(name: "lab", props: {description: "mine"}) { ok msg })"},
             {"delete_domain", R"(delete_domain(name: "lab") { ok msg })"},
             {"purge_domain", R"(purge_domain(name: "lab") { ok msg })"}}) {
      auto r = Gql(*who, "mutation { " + text + " }");
      EXPECT_EQ(r["data"][mutation],
                json({{"ok", false}, {"msg", "no permission to execute " + mutation}}))
          << r.dump();
    }
  }
  EXPECT_EQ(Gql(*root_, R"({ domain(name: "lab") { description is_active } })")["data"]["domain"],
            json({{"description", "Lab"}, {"is_active", true}}));

  // Reading: one's own domain; another's is not found; the list is the superadmin's.
  EXPECT_EQ(Gql(*alice_, "{ domain { name } }")["data"]["domain"]["name"], "default");
  auto other = Gql(*carol_, R"({ domain(name: "default") { name } })");
  EXPECT_TRUE(other["data"]["domain"].is_null());
  EXPECT_THAT(other["errors"][0]["message"].get<std::string>(), HasSubstr("No such domain"));
  auto listed = Gql(*root_, "{ domains { name scaling_groups } }");
  EXPECT_THAT(Names(listed["data"]["domains"]), ::testing::ElementsAre("default", "lab", "other"));
  EXPECT_EQ(listed["data"]["domains"][0]["scaling_groups"], json::array({"default"}));
  EXPECT_FALSE(Gql(*alice_, "{ domains { name } }")["errors"].empty());

  // A rename carries what the domain holds (its users and projects point at the name).
  auto moved = Gql(*root_, R"(mutation { modify_domain(name: "other", props: {name: "other-2"}) {
                                  ok msg } })");
  EXPECT_EQ(moved["data"]["modify_domain"]["ok"], true) << moved.dump();
  auto carol_domain = manager_->store().db().Query(
      "SELECT domain_name FROM users WHERE email = 'carol@example.com'");
  ASSERT_TRUE(carol_domain.ok() && carol_domain->size() == 1u);
  EXPECT_EQ(carol_domain->front().Text(0), "other-2");
  EXPECT_EQ(Gql(*root_, R"(mutation { modify_domain(name: "other-2", props: {name: "default"}) {
                              ok msg } })")["data"]["modify_domain"]["ok"],
            false);  // taken
  ASSERT_EQ(Gql(*root_, R"(mutation { modify_domain(name: "other-2", props: {name: "other"}) {
                              ok msg } })")["data"]["modify_domain"]["ok"],
            true);
  // Modify (a rename carries what it holds), soft delete, purge.
  auto renamed = Gql(*root_, R"(mutation { modify_domain(name: "lab", props: {name: "lab-2",
                                 description: null}) { ok msg domain { name description } } })");
  EXPECT_EQ(renamed["data"]["modify_domain"],
            json({{"ok", true},
                  {"msg", "success"},
                  {"domain", {{"name", "lab-2"}, {"description", "Lab"}}}}))
      << renamed.dump();
  EXPECT_EQ(Gql(*root_, R"(mutation { modify_domain(name: "nope", props: {}) { ok msg } })")
                ["data"]["modify_domain"]["msg"],
            "no matching modifydomain");
  EXPECT_EQ(Gql(*root_,
                R"(mutation { delete_domain(name: "lab-2") { ok msg } })")["data"]["delete_domain"],
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Gql(*root_, R"({ domains(is_active: false) { name } })")["data"]["domains"],
            json::array({{{"name", "lab-2"}}}));
  // A domain with users is not purged; an empty one is.
  EXPECT_EQ(
      Gql(*root_, R"(mutation { purge_domain(name: "other") { ok msg } })")["data"]["purge_domain"],
      json({{"ok", false}, {"msg", "There are users bound to the domain. Remove users first."}}));
  EXPECT_EQ(
      Gql(*root_, R"(mutation { purge_domain(name: "lab-2") { ok msg } })")["data"]["purge_domain"],
      json({{"ok", true}, {"msg", "success"}}));
  EXPECT_TRUE(Gql(*root_, R"({ domain(name: "lab-2") { name } })")["data"]["domain"].is_null());
}

// Projects: superadmins anywhere, admins in their own domain (another domain's admin gets
// "no permission"), users neither; membership by user_update_mode; reading scoped by role.
TEST_F(GraphqlTest, ProjectsAreManagedWithinTheAdminsDomain) {
  constexpr char kCreate[] = R"(mutation($name: String!, $input: GroupInput!) {
      create_group(name: $name, props: $input) { ok msg group { id name domain_name type
                                                                total_resource_slots } } })";
  auto made = Gql(
      *root_, kCreate,
      {{"name", "vision"}, {"input", {{"domain_name", "default"}, {"description", "CV team"}}}});
  auto const& c = made["data"]["create_group"];
  ASSERT_EQ(c["ok"], true) << made.dump();
  std::string gid = c["group"]["id"];
  EXPECT_EQ(c["group"]["domain_name"], "default");
  EXPECT_EQ(c["group"]["type"], "GENERAL");
  EXPECT_EQ(Gql(*root_, kCreate,
                {{"name", "vision"},
                 {"input", {{"domain_name", "default"}}}})["data"]["create_group"]["ok"],
            false);
  // Carol, admin of "other": not in "default", but in her own domain.
  EXPECT_EQ(
      Gql(*carol_, kCreate,
          {{"name", "x"}, {"input", {{"domain_name", "default"}}}})["data"]["create_group"]["msg"],
      "no permission to execute create_group");
  auto hers = Gql(*carol_, kCreate, {{"name", "carols"}, {"input", {{"domain_name", "other"}}}});
  ASSERT_EQ(hers["data"]["create_group"]["ok"], true) << hers.dump();
  std::string carols = hers["data"]["create_group"]["group"]["id"];
  for (auto const& text :
       {R"(modify_group(gid: "GID", props: {description: "x"}) { ok msg })",
        R"(delete_group(gid: "GID") { ok msg })", R"(purge_group(gid: "GID") { ok msg })"}) {
    std::string q = std::string("mutation { ") + text + " }";
    q.replace(q.find("GID"), 3, gid);
    auto r = Gql(*carol_, q);
    EXPECT_THAT(r["data"].begin()->at("msg").get<std::string>(),
                HasSubstr("no permission to execute"))
        << r.dump();
    auto a = Gql(*alice_, q);
    EXPECT_THAT(a["data"].begin()->at("msg").get<std::string>(),
                HasSubstr("no permission to execute"))
        << a.dump();
  }
  // Membership: alice joins, sees it; bob does not.
  auto alice_id =
      manager_->store().db().Query("SELECT uuid FROM users WHERE email = 'alice@example.com'");
  ASSERT_TRUE(alice_id.ok());
  auto joined =
      Gql(*root_,
          "mutation($gid: UUID!, $input: ModifyGroupInput!) { modify_group(gid: $gid, "
          "props: $input) { ok msg } }",
          {{"gid", gid},
           {"input", {{"user_update_mode", "add"}, {"user_uuids", {alice_id->front().Text(0)}}}}});
  EXPECT_EQ(joined["data"]["modify_group"], json({{"ok", true}, {"msg", "success"}}))
      << joined.dump();
  std::string query = R"(query($gid: UUID!) { group(id: $gid) { name description } })";
  EXPECT_EQ(Gql(*alice_, query, {{"gid", gid}})["data"]["group"],
            json({{"name", "vision"}, {"description", "CV team"}}));
  EXPECT_TRUE(Gql(*bob_, query, {{"gid", gid}})["data"]["group"].is_null());
  EXPECT_TRUE(Gql(*carol_, query, {{"gid", gid}})["data"]["group"].is_null());
  EXPECT_THAT(Names(Gql(*carol_, "{ groups { name } }")["data"]["groups"]),
              ::testing::ElementsAre("carols"));
  auto all = Names(Gql(*root_, "{ groups { name } }")["data"]["groups"]);
  EXPECT_THAT(all, ::testing::IsSupersetOf({"carols", "vision", "default"}));
  EXPECT_EQ(Gql(*root_, R"({ groups_by_name(name: "vision") { id } })")["data"]["groups_by_name"],
            json::array({{{"id", gid}}}));
  // Nothing to change, an unknown mode, an unknown project: 24.09's answers.
  EXPECT_EQ(Gql(*root_, "mutation { modify_group(gid: \"" + gid +
                            "\", props: {}) { ok msg } }")["data"]["modify_group"]["msg"],
            "nothing to update");
  EXPECT_THAT(Gql(*root_, "mutation { modify_group(gid: \"" + gid +
                              "\", props: {user_update_mode: \"swap\", user_uuids: [\"x\"]}) { "
                              "ok msg } }")["data"]["modify_group"]["msg"]
                  .get<std::string>(),
              HasSubstr("invalid user_update_mode"));
  EXPECT_EQ(Gql(*root_, R"(mutation { purge_group(gid: "00000000-0000-4000-8000-000000000000") {
                              ok msg } })")["data"]["purge_group"]["msg"],
            "no matching purgegroup");
  // Carol manages her own; delete is soft, purge removes.
  EXPECT_EQ(Gql(*carol_, "mutation { delete_group(gid: \"" + carols +
                             "\") { ok msg } }")["data"]["delete_group"],
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Gql(*carol_, R"({ groups(is_active: false) { name } })")["data"]["groups"],
            json::array({{{"name", "carols"}}}));
  EXPECT_EQ(Gql(*carol_, "mutation { purge_group(gid: \"" + carols +
                             "\") { ok msg } }")["data"]["purge_group"],
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_TRUE(Gql(*carol_, "{ groups { name } }")["data"]["groups"].empty());
}

TEST_F(GraphqlTest, OfficialListQueryScopedByRole) {
  std::string a1 = Create(*alice_, "a-train");
  Create(*alice_, "a-eval");
  Create(*bob_, "b-train");
  Create(*root_, "root-job");

  // Users see their own sessions only, newest first.
  auto r = Gql(*alice_, kList, {{"limit", 10}, {"offset", 0}});
  ASSERT_FALSE(r.contains("errors")) << r.dump();
  auto const& list = r["data"]["compute_session_list"];
  EXPECT_EQ(list["total_count"], 2);
  EXPECT_THAT(Names(list["items"]), ::testing::ElementsAre("a-eval", "a-train"));
  auto const& item = list["items"][1];
  EXPECT_EQ(item["id"], a1);
  EXPECT_EQ(item["status"], "PENDING");
  EXPECT_EQ(item["access_key"], alice_key_);
  EXPECT_EQ(item["user_email"], "alice@example.com");
  EXPECT_EQ(item["group_name"], "default");
  EXPECT_EQ(item["type"], "BATCH");
  EXPECT_EQ(item["result"], "UNDEFINED");
  EXPECT_EQ(json::parse(item["requested_slots"].get<std::string>()),
            json({{"cpu", "1"}, {"mem", "1073741824"}}));
  ASSERT_EQ(item["containers"].size(), 1u);
  EXPECT_EQ(item["containers"][0]["cluster_role"], "main");

  // Naming another keypair is refused for users; the superadmin sees everyone.
  r = Gql(*bob_, kList, {{"limit", 10}, {"offset", 0}, {"ak", alice_key_}});
  EXPECT_TRUE(r["data"]["compute_session_list"].is_null());
  EXPECT_EQ(r["errors"][0]["message"], "Users may list only their own sessions.");
  r = Gql(*root_, kList, {{"limit", 10}, {"offset", 0}});
  EXPECT_EQ(r["data"]["compute_session_list"]["total_count"], 4);
  r = Gql(*root_, kList, {{"limit", 10}, {"offset", 0}, {"ak", alice_key_}});
  EXPECT_EQ(r["data"]["compute_session_list"]["total_count"], 2);

  // An admin of another domain sees none of these; naming this domain is refused.
  r = Gql(*carol_, kList, {{"limit", 10}, {"offset", 0}});
  EXPECT_EQ(r["data"]["compute_session_list"]["total_count"], 0);
  r = Gql(*carol_,
          "{ compute_session_list(limit: 5, offset: 0, domain_name: \"default\") { "
          "total_count } }");
  EXPECT_EQ(r["errors"][0]["message"], "Admins may list only the sessions of their own domain.");

  // compute_session by id: another user's session reads as null.
  r = Gql(*bob_, "query($id: UUID!) { compute_session(id: $id) { name } }", {{"id", a1}});
  EXPECT_TRUE(r["data"]["compute_session"].is_null());
  EXPECT_FALSE(r.contains("errors"));
  r = Gql(*alice_, "query($id: UUID!) { compute_session(id: $id) { name tag } }", {{"id", a1}});
  EXPECT_EQ(r["data"]["compute_session"], json({{"name", "a-train"}, {"tag", "t"}}));
}

TEST_F(GraphqlTest, FilterOrderStatusAndPagination) {
  for (int i = 0; i < 7; ++i) Create(*alice_, "job-" + std::to_string(i), i % 2 ? "odd" : "even");
  Create(*alice_, "other");
  auto page = [&](json vars) {
    vars["limit"] = vars.value("limit", 100);
    vars["offset"] = vars.value("offset", 0);
    auto r = Gql(*alice_, kList, vars);
    EXPECT_FALSE(r.contains("errors")) << r.dump();
    return r["data"]["compute_session_list"];
  };
  auto p = page({{"filter", "name like \"job-%\" & tag == \"odd\""}, {"order", "+name"}});
  EXPECT_THAT(Names(p["items"]), ::testing::ElementsAre("job-1", "job-3", "job-5"));
  p = page({{"filter", "name ilike \"JOB-%\""}, {"order", "-name"}, {"limit", 2}, {"offset", 2}});
  EXPECT_THAT(Names(p["items"]), ::testing::ElementsAre("job-4", "job-3"));
  EXPECT_EQ(p["total_count"], 7);
  p = page({{"filter", "name like \"JOB-%\""}});  // like is case-sensitive
  EXPECT_EQ(p["total_count"], 0);
  p = page({{"status", "pending, RUNNING"}});
  EXPECT_EQ(p["total_count"], 8);
  p = page({{"status", "RUNNING"}});
  EXPECT_EQ(p["total_count"], 0);
  // Conformance: the official client's `ps` asks for every status it knows, kernel statuses
  // (RESIZING, SUSPENDED, BUILDING) and newer managers' (PREPARED, CREATING) among them; they are
  // accepted and match no session (ours are never in them).
  p = page({{"status",
             "PENDING,SCHEDULED,PREPARING,PULLING,RUNNING,RESTARTING,TERMINATING,"
             "RESIZING,SUSPENDED,ERROR,BUILDING,PREPARED,CREATING"}});
  EXPECT_EQ(p["total_count"], 8);
  p = page({{"status", "RESIZING,SUSPENDED"}});
  EXPECT_EQ(p["total_count"], 0);
  p = page({{"filter", "name == \"x' OR '1'='1\""}});
  EXPECT_EQ(p["total_count"], 0);

  auto r = Gql(*alice_, kList, {{"limit", 10}, {"offset", 0}, {"filter", "nope == 1"}});
  EXPECT_THAT(r["errors"][0]["message"].get<std::string>(),
              HasSubstr("Unknown or unsupported field name \"nope\""));
  EXPECT_EQ(r["errors"][0]["path"], json::array({"compute_session_list"}));
  r = Gql(*alice_, kList, {{"limit", 10}, {"offset", 0}, {"status", "SLEEPING"}});
  EXPECT_EQ(r["errors"][0]["message"], "Unknown session status \"SLEEPING\" in status.");
  r = Gql(*alice_, kList, {{"limit", 100000}, {"offset", 0}});
  EXPECT_EQ(r["errors"][0]["message"], "limit must be between 0 and 1000.");
}

// Hardening (hostile testing): variables nested 100,000 levels (a 600 KB body) crashed the
// manager, which skipped the JSON depth limit for GraphQL and recursed re-serialising them.
// Property of the class: deep JSON anywhere in a request body (object, array, inside the
// variables or the query's place) is refused with 400 on both endpoints, and the manager
// still answers afterwards.
TEST_F(GraphqlTest, DeeplyNestedJsonIsRefusedAndTheManagerLives) {
  auto nest = [](int depth, char open, char close, std::string inner) {
    return std::string(static_cast<std::size_t>(depth), open) + inner +
           std::string(static_cast<std::size_t>(depth), close);
  };
  std::string q = R"("query": "{ agents { id } }")";
  std::vector<std::string> bodies = {
      "{" + q + R"(, "variables": {"v": )" + nest(100000, '[', ']', "1") + "}}",
      "{" + q + R"(, "variables": {"a": )" + std::string(50000, ' ') + "[]}}",
      "{" + q + R"(, "variables": {"v": )" + nest(200000, '[', ']', "") + "}}",
      "{" + q + R"(, "x": )" + nest(65, '[', ']', "") + "}",
  };
  std::string deep_object;
  for (int i = 0; i < 100000; ++i) deep_object += R"({"a":)";
  deep_object += "1" + std::string(100000, '}');
  bodies.push_back("{" + q + R"(, "variables": {"v": )" + deep_object + "}}");
  for (std::string path : {"/admin/gql", "/admin/graphql"}) {
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      ApiRequest request("POST", path);
      request.body = bodies[i];
      auto r = root_->Send(request);
      ASSERT_TRUE(r.ok()) << path << " body " << i << ": " << r.status().message();
      if (i == 1) {
        EXPECT_EQ(r->status, 200) << "a shallow body with much whitespace is fine: " << r->body;
      } else {
        EXPECT_EQ(r->status, 400) << path << " body " << i << ": " << r->body;
        EXPECT_THAT(r->body, HasSubstr("nested deeper than"));
      }
    }
  }
  auto still = Gql(*root_, "{ agents { id } }");
  EXPECT_TRUE(still["errors"].is_null()) << still.dump();
}

// Hardening (hostile testing): a domain admin read the superadmin's secret key through
// keypair(access_key:) (the bootstrap superadmin lives in domain `default`) and created sessions
// for it with owner_access_key. Matrix: caller role × target role on every act-for path; an
// admin never reads or acts for a higher role, and secret keys are their owner's and
// superadmins' alone.
TEST_F(GraphqlTest, NoOneActsForAHigherRoleOrReadsAnotherSecret) {
  auto& db = manager_->store().db();
  auto dave = manager_->store().SignUp("default", "dave@example.com", "dave", "x", "Dave D");
  auto erin = manager_->store().SignUp("default", "erin@example.com", "erin", "x", "Erin E");
  ASSERT_TRUE(dave.ok() && erin.ok());
  ASSERT_TRUE(db.Exec("UPDATE users SET role = 'admin' WHERE email IN ('dave@example.com', "
                      "'erin@example.com')")
                  .ok());
  auto dave_client = ClientFor(dave->first, dave->second);
  struct Who {
    char const* name;
    Client* client;
    std::string key;
    int rank;
  };
  std::vector<Who> people = {{"superadmin", root_.get(), root_key_, 3},
                             {"admin", dave_client.get(), dave->first, 2},
                             {"user", alice_.get(), alice_key_, 1}};
  std::vector<Who> targets = people;
  targets.push_back({"another admin", nullptr, erin->first, 2});
  for (auto const& caller : people) {
    for (auto const& target : targets) {
      bool own = caller.key == target.key;
      bool may_act = own || (caller.rank >= 2 && target.rank <= caller.rank);
      bool may_read_secret = own || caller.rank == 3;
      std::string what = std::string(caller.name) + " → " + target.name;
      // GraphQL keypair(access_key:) and its secret.
      auto r = Gql(*caller.client, "query($ak: String) { keypair(access_key: $ak) { secret_key } }",
                   {{"ak", target.key}});
      if (may_act) {
        EXPECT_FALSE(r.contains("errors")) << what << r.dump();
        EXPECT_EQ(r["data"]["keypair"]["secret_key"].is_string(), may_read_secret) << what;
      } else {
        EXPECT_TRUE(r["data"]["keypair"].is_null()) << what;
        EXPECT_TRUE(r.contains("errors")) << what;
      }
      // GraphQL compute_session_list(access_key:).
      r = Gql(*caller.client,
              "query($ak: String) { compute_session_list(limit: 5, offset: 0, access_key: $ak) "
              "{ total_count } }",
              {{"ak", target.key}});
      EXPECT_EQ(r.contains("errors"), !may_act) << what << r.dump();
      // REST: create a session for the target, and look one up as the target.
      json body = {{"name", std::string("as-") + caller.name[0] + target.name[0]},
                   {"image", "python"},
                   {"enqueueOnly", true},
                   {"owner_access_key", target.key},
                   {"type", "batch"},
                   {"startupCommand", "true"},
                   {"config", {{"resources", {{"cpu", 1}, {"mem", "1g"}}}}}};
      auto created = Post(*caller.client, "/session", body);
      EXPECT_EQ(created.status == 201, may_act) << what << created.body;
      auto got =
          caller.client->Send(ApiRequest("GET", "/session/" + body["name"].get<std::string>() +
                                                    "?owner_access_key=" + target.key));
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(got->status == 200, may_act) << what << got->body;
    }
  }
}

// Hardening (hostile testing): one 4 KB query of 64 aliases over session lists with ~1 MB
// startupCommands answered 640 MB and took the manager to 1.7 GiB. Commands are bounded when
// stored (64 KiB), and each request's answer by a byte budget, refused as a GraphQL error.
TEST_F(GraphqlTest, AnswersAndStoredCommandsAreBounded) {
  json big = {{"name", "huge-cmd"},
              {"image", "python"},
              {"enqueueOnly", true},
              {"type", "batch"},
              {"startupCommand", std::string(200 * 1024, 'x')}};
  auto refused = Post(*alice_, "/session", big);
  EXPECT_EQ(refused.status, 400) << refused.body.substr(0, 300);
  EXPECT_THAT(refused.body, HasSubstr("startupCommand"));
  for (int i = 0; i < 12; ++i) {
    big["name"] = "wide-" + std::to_string(i);
    big["startupCommand"] = std::string(60 * 1024, 'y');
    EXPECT_EQ(Post(*alice_, "/session", big).status, 201);
  }
  std::string q = "{";
  for (int i = 0; i < 64; ++i) {
    q += " a" + std::to_string(i) +
         ": compute_session_list(limit: 100, offset: 0) { items { startup_command } }";
  }
  q += " }";
  auto r = Gql(*alice_, q);
  ASSERT_TRUE(r.contains("errors")) << "64 × 12 × 60 KiB is past the budget";
  EXPECT_THAT(r["errors"][0]["message"].get<std::string>(), HasSubstr("would be larger than"));
  EXPECT_LT(r.dump().size(), 40u << 20);
  // One alias of the same list is fine.
  auto one =
      Gql(*alice_, "{ compute_session_list(limit: 100, offset: 0) { items { startup_command } } }");
  EXPECT_FALSE(one.contains("errors")) << one.dump().substr(0, 300);
  EXPECT_EQ(one["data"]["compute_session_list"]["items"].size(), 12u);
}

TEST_F(GraphqlTest, ErrorsAreGraphqlErrorsNever5xx) {
  auto r = Gql(*alice_, "{ compute_session_list(limit: 1, offset: 0) { items { nmae } } }");
  EXPECT_TRUE(r["data"].is_null());
  EXPECT_EQ(r["errors"][0]["message"], "Cannot query field \"nmae\" on type \"ComputeSession\".");
  EXPECT_EQ(r["errors"][0]["locations"][0]["column"], 55);
  r = Gql(*alice_, "{ compute_session_list(limit: 1 offset: 0) { ");
  EXPECT_THAT(r["errors"][0]["message"].get<std::string>(), HasSubstr("Syntax Error"));
  r = Gql(*alice_, std::string(70000, ' ') + "{ agents { id } }");
  EXPECT_THAT(r["errors"][0]["message"].get<std::string>(), HasSubstr("larger than 65536 bytes"));
  std::string deep =
      "{ keypair { compute_sessions { dependencies { dependencies { dependencies { "
      "dependencies { dependencies { dependencies { dependencies { dependencies { "
      "dependencies { dependencies { dependencies { dependencies { dependencies { "
      "dependencies { id } } } } } } } } } } } } } } } } }";
  r = Gql(*alice_, deep);
  EXPECT_THAT(r["errors"][0]["message"].get<std::string>(), HasSubstr("nested deeper than 16"));
  std::string aliases = "{";
  for (int i = 0; i < 70; ++i) aliases += " a" + std::to_string(i) + ": agents { id }";
  r = Gql(*alice_, aliases + " }");
  EXPECT_THAT(r["errors"][0]["message"].get<std::string>(), HasSubstr("more than 64 aliases"));
  r = Gql(*alice_, "{ agents { id } }");
  EXPECT_EQ(r["errors"][0]["message"], "Only superadmins may query agents.");

  // A malformed request body is a 400 problem naming the field, as 24.09 answers.
  auto bad = Post(*alice_, "/admin/gql", {{"variables", {{"a", 1}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("query"));
  bad = Post(*alice_, "/admin/gql", {{"query", "{ agents { id } }"}, {"variables", "x"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("variables"));
}

TEST_F(GraphqlTest, LegacyEndpointAnswersDataOrA400) {
  Create(*alice_, "legacy");
  auto r = Post(*alice_, "/admin/graphql",
                {{"query", "{ compute_session_list(limit: 5, offset: 0) { total_count } }"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json({{"compute_session_list", {{"total_count", 1}}}}));
  r = Post(*alice_, "/admin/graphql", {{"query", "{ nope }"}});
  EXPECT_EQ(r.status, 400);
  auto problem = json::parse(r.body);
  EXPECT_EQ(problem["type"], "https://api.backend.ai/probs/graphql-error");
  ASSERT_TRUE(problem["data"].is_array());
  EXPECT_EQ(problem["data"][0]["message"], "Cannot query field \"nope\" on type \"Query\".");
}

TEST_F(GraphqlTest, KeypairImagesScalingGroupsAndAgents) {
  Create(*alice_, "mine");
  auto r = Gql(*alice_,
               "{ keypair { access_key user_id is_admin user_info { full_name } "
               "concurrency_used compute_sessions(status: \"PENDING\") { name } } "
               "scaling_groups { name is_active agent_count_by_status } }");
  ASSERT_FALSE(r.contains("errors")) << r.dump();
  auto const& kp = r["data"]["keypair"];
  EXPECT_EQ(kp["access_key"], alice_key_);
  EXPECT_EQ(kp["user_id"], "alice@example.com");
  EXPECT_EQ(kp["is_admin"], false);
  EXPECT_EQ(kp["user_info"]["full_name"], "Alice A");
  EXPECT_EQ(kp["concurrency_used"], 1);
  EXPECT_THAT(Names(kp["compute_sessions"]), ::testing::ElementsAre("mine"));
  EXPECT_EQ(r["data"]["scaling_groups"], json::parse(R"([{"name":"default","is_active":true,
                                                           "agent_count_by_status":0}])"));
  // Another user's keypair is not a user's to read.
  r = Gql(*bob_, "query($ak: String) { keypair(access_key: $ak) { secret_key } }",
          {{"ak", alice_key_}});
  EXPECT_TRUE(r["data"]["keypair"].is_null());
  EXPECT_EQ(r["errors"][0]["message"], "Only admins may act for another keypair.");

  // Images and agents come from the agents' registrations.
  auto& db = manager_->store().db();
  ASSERT_TRUE(db.Exec("INSERT INTO agents (id, scaling_group, status, available_slots, images, "
                      "first_contact, last_heartbeat) VALUES ('ag-1', 'default', 'ALIVE', "
                      "'{\"cpu\": \"4\"}', '[{\"name\": \"python\", \"aliases\": "
                      "[\"python:3.11\"], \"size\": 5000000000}]', '2026-01-01', '2026-01-01')")
                  .ok());
  // Another agent with the same image, as an older agent lists it (no size): still 5 GB.
  ASSERT_TRUE(db.Exec("INSERT INTO agents (id, scaling_group, status, available_slots, images, "
                      "first_contact, last_heartbeat) VALUES ('ag-2', 'default', 'ALIVE', "
                      "'{\"cpu\": \"4\"}', '[{\"name\": \"python\", \"aliases\": "
                      "[\"python:3.11\"]}]', '2026-01-01', '2026-01-01')")
                  .ok());
  r = Gql(*alice_,
          "{ images { name tag registry installed_agents size_bytes } image(reference: "
          "\"python:3.11\") { name size_bytes } }");
  ASSERT_FALSE(r.contains("errors")) << r.dump();
  EXPECT_EQ(r["data"]["images"], json::parse(R"([{"name":"python","tag":"3.11",
                                                  "registry":"local",
                                                  "installed_agents":["ag-1","ag-2"],
                                                  "size_bytes":5000000000}])"));
  EXPECT_EQ(r["data"]["image"]["size_bytes"], 5000000000);
  ASSERT_TRUE(db.Exec("DELETE FROM agents WHERE id = 'ag-2'").ok());
  EXPECT_EQ(r["data"]["image"]["name"], "python");
  r = Gql(*root_,
          "{ agent_list(limit: 10, offset: 0, status: \"alive\") { items { id "
          "available_slots scaling_group } total_count } }");
  ASSERT_FALSE(r.contains("errors")) << r.dump();
  EXPECT_EQ(r["data"]["agent_list"]["total_count"], 1);
  EXPECT_EQ(r["data"]["agent_list"]["items"][0]["available_slots"], "{\"cpu\":\"4\"}");

  // An agent's GPUs, held or idle (bai's `devices`: the console's map lists the idle ones too).
  ASSERT_TRUE(
      db.Exec(
            "UPDATE agents SET devices = ? WHERE id = 'ag-1'",
            {R"({"policy":"fill","devices":[{"kind":"cuda","index":1,"uuid":"GPU-b","name":"H200",)"
             R"("memory":1000,"shares":"1"},{"kind":"cuda","index":0,"uuid":"GPU-a",)"
             R"("name":"H200","memory":1000,"shares":"1"}]})"})
          .ok());
  r = Gql(*root_, "{ agents { id devices } }");
  ASSERT_FALSE(r.contains("errors")) << r.dump();
  auto devices = json::parse(r["data"]["agents"][0]["devices"].get<std::string>());
  EXPECT_EQ(devices["policy"], "fill");
  ASSERT_EQ(devices["devices"].size(), 2u) << devices.dump();
  EXPECT_EQ(devices["devices"][0]["uuid"], "GPU-b");
  EXPECT_EQ(devices["devices"][1]["index"], 0);
  EXPECT_EQ(devices["devices"][1]["shares"], "1");
}

}  // namespace
}  // namespace bai::manager
