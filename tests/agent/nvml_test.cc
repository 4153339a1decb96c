// SPDX-License-Identifier: Apache-2.0
// GPU discovery through NVML loaded at run time, and the slots and devices the agent offers.
// This machine has no GPU: the library is the fake driver's libnvidia-ml.so.1
// (server-reference/gpushim/fake); the real one is checked on a GPU machine.
#include "server-reference/agent/nvml.h"

#include "bai/client.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/gpus.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
#include "tests/testing_util/raw_http.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

namespace bai::agent {
namespace {

TEST(NvmlTest, FindsDevicesThroughTheLibrary) {
  ::setenv("BAI_FAKE_GPU_COUNT", "2", 1);  // read when the fake first maps its state
  auto gpus = DiscoverNvidiaGpus(BAI_FAKE_NVML);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].index, 1);
  EXPECT_EQ((*gpus)[1].uuid, "GPU-b58cbfff-a7f3-2498-9d0d-4f988f981201");
  EXPECT_EQ((*gpus)[0].memory_bytes, 85520809984LL);
  EXPECT_THAT((*gpus)[0].name, ::testing::HasSubstr("H100"));
}

TEST(NvmlTest, NoLibraryMeansNoGpus) {
  auto gpus = DiscoverNvidiaGpus("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(gpus.status().code(), StatusCode::kNotFound);
  // A library without NVML's entry points is an error, not zero GPUs.
  EXPECT_EQ(DiscoverNvidiaGpus("libc.so.6").status().code(), StatusCode::kFailedPrecondition);
}

TEST(NvmlTest, GpusOfferWholeDevicesAndShares) {
  GpuSharing sharing;
  sharing.shares_per_gpu = protocol::Decimal::FromInteger(5);
  auto slots = DiscoverSlots(0);
  EXPECT_FALSE(slots.count("cuda.device"));
  AddGpuSlots(slots, 0, sharing);
  EXPECT_FALSE(slots.count("cuda.device"));  // no GPUs: nothing changes
  AddGpuSlots(slots, 2, sharing);
  EXPECT_EQ(slots["cuda.device"].ToString(), "2");
  EXPECT_EQ(slots["cuda.shares"].ToString(), "10");
  sharing.mode = "off";
  auto whole = DiscoverSlots(0);
  AddGpuSlots(whole, 2, sharing);
  EXPECT_EQ(whole["cuda.device"].ToString(), "2");
  EXPECT_FALSE(whole.count("cuda.shares"));
}

// A manager on a free port (its data in a temporary directory) for an agent process to join.
struct ManagerForAgents {
  testing_util::TempDir dir;
  manager::ManagerConfig config = [this] {
    manager::ManagerConfig c;
    c.data_dir = dir.path() + "/data";
    c.database = testing_util::TestDatabase();
    c.listen_port = 0;
    return c;
  }();
  StatusOr<std::unique_ptr<manager::Manager>> manager = manager::Manager::Start(config);
  std::string Url() const { return "http://127.0.0.1:" + std::to_string((*manager)->port()); }
  /// Until the agent `id` is linked (5 s at most).
  void WaitConnected(std::string const& id) const {
    for (int i = 0; i < 200 && !(*manager)->agents().Connected().count(id); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
};

TEST(NvmlTest, AgentOffersTheGpusToTheManager) {
  ManagerForAgents fixture;
  auto& config = fixture.config;
  auto& m = fixture.manager;
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::string url = fixture.Url();
  testing_util::BackgroundProcess agent(
      {testing_util::BinPath("bai-agent"), "--manager", url, "--id", "gpu-agent", "--backend",
       "dummy", "--cluster-secret-file", config.ClusterSecretPath(), "--nvml-library",
       BAI_FAKE_NVML, "--gpu-shares", "5", "--gpu-allocation", "fill"},
      {{"BAI_FAKE_GPU_COUNT", "2"}, {"ASAN_OPTIONS", ""}});
  EXPECT_THAT(agent.WaitForLine("NVIDIA GPU"), ::testing::HasSubstr("2 NVIDIA GPU(s)"));
  fixture.WaitConnected("gpu-agent");
  auto rows = (*m)->store().db().Query(
      "SELECT available_slots, devices FROM agents WHERE id = 'gpu-agent'");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  auto slots = nlohmann::json::parse((*rows)[0].Text(0));
  EXPECT_EQ(slots["cuda.device"], "2");
  EXPECT_EQ(slots["cuda.shares"], "10");
  auto devices = nlohmann::json::parse((*rows)[0].Text(1));
  EXPECT_EQ(devices["policy"], "fill");
  ASSERT_EQ(devices["devices"].size(), 2u);
  EXPECT_EQ(devices["devices"][1]["uuid"], "GPU-b58cbfff-a7f3-2498-9d0d-4f988f981201");
  EXPECT_EQ(devices["devices"][1]["shares"], "5");
}

// bai-agent --metrics-listen (docs/operations.md, "Metrics"): its links, kernels and, per GPU,
// NVML's memory figures and the shares its kernels hold, read at each scrape.
TEST(NvmlTest, TheAgentServesMetricsOfItsGpusKernelsAndLinks) {
  ManagerForAgents fixture;
  auto& config = fixture.config;
  auto& m = fixture.manager;
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::string url = fixture.Url();
  testing_util::BackgroundProcess agent(
      {testing_util::BinPath("bai-agent"), "--manager", url + ",http://127.0.0.1:1", "--id",
       "metrics-agent", "--backend", "dummy", "--cluster-secret-file", config.ClusterSecretPath(),
       "--nvml-library", BAI_FAKE_NVML, "--gpu-shares", "5", "--gpu-allocation", "fill", "--slots",
       "cpu=4,mem=8g", "--metrics-listen", "127.0.0.1:0"},
      {{"BAI_FAKE_GPU_COUNT", "2"}, {"ASAN_OPTIONS", ""}});
  auto line = agent.WaitForLine("/metrics");
  ASSERT_FALSE(line.empty()) << agent.Transcript();
  int port = std::stoi(line.substr(line.rfind(':') + 1));
  fixture.WaitConnected("metrics-agent");
  Options o;
  o.endpoints = {url};
  auto env = testing_util::ReadEnvFile((*m)->bootstrap().credentials_file);
  o.access_key = env["BACKEND_ACCESS_KEY"];
  o.secret_key = env["BACKEND_SECRET_KEY"];
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  // 2.5 shares fill GPU 0 (5 shares a GPU); a whole device goes to GPU 1.
  for (auto const& [name, resources] :
       {std::pair{"half", nlohmann::json{{"cpu", 1}, {"cuda.shares", "2.5"}}},
        std::pair{"whole", nlohmann::json{{"cpu", 1}, {"cuda.device", 1}}}}) {
    ApiRequest r("POST", "/session");
    r.body =
        nlohmann::json{{"name", name}, {"image", "python"}, {"config", {{"resources", resources}}}}
            .dump();
    auto created = client->Send(r);
    ASSERT_TRUE(created.ok()) << created.status().message();
    ASSERT_EQ(created->status, 201) << created->body;
  }
  auto scrape = [port] {
    return testing_util::RawHttp(port,
                                 "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  };
  std::string text;
  for (int i = 0; i < 100; ++i) {
    auto r = scrape();
    ASSERT_EQ(r.status, 200);
    text = r.body;
    if (text.find("bai_agent_kernels{status=\"RUNNING\"} 2\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  using ::testing::HasSubstr;
  EXPECT_THAT(text, HasSubstr("bai_agent_kernels{status=\"RUNNING\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_manager_link_up{manager=\"" + url + "\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_manager_link_primary{manager=\"" + url + "\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_manager_link_up{manager=\"http://127.0.0.1:1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_slots{slot=\"cuda.shares\"} 10\n"));
  std::string gpu0 = "gpu=\"GPU-b58cbfff-a7f3-2498-9d0d-4f988f981200\",index=\"0\"";
  std::string gpu1 = "gpu=\"GPU-b58cbfff-a7f3-2498-9d0d-4f988f981201\",index=\"1\"";
  EXPECT_THAT(text, HasSubstr("bai_gpu_memory_bytes{" + gpu0 + ",kind=\"total\"} 85520809984\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_memory_bytes{" + gpu0 + ",kind=\"used\"} "));
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{" + gpu0 + ",kind=\"capacity\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{" + gpu0 + ",kind=\"allocated\"} 2.5\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{" + gpu1 + ",kind=\"allocated\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_kernels{" + gpu1 + "} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_metrics_nvml_up 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_kernel_cpu_seconds{session=\""));
  // The scrapes themselves are counted (an answer is counted once it is given).
  EXPECT_THAT(scrape().body, HasSubstr("bai_http_requests_total{method=\"GET\",route=\"/"
                                       "metrics\",status=\"200\"}"));
  // Only /metrics and /health are served; anything else is a 404.
  EXPECT_EQ(
      testing_util::RawHttp(port, "GET /session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
          .status,
      404);
  EXPECT_EQ(agent.Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace bai::agent
