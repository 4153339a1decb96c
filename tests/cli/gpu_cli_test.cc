// SPDX-License-Identifier: Apache-2.0
// GPU slots end to end without a GPU: `bai session create -r cuda.shares=…` and
// `-r cuda.device=…` through the manager's scheduler to a simulated agent with two GPUs, and
// what `bai session info` shows per device. (The container side, with the shim, is in
// tests/agent/gpu_runc_test.cc.)
#include "tests/testing_util/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

namespace bai {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class GpuCliTest : public testing_util::LocalCluster {
 protected:
  void ConfigureAgent(agent::AgentOptions& o) override {
    ASSERT_TRUE(
        protocol::ParseSlotAssignment("cpu=4,mem=8g,cuda.device=2,cuda.shares=2", o.slots).ok());
    for (int i = 0; i < 2; ++i) {
      o.devices.push_back({"cuda", i, "GPU-" + std::to_string(i), "NVIDIA H100 80GB HBM3",
                           85520809984, protocol::Decimal::FromInteger(1)});
    }
  }
  std::string Devices(std::string const& session) {
    auto r = Bai({"api", "GET", "/session/" + session});  // the manager's 24.09 answer
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out, nullptr, false);
    return j.is_object() ? j.value("attachedDevices", json::object()).dump() : "";
  }
};

TEST_F(GpuCliTest, FractionsAndWholeDevicesArePlacedPerDeviceAndShown) {
  auto half = Bai({"session", "create", "python", "--name", "half", "-r", "cuda.shares=0.5"});
  ASSERT_EQ(half.exit_code, 0) << half.err;
  EXPECT_EQ(Devices("half"), R"({"cuda":[{"data":{"cuda.shares":"0.5"},"device_id":"GPU-0"}]})");
  auto info = Bai({"session", "info", "half"});
  EXPECT_THAT(info.out, HasSubstr("devices       GPU-0 cuda.shares=0.5"));

  // 0.6 does not fit beside 0.5 on GPU-0: it goes to GPU-1, whole.
  ASSERT_EQ(
      Bai({"session", "create", "python", "--name", "more", "-r", "cuda.shares=0.6"}).exit_code, 0);
  EXPECT_EQ(Devices("more"), R"({"cuda":[{"data":{"cuda.shares":"0.6"},"device_id":"GPU-1"}]})");
  // 0.5 + 0.4 free in total, but 0.6 fits neither device: it waits, and says why.
  auto wait =
      Bai({"run", "--detach", "--name", "waits", "-r", "cuda.shares=0.6", "python", "--", "true"});
  EXPECT_EQ(wait.exit_code, 0) << wait.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto waiting = Bai({"session", "info", "waits"});
  EXPECT_THAT(waiting.out, HasSubstr("PENDING"));
  EXPECT_THAT(waiting.out, HasSubstr("not free on their individual devices"));
  // No whole device is free either.
  auto whole = Bai({"session", "create", "python", "--name", "whole", "-r", "cuda.device=1",
                    "--max-wait", "1s"});
  EXPECT_NE(whole.exit_code, 0);  // gave up waiting (and cancelled its request)

  // Ending the first frees GPU-0: the waiting 0.6 starts there.
  ASSERT_EQ(Bai({"session", "rm", "half"}).exit_code, 0);
  for (int i = 0; i < 100 && Devices("waits") == "{}"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Devices("waits"), R"({"cuda":[{"data":{"cuda.shares":"0.6"},"device_id":"GPU-0"}]})");
}

TEST_F(GpuCliTest, StepsFinerThanOneHundredthAreRefused) {
  auto r = Bai({"session", "create", "python", "-r", "cuda.shares=0.125"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("a multiple of 0.01"));
  auto d = Bai({"session", "create", "python", "-r", "cuda.device=0.5"});
  EXPECT_THAT(d.err, HasSubstr("whole devices only"));
}

TEST_F(GpuCliTest, AWholeDeviceIsNotSharedAfterwards) {
  auto d = Bai({"session", "create", "python", "--name", "whole-one", "-r", "cuda.device=1"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(Devices("whole-one"), R"({"cuda":[{"data":{"cuda.device":"1"},"device_id":"GPU-0"}]})");
  ASSERT_EQ(
      Bai({"session", "create", "python", "--name", "frac-one", "-r", "cuda.shares=1"}).exit_code,
      0);
  EXPECT_EQ(Devices("frac-one"), R"({"cuda":[{"data":{"cuda.shares":"1"},"device_id":"GPU-1"}]})");
  auto none = Bai({"session", "create", "python", "--name", "none-left", "-r", "cuda.shares=0.01",
                   "--max-wait", "1s"});
  EXPECT_NE(none.exit_code, 0);
}

}  // namespace
}  // namespace bai
