// SPDX-License-Identifier: Apache-2.0
// GPU placement (scheduler/devices.h) on its own and inside a scheduling pass: exact 0.01
// steps, never more than a device's worth on a device, whole devices kept whole, EVENLY and
// FILL.
#include "server-reference/manager/scheduler/devices.h"
#include "server-reference/manager/scheduler/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::manager::scheduler {
namespace {

using ::testing::HasSubstr;

Decimal D(char const* text) { return *Decimal::Parse(text); }

ResourceSlots Slots(std::string const& text) {
  ResourceSlots s;
  EXPECT_TRUE(protocol::ParseSlotAssignment(text, s).ok()) << text;
  return s;
}

std::vector<Device> Gpus(int n, char const* shares = "1") {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.push_back({"GPU-" + std::to_string(i), D(shares), {}, true});
  return out;
}

std::string Text(std::optional<std::vector<DeviceAllocation>> const& placed) {
  if (!placed) return "none";
  std::string out;
  for (auto const& a : *placed) {
    out += (out.empty() ? "" : " ") + a.uuid + ":" + a.slot.substr(5) + "=" + a.amount.ToString();
  }
  return out;
}

TEST(DevicePlacement, QuantumIsOneHundredth) {
  EXPECT_TRUE(OnShareQuantum(D("0.5")));
  EXPECT_TRUE(OnShareQuantum(D("2.37")));
  EXPECT_FALSE(OnShareQuantum(D("0.005")));
  EXPECT_EQ(Text(PlaceDevices(Gpus(1), Slots("cuda.shares=0.125"), DevicePolicy::kEvenly)), "none");
}

TEST(DevicePlacement, EvenlyKeepsSmallRequestsOnOneDeviceAndBestFits) {
  auto gpus = Gpus(2);
  gpus[0].used = D("0.3");  // 0.7 free
  gpus[1].used = D("0.6");  // 0.4 free
  // 0.4 fits both; the fuller device takes it, keeping the 0.7 hole for a larger request.
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=0.4"), DevicePolicy::kEvenly)),
            "GPU-1:shares=0.4");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=0.7"), DevicePolicy::kEvenly)),
            "GPU-0:shares=0.7");
  // 0.8 is free in total (0.7 + 0.4 = 1.1) but on no single device: EVENLY refuses.
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=0.8"), DevicePolicy::kEvenly)), "none");
  // FILL spreads it.
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=0.8"), DevicePolicy::kFill)),
            "GPU-0:shares=0.7 GPU-1:shares=0.1");
}

TEST(DevicePlacement, LargerThanADeviceSplitsEvenlyInHundredths) {
  auto gpus = Gpus(3);
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=2.5"), DevicePolicy::kEvenly)),
            "GPU-0:shares=0.84 GPU-1:shares=0.83 GPU-2:shares=0.83");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=2"), DevicePolicy::kEvenly)),
            "GPU-0:shares=1 GPU-1:shares=1");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=3.01"), DevicePolicy::kEvenly)), "none");
  // Five fGPU per GPU (the seed's guide): 7.5 over two devices.
  EXPECT_EQ(Text(PlaceDevices(Gpus(2, "5"), Slots("cuda.shares=7.5"), DevicePolicy::kEvenly)),
            "GPU-0:shares=3.75 GPU-1:shares=3.75");
}

TEST(DevicePlacement, WholeDevicesAreOnlyFreeOnesAndNotSharedAfterwards) {
  auto gpus = Gpus(3);
  gpus[0].used = D("0.01");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.device=2"), DevicePolicy::kEvenly)),
            "GPU-1:device=1 GPU-2:device=1");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.device=3"), DevicePolicy::kEvenly)), "none");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.device=1.5"), DevicePolicy::kEvenly)), "none");
  // Both in one request: the whole device is taken first, the fraction goes elsewhere.
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.device=1,cuda.shares=0.5"), DevicePolicy::kEvenly)),
            "GPU-1:device=1 GPU-0:shares=0.5");
  Occupy(gpus, {{kCudaDeviceSlot, "GPU-1", Decimal::FromInteger(1)}});
  EXPECT_EQ(gpus[1].used, D("1"));
  // GPU-1 is gone; of GPU-0 (0.99 free) and GPU-2 (1 free), the fuller one that fits.
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=0.99"), DevicePolicy::kEvenly)),
            "GPU-0:shares=0.99");
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=1"), DevicePolicy::kEvenly)),
            "GPU-2:shares=1");
  // A device offered whole only takes no fractions.
  gpus[2].fractional = false;
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=1"), DevicePolicy::kFill)), "none");
}

TEST(DevicePlacement, ManySmallFractionsFillADeviceExactly) {
  auto gpus = Gpus(1);
  int placed = 0;
  for (int i = 0; i < 150; ++i) {
    auto p = PlaceDevices(gpus, Slots("cuda.shares=0.07"), DevicePolicy::kEvenly);
    if (!p) break;
    Occupy(gpus, *p);
    ++placed;
  }
  EXPECT_EQ(placed, 14);  // 14 × 0.07 = 0.98; a 15th would pass 1
  EXPECT_EQ(gpus[0].used, D("0.98"));
  EXPECT_EQ(Text(PlaceDevices(gpus, Slots("cuda.shares=0.02"), DevicePolicy::kEvenly)),
            "GPU-0:shares=0.02");
}

TEST(DevicePlacement, ASchedulingPassNeverOvercommitsADevice) {
  Agent a;
  a.id = "gpu-agent";
  a.capacity = Slots("cpu=64,mem=256g,cuda.device=2,cuda.shares=2");
  a.devices = Gpus(2);
  Input in;
  in.agents = {a};
  for (int i = 0; i < 6; ++i) {
    Session s;
    s.id = "s" + std::to_string(i);
    s.requested = Slots("cpu=1,cuda.shares=0.6");
    s.enqueue_seq = i;
    s.access_key = "AK";
    in.pending.push_back(s);
  }
  auto decisions = Schedule(in);
  ASSERT_EQ(decisions.size(), 6u);
  // Three would fit the agent's total (1.8 ≤ 2), but 0.6 + 0.6 > 1 on one device: two start.
  EXPECT_TRUE(decisions[0].agent_id);
  EXPECT_TRUE(decisions[1].agent_id);
  EXPECT_EQ(Text(decisions[0].devices), "GPU-0:shares=0.6");
  EXPECT_EQ(Text(decisions[1].devices), "GPU-1:shares=0.6");
  EXPECT_FALSE(decisions[2].agent_id);
  EXPECT_THAT(decisions[2].status_info, HasSubstr("not free on their individual devices"));
}

}  // namespace
}  // namespace bai::manager::scheduler
