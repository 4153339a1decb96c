// SPDX-License-Identifier: Apache-2.0
// The README's administration walk-through with bai alone, on a whole in-process cluster: from
// an empty install a superadmin makes a domain, a project, a keypair policy and a user in them;
// the user (with the keys printed once) runs a session under the policy; the policy holds.
// Also each admin command's -o json document and errors.
#include "tests/testing_util/local_cluster.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace bai {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class AdminCliTest : public testing_util::LocalCluster {
 protected:
  // `bai -o json ARGS…` as the superadmin (or with `env` instead): the document, with the exit
  // code checked.
  json Json(std::vector<std::string> args, int exit_code = 0,
            std::map<std::string, std::string> const* env = nullptr, std::string input = {}) {
    args.insert(args.begin(), {testing_util::BinPath("bai"), "-o", "json"});
    auto r = testing_util::RunProcess(args, env ? *env : env_, input);
    std::string line;
    for (auto const& a : args) line += " " + a;
    EXPECT_EQ(r.exit_code, exit_code) << line << "\n" << r.out << r.err;
    auto j = json::parse(r.out.empty() ? r.err : r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << line << ": " << r.out << r.err;
    return j;
  }
};

TEST_F(AdminCliTest, FromAnEmptyInstallToAUsersSessionUnderAPolicy) {
  // 1. A domain, allowed the default resource group, and a project in it.
  auto domain = Json({"admin", "domain", "create", "research", "-d", "Research lab"});
  EXPECT_EQ(domain["domain"]["name"], "research");
  Json({"admin", "resource-group", "associate", "default", "--domain", "research"});
  auto project = Json({"admin", "project", "create", "vision", "--domain", "research"});
  std::string project_id = project["project"]["id"];
  EXPECT_EQ(project["project"]["domain_name"], "research");
  // 2. A keypair policy: one session at a time, at most 2 CPUs.
  auto policy = Json({"admin", "policy", "create", "small", "--slots", "cpu=2", "--max-sessions",
                      "1", "--idle-timeout", "1h"});
  EXPECT_EQ(policy["policies"][0]["idle_timeout"], 3600);
  // Objects of numbers, as every slot map in `-o json` (issue 43, 11: JSON text in a string).
  EXPECT_EQ(policy["policies"][0]["total_resource_slots"], json({{"cpu", 2}}));
  EXPECT_TRUE(policy["policies"][0]["allowed_vfolder_hosts"].is_object());
  // 0 means never, as the help says (it was refused); a bad duration is a usage error (2).
  auto never =
      Json({"admin", "policy", "update", "small", "--idle-timeout", "0", "--max-lifetime", "0"});
  EXPECT_EQ(never["policies"][0]["idle_timeout"], 0);
  EXPECT_EQ(never["policies"][0]["max_session_lifetime"], 0);
  EXPECT_THAT(Json({"admin", "policy", "update", "small", "--idle-timeout", "soon"}, 2).dump(),
              HasSubstr("--idle-timeout soon"));
  Json({"admin", "policy", "update", "small", "--idle-timeout", "1h"});
  // 3. A user in the domain and project; the password from stdin; keys printed once.
  auto user = Json({"admin", "user", "create", "ana@research.org", "--domain", "research",
                    "--project", "vision", "-n", "Ana", "--password-stdin"},
                   0, nullptr, "ana-password-1\n");
  std::string ak = user["access_key"];
  std::string sk = user["secret_key"];
  ASSERT_FALSE(ak.empty());
  ASSERT_FALSE(sk.empty());
  EXPECT_EQ(user["user"]["groups"][0]["name"], "vision");
  EXPECT_FALSE(user.contains("password"));  // given, so not echoed
  Json({"admin", "keypair", "update", ak, "--policy", "small"});
  // Listings never show a secret again.
  auto keys = Json({"admin", "keypair", "ls", "--user", "ana@research.org"});
  ASSERT_EQ(keys["keypairs"].size(), 1u);
  EXPECT_FALSE(keys["keypairs"][0].contains("secret_key"));
  EXPECT_EQ(keys["keypairs"][0]["resource_policy"], "small");
  auto users = Json({"admin", "user", "ls", "--domain", "research"});
  ASSERT_EQ(users["users"].size(), 1u);
  EXPECT_EQ(users["users"][0]["email"], "ana@research.org");

  // 4. Ana, with her keys: who she is, then a job in her project.
  auto ana = env_;
  ana["BACKEND_ACCESS_KEY"] = ak;
  ana["BACKEND_SECRET_KEY"] = sk;
  auto me = Json({"user", "me"}, 0, &ana);
  EXPECT_EQ(me["user"]["email"], "ana@research.org");
  EXPECT_EQ(me["user"]["domain_name"], "research");
  auto job = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "-o", "json", "run", "--name", "ana-job", "--group", "vision",
       "-r", "cpu=1", "python", "--", "sh", "-c", "exit 0"},
      ana);
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  // Issue 43, 6: without --group she is in her only project (the clients' "default" was "No
  // such user group" for anyone outside a project named default).
  auto plain =
      testing_util::RunProcess({testing_util::BinPath("bai"), "-o", "json", "run", "--name",
                                "ana-plain", "python", "--", "sh", "-c", "exit 0"},
                               ana);
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(Json({"session", "info", "ana-plain"}, 0, &ana)["group_id"], project_id);
  // In two projects, neither named default: refused, naming them.
  Json({"admin", "project", "create", "audio", "--domain", "research"});
  Json({"admin", "user", "update", "ana@research.org", "--domain", "research", "--project",
        "vision", "--project", "audio"});
  auto which = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "run", "--name", "ana-which", "python", "--", "true"}, ana);
  EXPECT_EQ(which.exit_code, 125) << which.err;
  EXPECT_THAT(which.err, HasSubstr("Yours: audio, vision"));
  // The policy holds: three CPUs are more than it allows at once.
  auto big = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "session", "create", "--name", "ana-big", "--group", "vision",
       "-r", "cpu=3", "--no-wait", "python"},
      ana);
  EXPECT_EQ(big.exit_code, 0) << big.err;
  auto waiting = Json({"session", "info", "ana-big"}, 0, &ana);
  for (int i = 0; i < 50 && waiting.value("status_info", "").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    waiting = Json({"session", "info", "ana-big"}, 0, &ana);
  }
  EXPECT_EQ(waiting["status"], "PENDING");
  EXPECT_THAT(waiting.value("status_info", ""), HasSubstr("keypair limit cpu=2"));
  // Ana is no administrator.
  auto denied = Json({"admin", "domain", "create", "mine"}, 4, &ana);
  EXPECT_THAT(denied.dump(), HasSubstr("no permission"));

  // 5. The superadmin sees what her job used, in her project.
  auto t = std::time(nullptr);
  char month[16];
  std::strftime(month, sizeof month, "%Y-%m", std::gmtime(&t));
  auto usage = Json({"admin", "usage", "--period", month, "--project", "vision"});
  ASSERT_EQ(usage["projects"].size(), 1u) << usage.dump();
  EXPECT_EQ(usage["projects"][0]["project_name"], "vision");
  bool found = false;
  for (auto const& [id, s] : usage["projects"][0]["sessions"].items()) {
    if (s["session_name"] != "ana-job") continue;
    found = true;
    EXPECT_EQ(s["user_email"], "ana@research.org");
    EXPECT_EQ(s["total_usage"]["cpu_allocated"], 1.0);
    EXPECT_GT(s["total_usage"]["cpu_used"].get<double>(), 0);  // the dummy kernel's ~100 ms
  }
  EXPECT_TRUE(found) << usage.dump().substr(0, 2000);
}

TEST_F(AdminCliTest, ErrorsAndDeletion) {
  // A password on argv is refused (DECISIONS.md: secrets never there), as a usage error.
  auto argv_password =
      Json({"admin", "user", "create", "bo@example.com", "--password", "bo-password-1"}, 2);
  EXPECT_THAT(argv_password.dump(), HasSubstr("--password-stdin"));
  EXPECT_EQ(Json({"admin", "user", "info", "bo@example.com"}, 5)["exit_code"], 5);
  Json({"admin", "user", "create", "bo@example.com", "--password-stdin"}, 0, nullptr,
       "bo-password-1\n");
  auto dup = Json({"admin", "user", "create", "bo@example.com", "--password-stdin"}, 6, nullptr,
                  "another-password\n");
  EXPECT_THAT(dup.dump(), HasSubstr("integrity error"));
  EXPECT_THAT(Json({"admin", "user", "info", "nobody@example.com"}, 5).dump(),
              HasSubstr("no user"));
  auto made = Json({"admin", "keypair", "create", "bo@example.com", "--rate-limit", "500"});
  std::string second = made["keypair"]["access_key"];
  EXPECT_FALSE(made["secret_key"].get<std::string>().empty());
  Json({"admin", "keypair", "deactivate", second});
  auto keys = Json({"admin", "keypair", "ls", "--user", "bo@example.com"});
  ASSERT_EQ(keys["keypairs"].size(), 2u);
  Json({"admin", "keypair", "rm", second});
  Json({"admin", "user", "update", "bo@example.com", "--role", "admin", "-n", "Bo"});
  auto info = Json({"admin", "user", "info", "bo@example.com"});
  EXPECT_EQ(info["user"]["role"], "admin");
  EXPECT_EQ(info["user"]["full_name"], "Bo");
  Json({"admin", "user", "rm", "bo@example.com"});
  EXPECT_EQ(Json({"admin", "user", "info", "bo@example.com"})["user"]["status"], "deleted");
  Json({"admin", "user", "rm", "bo@example.com", "--purge"});
  Json({"admin", "user", "info", "bo@example.com"}, 5);
  // A made password is printed once, with the keys.
  auto made_pw = Json({"admin", "user", "create", "cy@example.com"});
  EXPECT_GE(made_pw.value("password", "").size(), 20u);
  // Policies: a bad flag is named; a used policy is not deleted.
  // A bad flag value is a usage error (2), as an unknown flag is.
  EXPECT_THAT(Json({"admin", "policy", "create", "p1", "--slots", "cpu=lots"}, 2).dump(),
              HasSubstr("--slots"));
  Json({"admin", "policy", "create", "p1", "--slots", "cpu=4", "--max-pending", "2"});
  auto updated = Json({"admin", "policy", "update", "p1", "--max-sessions", "3"});
  EXPECT_EQ(updated["policies"][0]["max_concurrent_sessions"], 3);
  EXPECT_EQ(updated["policies"][0]["max_pending_session_count"], 2);
  EXPECT_THAT(Json({"admin", "policy", "rm", "default"}, 1).dump(), HasSubstr("still use"));
  Json({"admin", "policy", "rm", "p1"});
  // Domains and projects: soft, then purged.
  Json({"admin", "domain", "create", "tmp"});
  Json({"admin", "project", "create", "scratch", "--domain", "tmp"});
  Json({"admin", "project", "rm", "scratch", "--purge"});
  Json({"admin", "domain", "rm", "tmp"});
  auto domains = Json({"admin", "domain", "ls"});
  bool inactive = false;
  for (auto const& d : domains["domains"]) {
    if (d["name"] == "tmp") inactive = d["is_active"] == false;
  }
  EXPECT_TRUE(inactive);
  Json({"admin", "domain", "rm", "tmp", "--purge"});
}

TEST_F(AdminCliTest, UsersKeepTheirOwnKeypairs) {
  auto user = Json({"admin", "user", "create", "eve@example.com", "--password-stdin"}, 0, nullptr,
                   "eve-password-1\n");
  auto env = env_;
  env["BACKEND_ACCESS_KEY"] = user["access_key"];
  env["BACKEND_SECRET_KEY"] = user["secret_key"];
  auto made = Json({"keypair", "create"}, 0, &env);
  std::string second = made["keypair"]["access_key"];
  EXPECT_GE(made["secret_key"].get<std::string>().size(), 20u) << made.dump();
  EXPECT_EQ(made["keypair"]["user_id"], "eve@example.com");
  auto mine = Json({"keypair", "ls"}, 0, &env);
  ASSERT_EQ(mine["keypairs"].size(), 2u) << mine.dump();
  for (auto const& k : mine["keypairs"]) EXPECT_FALSE(k.contains("secret_key"));
  // Not another user's, not the main one; one's own second key, yes.
  EXPECT_THAT(Json({"keypair", "rm", env_["BACKEND_ACCESS_KEY"]}, 5, &env).dump(),
              HasSubstr("no matching"));
  EXPECT_THAT(Json({"keypair", "rm", user["access_key"]}, 1, &env).dump(),
              HasSubstr("cannot delete itself"));
  Json({"keypair", "rm", second}, 0, &env);
  EXPECT_EQ(Json({"keypair", "ls"}, 0, &env)["keypairs"].size(), 1u);
}

TEST_F(AdminCliTest, ImagesAgentsAndPresets) {
  // The dummy agent's images, one agent each; an alias joins them and goes again.
  auto images = Json({"admin", "image", "ls"});
  json python;
  for (auto const& i : images["images"]) {
    if (i["name"] == "python") python = i;
  }
  ASSERT_TRUE(python.is_object()) << images.dump();
  EXPECT_EQ(python["installed_agents"].size(), 1u);
  EXPECT_EQ(python["registry"], "local");
  Json({"admin", "image", "alias", "py3", "python"});
  auto aliased = Json({"admin", "image", "ls"}).dump();
  EXPECT_THAT(aliased, HasSubstr("\"py3\""));
  Json({"admin", "image", "dealias", "py3"});
  EXPECT_THAT(Json({"admin", "image", "ls"}).dump(), ::testing::Not(HasSubstr("\"py3\"")));
  // forget: an agent's own image is no registry row (said where it goes); unknown: named.
  auto own = Json({"admin", "image", "forget", "python"}, 1);
  EXPECT_THAT(own.dump(), HasSubstr("bai-agent image rm")) << own.dump();
  auto unknown_image = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "admin", "image", "forget", "nowhere.example/x:1"}, env_);
  EXPECT_NE(unknown_image.exit_code, 0);
  EXPECT_THAT(unknown_image.err, HasSubstr("Unknown image reference: nowhere.example/x:1"));
  Json({"admin", "image", "clear", "nowhere.example"});
  // A domain's registries: set, shown, cleared ("" is any).
  auto bounded = Json({"admin", "domain", "update", "default", "--allowed-docker-registries",
                       "registry.lab:5000, cr.example.com"});
  EXPECT_EQ(bounded["domain"]["allowed_docker_registries"],
            json::array({"registry.lab:5000", "cr.example.com"}))
      << bounded.dump();
  auto described = Json({"admin", "domain", "update", "default", "-d", "the lab"});
  EXPECT_EQ(described["domain"]["description"], "the lab");
  EXPECT_EQ(described["domain"]["allowed_docker_registries"].size(), 2u) << "kept when not given";
  auto any = Json({"admin", "domain", "update", "default", "--allowed-docker-registries", ""});
  EXPECT_EQ(any["domain"]["allowed_docker_registries"], json::array());
  // A rescan: a background task, one step per agent, done.
  auto rescan = Json({"admin", "image", "rescan"});
  EXPECT_EQ(rescan["status"], "bgtask_done") << rescan.dump();
  EXPECT_THAT(rescan["message"].get<std::string>(), HasSubstr("images on 1 agent"));
  auto gql = Send(*root_, "POST", "/admin/gql",
                  {{"query",
                    "mutation { rescan_images(registry: \"cr.backend.ai\") { ok msg "
                    "task_id } }"}});
  EXPECT_THAT(gql.body, HasSubstr("No such registry: cr.backend.ai")) << gql.body;
  // Agents: listed, taken out of scheduling and back.
  auto agents = Json({"admin", "agent", "ls"});
  ASSERT_EQ(agents["agents"].size(), 1u);
  std::string agent = agents["agents"][0]["id"];
  EXPECT_EQ(agents["agents"][0]["status"], "ALIVE");
  EXPECT_TRUE(agents["agents"][0]["available_slots"]["cpu"].is_number())
      << agents.dump() << ": slot amounts are numbers";
  EXPECT_TRUE(agents["agents"][0]["available_slots"]["mem"].is_number_integer());
  Json({"admin", "agent", "disable", agent});
  EXPECT_EQ(Json({"admin", "agent", "ls"})["agents"][0]["schedulable"], false);
  Json({"admin", "agent", "enable", agent});
  EXPECT_EQ(Json({"admin", "agent", "ls"})["agents"][0]["schedulable"], true);
  // The 22.03 client's `admin manager scheduler exclude-agents|include-agents`.
  auto op = [&](json body) { return Send("POST", "/manager/scheduler/operation", body); };
  EXPECT_EQ(op({{"op", "exclude-agents"}, {"args", {agent}}}).status, 204);
  EXPECT_EQ(Json({"admin", "agent", "ls"})["agents"][0]["schedulable"], false);
  auto unknown = op({{"op", "include-agents"}, {"args", {agent, "no-such-agent"}}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(unknown.body, HasSubstr("No such agent: no-such-agent"));
  EXPECT_EQ(Json({"admin", "agent", "ls"})["agents"][0]["schedulable"], false);  // none changed
  EXPECT_EQ(op({{"op", "drain"}, {"args", json::array()}}).status, 400);
  EXPECT_EQ(op({{"op", 5}, {"args", json::array()}}).status, 400);
  EXPECT_EQ(op({{"op", "include-agents"}, {"args", agent}}).status, 400);  // not a list
  EXPECT_EQ(op({{"op", "include-agents"}, {"args", {agent}}}).status, 204);
  EXPECT_EQ(Json({"admin", "agent", "ls"})["agents"][0]["schedulable"], true);
  // Presets.
  Json(
      {"admin", "preset", "create", "medium", "--slots", "cpu=2,mem=4g", "--shared-memory", "64m"});
  auto presets = Json({"admin", "preset", "ls"});
  bool found = false;
  for (auto const& p : presets["presets"]) {
    if (p["name"] != "medium") continue;
    found = true;
    EXPECT_EQ(p["shared_memory"], 64 << 20);
    // Numbers, as every slot map in -o json (issue 43, 11: it said "2").
    EXPECT_EQ(p["resource_slots"]["cpu"], 2);
    EXPECT_EQ(p["resource_slots"]["mem"], std::int64_t{4} << 30);
  }
  EXPECT_TRUE(found) << presets.dump();
  Json({"admin", "preset", "rm", "medium"});
  EXPECT_THAT(Json({"admin", "preset", "rm", "medium"}, 5).dump(), HasSubstr("no matching"));
  // Only superadmins: a plain user is refused each change.
  auto user = Json({"admin", "user", "create", "dee@example.com", "--password-stdin"}, 0, nullptr,
                   "dee-password-1\n");
  auto env = env_;
  env["BACKEND_ACCESS_KEY"] = user["access_key"];
  env["BACKEND_SECRET_KEY"] = user["secret_key"];
  EXPECT_THAT(Json({"admin", "image", "rescan"}, 4, &env).dump(), HasSubstr("no permission"));
  EXPECT_THAT(Json({"admin", "agent", "disable", agent}, 4, &env).dump(),
              HasSubstr("no permission"));
}

}  // namespace
}  // namespace bai

namespace bai {
namespace {

// `bai admin status` (docs/operations.md): this manager listed, the database, the agent, the
// sessions and the queue by reason; the same as -o json; `drain`/`undrain` name disable/enable.
TEST_F(AdminCliTest, StatusShowsTheClusterAtAGlance) {
  // A batch job for later: queued.
  auto later = testing_util::RunProcess(
      {testing_util::BinPath("bai"), "session", "create", "python", "--name", "later", "--type",
       "batch", "--startup-command", "true", "--starts-at", "1h", "--no-wait"},
      env_);
  ASSERT_EQ(later.exit_code, 0) << later.err;
  auto doc = Json({"admin", "status"});
  ASSERT_TRUE(doc["nodes"].is_array());
  ASSERT_EQ(doc["nodes"].size(), 1u);
  EXPECT_EQ(doc["nodes"][0]["service_addr"], env_["BACKEND_ENDPOINT"]);
  EXPECT_THAT(doc["nodes"][0]["version"].get<std::string>(), HasSubstr("bai-manager"));
  // The pg. run of this test (testing_util::TestDatabase) has the manager on PostgreSQL.
  char const* pg = std::getenv("BAI_TEST_POSTGRES");
  std::string backend = pg && *pg ? "postgresql" : "sqlite";
  EXPECT_EQ(doc["cluster"]["database"], backend);
  EXPECT_GE(doc["cluster"]["schema_version"].get<int>(), 20);
  EXPECT_EQ(doc["cluster"]["agents"]["ALIVE"], 1);
  auto text = testing_util::RunProcess({testing_util::BinPath("bai"), "admin", "status"}, env_);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("database  " + backend + " (schema "));
  EXPECT_THAT(text.out, HasSubstr("agents    1 ALIVE"));
  EXPECT_EQ(doc["cluster"]["sessions"]["PENDING"], 1);
  ASSERT_EQ(doc["cluster"]["queue"].size(), 1u);
  EXPECT_EQ(doc["cluster"]["queue"][0]["scaling_group"], "default");
  EXPECT_THAT(text.out, HasSubstr("queue     1 in default (")) << text.out;
  Json({"admin", "agent", "drain", "cli-agent"});
  auto agents = Json({"admin", "agent", "ls"});
  EXPECT_EQ(agents["agents"][0]["schedulable"], false);
  Json({"admin", "agent", "undrain", "cli-agent"});
  EXPECT_EQ(Json({"admin", "agent", "ls"})["agents"][0]["schedulable"], true);
}

}  // namespace
}  // namespace bai
