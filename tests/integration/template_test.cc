// SPDX-License-Identifier: Apache-2.0
// Session templates, error logs and one's own account on a whole in-process cluster (manager
// and a dummy agent): `bai template` from creation to a session started from it, the payload
// shapes of each client and their answers, who reaches whose templates; /logs/error filed,
// listed by scope, cleared; /auth/update-password and /auth/ssh-keypair.
#include "bai/admin_client.h"
#include "bai/client.h"

#include "tests/testing_util/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kTemplate[] = R"(---
apiVersion: v1
kind: taskTemplate
metadata:
  name: nightly
  tag: ci
spec:
  type: batch
  kernel:
    image: python
    environ: {STAGE: "nightly"}
    run:
      startup: python train.py --epochs 3
  resources:
    cpu: '1'
    mem: 128m
)";

class TemplateTest : public testing_util::LocalCluster {
 protected:
  // A plain user of the default domain and project: its keys.
  std::pair<std::string, std::string> NewUser(std::string const& email) {
    auto r = Bai({"-o", "json", "admin", "user", "create", email, "--password-stdin", "--project",
                  "default"},
                 "plain-password-1\n");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto j = json::parse(r.out, nullptr, false);
    return {j.value("access_key", ""), j.value("secret_key", "")};
  }

  std::string WriteFile(std::string const& name, std::string const& text) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(TemplateTest, FromAFileToASessionWithTheCli) {
  auto made = Bai({"template", "create", "-f", WriteFile("t.yaml", kTemplate)});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string id = made.out.substr(0, made.out.find('\n'));
  ASSERT_EQ(id.size(), 32u) << made.out;

  auto ls = Bai({"-o", "json", "template", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  auto listed = json::parse(ls.out)["templates"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["id"], id);
  EXPECT_EQ(listed[0]["name"], "nightly");
  EXPECT_EQ(listed[0]["group_name"], "default");
  EXPECT_EQ(listed[0]["template"]["spec"]["session_type"], "batch");
  auto table = Bai({"template", "ls"});
  EXPECT_THAT(table.out, HasSubstr("nightly"));
  EXPECT_THAT(table.out, HasSubstr("batch"));

  auto yaml = Bai({"template", "get", id});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("startup_command: python train.py --epochs 3"));
  auto as_json = Bai({"-o", "json", "template", "get", id});
  EXPECT_EQ(json::parse(as_json.out)["template"]["metadata"]["tag"], "ci");

  // Started from it: the template's image, type, command and environment; the request's name.
  auto run = Bai({"template", "run", id, "-n", "from-tpl"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "from-tpl\n");
  auto s = WaitFor("from-tpl", "TERMINATED");
  EXPECT_EQ(s["type"], "batch");
  EXPECT_EQ(s["tag"], "ci");
  auto logs = Send("GET", "/session/from-tpl/logs");
  EXPECT_THAT(logs.body, HasSubstr("python train.py --epochs 3"));
  // Issue 43, 10: by its name too (only the id was taken); a name that is no template's says so.
  auto by_name = Bai({"template", "run", "nightly", "-n", "by-name"});
  EXPECT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_EQ(by_name.out, "by-name\n");
  EXPECT_THAT(Bai({"template", "get", "nightly"}).out, HasSubstr("--epochs 3"));
  auto nosuch = Bai({"template", "get", "no-such-template"});
  EXPECT_EQ(nosuch.exit_code, 5);
  EXPECT_THAT(nosuch.err, HasSubstr("no template named no-such-template"));
  // The request's command wins.
  ASSERT_EQ(Bai({"template", "run", id, "-n", "other-cmd", "-c", "echo mine"}).exit_code, 0);
  WaitFor("other-cmd", "TERMINATED");
  EXPECT_THAT(Send("GET", "/session/other-cmd/logs").body, HasSubstr("echo mine"));

  // Updated from standard input, then deleted.
  std::string changed = kTemplate;
  changed.replace(changed.find("--epochs 3"), 10, "--epochs 9");
  auto up = Bai({"template", "update", id}, changed);
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_THAT(Bai({"template", "get", id}).out, HasSubstr("--epochs 9"));
  ASSERT_EQ(Bai({"template", "rm", id}).exit_code, 0);
  auto gone = Bai({"template", "get", id});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("No such task template"));
  auto from_gone = Bai({"template", "run", id});
  EXPECT_NE(from_gone.exit_code, 0);
}

TEST_F(TemplateTest, EachClientsPayloadGetsItsAnswerAndBadOnesNameTheField) {
  json tpl = {{"apiVersion", "v1"},
              {"kind", "taskTemplate"},
              {"metadata", {{"name", "a"}}},
              {"spec", {{"kernel", {{"image", "python"}}}}}};
  // 22.03: {"session_templates": [...]} answered with one object (its client reads ['id']).
  auto old = Send("POST", "/template/session",
                  {{"payload", json({{"session_templates", {{{"template", tpl}}}}}).dump()},
                   {"group_name", "default"},
                   {"domain_name", "default"},
                   {"owner_access_key", nullptr}});
  ASSERT_EQ(old.status, 200) << old.body;
  EXPECT_TRUE(json::parse(old.body).contains("id"));
  // 24.09: a list answered with a list.
  auto list = Send(
      "POST", "/template/session",
      {{"payload", json::array({{{"template", tpl}}, {{"name", "b"}, {"template", tpl}}}).dump()}});
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(json::parse(list.body).size(), 2u);

  auto bad = Send("POST", "/template/session",
                  {{"payload",
                    "apiVersion: v1\nkind: taskTemplate\nmetadata: {name: x}\n"
                    "spec: {kernel: {image: python, environ: {N: 3}}}\n"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("spec.kernel.environ.N: must be a string"));
  auto broken = Send("POST", "/template/session", {{"payload", "spec: [unclosed"}});
  EXPECT_EQ(broken.status, 400);
  EXPECT_THAT(broken.body, HasSubstr("Malformed payload"));
  auto missing = Send("POST", "/template/session", json::object());
  EXPECT_EQ(missing.status, 400);
  EXPECT_THAT(missing.body, HasSubstr("payload"));
  auto nowhere =
      Send("POST", "/template/session", {{"payload", tpl.dump()}, {"group", "no-such-project"}});
  EXPECT_EQ(nowhere.status, 404);
  // A template that clones a repository: the session's bootstrap script clones it (the dummy
  // agent's log shows the script a container would run first).
  json git = tpl;
  git["spec"]["type"] = "batch";
  git["spec"]["kernel"]["git"] = {{"repository", "https://example.org/r.git"}};
  git["spec"]["kernel"]["run"] = {{"bootstrap", "echo from-the-template"}, {"startup", "ls r"}};
  auto stored = Send("POST", "/template/session", {{"payload", git.dump()}});
  ASSERT_EQ(stored.status, 200);
  auto start = Send("POST", "/session/_/create-from-template",
                    {{"template_id", json::parse(stored.body)["id"]}, {"name", "gitty"}});
  ASSERT_EQ(start.status, 201) << start.body;
  WaitFor("gitty", "TERMINATED");
  std::string logs = json::parse(Send("GET", "/session/gitty/logs").body)["result"]["logs"];
  EXPECT_THAT(logs, HasSubstr("echo from-the-template\n"));
  EXPECT_THAT(logs, HasSubstr("git clone --quiet 'https://example.org/r.git' 'r' || exit $?"));
  // Without a script of its own, a session gets its keypair's (`/user-config/bootstrap-script`).
  ASSERT_EQ(
      Send("POST", "/user-config/bootstrap-script", {{"script", "echo stored-script"}}).status,
      204);
  ASSERT_EQ(Bai({"run", "--name", "plain-run", "python", "--", "true"}).exit_code, 0);
  EXPECT_THAT(Send("GET", "/session/plain-run/logs").body, HasSubstr("echo stored-script"));
  EXPECT_EQ(Send("GET", "/template/session/0123456789abcdef0123456789abcdef").status, 404);
}

TEST_F(TemplateTest, UsersReachTheirOwnTemplatesOnly) {
  auto [ak, sk] = NewUser("plain@example.com");
  auto user = ClientFor(ak, sk);
  AdminClient as_user(*user);
  AdminClient as_root(*root_);
  auto root_ids = as_root.CreateTemplates(kTemplate);
  ASSERT_TRUE(root_ids.ok()) << root_ids.status().message();
  auto user_ids = as_user.CreateTemplates(kTemplate);
  ASSERT_TRUE(user_ids.ok()) << user_ids.status().message();
  std::string theirs = root_ids->front();

  auto mine = as_user.Templates();
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ(mine->front().id, user_ids->front());
  EXPECT_TRUE(mine->front().is_owner);
  EXPECT_EQ(mine->front().user_email, "plain@example.com");
  // Another's: not found, whatever the verb.
  EXPECT_EQ(Send(*user, "GET", "/template/session/" + theirs).status, 404);
  EXPECT_EQ(Send(*user, "PUT", "/template/session/" + theirs, {{"payload", kTemplate}}).status,
            404);
  EXPECT_EQ(Send(*user, "DELETE", "/template/session/" + theirs).status, 404);
  EXPECT_EQ(
      Send(*user, "POST", "/session/_/create-from-template", {{"template_id", theirs}}).status,
      404);
  EXPECT_EQ(Send(*user, "GET", "/template/session?all=true").status, 403);
  // The superadmin reaches every one, and lists them with all.
  EXPECT_EQ(as_root.Templates()->size(), 1u);
  auto all = as_root.Templates(true);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
  EXPECT_EQ(Send("GET", "/template/session/" + user_ids->front()).status, 200);
}

TEST_F(TemplateTest, ErrorLogsAreFiledListedByScopeAndCleared) {
  auto [ak, sk] = NewUser("plain@example.com");
  auto user = ClientFor(ak, sk);
  auto filed = Send(*user, "POST", "/logs/error",
                    {{"severity", "ERROR"},
                     {"source", "webui"},
                     {"message", "the page broke"},
                     {"context_lang", "js"},
                     {"context_env", "{\"page\": \"/sessions\"}"},
                     {"request_url", "/session"},
                     {"request_status", 500}});
  ASSERT_EQ(filed.status, 200) << filed.body;
  auto bad = Send(*user, "POST", "/logs/error",
                  {{"severity", "loud"},
                   {"source", "x"},
                   {"message", "m"},
                   {"context_lang", "x"},
                   {"context_env", "not json"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("severity"));
  EXPECT_THAT(bad.body, HasSubstr("context_env"));
  ASSERT_EQ(Send("POST", "/logs/error",
                 {{"severity", "warning"},
                  {"source", "cli"},
                  {"message", "root's own"},
                  {"context_lang", "c++"},
                  {"context_env", "{}"}})
                .status,
            200);

  auto page = json::parse(Send(*user, "GET", "/logs/error").body);
  ASSERT_EQ(page["count"], 1) << page.dump();
  auto const& first = page["logs"][0];
  EXPECT_EQ(first["message"], "the page broke");
  EXPECT_EQ(first["severity"], "error");
  EXPECT_EQ(first["request_status"], 500);
  EXPECT_FALSE(first.contains("is_cleared")) << "users do not see the flag";
  EXPECT_GT(first["created_at"].get<double>(), 1.7e9);
  // The superadmin sees both; page by page; mark_read marks what it returned.
  auto all = json::parse(Send("GET", "/logs/error?page_size=1&page_no=2&mark_read=true").body);
  EXPECT_EQ(all["count"], 2);
  ASSERT_EQ(all["logs"].size(), 1u);
  auto again = json::parse(Send("GET", "/logs/error").body);
  int read = 0;
  for (auto const& l : again["logs"]) read += l["is_read"].get<bool>() ? 1 : 0;
  EXPECT_EQ(read, 1);
  EXPECT_EQ(Send("GET", "/logs/error?page_size=101").status, 400);

  // Cleared: gone from the user's list, still in the superadmin's (flagged).
  std::string id = first["log_id"];
  EXPECT_EQ(Send(*user, "POST", "/logs/error/" + id + "/clear").status, 200);
  EXPECT_EQ(json::parse(Send(*user, "GET", "/logs/error").body)["count"], 0);
  std::string roots;
  for (auto const& l : again["logs"]) {
    if (l["source"] == "cli") roots = l["log_id"];
  }
  EXPECT_EQ(Send(*user, "POST", "/logs/error/" + roots + "/clear").status, 404) << "another's log";
  auto after = json::parse(Send("GET", "/logs/error").body);
  bool flagged = false;
  for (auto const& l : after["logs"]) flagged = flagged || (l["log_id"] == id && l["is_cleared"]);
  EXPECT_TRUE(flagged);
}

TEST_F(TemplateTest, AUserChangesTheirPasswordAndSshKeypair) {
  auto [ak, sk] = NewUser("plain@example.com");
  auto user = ClientFor(ak, sk);
  auto wrong = Send(*user, "POST", "/auth/update-password",
                    {{"old_password", "not-it-at-all"},
                     {"new_password", "brand-new-pass"},
                     {"new_password2", "brand-new-pass"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(wrong.body, HasSubstr("Old password mismatch"));
  auto differ = Send(*user, "POST", "/auth/update-password",
                     {{"old_password", "plain-password-1"},
                      {"new_password", "brand-new-pass"},
                      {"new_password2", "brand-new-pasS"}});
  EXPECT_EQ(differ.status, 400);
  EXPECT_THAT(differ.body, HasSubstr("new password mismatch"));
  auto done = Send(*user, "POST", "/auth/update-password",
                   {{"old_password", "plain-password-1"},
                    {"new_password", "brand-new-pass"},
                    {"new_password2", "brand-new-pass"}});
  ASSERT_EQ(done.status, 200) << done.body;
  auto login = [&](char const* password) {
    return Send("POST", "/auth/authorize",
                {{"type", "keypair"},
                 {"domain", "default"},
                 {"username", "plain@example.com"},
                 {"password", password}})
        .status;
  };
  EXPECT_EQ(login("brand-new-pass"), 200);
  EXPECT_EQ(login("plain-password-1"), 401);
  // Without a login (issue 43, 5b: it answered 404, and the console's route relays to it): the
  // current password is checked as a login's is.
  auto no_auth = [&](char const* current, char const* next) {
    return Send("POST", "/auth/update-password-no-auth",
                {{"domain", "default"},
                 {"username", "plain@example.com"},
                 {"current_password", current},
                 {"new_password", next}});
  };
  auto mismatch = no_auth("not-it-at-all", "another-pass-1");
  EXPECT_EQ(mismatch.status, 401);
  EXPECT_THAT(mismatch.body, HasSubstr("User credential mismatch"));
  EXPECT_EQ(no_auth("brand-new-pass", "brand-new-pass").status, 400);
  EXPECT_EQ(no_auth("brand-new-pass", "short").status, 400);
  auto changed = no_auth("brand-new-pass", "another-pass-1");
  ASSERT_EQ(changed.status, 201) << changed.body;
  EXPECT_TRUE(json::parse(changed.body)["password_changed_at"].is_string());
  EXPECT_EQ(login("another-pass-1"), 200);
  EXPECT_EQ(login("brand-new-pass"), 401);

  EXPECT_TRUE(
      json::parse(Send(*user, "GET", "/auth/ssh-keypair").body)["ssh_public_key"].is_null());
  auto made = json::parse(Send(*user, "PATCH", "/auth/ssh-keypair").body);
  std::string pub = made.value("ssh_public_key", "");
  EXPECT_EQ(pub.rfind("ssh-rsa AAAA", 0), 0u) << made.dump();
  EXPECT_THAT(made.value("ssh_private_key", ""), HasSubstr("-----BEGIN RSA PRIVATE KEY-----"));
  EXPECT_EQ(json::parse(Send(*user, "GET", "/auth/ssh-keypair").body)["ssh_public_key"], pub);
  // The private half is answered once, never read back; another user's key is not touched.
  EXPECT_TRUE(json::parse(Send("GET", "/auth/ssh-keypair").body)["ssh_public_key"].is_null());
  auto bad = Send(*user, "POST", "/auth/ssh-keypair", {{"pubkey", "hello"}, {"privkey", "x"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("pubkey"));
  auto own = Send(
      *user, "POST", "/auth/ssh-keypair",
      {{"pubkey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMine me@host\n\n"},
       {"privkey", "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----"}});
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(json::parse(Send(*user, "GET", "/auth/ssh-keypair").body)["ssh_public_key"],
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMine me@host\n");
}

}  // namespace
}  // namespace bai::manager
