// SPDX-License-Identifier: Apache-2.0
// The fixture of the real-container tests (runc_test.cc, network_test.cc): an in-process
// manager, a `bai-agent --backend runc` process and the `bai` CLI. Every agent has its own id
// and state directory, so its containers and cgroups are its own and are removed at the end
// of each test.
#pragma once

#include "libbai/util/json_parse.h"
#include "server-reference/agent/runc_backend.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace bai::runc_testing {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string ReadFile(std::string const& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RuncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (label 'root'; CI runs it as root)";
    manager::ManagerConfig config;
    config.data_dir = dir_.path() + "/data";
    config.database = testing_util::TestDatabase();
    config.listen_port = 0;
    auto m = manager::Manager::Start(config);
    ASSERT_TRUE(m.ok()) << m.status().message();
    manager_ = std::move(*m);
    secret_file_ = config.ClusterSecretPath();
    url_ = "http://127.0.0.1:" + std::to_string(manager_->port());
    agent_id_ = "rt" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name();
    agent_id_ = agent_id_.substr(0, 40);
    state_dir_ = dir_.path() + "/agent";
    StartAgent();
    for (auto const& [k, v] : testing_util::ReadEnvFile(manager_->bootstrap().credentials_file)) {
      if (k.rfind("BACKEND_", 0) == 0) env_[k] = v;
    }
    env_["BACKEND_ENDPOINT"] = url_;
    env_["BAI_CONFIG_DIR"] = dir_.path() + "/cfg";
  }

  void TearDown() override {
    if (!manager_) return;
    // Whatever a failed test left: our containers, then our cgroups.
    agent_.reset();
    auto list = testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "list", "-q"});
    std::istringstream ids(list.out);
    for (std::string id; std::getline(ids, id);) {
      if (!id.empty()) {
        testing_util::RunProcess({"/usr/sbin/runc", "--root", RuncRoot(), "delete", "--force", id});
      }
    }
    // Their scratch disks: the agent keeps kernels (and their mounts) when it is killed, so a
    // restart can adopt them; nothing restarts it now. Left mounted, each held a loop device
    // (677 had piled up on the build machine).
    std::error_code listed;
    for (auto const& k :
         fs::directory_iterator(state_dir_ + "/" + agent_id_ + "/kernels", listed)) {
      for (char const* m : {"rootfs", "scratch"}) {  // a layered image's overlay, scratch
        std::string mounted = (k.path() / m).string();
        while (::umount2(mounted.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
        }
      }
    }
    for (char const* c : {"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio",
                          "pids", "systemd", ""}) {
      fs::path p = fs::path("/sys/fs/cgroup") / c / "bai" / agent_id_;
      std::error_code ec;
      if (fs::is_directory(p, ec)) {
        for (auto const& e : fs::directory_iterator(p, ec)) {
          if (e.is_directory()) fs::remove(e.path(), ec);
        }
        fs::remove(p, ec);
      }
    }
  }

  /// More of bai-agent's arguments, for every start of a test's agent.
  virtual std::vector<std::string> AgentArgs() const { return {}; }

  std::string RuncRoot() const { return state_dir_ + "/" + agent_id_ + "/runc"; }
  std::string KernelDir(std::string const& session_id) const {
    return state_dir_ + "/" + agent_id_ + "/kernels/" + session_id;
  }

  void StartAgent(std::vector<std::string> const& extra = {},
                  std::map<std::string, std::string> const& env = {}) {
    std::vector<std::string> args{testing_util::BinPath("bai-agent"),
                                  "--manager",
                                  url_,
                                  "--id",
                                  agent_id_,
                                  "--cluster-secret-file",
                                  secret_file_,
                                  "--backend",
                                  "runc",
                                  "--state-dir",
                                  state_dir_,
                                  "--slots",
                                  "cpu=4,mem=8g"};
    auto own = AgentArgs();
    args.insert(args.end(), own.begin(), own.end());
    args.insert(args.end(), extra.begin(), extra.end());
    // The agent's default network is a bridge with NAT on the host: a test that does not make
    // a network namespace of its own (network_test.cc does) keeps its kernels on loopback.
    if (std::find(args.begin(), args.end(), "--network") == args.end() &&
        std::find(args.begin(), args.end(), "--network-pool") == args.end()) {
      args.insert(args.end(), {"--network", "none", "--network-pool", "off"});
    }
    agent_ = std::make_unique<testing_util::BackgroundProcess>(args, env);
    ASSERT_FALSE(agent_->WaitForLine("connecting").empty());
    for (int i = 0; i < 200 && !manager_->agents().Connected().count(agent_id_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ASSERT_EQ(manager_->agents().Connected().count(agent_id_), 1u);
  }

  testing_util::ProcessResult Bai(std::vector<std::string> args, std::string const& input = {}) {
    args.insert(args.begin(), testing_util::BinPath("bai"));
    return testing_util::RunProcess(args, env_, input);
  }

  // The manager's own answer (24.09's camelCase), not bai's output shape.
  json Info(std::string const& session) {
    auto r = Bai({"api", "GET", "/session/" + session});
    return internal::ParseJson(r.out).value_or(json());
  }

  /// An interactive session, RUNNING when this returns; its id.
  /// `config`: more of the creation's config (mounts…) beside the resources.
  std::string Interactive(std::string const& name, std::string const& resources,
                          json config = json::object()) {
    config["resources"] = json::parse(resources);
    auto r =
        Bai({"api", "POST", "/session", "-d",
             json{{"name", name}, {"image", "python"}, {"type", "interactive"}, {"config", config}}
                 .dump()});
    auto j = internal::ParseJson(r.out).value_or(json());
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return j.value("sessionId", "");
  }

  testing_util::TempDir dir_;
  std::unique_ptr<manager::Manager> manager_;
  std::unique_ptr<testing_util::BackgroundProcess> agent_;
  std::string secret_file_, url_, agent_id_, state_dir_;
  std::map<std::string, std::string> env_;
};

}  // namespace bai::runc_testing
