// SPDX-License-Identifier: Apache-2.0
// Faults of the control plane (issue "Beyond one machine"): PostgreSQL restarted under a load of
// session creates. While it is away requests fail with a retryable 503 (never a 500), they
// succeed again once it is back, and no create that was acknowledged is lost.
#include "bai/client.h"

#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

namespace bai::manager {
namespace {

using std::chrono::milliseconds;

TEST(PostgresFaultTest, ARestartUnderLoadFailsRetryablyAndLosesNoAcknowledgedCreate) {
  testing_util::ThrowawayPostgres pg;
  ASSERT_TRUE(pg.error().empty()) << pg.error();
  ASSERT_TRUE(pg.CreateDatabase("fault")) << pg.error();
  testing_util::TempDir dir;
  ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = pg.Url("fault");
  config.listen_port = 0;
  auto manager = Manager::Start(config);
  ASSERT_TRUE(manager.ok()) << manager.status().message();
  auto creds = testing_util::ReadEnvFile((*manager)->bootstrap().credentials_file);
  Options o;
  o.endpoints = {"http://127.0.0.1:" + std::to_string((*manager)->port())};
  o.access_key = creds["BACKEND_ACCESS_KEY"];
  o.secret_key = creds["BACKEND_SECRET_KEY"];
  o.retry.max_attempts = 1;  // every answer as the server gave it
  auto client = *Client::Create(o);

  std::mutex mu;
  std::map<int, int> answers;  // HTTP status → how many
  std::vector<std::string> acknowledged;
  std::vector<int> order;  // the statuses in order, to see the end
  std::atomic<bool> stop{false};
  std::thread load([&] {
    for (int i = 0; !stop; ++i) {
      std::string name = "load-" + std::to_string(i);
      ApiRequest r("POST", "/session");
      r.body = nlohmann::json{{"image", "python"}, {"name", name}, {"enqueueOnly", true}}.dump();
      auto res = client.Send(r);
      int status = res.ok() ? res->status : 0;
      std::lock_guard<std::mutex> lock(mu);
      ++answers[status];
      order.push_back(status);
      if (status == 201) acknowledged.push_back(name);
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_TRUE(pg.Restart()) << pg.error();
  std::this_thread::sleep_for(milliseconds(2000));
  stop = true;
  load.join();

  std::string seen;
  for (auto const& [status, n] : answers)
    seen += " " + std::to_string(status) + "×" + std::to_string(n);
  EXPECT_EQ(answers.count(500), 0u) << "answers:" << seen;
  for (auto const& [status, n] : answers) {
    EXPECT_TRUE(status == 201 || status == 503) << "answers:" << seen;
  }
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order.back(), 201) << "creates succeed again once the database is back; answers:"
                               << seen;
  // Every acknowledged create is in the database.
  auto& db = (*manager)->store().db();
  for (auto const& name : acknowledged) {
    auto row = db.Query("SELECT id FROM sessions WHERE name = ?", {name});
    ASSERT_TRUE(row.ok()) << row.status().message();
    EXPECT_EQ(row->size(), 1u) << name << " was acknowledged and is missing";
  }
  RecordProperty("answers", seen);
}

}  // namespace
}  // namespace bai::manager
