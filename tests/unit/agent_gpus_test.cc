// SPDX-License-Identifier: Apache-2.0
// The agent's CUDA plugin, pure parts: what a kernel's container gets for the devices the
// scheduler gave it (limits file, ledger caps, CUDA_VISIBLE_DEVICES, MPS settings), and the
// time quanta kernels on one GPU hold.
#include "server-reference/agent/gpus.h"
#include "server-reference/gpushim/core/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::agent {
namespace {

using protocol::Decimal;
using ::testing::HasSubstr;

constexpr std::int64_t kH100 = 85520809984;  // NVML's total

std::vector<GpuDevice> Gpus() {
  return {{0, "GPU-a", "NVIDIA H100 80GB HBM3", kH100},
          {1, "GPU-b", "NVIDIA H100 80GB HBM3", kH100}};
}

server::DeviceAllocation Shares(std::string uuid, char const* amount) {
  return {"cuda.shares", std::move(uuid), *Decimal::Parse(amount)};
}

TEST(AgentGpus, AFractionGetsItsMemoryAndTimeAndAShim) {
  GpuSharing sharing;
  sharing.shares_per_gpu = Decimal::FromInteger(5);  // 1 fGPU = 0.2 GPU
  sharing.context_bytes = 512 << 20;
  QuantaMap quanta;
  auto plan = PlanGpus(Gpus(), {Shares("GPU-b", "0.5")}, sharing, quanta);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->devices.size(), 1u);
  EXPECT_EQ(plan->devices[0].index, 1);
  EXPECT_EQ(plan->env.at("CUDA_VISIBLE_DEVICES"), "0");  // container-local ordinal
  // 0.5 fGPU of 5 per GPU: a tenth of the memory and of the time.
  std::uint64_t cap = static_cast<std::uint64_t>(kH100 / 10);
  ASSERT_EQ(plan->ledger.size(), 1u);
  EXPECT_EQ(plan->ledger[0].uuid, "GPU-b");
  EXPECT_EQ(plan->ledger[0].limit_bytes, cap);
  auto parsed = gpushim::ParseConfig(plan->limits);
  ASSERT_EQ(parsed.error, "") << plan->limits;
  EXPECT_EQ(parsed.config.mode, gpushim::SharingMode::kTimeslice);
  EXPECT_EQ(parsed.config.context_bytes, 512u << 20);
  EXPECT_EQ(parsed.config.ledger_path, kLedgerInKernel);
  ASSERT_EQ(parsed.config.devices.size(), 1u);
  EXPECT_EQ(parsed.config.devices[0].uuid, "GPU-b");
  EXPECT_EQ(parsed.config.devices[0].memory_bytes, cap);
  EXPECT_EQ(parsed.config.devices[0].quanta.count(), 100u);  // 0.1 of 1000
  EXPECT_EQ(quanta.Free("GPU-b"), 900u);
  EXPECT_EQ(quanta.Free("GPU-a"), 1000u);
}

TEST(AgentGpus, WholeDevicesGetNoShim) {
  QuantaMap quanta;
  auto plan = PlanGpus(Gpus(),
                       {{"cuda.device", "GPU-a", Decimal::FromInteger(1)},
                        {"cuda.device", "GPU-b", Decimal::FromInteger(1)}},
                       GpuSharing{}, quanta);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->limits, "");
  EXPECT_EQ(plan->env.at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_TRUE(plan->quanta.empty());
}

TEST(AgentGpus, KernelsOnOneGpuNeverShareAnInstant) {
  GpuSharing sharing;
  QuantaMap quanta;
  std::vector<Quanta> held;
  for (char const* amount : {"0.3", "0.25", "0.45"}) {
    auto plan = PlanGpus(Gpus(), {Shares("GPU-a", amount)}, sharing, quanta);
    ASSERT_TRUE(plan.ok()) << amount;
    held.push_back(plan->quanta.at("GPU-a"));
  }
  EXPECT_EQ(held[0].count(), 300u);
  EXPECT_EQ(held[1].count(), 250u);
  EXPECT_EQ(held[2].count(), 450u);
  EXPECT_TRUE((held[0] & held[1]).none());
  EXPECT_TRUE((held[1] & held[2]).none());
  EXPECT_TRUE((held[0] & held[2]).none());
  EXPECT_EQ(quanta.Free("GPU-a"), 0u);
  // Full: the next one is refused and nothing is taken.
  auto more = PlanGpus(Gpus(), {Shares("GPU-a", "0.01")}, sharing, quanta);
  EXPECT_EQ(more.status().code(), StatusCode::kFailedPrecondition);
  quanta.Give("GPU-a", held[1]);
  EXPECT_EQ(quanta.Free("GPU-a"), 250u);
  // The freed middle stretch is reused in one piece.
  auto again = PlanGpus(Gpus(), {Shares("GPU-a", "0.2")}, sharing, quanta);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(gpushim::FormatQuanta(held[1]), "300-549");
  EXPECT_EQ(gpushim::FormatQuanta(again->quanta.at("GPU-a")), "300-499");
  EXPECT_FALSE(quanta.Hold("GPU-a", held[0]));  // already held: a clash is reported
}

TEST(AgentGpus, MpsModeSetsThreadsAndPinnedMemory) {
  GpuSharing sharing;
  sharing.mode = "mps";
  sharing.shares_per_gpu = Decimal::FromInteger(4);
  QuantaMap quanta;
  // A whole GPU and a quarter of another: the quarter is what MPS limits.
  auto plan =
      PlanGpus(Gpus(), {{"cuda.device", "GPU-a", Decimal::FromInteger(1)}, Shares("GPU-b", "1")},
               sharing, quanta);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  std::string mib = std::to_string((kH100 / 4) >> 20);
  EXPECT_EQ(plan->env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "1=" + mib + "M");
  EXPECT_EQ(plan->env.at("CUDA_MPS_PIPE_DIRECTORY"), "/opt/bai/mps/pipe");
  EXPECT_THAT(plan->limits, HasSubstr("mode=mps"));
  EXPECT_TRUE(plan->quanta.empty());  // MPS divides the SMs; no time quanta
}

TEST(AgentGpus, MpsFractionsStayOnOneGpuAndEachGpuHasItsDaemon) {
  GpuSharing sharing;
  sharing.mode = "mps";
  QuantaMap quanta;
  auto two = PlanGpus(Gpus(), {Shares("GPU-a", "0.5"), Shares("GPU-b", "0.5")}, sharing, quanta);
  EXPECT_THAT(two.status().message(), HasSubstr("must be on one GPU"));
  auto one = PlanGpus(Gpus(), {Shares("GPU-b", "0.5")}, sharing, quanta);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->mps_uuid, "GPU-b");
  auto daemons = PlanMpsDaemons(Gpus(), "/var/lib/bai-agent/a1");
  ASSERT_EQ(daemons.size(), 2u);
  EXPECT_EQ(daemons[1].dir, "/var/lib/bai-agent/a1/mps/GPU-b");
  EXPECT_EQ(daemons[1].start, (std::vector<std::string>{
                                  "/usr/bin/env", "CUDA_VISIBLE_DEVICES=GPU-b",
                                  "CUDA_MPS_PIPE_DIRECTORY=/var/lib/bai-agent/a1/mps/GPU-b/pipe",
                                  "CUDA_MPS_LOG_DIRECTORY=/var/lib/bai-agent/a1/mps/GPU-b/log",
                                  "nvidia-cuda-mps-control", "-d"}));
  EXPECT_EQ(daemons[1].stop.back(), "nvidia-cuda-mps-control");
}

TEST(AgentGpus, SoftModeGivesEachKernelItsActivityStamp) {
  GpuSharing sharing;
  sharing.compute = "soft";
  QuantaMap quanta;
  auto plan = PlanGpus(Gpus(), {Shares("GPU-b", "0.5")}, sharing, quanta, "sess-1");
  ASSERT_TRUE(plan.ok());
  auto parsed = gpushim::ParseConfig(plan->limits);
  ASSERT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.config.compute, gpushim::ComputeMode::kSoft);
  EXPECT_EQ(parsed.config.devices[0].activity_dir, std::string(kActivityInKernel) + "/0");
  EXPECT_EQ(parsed.config.devices[0].activity_self, "sess-1");
  ASSERT_EQ(plan->activity.size(), 1u);
  EXPECT_EQ(plan->activity[0].second, "GPU-b");
}

TEST(AgentGpus, BadAllocationsAreRefusedAndTakeNothing) {
  GpuSharing sharing;
  QuantaMap quanta;
  EXPECT_THAT(PlanGpus(Gpus(), {Shares("GPU-z", "0.5")}, sharing, quanta).status().message(),
              HasSubstr("no GPU GPU-z"));
  EXPECT_THAT(PlanGpus(Gpus(), {Shares("GPU-a", "0.5"), Shares("GPU-b", "1.5")}, sharing, quanta)
                  .status()
                  .message(),
              HasSubstr("more than one GPU's worth"));
  EXPECT_EQ(quanta.Free("GPU-a"), 1000u);  // the first device's quanta were given back
  sharing.mode = "off";
  EXPECT_THAT(PlanGpus(Gpus(), {Shares("GPU-a", "0.5")}, sharing, quanta).status().message(),
              HasSubstr("sharing is off"));
}

TEST(AgentGpus, OptionsAreChecked) {
  GpuSharing s;
  EXPECT_TRUE(ValidateGpuSharing(s).ok());
  s.mode = "vgpu";
  EXPECT_THAT(ValidateGpuSharing(s).message(), HasSubstr("--gpu-sharing"));
  s = {};
  s.shares_per_gpu = *Decimal::Parse("0.5");
  EXPECT_THAT(ValidateGpuSharing(s).message(), HasSubstr("--gpu-shares"));
  s = {};
  s.policy = "random";
  EXPECT_THAT(ValidateGpuSharing(s).message(), HasSubstr("--gpu-allocation"));
}

}  // namespace
}  // namespace bai::agent
