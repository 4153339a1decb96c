// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one fixture of the manager's integration tests: an in-process bai-manager of its own (a
// fresh data directory, TestDatabase(): SQLite, or PostgreSQL under the pg. tests, any port),
// its superadmin's credentials and client, and users of given roles made in one call (the
// roles fixture). A test that needs other settings changes config_ before StartManager.

#include "bai/client.h"

#include "server-reference/manager/config.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>

namespace bai::testing_util {

class ManagerFixture : public ::testing::Test {
 protected:
  ManagerFixture() {
    config_.data_dir = dir_.path() + "/data";
    config_.database = TestDatabase();
    config_.listen_port = 0;
  }

  void SetUp() override { StartManager(); }

  /// Starts the manager with config_ (again after a stop: on the same port, the same data).
  void StartManager() {
    auto m = manager::Manager::Start(config_);
    ASSERT_TRUE(m.ok()) << m.status().message();
    manager_ = std::move(*m);
    config_.listen_port = manager_->port();
    creds_ = ReadEnvFile(manager_->bootstrap().credentials_file);
    access_key_ = creds_["BACKEND_ACCESS_KEY"];
    secret_key_ = creds_["BACKEND_SECRET_KEY"];
    password_ = creds_["BAI_ADMIN_PASSWORD"];
    root_ = ClientFor(access_key_, secret_key_);
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(manager_->port()); }

  /// A client of one keypair on this manager, one attempt per request (a test sees each
  /// answer as it was).
  std::unique_ptr<Client> ClientFor(std::string const& access_key, std::string const& secret_key) {
    Options o;
    o.endpoints = {Url()};
    o.access_key = access_key;
    o.secret_key = secret_key;
    o.retry.max_attempts = 1;
    auto c = Client::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::make_unique<Client>(*std::move(c)) : nullptr;
  }

  /// A user who signed up in `domain` (name@example.com, full name `full_name` or the name)
  /// with `role` (user, admin, monitor, superadmin): its (access key, secret key).
  std::pair<std::string, std::string> AddUser(std::string const& domain, std::string const& name,
                                              std::string const& role = "user",
                                              std::string const& full_name = "") {
    std::string email = name + "@example.com";
    auto keys =
        manager_->store().SignUp(domain, email, name, "x", full_name.empty() ? name : full_name);
    EXPECT_TRUE(keys.ok()) << keys.status().message();
    if (!keys.ok()) return {};
    if (role != "user") {
      EXPECT_TRUE(manager_->store()
                      .db()
                      .Exec("UPDATE users SET role = ? WHERE email = ?", {role, email})
                      .ok());
    }
    return *keys;
  }
  /// AddUser, and a client of the new user's keypair.
  std::unique_ptr<Client> SignUp(std::string const& domain, std::string const& name,
                                 std::string const& role = "user",
                                 std::string const& full_name = "") {
    auto keys = AddUser(domain, name, role, full_name);
    return ClientFor(keys.first, keys.second);
  }

  /// A request of the superadmin's (a JSON body when given); its answer, whatever the status.
  ApiResponse Call(std::string method, std::string path, nlohmann::json body = nullptr) {
    ApiRequest r{std::move(method), std::move(path)};
    if (!body.is_null()) r.body = body.dump();
    auto response = root_->Send(r);
    EXPECT_TRUE(response.ok()) << response.status().message();
    return response.ok() ? *response : ApiResponse{};
  }

  /// Another domain beside `default`.
  void AddDomain(std::string const& name) {
    ASSERT_TRUE(manager_->store()
                    .db()
                    .Exec("INSERT INTO domains (name, created_at) VALUES (?, '2026-01-01')", {name})
                    .ok());
  }

  TempDir dir_;
  manager::ManagerConfig config_;
  std::unique_ptr<manager::Manager> manager_;
  std::map<std::string, std::string> creds_;
  std::string access_key_, secret_key_, password_;
  std::unique_ptr<Client> root_;  ///< the bootstrap superadmin's
};

}  // namespace bai::testing_util
