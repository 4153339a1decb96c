// SPDX-License-Identifier: Apache-2.0
// GPU discovery through NVML loaded at run time. This machine has no GPU: the library is a fake
// with NVML's signatures (tests/agent/fake_nvml.c); the real one is checked on a GPU machine.
#include "server-reference/agent/nvml.h"

#include "server-reference/agent/agent.h"
#include "server-reference/manager/manager.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

namespace bai::agent {
namespace {

TEST(NvmlTest, FindsDevicesThroughTheLibrary) {
  auto gpus = DiscoverNvidiaGpus(BAI_FAKE_NVML);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].index, 1);
  EXPECT_EQ((*gpus)[1].uuid, "GPU-00000000-fake-4000-8000-000000000001");
  EXPECT_EQ((*gpus)[0].memory_bytes, 85520809984LL);
  EXPECT_THAT((*gpus)[0].name, ::testing::HasSubstr("H100"));
}

TEST(NvmlTest, NoLibraryMeansNoGpus) {
  auto gpus = DiscoverNvidiaGpus("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(gpus.status().code(), StatusCode::kNotFound);
  // A library without NVML's entry points is an error, not zero GPUs.
  EXPECT_EQ(DiscoverNvidiaGpus("libc.so.6").status().code(), StatusCode::kFailedPrecondition);
}

TEST(NvmlTest, SlotsIncludeCudaDevices) {
  auto slots = DiscoverSlots(0, 2);
  EXPECT_EQ(slots["cuda.device"].ToString(), "2");
  EXPECT_FALSE(DiscoverSlots(0, 0).count("cuda.device"));
}

TEST(NvmlTest, AgentOffersTheGpusToTheManager) {
  testing_util::TempDir dir;
  manager::ManagerConfig config;
  config.data_dir = dir.path() + "/data";
  config.listen_port = 0;
  auto m = manager::Manager::Start(config);
  ASSERT_TRUE(m.ok());
  std::string url = "http://127.0.0.1:" + std::to_string((*m)->port());
  testing_util::BackgroundProcess agent({testing_util::BinPath("bai-agent"), "--manager", url,
                                         "--id", "gpu-agent", "--backend", "dummy",
                                         "--cluster-secret-file", config.ClusterSecretPath(),
                                         "--nvml-library", BAI_FAKE_NVML});
  EXPECT_THAT(agent.WaitForLine("NVIDIA GPU"), ::testing::HasSubstr("2 NVIDIA GPU(s)"));
  for (int i = 0; i < 200 && !(*m)->agents().Connected().count("gpu-agent"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  auto rows = (*m)->store().db().Query("SELECT available_slots FROM agents WHERE id = 'gpu-agent'");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  auto slots = nlohmann::json::parse((*rows)[0].Text(0));
  EXPECT_EQ(slots["cuda.device"], "2");
}

}  // namespace
}  // namespace bai::agent
