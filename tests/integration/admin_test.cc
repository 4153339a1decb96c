// SPDX-License-Identifier: Apache-2.0
// Administration over /admin/gql against an in-process bai-manager: users (create with a main
// keypair, modify, soft delete, purge), keypairs, the three kinds of resource policies, each
// mutation's role check for every role (user, monitor, admin of this domain and of another,
// superadmin), and reads scoped as 24.09 scopes them.
#include "bai/client.h"

#include "server-reference/manager/agents/registry_scan.h"
#include "server-reference/manager/manager.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/schema.h"
#include "tests/testing_util/manager_fixture.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <chrono>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_util::TempDir;

// REGISTRY's REPOSITORY:TAG kept as a rescan keeps it (registry_scan.h's ScannedImage).
Status PutScanned(RegistryStore& store, std::string const& registry, std::string const& repository,
                  std::string const& tag) {
  ContainerRegistry r;
  r.registry_name = registry;
  return store.PutImage(ScannedImage(r, repository, tag, "sha256:0", {}, {}));
}

class AdminTest : public testing_util::ManagerFixture {
 protected:
  void SetUp() override {
    ManagerFixture::SetUp();
    AddDomain("other");
    alice_ = SignUp("default", "alice");
    dave_ = SignUp("default", "dave", "admin");
    mona_ = SignUp("default", "mona", "monitor");
    carol_ = SignUp("other", "carol", "admin");
  }

  // The response of /admin/gql (always 200).
  json Gql(Client& who, std::string const& query, json variables = nullptr) {
    json body = {{"query", query}};
    if (!variables.is_null()) body["variables"] = variables;
    ApiRequest request("POST", "/admin/gql");
    request.body = body.dump();
    auto r = who.Send(request);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  }

  // The payload of a one-field mutation.
  json Mutate(Client& who, std::string const& field_text) {
    auto r = Gql(who, "mutation { " + field_text + " }");
    if (!r.contains("data") || !r["data"].is_object() || r["data"].empty()) return r;
    return r["data"].begin().value();
  }

  std::string DefaultProject() {
    auto rows = manager_->store().db().Query(
        "SELECT id FROM groups WHERE domain_name = 'default' AND name = 'default'");
    return rows.ok() && !rows->empty() ? rows->front().Text(0) : "";
  }

  int Status(Client& who) {
    ApiRequest request("POST", "/admin/gql");
    request.body = json{{"query", "{ user { email } }"}}.dump();
    auto r = who.Send(request);
    return r.ok() ? r->status : -1;
  }

  std::unique_ptr<Client> alice_, dave_, mona_, carol_;
};

constexpr char kCreateUser[] = R"(
  mutation($email: String!, $input: UserInput!) {
    create_user(email: $email, props: $input) {
      ok msg user { uuid email username domain_name role status main_access_key
                    groups { id name } } } })";

constexpr char kKeypairs[] = R"(
  query($email: String) { keypairs(email: $email) { access_key secret_key is_active is_admin
                                                   resource_policy user_id } })";

TEST_F(AdminTest, CreateUserMakesItsMainKeypairAndTheUserCanSignIn) {
  std::string project = DefaultProject();
  auto made = Gql(*root_, kCreateUser,
                  {{"email", "erin@example.com"},
                   {"input",
                    {{"password", "erin-secret-1"},
                     {"username", "erin"},
                     {"domain_name", "default"},
                     {"group_ids", {project}},
                     {"need_password_change", false}}}});
  auto const& c = made["data"]["create_user"];
  ASSERT_EQ(c["ok"], true) << made.dump();
  EXPECT_EQ(c["user"]["email"], "erin@example.com");
  EXPECT_EQ(c["user"]["role"], "user");
  EXPECT_EQ(c["user"]["status"], "active");
  EXPECT_EQ(c["user"]["groups"], json::array({{{"id", project}, {"name", "default"}}}));
  std::string main_key = c["user"]["main_access_key"];

  auto keys = Gql(*root_, kKeypairs, {{"email", "erin@example.com"}})["data"]["keypairs"];
  ASSERT_EQ(keys.size(), 1u) << keys.dump();
  EXPECT_EQ(keys[0]["access_key"], main_key);
  EXPECT_EQ(keys[0]["is_active"], true);
  EXPECT_EQ(keys[0]["is_admin"], false);
  EXPECT_EQ(keys[0]["resource_policy"], "default");
  auto erin = ClientFor(main_key, keys[0]["secret_key"]);
  auto self = Gql(*erin, "{ user { email username groups { name } } }");
  EXPECT_EQ(self["data"]["user"], json({{"email", "erin@example.com"},
                                        {"username", "erin"},
                                        {"groups", {{{"name", "default"}}}}}))
      << self.dump();
  // The password logs in too, and answers the main keypair.
  ApiRequest login("POST", "/auth/authorize");
  login.body = json{{"type", "keypair"},
                    {"domain", "default"},
                    {"username", "erin"},
                    {"password", "erin-secret-1"}}
                   .dump();
  auto logged = root_->Send(login);
  ASSERT_TRUE(logged.ok());
  EXPECT_EQ(logged->status, 200) << logged->body;
  EXPECT_EQ(json::parse(logged->body, nullptr, false)["data"]["access_key"], main_key);

  // Taken email and username, unknown domain or policy, bad role: integrity errors, ok false.
  for (auto const& [email, input] : std::vector<std::pair<std::string, json>>{
           {"erin@example.com", {{"password", "x"}}},
           {"erin2@example.com", {{"password", "x"}, {"username", "erin"}}},
           {"erin3@example.com", {{"password", "x"}, {"domain_name", "nowhere"}}},
           {"erin4@example.com", {{"password", "x"}, {"resource_policy", "nowhere"}}},
       }) {
    auto r = Gql(*root_, kCreateUser, {{"email", email}, {"input", input}});
    EXPECT_EQ(r["data"]["create_user"]["ok"], false) << r.dump();
    EXPECT_THAT(r["data"]["create_user"]["msg"].get<std::string>(), HasSubstr("integrity error"));
  }
  auto bad_role =
      Gql(*root_, kCreateUser,
          {{"email", "erin5@example.com"}, {"input", {{"password", "x"}, {"role", "emperor"}}}});
  EXPECT_THAT(bad_role["data"]["create_user"]["msg"].get<std::string>(), HasSubstr("invalid role"));
}

TEST_F(AdminTest, ModifyDeleteAndPurgeUsers) {
  auto made = Gql(*root_, kCreateUser,
                  {{"email", "fay@example.com"}, {"input", {{"password", "fay-pass-1"}}}});
  ASSERT_EQ(made["data"]["create_user"]["ok"], true) << made.dump();
  std::string main_key = made["data"]["create_user"]["user"]["main_access_key"];
  EXPECT_EQ(made["data"]["create_user"]["user"]["username"], "fay@example.com");

  // Promoted: the keypair becomes an admin's; nothing to change and unknown users answer as
  // 24.09 does.
  auto promoted = Mutate(*root_, R"(modify_user(email: "fay@example.com", props: {role: "admin",
                                   full_name: "Fay F"}) { ok msg user { role full_name } })");
  EXPECT_EQ(promoted, json({{"ok", true},
                            {"msg", "success"},
                            {"user", {{"role", "admin"}, {"full_name", "Fay F"}}}}));
  auto keys = Gql(*root_, kKeypairs, {{"email", "fay@example.com"}})["data"]["keypairs"];
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0]["is_admin"], true);
  EXPECT_EQ(Mutate(*root_, R"(modify_user(email: "fay@example.com", props: {}) { ok msg })"),
            json({{"ok", false}, {"msg", "nothing to update"}}));
  EXPECT_EQ(Mutate(*root_, R"(modify_user(email: "nobody@x.org", props: {full_name: "N"}) {
                                ok msg })"),
            json({{"ok", false}, {"msg", "no matching modifyuser"}}));
  auto fay = ClientFor(main_key, keys[0]["secret_key"]);
  EXPECT_EQ(Status(*fay), 200);

  // Delete is soft: the user stays, "deleted", and can no longer sign requests.
  EXPECT_EQ(Mutate(*root_, R"(delete_user(email: "fay@example.com") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  auto after = Gql(*root_, R"({ user(email: "fay@example.com") { status status_info
                                                                   is_active } })");
  EXPECT_EQ(
      after["data"]["user"],
      json({{"status", "deleted"}, {"status_info", "admin-requested"}, {"is_active", false}}));
  EXPECT_EQ(
      Gql(*root_, kKeypairs, {{"email", "fay@example.com"}})["data"]["keypairs"][0]["is_active"],
      false);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // the keypair cache's TTL
  EXPECT_EQ(Status(*fay), 401);

  // Purge refuses while a session runs (or is queued), then removes the user and keys.
  auto& db = manager_->store().db();
  auto uuid = db.Query("SELECT uuid FROM users WHERE email = 'fay@example.com'");
  ASSERT_TRUE(uuid.ok() && !uuid->empty());
  ASSERT_TRUE(db.Exec("INSERT INTO sessions (id, seq, name, access_key, user_id, domain_name, "
                      "group_id, scaling_group, type, image, architecture, status, created_at) "
                      "VALUES ('s-fay', 990001, 'fay-job', ?, ?, 'default', 'g', 'default', "
                      "'batch', 'python', 'x86_64', 'PENDING', '2026-01-01')",
                      {main_key, uuid->front().Text(0)})
                  .ok());
  auto refused = Mutate(*root_, R"(purge_user(email: "fay@example.com", props: {}) { ok msg })");
  EXPECT_EQ(refused["ok"], false);
  EXPECT_THAT(refused["msg"].get<std::string>(), HasSubstr("active kernels"));
  ASSERT_TRUE(db.Exec("UPDATE sessions SET status = 'TERMINATED' WHERE id = 's-fay'").ok());
  EXPECT_EQ(Mutate(*root_, R"(purge_user(email: "fay@example.com", props: {}) { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_TRUE(
      Gql(*root_, R"({ user(email: "fay@example.com") { email } })")["data"]["user"].is_null());
  auto left = db.Query("SELECT COUNT(*) FROM keypairs WHERE access_key = ?", {main_key});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->front().Int(0), 0);
  EXPECT_EQ(Mutate(*root_, R"(purge_user(email: "fay@example.com", props: {}) { ok msg })"),
            json({{"ok", false}, {"msg", "no matching purgeuser"}}));
}

// Issue 43, 5b: a superadmin deactivated (or demoted, or deleted) their own account with one
// mutation and locked the install out; purge already refused "yourself".
TEST_F(AdminTest, AnAdministratorCannotLockThemselvesOut) {
  auto refused = [&](std::string const& mutation, std::string const& field) {
    auto r = Mutate(*root_, mutation);
    EXPECT_EQ(r["ok"], false) << field << ": " << r.dump();
    return r["msg"].is_string() ? r["msg"].get<std::string>() : std::string();
  };
  EXPECT_THAT(refused(R"(modify_user(email: "admin@bai.local", props: {is_active: false}) {
                           ok msg })",
                      "is_active"),
              HasSubstr("cannot deactivate yourself"));
  EXPECT_THAT(refused(R"(modify_user(email: "admin@bai.local", props: {status: "inactive"}) {
                           ok msg })",
                      "status"),
              HasSubstr("cannot deactivate yourself"));
  EXPECT_THAT(refused(R"(modify_user(email: "admin@bai.local", props: {role: "user"}) {
                           ok msg })",
                      "role"),
              HasSubstr("cannot change your own role"));
  EXPECT_THAT(refused(R"(delete_user(email: "admin@bai.local") { ok msg })", "delete"),
              HasSubstr("cannot delete yourself"));
  // What keeps the account as it is still goes through.
  EXPECT_EQ(Mutate(*root_, R"(modify_user(email: "admin@bai.local", props: {role: "superadmin",
                              is_active: true, full_name: "Root"}) { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Status(*root_), 200);
  auto me = Gql(*root_, R"({ user(email: "admin@bai.local") { role status } })");
  EXPECT_EQ(me["data"]["user"], json({{"role", "superadmin"}, {"status", "active"}}));
}

TEST_F(AdminTest, KeypairsAreCreatedDeactivatedAndDeleted) {
  auto made = Mutate(*root_, R"(create_keypair(user_id: "alice@example.com",
      props: {resource_policy: "default", rate_limit: 500}) {
        ok msg keypair { access_key secret_key is_active rate_limit user_id } })");
  ASSERT_EQ(made["ok"], true) << made.dump();
  EXPECT_EQ(made["keypair"]["rate_limit"], 500);
  EXPECT_EQ(made["keypair"]["user_id"], "alice@example.com");
  std::string ak = made["keypair"]["access_key"];
  std::string sk = made["keypair"]["secret_key"];
  auto second = ClientFor(ak, sk);
  // Alice sees her two keys with their secrets; Dave (admin here) sees them without; Carol
  // (admin elsewhere) does not see them.
  auto mine = Gql(*alice_, "{ keypairs { access_key secret_key } }")["data"]["keypairs"];
  ASSERT_EQ(mine.size(), 2u) << mine.dump();
  for (auto const& k : mine) EXPECT_FALSE(k["secret_key"].is_null());
  auto seen = Gql(*dave_, R"({ keypairs(email: "alice@example.com") { access_key secret_key }
                           })")["data"]["keypairs"];
  ASSERT_EQ(seen.size(), 2u) << seen.dump();
  for (auto const& k : seen) EXPECT_TRUE(k["secret_key"].is_null());
  EXPECT_TRUE(
      Gql(*carol_, R"({ keypairs(email: "alice@example.com") { access_key } })")["data"]["keypairs"]
          .empty());
  auto others = Gql(*alice_, R"({ keypairs(email: "dave@example.com") { access_key } })");
  EXPECT_TRUE(others.contains("errors")) << others.dump();

  // Deactivated, the key no longer signs (it was never cached: its first use comes after).
  EXPECT_EQ(Mutate(*root_, "modify_keypair(access_key: \"" + ak +
                               "\", props: {is_active: false}) { ok msg }"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Status(*second), 401);
  EXPECT_EQ(Mutate(*root_, "modify_keypair(access_key: \"" + ak +
                               "\", props: {resource_policy: \"nowhere\"}) { ok msg }")["ok"],
            false);
  // The main key is not deleted; the other is.
  std::string main =
      Gql(*alice_, "{ user { main_access_key } }")["data"]["user"]["main_access_key"];
  ASSERT_FALSE(main.empty());
  EXPECT_NE(main, ak);
  EXPECT_EQ(Mutate(*root_, "delete_keypair(access_key: \"" + main + "\") { ok msg }"),
            json({{"ok", false}, {"msg", "the keypair is used as main access key by any user"}}));
  EXPECT_EQ(Mutate(*root_, "delete_keypair(access_key: \"" + ak + "\") { ok msg }"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Mutate(*root_, "delete_keypair(access_key: \"" + ak + "\") { ok msg }"),
            json({{"ok", false}, {"msg", "no matching deletekeypair"}}));
  auto list = Gql(*root_, R"({ keypair_list(limit: 10, offset: 0,
                                            filter: "email == \"alice@example.com\"") {
                                 total_count items { access_key } } })");
  EXPECT_EQ(list["data"]["keypair_list"]["total_count"], 1) << list.dump();
}

TEST_F(AdminTest, UserReadsAreScopedByRole) {
  // Users and monitors read themselves only.
  EXPECT_EQ(Gql(*alice_, "{ user { email role } }")["data"]["user"],
            json({{"email", "alice@example.com"}, {"role", "user"}}));
  EXPECT_TRUE(Gql(*alice_, R"({ user(email: "dave@example.com") { email } })").contains("errors"));
  EXPECT_TRUE(Gql(*mona_, "{ users { email } }").contains("errors"));
  EXPECT_TRUE(
      Gql(*alice_, "{ user_list(limit: 10, offset: 0) { total_count } }").contains("errors"));
  // Admins list their domain; another domain is refused; superadmins list all.
  auto emails = [](json const& items) {
    std::vector<std::string> out;
    for (auto const& u : items) out.push_back(u["email"]);
    return out;
  };
  auto dave = Gql(*dave_,
                  "{ user_list(limit: 100, offset: 0, order: \"email\") { total_count "
                  "items { email } } }");
  EXPECT_THAT(emails(dave["data"]["user_list"]["items"]),
              ::testing::ElementsAre("admin@bai.local", "alice@example.com", "dave@example.com",
                                     "mona@example.com"))
      << dave.dump();
  EXPECT_EQ(dave["data"]["user_list"]["total_count"], 4);
  EXPECT_TRUE(Gql(*dave_, R"({ users(domain_name: "other") { email } })").contains("errors"));
  EXPECT_TRUE(
      Gql(*dave_, R"({ user(email: "carol@example.com") { email } })")["data"]["user"].is_null());
  EXPECT_THAT(emails(Gql(*carol_, "{ users { email } }")["data"]["users"]),
              ::testing::ElementsAre("carol@example.com"));
  auto all = Gql(*root_, R"({ user_list(limit: 2, offset: 1, filter: "role == \"admin\"",
                                        order: "-email") { total_count items { email } } })");
  EXPECT_EQ(all["data"]["user_list"]["total_count"], 2) << all.dump();
  EXPECT_THAT(emails(all["data"]["user_list"]["items"]),
              ::testing::ElementsAre("carol@example.com"));
  auto by_group = Gql(*root_, "{ users(group_id: \"" + DefaultProject() + "\") { email } }");
  EXPECT_EQ(by_group["data"]["users"].size(), 4u) << by_group.dump();
  auto bad = Gql(*root_, R"({ user_list(limit: 5, offset: 0, filter: "password == \"x\"") {
                               total_count } })");
  EXPECT_TRUE(bad.contains("errors")) << bad.dump();
}

TEST_F(AdminTest, ResourcePoliciesOfThreeKinds) {
  auto made = Mutate(*root_, R"(create_keypair_resource_policy(name: "small", props: {
      default_for_unspecified: "LIMITED", total_resource_slots: "{\"cpu\": 2, \"mem\": \"1g\"}",
      max_concurrent_sessions: 2, max_containers_per_session: 1, idle_timeout: 600,
      max_pending_session_count: 3}) {
        ok msg resource_policy { name total_resource_slots max_concurrent_sessions idle_timeout
                                 max_pending_session_count default_for_unspecified } })");
  ASSERT_EQ(made["ok"], true) << made.dump();
  auto const& p = made["resource_policy"];
  EXPECT_EQ(json::parse(p["total_resource_slots"].get<std::string>()),
            json({{"cpu", "2"}, {"mem", "1073741824"}}));
  EXPECT_EQ(p["max_pending_session_count"], 3);
  EXPECT_EQ(p["default_for_unspecified"], "LIMITED");
  EXPECT_THAT(Mutate(*root_, R"(create_keypair_resource_policy(name: "small", props: {
                                  max_concurrent_sessions: 1}) { ok msg })")["msg"]
                  .get<std::string>(),
              HasSubstr("integrity error"));
  EXPECT_THAT(Mutate(*root_, R"(create_keypair_resource_policy(name: "bad", props: {
                                  total_resource_slots: "{\"mem\": \"lots\"}"}) { ok msg })")["msg"]
                  .get<std::string>(),
              HasSubstr("total_resource_slots"));
  EXPECT_EQ(Mutate(*root_, R"(modify_keypair_resource_policy(name: "small",
                                props: {max_concurrent_sessions: 5}) { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Mutate(*root_, R"(modify_keypair_resource_policy(name: "huge",
                                props: {max_concurrent_sessions: 5}) { ok msg })"),
            json({{"ok", false}, {"msg", "no matching modifykeypairresourcepolicy"}}));
  // In use: not deleted.
  auto alice_key = Gql(*alice_, "{ keypair { access_key } }")["data"]["keypair"]["access_key"];
  EXPECT_EQ(Mutate(*root_, "modify_keypair(access_key: \"" + alice_key.get<std::string>() +
                               "\", props: {resource_policy: \"small\"}) { ok msg }")["ok"],
            true);
  auto in_use = Mutate(*root_, R"(delete_keypair_resource_policy(name: "small") { ok msg })");
  EXPECT_EQ(in_use["ok"], false);
  EXPECT_THAT(in_use["msg"].get<std::string>(), HasSubstr("keypairs still use"));
  // Alice sees her keypair's policy only; admins see all.
  EXPECT_EQ(Gql(*alice_, "{ keypair_resource_policies { name max_concurrent_sessions } }")
                ["data"]["keypair_resource_policies"],
            json::array({{{"name", "small"}, {"max_concurrent_sessions", 5}}}));
  EXPECT_EQ(Gql(*alice_,
                "{ keypair_resource_policy { name } }")["data"]["keypair_resource_policy"]["name"],
            "small");
  EXPECT_EQ(
      Gql(*dave_, "{ keypair_resource_policies { name } }")["data"]["keypair_resource_policies"]
          .size(),
      2u);

  // User and project policies.
  EXPECT_EQ(Mutate(*root_, R"(create_user_resource_policy(name: "few-folders",
                                props: {max_vfolder_count: 2, max_quota_scope_size: 1048576}) {
                                ok msg resource_policy { name max_vfolder_count
                                                         max_customized_image_count } })"),
            json({{"ok", true},
                  {"msg", "success"},
                  {"resource_policy",
                   {{"name", "few-folders"},
                    {"max_vfolder_count", 2},
                    {"max_customized_image_count", 3}}}}));
  EXPECT_EQ(Mutate(*root_, R"(modify_user(email: "alice@example.com",
                                props: {resource_policy: "few-folders"}) { ok msg })")["ok"],
            true);
  EXPECT_EQ(
      Gql(*alice_,
          "{ user_resource_policy { name max_vfolder_count } }")["data"]["user_resource_policy"],
      json({{"name", "few-folders"}, {"max_vfolder_count", 2}}));
  EXPECT_EQ(Mutate(*root_, R"(delete_user_resource_policy(name: "few-folders") { ok msg })")["ok"],
            false);
  EXPECT_EQ(Mutate(*root_, R"(create_project_resource_policy(name: "lab",
                                props: {max_vfolder_count: 10}) { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Gql(*root_, R"({ project_resource_policy(name: "lab") { max_vfolder_count } })")
                ["data"]["project_resource_policy"],
            json({{"max_vfolder_count", 10}}));
  EXPECT_TRUE(Gql(*alice_, "{ project_resource_policies { name } }").contains("errors"));
  EXPECT_EQ(Mutate(*root_, R"(delete_project_resource_policy(name: "lab") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
}

// bai's self-service beyond 24.09's roles: users and admins make keypairs for themselves (the
// signing key's policy and rate limit, never admin rights, at most 10) and delete their own,
// but not their main key, not the key signing the request, and never another user's.
TEST_F(AdminTest, UsersManageTheirOwnKeypairs) {
  auto main_key =
      Gql(*alice_, "{ keypairs { access_key rate_limit resource_policy } }")["data"]["keypairs"][0];
  auto made = Mutate(*alice_, R"(create_keypair(user_id: "alice@example.com",
      props: {resource_policy: "default", rate_limit: 999999, is_admin: null}) {
        ok msg keypair { access_key secret_key is_admin rate_limit resource_policy } })");
  ASSERT_EQ(made["ok"], true) << made.dump();
  EXPECT_EQ(made["keypair"]["rate_limit"], main_key["rate_limit"]);  // not the one asked for
  EXPECT_EQ(made["keypair"]["resource_policy"], main_key["resource_policy"]);
  EXPECT_EQ(made["keypair"]["is_admin"], false);
  std::string second = made["keypair"]["access_key"];
  auto with_second = ClientFor(second, made["keypair"]["secret_key"]);
  EXPECT_EQ(Mutate(*alice_, R"(create_keypair(user_id: "alice@example.com",
                props: {resource_policy: "default", rate_limit: 1, is_admin: true}) {
                ok msg })")["msg"],
            "only a superadmin makes admin keypairs");
  EXPECT_EQ(Mutate(*mona_, R"(create_keypair(user_id: "mona@example.com",
                props: {resource_policy: "default", rate_limit: 1}) { ok msg })")["msg"],
            "no permission to execute create_keypair");  // monitors change nothing
  // Deleting: never another user's (as if it did not exist), never the main or the signing key.
  std::string carols =
      Gql(*carol_, "{ keypairs { access_key } }")["data"]["keypairs"][0]["access_key"];
  EXPECT_EQ(Mutate(*alice_, "delete_keypair(access_key: \"" + carols + "\") { ok msg }"),
            json({{"ok", false}, {"msg", "no matching deletekeypair"}}));
  EXPECT_FALSE(
      Gql(*root_, "{ keypair(access_key: \"" + carols + "\") { access_key } }")["data"]["keypair"]
          .is_null());
  EXPECT_THAT(
      Mutate(*with_second, "delete_keypair(access_key: \"" + second + "\") { ok msg }")["msg"]
          .get<std::string>(),
      HasSubstr("cannot delete itself"));
  EXPECT_EQ(
      Mutate(*with_second, "delete_keypair(access_key: \"" +
                               main_key["access_key"].get<std::string>() + "\") { ok msg }")["ok"],
      false);
  EXPECT_EQ(Mutate(*alice_, "delete_keypair(access_key: \"" + second + "\") { ok msg }"),
            json({{"ok", true}, {"msg", "success"}}));
  // At most 10 of one's own.
  int made_now = 0;
  json last;
  for (int i = 0; i < 12; ++i) {
    last = Mutate(*alice_, R"(create_keypair(user_id: "alice@example.com",
                      props: {resource_policy: "default", rate_limit: 1}) { ok msg })");
    made_now += last.value("ok", false);
  }
  EXPECT_EQ(made_now, 9);  // with the main key, 10
  EXPECT_THAT(last["msg"].get<std::string>(), HasSubstr("at most 10 keypairs"));
}

// Every user, keypair and policy mutation is the superadmin's (24.09's allowed_roles): each
// other role is refused with 24.09's message and nothing changes.
TEST_F(AdminTest, RoleMatrixForPrincipalMutations) {
  std::vector<std::string> mutations = {
      R"(create_user(email: "m@x.org", props: {password: "p"}) { ok msg })",
      R"(modify_user(email: "alice@example.com", props: {full_name: "Z"}) { ok msg })",
      R"(delete_user(email: "alice@example.com") { ok msg })",
      R"(purge_user(email: "alice@example.com", props: {}) { ok msg })",
      // Another user's: one's own is bai's self-service (UsersManageTheirOwnKeypairs).
      R"(create_keypair(user_id: "nobody@example.org",
                        props: {resource_policy: "default", rate_limit: 1}) { ok msg })",
      R"(modify_keypair(access_key: "AKIAX", props: {is_active: false}) { ok msg })",
      R"(create_keypair_resource_policy(name: "z", props: {}) { ok msg })",
      R"(modify_keypair_resource_policy(name: "default", props: {idle_timeout: 1}) { ok msg })",
      R"(delete_keypair_resource_policy(name: "default") { ok msg })",
      R"(create_user_resource_policy(name: "z", props: {}) { ok msg })",
      R"(modify_user_resource_policy(name: "default", props: {max_vfolder_count: 1}) { ok msg })",
      R"(delete_user_resource_policy(name: "default") { ok msg })",
      R"(create_project_resource_policy(name: "z", props: {}) { ok msg })",
      R"(modify_project_resource_policy(name: "default", props: {max_vfolder_count: 1}) {
           ok msg })",
      R"(delete_project_resource_policy(name: "default") { ok msg })",
  };
  int refusals = 0;
  for (auto const& m : mutations) {
    std::string field = m.substr(0, m.find('('));
    for (Client* who : {alice_.get(), mona_.get(), dave_.get(), carol_.get()}) {
      auto r = Mutate(*who, m);
      EXPECT_EQ(r, json({{"ok", false}, {"msg", "no permission to execute " + field}}))
          << field << ": " << r.dump();
      refusals += r.value("msg", "") == "no permission to execute " + field;
    }
  }
  EXPECT_EQ(refusals, static_cast<int>(mutations.size()) * 4);
  // Nothing changed.
  EXPECT_EQ(
      Gql(*root_, R"({ user(email: "alice@example.com") { full_name status } })")["data"]["user"],
      json({{"full_name", "alice"}, {"status", "active"}}));
  EXPECT_TRUE(Gql(*root_, R"({ user(email: "m@x.org") { email } })")["data"]["user"].is_null());
  EXPECT_EQ(Gql(*root_,
                "{ keypair_resource_policies { name idle_timeout } }")["data"]
                                                                      ["keypair_resource_policies"],
            json::array({{{"name", "default"}, {"idle_timeout", 0}}}));
  // The superadmin may run each (the answers differ; none is a refusal by role).
  for (auto const& m : mutations) {
    auto r = Mutate(*root_, m);
    EXPECT_THAT(r.value("msg", ""), ::testing::Not(HasSubstr("no permission"))) << m;
  }
}

}  // namespace
}  // namespace bai::manager

namespace bai::manager {
namespace {

// A database made by the previous release (schema version 13, before users' 24.09 fields and
// the user and project policies), with what its bootstrap and a user left in it, opens under
// this release: every row is kept, and administration works on them.
TEST(AdminMigrationTest, APreviousReleasesDatabaseKeepsItsSessionsAndFolders) {
  TempDir dir;
  ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = testing_util::TestDatabase();
  config.listen_port = 0;
  ASSERT_EQ(::mkdir(config.data_dir.c_str(), 0700), 0);
  {
    auto db = config.UsesPostgres() ? server::OpenPostgres(config.database)
                                    : server::OpenSqlite(config.DatabasePath());
    ASSERT_TRUE(db.ok()) << db.status().message();
    std::vector<server::Migration> previous(Migrations().begin(), Migrations().begin() + 13);
    ASSERT_EQ(previous.back().version, 13);
    ASSERT_TRUE(server::Migrate(**db, previous).ok());
    for (char const* sql : {
             "INSERT INTO domains (name, created_at) VALUES ('default', '2026-01-01T00:00:00Z')",
             "INSERT INTO keypair_resource_policies (name, max_concurrent_sessions, created_at) "
             "VALUES ('default', 30, '2026-01-01T00:00:00Z')",
             "INSERT INTO groups (id, name, domain_name, created_at) VALUES ('g-1', 'default', "
             "'default', '2026-01-01T00:00:00Z')",
             "INSERT INTO scaling_groups (name, created_at) VALUES ('default', "
             "'2026-01-01T00:00:00Z')",
             "INSERT INTO users (uuid, username, email, password_hash, role, domain_name, "
             "created_at) VALUES ('u-root', 'admin', 'admin@bai.local', 'x', 'superadmin', "
             "'default', '2026-01-01T00:00:00Z')",
             "INSERT INTO users (uuid, username, email, password_hash, domain_name, created_at) "
             "VALUES ('u-old', 'old', 'old@example.com', 'x', 'default', "
             "'2026-01-02T00:00:00Z')",
             "INSERT INTO association_groups_users VALUES ('g-1', 'u-old')",
             "INSERT INTO keypairs (access_key, secret_key, user_id, is_admin, resource_policy, "
             "created_at) VALUES ('AKIAROOT', 'root-secret', 'u-root', 1, 'default', "
             "'2026-01-01T00:00:00Z')",
             "INSERT INTO keypairs (access_key, secret_key, user_id, resource_policy, created_at) "
             "VALUES ('AKIAOLD', 'old-secret', 'u-old', 'default', '2026-01-02T00:00:00Z')",
             "INSERT INTO sessions (id, seq, name, access_key, user_id, domain_name, group_id, "
             "scaling_group, type, image, architecture, status, result, created_at, "
             "terminated_at) VALUES ('s-old', 1, 'old-job', 'AKIAOLD', 'u-old', 'default', 'g-1', "
             "'default', 'batch', 'python', 'x86_64', 'TERMINATED', 'success', "
             "'2026-01-03T00:00:00Z', '2026-01-03T01:00:00Z')",
             "INSERT INTO vfolders (id, name, host, quota_scope_id, ownership_type, user_id, "
             "creator, domain_name, created_at) VALUES ('f0000000000000000000000000000001', "
             "'old-data', 'local:volume1', 'user:u-old', 'user', 'u-old', 'old@example.com', "
             "'default', '2026-01-03T00:00:00Z')",
             "INSERT INTO manager_settings (key, value) VALUES ('bootstrapped_at', "
             "'2026-01-01T00:00:00Z')",
         }) {
      auto r = (*db)->Exec(sql);
      ASSERT_TRUE(r.ok()) << sql << ": " << r.status().message();
    }
  }
  auto m = Manager::Start(config);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Options o;
  o.endpoints = {"http://127.0.0.1:" + std::to_string((*m)->port())};
  o.access_key = "AKIAROOT";
  o.secret_key = "root-secret";
  o.retry.max_attempts = 1;
  auto root = Client::Create(o);
  ASSERT_TRUE(root.ok());
  auto gql = [&](std::string const& q) {
    ApiRequest r("POST", "/admin/gql");
    r.body = json{{"query", q}}.dump();
    auto res = root->Send(r);
    EXPECT_TRUE(res.ok());
    return res.ok() ? json::parse(res->body, nullptr, false) : json();
  };
  auto user = gql(R"({ user(email: "old@example.com") { username status resource_policy
                                                       main_access_key groups { name } } })");
  EXPECT_EQ(user["data"]["user"], json({{"username", "old"},
                                        {"status", "active"},
                                        {"resource_policy", "default"},
                                        {"main_access_key", "AKIAOLD"},
                                        {"groups", {{{"name", "default"}}}}}))
      << user.dump();
  auto sessions = gql(R"({ compute_session_list(limit: 10, offset: 0, status: "TERMINATED") {
                            items { name result } } })");
  EXPECT_EQ(sessions["data"]["compute_session_list"]["items"],
            json::array({{{"name", "old-job"}, {"result", "SUCCESS"}}}))
      << sessions.dump();
  auto folders = gql("{ vfolder_list(limit: 10, offset: 0) { items { name host } } }");
  EXPECT_EQ(folders["data"]["vfolder_list"]["items"],
            json::array({{{"name", "old-data"}, {"host", "local:volume1"}}}))
      << folders.dump();
  EXPECT_EQ(gql("{ user_resource_policies { name } project_resource_policies { name } }")["data"],
            json({{"user_resource_policies", {{{"name", "default"}}}},
                  {"project_resource_policies", {{{"name", "default"}}}}}));
  // Administration works on the migrated rows: a new user in the old domain.
  auto made = gql(R"(mutation { create_user(email: "new@example.com",
                       props: {password: "pw-123456", group_ids: ["g-1"]}) { ok msg } })");
  EXPECT_EQ(made["data"]["create_user"], json({{"ok", true}, {"msg", "success"}})) << made.dump();
}

}  // namespace
}  // namespace bai::manager

namespace bai::manager {
namespace {

TEST_F(AdminTest, PresetsResourceGroupsAndAssociations) {
  // Presets: created with slots normalised, listed over REST too, changed, deleted.
  auto made = Mutate(*root_, R"(create_resource_preset(name: "small",
      props: {resource_slots: "{\"cpu\": 1, \"mem\": \"2g\"}", shared_memory: "64m"}) {
        ok msg resource_preset { name resource_slots shared_memory } })");
  ASSERT_EQ(made["ok"], true) << made.dump();
  EXPECT_EQ(json::parse(made["resource_preset"]["resource_slots"].get<std::string>()),
            json({{"cpu", "1"}, {"mem", "2147483648"}}));
  EXPECT_EQ(made["resource_preset"]["shared_memory"], 64 << 20);
  ApiRequest presets("GET", "/resource/presets");
  auto listed = alice_->Send(presets);
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(listed->body, HasSubstr("\"small\""));
  EXPECT_THAT(Mutate(*root_, R"(create_resource_preset(name: "bad",
                                  props: {resource_slots: "{\"cpu\": \"many\"}"}) { ok msg })")
                  ["msg"]
                      .get<std::string>(),
              HasSubstr("resource_slots"));
  EXPECT_EQ(Mutate(*root_, R"(modify_resource_preset(name: "small",
                                props: {shared_memory: "1g"}) { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(
      Gql(*root_,
          R"({ resource_preset(name: "small") { shared_memory } })")["data"]["resource_preset"]
                                                                    ["shared_memory"],
      1 << 30);
  EXPECT_EQ(Mutate(*root_, R"(delete_resource_preset(name: "small") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_EQ(Mutate(*root_, R"(delete_resource_preset(name: "small") { ok msg })")["msg"],
            "no matching deleteresourcepreset");

  // Resource groups: only what bai implements is accepted.
  EXPECT_THAT(Mutate(*root_, R"(create_scaling_group(name: "gpu",
                                  props: {driver: "static", scheduler: "drf"}) { ok msg })")["msg"]
                  .get<std::string>(),
              HasSubstr("only \"fifo\""));
  auto group = Mutate(*root_, R"(create_scaling_group(name: "gpu", props: {driver: "static",
      scheduler: "fifo", description: "GPU nodes", is_public: false}) {
        ok msg scaling_group { name description is_public scheduler } })");
  ASSERT_EQ(group["ok"], true) << group.dump();
  EXPECT_EQ(group["scaling_group"]["is_public"], false);
  EXPECT_EQ(Mutate(*root_, R"(modify_scaling_group(name: "gpu", props: {description: "H100"}) {
                                ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  // Alice cannot use it until her domain (or project, or keypair) is associated with it.
  auto alice_groups = [&] {
    std::vector<std::string> names;
    auto r = Gql(*alice_, "{ scaling_groups { name } }");
    EXPECT_FALSE(r.contains("errors")) << r.dump();
    for (auto const& g : r["data"]["scaling_groups"]) {
      names.push_back(g["name"]);
    }
    return names;
  };
  EXPECT_THAT(alice_groups(), ::testing::ElementsAre("default"));
  EXPECT_EQ(Mutate(*root_, R"(associate_scaling_group_with_domain(scaling_group: "gpu",
                                domain: "default") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_THAT(alice_groups(), ::testing::ElementsAre("default", "gpu"));
  EXPECT_EQ(Gql(*root_, R"({ scaling_groups_for_domain(domain: "default") { name } })")
                ["data"]["scaling_groups_for_domain"],
            json::array({{{"name", "default"}}, {{"name", "gpu"}}}));
  EXPECT_THAT(Mutate(*root_, R"(associate_scaling_group_with_domain(scaling_group: "gpu",
                                  domain: "nowhere") { ok msg })")["msg"]
                  .get<std::string>(),
              HasSubstr("no such domain"));
  EXPECT_EQ(Mutate(*root_, R"(disassociate_scaling_group_with_domain(scaling_group: "gpu",
                                domain: "default") { ok msg })")["ok"],
            true);
  EXPECT_THAT(alice_groups(), ::testing::ElementsAre("default"));
  std::string alice_key =
      Gql(*alice_, "{ keypair { access_key } }")["data"]["keypair"]["access_key"];
  EXPECT_EQ(Mutate(*root_,
                   "associate_scaling_groups_with_keypair(scaling_groups: [\"gpu\"], "
                   "access_key: \"" +
                       alice_key + "\") { ok msg }")["ok"],
            true);
  EXPECT_THAT(alice_groups(), ::testing::ElementsAre("default", "gpu"));
  // Deleted once nothing uses it (its associations go with it).
  EXPECT_EQ(Mutate(*root_, R"(delete_scaling_group(name: "gpu") { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  EXPECT_THAT(alice_groups(), ::testing::ElementsAre("default"));
  // The default group has an agent row: not deleted.
  ASSERT_TRUE(manager_->store()
                  .db()
                  .Exec("INSERT INTO agents (id, scaling_group, status, first_contact, "
                        "last_heartbeat) VALUES ('ag-1', 'default', 'ALIVE', '2026-01-01', "
                        "'2026-01-01')")
                  .ok());
  EXPECT_THAT(Mutate(*root_, R"(delete_scaling_group(name: "default") { ok msg })")["msg"]
                  .get<std::string>(),
              HasSubstr("agents belong"));
  // modify_agent: schedulable off, moved to another group.
  ASSERT_EQ(Mutate(*root_, R"(create_scaling_group(name: "spare", props: {driver: "static",
                                scheduler: "fifo"}) { ok })")["ok"],
            true);
  EXPECT_EQ(Mutate(*root_, R"(modify_agent(id: "ag-1", props: {schedulable: false,
                                scaling_group: "spare"}) { ok msg })"),
            json({{"ok", true}, {"msg", "success"}}));
  auto agent = manager_->store().db().Query(
      "SELECT schedulable, scaling_group FROM agents WHERE id = 'ag-1'");
  ASSERT_TRUE(agent.ok() && !agent->empty());
  EXPECT_FALSE(agent->front().Bool(0));
  EXPECT_EQ(agent->front().Text(1), "spare");
  EXPECT_THAT(Mutate(*root_, R"(modify_agent(id: "ag-1", props: {scaling_group: "nowhere"}) {
                                  ok msg })")["msg"]
                  .get<std::string>(),
              HasSubstr("no such resource group"));
  // None of it is anyone's but the superadmin's.
  for (Client* who : {alice_.get(), dave_.get(), carol_.get(), mona_.get()}) {
    EXPECT_EQ(Mutate(*who, R"(modify_agent(id: "ag-1", props: {schedulable: true}) { ok msg })"),
              json({{"ok", false}, {"msg", "no permission to execute modify_agent"}}));
    EXPECT_EQ(Mutate(*who, R"(create_scaling_group(name: "x", props: {driver: "static",
                                 scheduler: "fifo"}) { ok msg })")["ok"],
              false);
  }
}

}  // namespace
}  // namespace bai::manager

namespace bai::manager {
namespace {

TEST_F(AdminTest, AFrozenManagerChangesNothing) {
  ApiRequest freeze("PUT", "/manager/status");
  freeze.body = R"({"status": "frozen"})";
  auto frozen = root_->Send(freeze);
  ASSERT_TRUE(frozen.ok());
  ASSERT_EQ(frozen->status, 204) << frozen->body;
  auto refused = Gql(*root_, R"(mutation { create_domain(name: "icy", props: {}) { ok msg } })");
  ASSERT_TRUE(refused.contains("errors")) << refused.dump();
  EXPECT_THAT(refused["errors"][0]["message"].get<std::string>(), HasSubstr("frozen"));
  // Reads go on; new sessions and folders wait.
  EXPECT_EQ(Gql(*alice_, "{ user { email } }")["data"]["user"]["email"], "alice@example.com");
  ApiRequest session("POST", "/session");
  session.body = R"({"name": "during", "image": "python", "enqueueOnly": true})";
  auto s = alice_->Send(session);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->status, 503) << s->body;
  EXPECT_THAT(s->body, HasSubstr("server-frozen"));
  ApiRequest folder("POST", "/folders");
  folder.body = R"({"name": "during"})";
  auto f = alice_->Send(folder);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->status, 503) << f->body;
  freeze.body = R"({"status": "running"})";
  ASSERT_TRUE(root_->Send(freeze).ok());
  EXPECT_EQ(Mutate(*root_, R"(create_domain(name: "icy", props: {}) { ok msg })")["ok"], true);
}

// Container registries (issue 46), 24.09's two GraphQL forms: the legacy one by hostname
// (what bai's CLI and 23.09 speak) and the node by id. Only a superadmin sees or changes them; a
// password is taken and kept but only ever answered as "*****"; bad input is named.
TEST_F(AdminTest, ContainerRegistriesAreTheSuperadminsAndKeepTheirPasswords) {
  constexpr char kCreate[] = R"(
    mutation($h: String!, $p: CreateContainerRegistryInput!) {
      create_container_registry(hostname: $h, props: $p) {
        container_registry { id hostname config { url type project username password
                                                 ssl_verify } } } })";
  json props = {{"url", "http://127.0.0.1:5000"},
                {"type", "docker"},
                {"project", {"lab"}},
                {"username", "bot"},
                {"password", "hunter2"}};
  auto made = Gql(*root_, kCreate, {{"h", "127.0.0.1:5000"}, {"p", props}});
  auto reg = made["data"]["create_container_registry"]["container_registry"];
  ASSERT_TRUE(reg.is_object()) << made.dump();
  EXPECT_EQ(reg["hostname"], "127.0.0.1:5000");
  EXPECT_EQ(reg["config"]["project"], json::array({"lab"}));
  EXPECT_EQ(reg["config"]["password"], "*****");
  EXPECT_EQ(made.dump().find("hunter2"), std::string::npos);
  // Kept for the agents' pulls, never answered.
  auto kept = manager_->store().db().Query("SELECT password FROM container_registries");
  ASSERT_TRUE(kept.ok() && kept->size() == 1u);
  EXPECT_EQ(kept->front().Text(0), "hunter2");
  auto again = Gql(*root_, kCreate, {{"h", "127.0.0.1:5000"}, {"p", props}});
  EXPECT_THAT(again.dump(), HasSubstr("exists")) << "the same name and project twice";
  json bad = props;
  bad["url"] = "ftp://x";
  EXPECT_THAT(Gql(*root_, kCreate, {{"h", "x.example"}, {"p", bad}}).dump(), HasSubstr("url"));
  bad = props;
  bad["type"] = "gitlab";
  EXPECT_THAT(Gql(*root_, kCreate, {{"h", "x.example"}, {"p", bad}}).dump(), HasSubstr("type"));
  EXPECT_THAT(Gql(*root_, kCreate, {{"h", "Bad Name"}, {"p", props}}).dump(),
              HasSubstr("registry_name"));

  // Others: not even the list.
  for (Client* who : {alice_.get(), dave_.get(), mona_.get()}) {
    auto seen = Gql(*who, "{ container_registries { hostname } }");
    EXPECT_TRUE(seen.contains("errors")) << seen.dump();
    auto denied = Gql(*who, R"(mutation { delete_container_registry(hostname: "127.0.0.1:5000") {
                                  container_registry { hostname } } })");
    EXPECT_THAT(denied.dump(), HasSubstr("no permission")) << denied.dump();
  }

  // The node form and the REST listing see the same row.
  auto nodes = Gql(*root_,
                   "{ container_registry_nodes { count edges { node { row_id url "
                   "registry_name project password } } } }");
  auto node = nodes["data"]["container_registry_nodes"]["edges"][0]["node"];
  EXPECT_EQ(node["registry_name"], "127.0.0.1:5000") << nodes.dump();
  EXPECT_EQ(node["password"], "*****");
  ApiRequest rest("GET", "/resource/container-registries");
  auto listed = root_->Send(rest);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(json::parse(listed->body), json({{"lab/127.0.0.1:5000", "http://127.0.0.1:5000"}}));

  // Modified (the password kept when not given, cleared when given empty), then deleted.
  auto modified = Gql(*root_, R"(mutation { modify_container_registry(hostname: "127.0.0.1:5000",
      props: {ssl_verify: false, url: "https://127.0.0.1:5000"}) {
      container_registry { config { url ssl_verify password } } } })");
  auto cfg = modified["data"]["modify_container_registry"]["container_registry"]["config"];
  EXPECT_EQ(cfg["url"], "https://127.0.0.1:5000") << modified.dump();
  EXPECT_EQ(cfg["ssl_verify"], false);
  EXPECT_EQ(cfg["password"], "*****");
  std::string id = node["row_id"];
  auto cleared = Gql(*root_, R"(mutation($id: String!) { modify_container_registry_node(id: $id,
      password: "") { container_registry { password } } })",
                     {{"id", id}});
  EXPECT_TRUE(
      cleared["data"]["modify_container_registry_node"]["container_registry"]["password"].is_null())
      << cleared.dump();
  // Its images go with it.
  RegistryStore registries(manager_->store().db());
  ASSERT_TRUE(PutScanned(registries, "127.0.0.1:5000", "lab/app", "1").ok());
  auto gone = Gql(*root_, R"(mutation { delete_container_registry(hostname: "127.0.0.1:5000") {
      container_registry { hostname } } })");
  EXPECT_EQ(gone["data"]["delete_container_registry"]["container_registry"]["hostname"],
            "127.0.0.1:5000")
      << gone.dump();
  EXPECT_EQ(Gql(*root_, "{ container_registries { hostname } }")["data"]["container_registries"],
            json::array());
  auto left = registries.Images();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

// forget_image, forget_image_by_id and clear_images (24.09's): a registry image a rescan found
// leaves the manager's list with the superadmin's aliases of it; unknown references are errors;
// only superadmins may (bai has no users' customized images).
TEST_F(AdminTest, RegistryImagesAreForgottenOneByOneOrByRegistry) {
  RegistryStore registries(manager_->store().db());
  for (char const* tag : {"1", "2"}) {
    ASSERT_TRUE(PutScanned(registries, "127.0.0.1:5000", "lab/app", tag).ok());
  }
  ASSERT_TRUE(PutScanned(registries, "cr.example.com", "lab/tool", "9").ok());
  EXPECT_EQ(
      Mutate(*root_,
             R"(alias_image(alias: "app", target: "127.0.0.1:5000/lab/app:1") { ok msg })")["ok"],
      true);
  auto names = [&] {
    std::vector<std::string> out;
    auto all = Gql(*root_, "{ images { id } }")["data"]["images"];
    for (auto const& i : all) out.push_back(i["id"]);
    return out;
  };
  EXPECT_THAT(names(), ::testing::Contains("127.0.0.1:5000/lab/app:1@x86_64"));

  // Not for users or admins.
  for (Client* who : {alice_.get(), dave_.get()}) {
    auto denied = Mutate(*who, R"(forget_image(reference: "app") { ok msg })");
    EXPECT_EQ(denied["ok"], false) << denied.dump();
  }
  // By alias: the image and the alias go; what the agents hold is not touched.
  auto forgot = Mutate(*root_, R"(forget_image(reference: "app") { ok msg image { name tag } })");
  EXPECT_EQ(forgot["ok"], true) << forgot.dump();
  EXPECT_EQ(forgot["image"]["tag"], "1");
  EXPECT_THAT(names(), ::testing::Not(::testing::Contains("127.0.0.1:5000/lab/app:1@x86_64")));
  auto aliases = manager_->store().db().Query("SELECT alias FROM image_aliases");
  ASSERT_TRUE(aliases.ok());
  EXPECT_TRUE(aliases->empty()) << "the alias went with its image";
  // Unknown: an error naming it.
  auto unknown = Gql(*root_, R"(mutation { forget_image(reference: "nowhere.example/x:1") {
      ok msg } })");
  EXPECT_THAT(unknown.dump(), HasSubstr("Unknown image reference: nowhere.example/x:1"));
  auto local = Gql(*root_, R"(mutation { forget_image(reference: "nonesuch") { ok msg } })");
  EXPECT_THAT(local.dump(), HasSubstr("Unknown image reference: nonesuch")) << "no agent has it";
  // By id, as images answers it.
  auto by_id = Mutate(
      *root_, R"(forget_image_by_id(image_id: "127.0.0.1:5000/lab/app:2@x86_64") { ok msg })");
  EXPECT_EQ(by_id["ok"], true) << by_id.dump();
  EXPECT_THAT(
      Gql(*root_, R"(mutation { forget_image_by_id(image_id: "no-at-sign") { ok } })").dump(),
      HasSubstr("No such image"));
  // A registry at once: only its own.
  ASSERT_TRUE(PutScanned(registries, "cr.example.com", "lab/tool", "9").ok());
  ASSERT_TRUE(PutScanned(registries, "127.0.0.1:5000", "lab/app", "3").ok());
  EXPECT_EQ(Mutate(*root_, R"(clear_images(registry: "127.0.0.1:5000") { ok msg })")["ok"], true);
  auto left = registries.Images();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front().canonical, "cr.example.com/lab/tool:9");
  EXPECT_EQ(Mutate(*dave_, R"(clear_images(registry: "cr.example.com") { ok msg })")["ok"], false);
}

// A domain's allowed_docker_registries (24.09's check at session creation): a registry image
// from a registry the list leaves out is refused as "unknown alias or disallowed registry";
// host and imported images always pass; an empty list (bai's default) allows any registry.
TEST_F(AdminTest, ADomainsAllowedRegistriesBoundItsSessionsImages) {
  RegistryStore registries(manager_->store().db());
  ASSERT_TRUE(PutScanned(registries, "127.0.0.1:5000", "lab/app", "1").ok());
  ASSERT_TRUE(PutScanned(registries, "cr.example.com", "lab/tool", "9").ok());
  struct Answer {
    int status = 0;
    std::string body;
  };
  auto create = [&](std::string const& name, std::string const& image) {
    ApiRequest session("POST", "/session");
    session.body = json{{"name", name}, {"image", image}, {"enqueueOnly", true}}.dump();
    auto r = alice_->Send(session);
    EXPECT_TRUE(r.ok());
    return r.ok() ? Answer{r->status, r->body} : Answer{};
  };
  // Empty: any registry.
  EXPECT_EQ(create("any-registry", "cr.example.com/lab/tool:9").status / 100, 2);
  EXPECT_EQ(Mutate(*root_, R"(modify_domain(name: "default",
                props: {allowed_docker_registries: ["cr.example.com"]}) { ok msg })")["ok"],
            true);
  auto refused = create("local-reg", "127.0.0.1:5000/lab/app:1");
  EXPECT_EQ(refused.status, 404) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("unknown alias or disallowed registry"));
  EXPECT_THAT(refused.body, HasSubstr("not from 127.0.0.1:5000"));
  EXPECT_EQ(create("allowed", "cr.example.com/lab/tool:9").status / 100, 2);
  EXPECT_EQ(create("host", "python").status / 100, 2) << "a host image is no registry's";
  // The pure rule, with Docker Hub's short names.
  EXPECT_FALSE(CheckRegistryAllowed("lab/app", {"cr.example.com"}, "d").ok());
  EXPECT_TRUE(CheckRegistryAllowed("lab/app", {"index.docker.io"}, "d").ok());
  EXPECT_TRUE(CheckRegistryAllowed("lab-app:1", {"cr.example.com"}, "d").ok());
}

}  // namespace
}  // namespace bai::manager
