// SPDX-License-Identifier: Apache-2.0
// A manager cut off from its PostgreSQL database (issue 25's fault tests), for real: the test
// process enters a network namespace of its own, PostgreSQL listens on its 127.0.0.1, the manager
// reaches it over TCP, and an nftables rule drops every packet to and from the database's port
// (a partition: nothing answers, nothing is reset). Requests must fail in bounded time with a
// retryable 503, never hang or 500; once the rule goes, the manager serves again with nothing
// lost. Root only (label root): namespaces and nftables.
#include "bai/client.h"

#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/private_network.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

namespace bai::manager {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

using testing_util::PrivateNetwork;
using testing_util::SystemTool;
auto* const kPrivateNetwork = ::testing::AddGlobalTestEnvironment(new PrivateNetwork);

constexpr int kPort = 55432;

// Drops every packet to or from the database's port (true), or removes the rule (false).
void Partition(bool cut) {
  std::string rules = cut ? "table inet bai_partition {\n"
                            "  chain out { type filter hook output priority 0; tcp dport " +
                                std::to_string(kPort) + " drop; tcp sport " +
                                std::to_string(kPort) + " drop; }\n}\n"
                          : "delete table inet bai_partition\n";
  std::string file = "/tmp/bai-partition-" + std::to_string(getpid()) + ".nft";
  testing_util::WriteFileBytes(file, rules);
  auto r = testing_util::RunProcess({SystemTool("nft"), "-f", file});
  std::remove(file.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(PartitionTest, AManagerCutOffFromItsDatabaseAnswers503InBoundedTimeThenRecovers) {
  if (!PrivateNetwork::error.empty()) GTEST_SKIP() << PrivateNetwork::error;
  testing_util::ThrowawayPostgres pg({}, testing_util::ThrowawayPostgres::Mode::kStart, kPort);
  ASSERT_TRUE(pg.error().empty()) << pg.error();
  ASSERT_TRUE(pg.CreateDatabase("cut")) << pg.error();
  testing_util::TempDir dir;
  ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = pg.TcpUrl("cut");
  config.listen_port = 0;
  auto manager = Manager::Start(config);
  ASSERT_TRUE(manager.ok()) << manager.status().message();
  auto creds = testing_util::ReadEnvFile((*manager)->bootstrap().credentials_file);
  Options o;
  o.endpoints = {"http://127.0.0.1:" + std::to_string((*manager)->port())};
  o.access_key = creds["BACKEND_ACCESS_KEY"];
  o.secret_key = creds["BACKEND_SECRET_KEY"];
  o.retry.max_attempts = 1;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  auto create = [&](std::string const& name) {
    ApiRequest r("POST", "/session");
    r.body = nlohmann::json{{"image", "python"}, {"name", name}, {"enqueueOnly", true}}.dump();
    auto res = client->Send(r);
    return res.ok() ? res->status : 0;
  };
  ASSERT_EQ(create("before"), 201);

  Partition(true);
  // Each request fails, retryably, within the connection's limits (10 s unanswered, 10 s for a
  // free connection), however many the manager's own loops have stuck meanwhile.
  std::vector<int> statuses;
  double worst = 0;
  for (int i = 0; i < 3; ++i) {
    auto start = steady_clock::now();
    auto future = std::async(std::launch::async, [&] {
      ApiRequest r("GET", "/session/before");
      auto res = client->Send(r);
      return res.ok() ? res->status : 0;
    });
    if (i == 0) {
      // Meanwhile /health says so (503, for a load balancer to send clients to another
      // manager) in bounded time, answered by the other I/O thread.
      std::this_thread::sleep_for(milliseconds(300));
      auto health_start = steady_clock::now();
      auto health = testing_util::RawHttp(
          (*manager)->port(), "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      EXPECT_EQ(health.status, 503) << health.body;
      EXPECT_THAT(health.body, ::testing::HasSubstr("unhealthy"));
      EXPECT_LT(steady_clock::now() - health_start, milliseconds(15000));
    }
    statuses.push_back(future.get());
    worst = std::max(worst, std::chrono::duration<double>(steady_clock::now() - start).count());
  }
  for (int s : statuses) EXPECT_EQ(s, 503) << "a partitioned request's answer";
  EXPECT_LT(worst, 25.0) << "seconds for the slowest answer during the partition";
  std::cout << "partition: answers " << statuses[0] << "/" << statuses[1] << "/" << statuses[2]
            << ", slowest " << worst << " s\n";

  Partition(false);
  // Healed: requests succeed again (asked until one does, for up to 60 s), and nothing written
  // before the partition is lost.
  auto healed = steady_clock::now();
  int status = 0;
  for (int i = 0; i < 120 && status != 201; ++i) {
    status = create("after");
    if (status != 201) std::this_thread::sleep_for(milliseconds(500));
  }
  EXPECT_EQ(status, 201);
  std::cout << "partition: first create after healing "
            << std::chrono::duration<double>(steady_clock::now() - healed).count() << " s\n";
  ApiRequest r("GET", "/session/before");
  auto before = client->Send(r);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->status, 200) << before->body;
}

}  // namespace
}  // namespace bai::manager
