// SPDX-License-Identifier: Apache-2.0
// GPU discovery through NVML loaded at run time, and the slots and devices the agent offers.
// This machine has no GPU: the library is the fake driver's libnvidia-ml.so.1
// (server-reference/gpushim/fake); the real one is checked on a GPU machine.
#include "server-reference/agent/nvml.h"

#include "server-reference/agent/agent.h"
#include "server-reference/agent/gpus.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/postgres.h"
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

TEST(NvmlTest, AgentOffersTheGpusToTheManager) {
  testing_util::TempDir dir;
  manager::ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.database = testing_util::TestDatabase();
  config.listen_port = 0;
  auto m = manager::Manager::Start(config);
  ASSERT_TRUE(m.ok());
  std::string url = "http://127.0.0.1:" + std::to_string((*m)->port());
  testing_util::BackgroundProcess agent(
      {testing_util::BinPath("bai-agent"), "--manager", url, "--id", "gpu-agent", "--backend",
       "dummy", "--cluster-secret-file", config.ClusterSecretPath(), "--nvml-library",
       BAI_FAKE_NVML, "--gpu-shares", "5", "--gpu-allocation", "fill"},
      {{"BAI_FAKE_GPU_COUNT", "2"}, {"ASAN_OPTIONS", ""}});
  EXPECT_THAT(agent.WaitForLine("NVIDIA GPU"), ::testing::HasSubstr("2 NVIDIA GPU(s)"));
  for (int i = 0; i < 200 && !(*m)->agents().Connected().count("gpu-agent"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
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

}  // namespace
}  // namespace bai::agent
