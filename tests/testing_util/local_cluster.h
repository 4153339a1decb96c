// SPDX-License-Identifier: Apache-2.0
#pragma once
// A test fixture with a whole cluster in the test process: bai-manager on a free port and one
// dummy agent (cpu=4, mem=8g; jobs take 100 ms), plus the environment that points `bai` and the
// examples at it (the superadmin's keypair), and the superadmin's client with request helpers.

#include "bai/client.h"
#include "bai/protocol/resource.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/dummy_backend.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace bai::testing_util {

class LocalCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    manager::ManagerConfig config;
    config.data_dir = dir_.path() + "/data";
    config.database = testing_util::TestDatabase();
    config.listen_port = 0;
    ConfigureManager(config);
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
    root_ = ClientFor(env_["BACKEND_ACCESS_KEY"], env_["BACKEND_SECRET_KEY"]);
  }

  /// A client of the cluster with these keys, one attempt per request (a test sees every
  /// answer as the server gave it).
  std::unique_ptr<Client> ClientFor(std::string const& access_key, std::string const& secret_key) {
    Options o;
    o.endpoints = {env_["BACKEND_ENDPOINT"]};
    o.access_key = access_key;
    o.secret_key = secret_key;
    o.retry.max_attempts = 1;
    return std::make_unique<Client>(*Client::Create(o));
  }

  /// One request as `client`; its answer (an empty one, the failure recorded, when none came).
  static ApiResponse Send(Client const& client, std::string const& method, std::string const& path,
                          nlohmann::json const& body = {}) {
    ApiRequest r(method, path);
    if (!body.is_null()) r.body = body.dump();
    auto res = client.Send(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : ApiResponse{};
  }
  /// The same as the superadmin.
  ApiResponse Send(std::string const& method, std::string const& path,
                   nlohmann::json const& body = {}) {
    return Send(*root_, method, path, body);
  }

  /// GET /session/{name} as the superadmin (24.09's camelCase).
  nlohmann::json Session(std::string const& name) {
    return nlohmann::json::parse(Send("GET", "/session/" + name).body, nullptr, false);
  }

  /// Waits until the session's status is `status` (the scheduler runs every few seconds and
  /// after each creation); its last answer.
  nlohmann::json WaitFor(std::string const& name, std::string const& status,
                         std::chrono::seconds limit = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    nlohmann::json s;
    while (std::chrono::steady_clock::now() < deadline) {
      s = Session(name);
      if (s.value("status", "") == status) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << name << " never became " << status << ": " << s.dump();
    return s;
  }

  /// A test's changes to the simulated agent (slots, devices) before it starts.
  virtual void ConfigureAgent(agent::AgentOptions&) {}
  /// A test's changes to the manager's configuration before it starts.
  virtual void ConfigureManager(manager::ManagerConfig&) {}

  /// The CLI as the superadmin, `input` on its standard input.
  testing_util::ProcessResult Bai(std::vector<std::string> args, std::string const& input = {}) {
    args.insert(args.begin(), testing_util::BinPath("bai"));
    return testing_util::RunProcess(args, env_, input);
  }

  std::int64_t max_log_bytes_ = 64 << 20;  ///< the agent's per-kernel output limit
  testing_util::TempDir dir_;
  std::unique_ptr<manager::Manager> manager_;
  std::unique_ptr<agent::Agent> agent_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<Client> root_;  ///< the superadmin's client
};

}  // namespace bai::testing_util
