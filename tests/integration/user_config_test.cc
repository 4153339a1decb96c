// SPDX-License-Identifier: Apache-2.0
// Dotfiles and usage on a whole in-process cluster (manager and a dummy agent whose kernels'
// /home/work are directories of the test): a user's, a project's and a domain's dotfiles reach
// a new kernel in that order, with their permissions; limits and roles hold; sessions' usage
// (the dummy agent's simulated figures) is reported by /resource/usage/period, the monthly
// bins and `bai admin usage`.
#include "bai/admin_client.h"
#include "bai/client.h"
#include "bai/protocol/usage_wire.h"

#include "tests/testing_util/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

namespace bai::manager {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class UserConfigTest : public testing_util::LocalCluster {
 protected:
  // A plain user of the default domain and project, as a client.
  std::unique_ptr<Client> NewUser() {
    auto r = Bai({"-o", "json", "admin", "user", "create", "plain@example.com", "--password-stdin",
                  "--project", "default"},
                 "plain-password-1\n");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto j = json::parse(r.out, nullptr, false);
    return ClientFor(j.value("access_key", ""), j.value("secret_key", ""));
  }

  static std::string Today() {
    auto t = std::time(nullptr);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y%m%d", std::gmtime(&t));
    return buf;
  }
};

TEST_F(UserConfigTest, DotfilesReachNewKernelsDomainThenProjectThenUser) {
  AdminClient admin(*root_);
  ASSERT_TRUE(admin.PutDotfile({".bashrc", "600", "user\n"}, false).ok());
  ASSERT_TRUE(admin.PutDotfile({"/home/work/.config-x/tool.toml", "644", "a = 1\n"}, false).ok());
  AdminClient::DotfileOwner project{"default", "default"};
  AdminClient::DotfileOwner domain{"", "default"};
  ASSERT_TRUE(admin.PutDotfile({".bashrc", "644", "project\n"}, false, project).ok());
  ASSERT_TRUE(admin.PutDotfile({".profile", "640", "project profile\n"}, false, project).ok());
  ASSERT_TRUE(admin.PutDotfile({".inputrc", "644", "domain\n"}, false, domain).ok());
  ASSERT_TRUE(admin.PutDotfile({".profile", "644", "domain profile\n"}, false, domain).ok());

  // What each owner keeps, as listed.
  auto mine = admin.Dotfiles();
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].path, ".bashrc");
  EXPECT_EQ((*mine)[1].path, ".config-x/tool.toml");  // stored beneath /home/work
  ASSERT_EQ(admin.Dotfiles(project)->size(), 2u);

  auto created = Send(*root_, "POST", "/session",
                      {{"name", "dots"}, {"image", "python"}, {"type", "interactive"}});
  ASSERT_EQ(created.status, 201) << created.body;
  auto s = WaitFor("dots", "RUNNING");
  std::filesystem::path home = dir_.path() + "/homes/" + s.value("sessionId", "");
  auto read = [&](char const* name) {
    std::ifstream in(home / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto mode = [&](char const* name) {
    struct stat st {};
    return ::stat((home / name).c_str(), &st) == 0 ? (st.st_mode & 0777) : 0u;
  };
  EXPECT_EQ(read(".bashrc"), "user\n");  // the user's replaces the project's
  EXPECT_EQ(mode(".bashrc"), 0600u);
  EXPECT_EQ(read(".profile"), "project profile\n");  // the project's replaces the domain's
  EXPECT_EQ(mode(".profile"), 0640u);
  EXPECT_EQ(read(".inputrc"), "domain\n");
  EXPECT_EQ(read(".config-x/tool.toml"), "a = 1\n");

  // Update and delete.
  ASSERT_TRUE(admin.PutDotfile({".bashrc", "644", "changed\n"}, true).ok());
  EXPECT_EQ(admin.Dotfiles()->front().data, "changed\n");
  EXPECT_EQ(admin.PutDotfile({".nothing", "644", "x"}, true).code(), StatusCode::kNotFound);
  ASSERT_TRUE(admin.DeleteDotfile(".bashrc").ok());
  EXPECT_EQ(admin.DeleteDotfile(".bashrc").code(), StatusCode::kNotFound);
}

TEST_F(UserConfigTest, DotfilesRefuseBadPathsDuplicatesAndExcess) {
  auto post = [&](json body) { return Send(*root_, "POST", "/user-config/dotfiles", body); };
  auto made = post({{"path", ".vimrc"}, {"permission", "644"}, {"data", "x"}});
  EXPECT_EQ(made.status, 200) << made.body;
  auto dup = post({{"path", ".vimrc"}, {"permission", "644"}, {"data", "y"}});
  EXPECT_EQ(dup.status, 400);
  EXPECT_THAT(dup.body, HasSubstr("already exists"));
  for (auto const* path : {"../etc/passwd", "/etc/profile", "a//b", ".ssh", "/home/work/",
                           "/home/other/.bashrc", "x/./y"}) {
    auto bad = post({{"path", path}, {"permission", "644"}, {"data", "x"}});
    EXPECT_EQ(bad.status, 400) << path << ": " << bad.body;
  }
  auto perm = post({{"path", ".a"}, {"permission", "999"}, {"data", "x"}});
  EXPECT_EQ(perm.status, 400);
  EXPECT_THAT(perm.body, HasSubstr("octal"));
  // 64 KiB in all.
  auto big = post({{"path", ".big"}, {"permission", "644"}, {"data", std::string(60 << 10, 'x')}});
  EXPECT_EQ(big.status, 200) << big.body;
  auto over = post({{"path", ".more"}, {"permission", "644"}, {"data", std::string(5 << 10, 'x')}});
  EXPECT_EQ(over.status, 400);
  EXPECT_THAT(over.body, HasSubstr("64 KiB"));
  // Nothing was stored by a refusal.
  auto list = json::parse(Send(*root_, "GET", "/user-config/dotfiles").body, nullptr, false);
  EXPECT_EQ(list.size(), 2u) << list.dump().substr(0, 300);
}

TEST_F(UserConfigTest, UsersReadTheirProjectsDotfilesAndOnlyAdminsWriteThem) {
  AdminClient admin(*root_);
  ASSERT_TRUE(admin.PutDotfile({".team", "644", "team\n"}, false, {"default", "default"}).ok());
  auto plain = NewUser();
  AdminClient user(*plain);
  auto read = user.Dotfiles({"default", ""});
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->size(), 1u);
  EXPECT_EQ(user.PutDotfile({".mine", "644", "x"}, false, {"default", ""}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(user.PutDotfile({".mine", "644", "x"}, false, {"", "default"}).code(),
            StatusCode::kPermissionDenied);
  // Their own, and nobody else's.
  EXPECT_TRUE(user.PutDotfile({".mine", "644", "x"}, false).ok());
  auto other =
      Send(*plain, "GET", "/user-config/dotfiles?owner_access_key=" + env_["BACKEND_ACCESS_KEY"]);
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(admin.Dotfiles()->size(), 0u);  // the user's went to the user
}

TEST_F(UserConfigTest, UsageReportsEachSessionsFigures) {
  // A batch job (the dummy kernel "runs" 100 ms) and a running session.
  auto job = Bai({"run", "--name", "job-one", "python", "--", "true"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  auto live = Send(*root_, "POST", "/session",
                   {{"name", "live-one"},
                    {"image", "python"},
                    {"type", "interactive"},
                    {"config", {{"resources", {{"cpu", 2}, {"mem", "1g"}}}}}});
  ASSERT_EQ(live.status, 201) << live.body;
  WaitFor("live-one", "RUNNING");

  std::string day = Today();
  auto period = [&] {
    auto r = Send(*root_, "GET", "/resource/usage/period?start_date=" + day + "&end_date=" + day);
    EXPECT_EQ(r.status, 200) << r.body;
    auto projects = protocol::DecodeProjectUsages(r.body);
    std::map<std::string, protocol::SessionUsage> by_name;
    if (projects.ok()) {
      for (auto const& p : *projects) {
        EXPECT_EQ(p.project_name, "default");
        for (auto const& s : p.sessions) by_name[s.session_name] = s;
      }
    }
    return by_name;
  };
  auto ended = period();
  ASSERT_TRUE(ended.count("job-one"));
  EXPECT_EQ(ended["job-one"].status, "TERMINATED");
  EXPECT_GE(ended["job-one"].total_usage.cpu_used, 90);  // ~100 ms simulated
  EXPECT_EQ(ended["job-one"].total_usage.mem_used, 32 << 20);
  EXPECT_TRUE(ended["job-one"].used_time);
  // The running one's figures come with the agent's heartbeats.
  double cpu = 0;
  for (int i = 0; i < 150 && cpu <= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = period();
    cpu = now.count("live-one") ? now["live-one"].total_usage.cpu_used : 0;
  }
  EXPECT_GT(cpu, 0);
  EXPECT_EQ(period()["live-one"].total_usage.cpu_allocated, 2);

  // The CLI: a table, CSV, JSON.
  std::string dashed = day.substr(0, 4) + "-" + day.substr(4, 2) + "-" + day.substr(6, 2);
  auto table = Bai({"admin", "usage", "--period", dashed + ".." + dashed});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("job-one"));
  EXPECT_THAT(table.out, HasSubstr("total"));
  auto csv =
      Bai({"-o", "csv", "admin", "usage", "--period", dashed.substr(0, 7), "--project", "default"});
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("PROJECT,SESSION,USER"));
  EXPECT_THAT(csv.out, HasSubstr("default,job-one,"));
  auto js = Bai({"-o", "json", "admin", "usage", "--period", dashed + ".." + dashed});
  auto doc = json::parse(js.out, nullptr, false);
  EXPECT_EQ(doc.value("exit_code", -1), 0) << js.out;
  EXPECT_EQ(doc["projects"][0]["group_unit"], "project");
  auto bad = Bai({"admin", "usage", "--period", "2026-13"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--period"));

  // Refusals: a wrong date, a period over 100 days, a user who is not a superadmin (401, as
  // 24.09's superadmin_required).
  EXPECT_EQ(Send(*root_, "GET", "/resource/usage/period?start_date=2026&end_date=" + day).status,
            400);
  EXPECT_EQ(
      Send(*root_, "GET", "/resource/usage/period?start_date=20250101&end_date=20251231").status,
      400);
  auto plain = NewUser();
  EXPECT_EQ(
      Send(*plain, "GET", "/resource/usage/period?start_date=" + day + "&end_date=" + day).status,
      401);
  // Everyone sees their own monthly bins: 2880 of 15 minutes; the user has no sessions.
  auto bins = json::parse(Send(*plain, "GET", "/resource/stats/user/month").body, nullptr, false);
  ASSERT_EQ(bins.size(), 2880u);
  EXPECT_EQ(bins.back()["num_sessions"]["value"], 0);
  auto all = json::parse(Send(*root_, "GET", "/resource/stats/admin/month").body, nullptr, false);
  ASSERT_EQ(all.size(), 2880u);
  EXPECT_GE(all.back()["num_sessions"]["value"].get<int>(), 1);  // live-one runs now
}

}  // namespace
}  // namespace bai::manager
