// SPDX-License-Identifier: Apache-2.0
#pragma once
// A test fixture with a whole cluster in the test process: bai-manager on a free port and one
// dummy agent (cpu=4, mem=8g; jobs take 100 ms), plus the environment that points `bai` and the
// examples at it (the superadmin's keypair).

#include "bai/protocol/resource.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bai::testing_util {

class LocalCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    manager::ManagerConfig config;
    config.data_dir = dir_.path() + "/data";
    config.listen_port = 0;
    auto m = manager::Manager::Start(config);
    ASSERT_TRUE(m.ok()) << m.status().message();
    manager_ = std::move(*m);
    agent::AgentOptions o;
    o.manager_url = "http://127.0.0.1:" + std::to_string(manager_->port());
    o.agent_id = "cli-agent";
    o.cluster_secret = manager_->cluster_secret();
    EXPECT_TRUE(protocol::ParseSlotAssignment("cpu=4,mem=8g", o.slots).ok());
    agent::DummyOptions d;
    d.prepare_delay = std::chrono::milliseconds(50);
    d.run_time = std::chrono::milliseconds(100);
    d.commit_dir = dir_.path() + "/commits";
    d.home_dir = dir_.path() + "/homes";
    o.max_log_bytes = max_log_bytes_;
    ConfigureAgent(o);
    agent_ = std::make_unique<agent::Agent>(o, std::make_unique<agent::DummyBackend>(d));
    agent_->Start();
    ASSERT_TRUE(agent_->WaitRegistered(std::chrono::seconds(5)));
    for (auto const& [k, v] : testing_util::ReadEnvFile(manager_->bootstrap().credentials_file)) {
      if (k.rfind("BACKEND_", 0) == 0) env_[k] = v;
    }
    env_["BACKEND_ENDPOINT"] = o.manager_url;
    env_["BAI_CONFIG_DIR"] = dir_.path() + "/cfg";
  }

  /// A test's changes to the simulated agent (slots, devices) before it starts.
  virtual void ConfigureAgent(agent::AgentOptions&) {}

  testing_util::ProcessResult Bai(std::vector<std::string> args) {
    args.insert(args.begin(), testing_util::BinPath("bai"));
    return testing_util::RunProcess(args, env_);
  }

  std::int64_t max_log_bytes_ = 64 << 20;  ///< the agent's per-kernel output limit
  testing_util::TempDir dir_;
  std::unique_ptr<manager::Manager> manager_;
  std::unique_ptr<agent::Agent> agent_;
  std::map<std::string, std::string> env_;
};

}  // namespace bai::testing_util
