// SPDX-License-Identifier: Apache-2.0
// A kernel's usage from its cgroup files (server-reference/agent/kernel_usage.h) and its trip
// through the agent protocol (heartbeat `usage`, kernel_status `usage`).
#include "server-reference/agent/kernel_usage.h"

#include "server-reference/common/wire/agent_messages.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace bai::agent {
namespace {

namespace ap = server::agent_protocol;

TEST(KernelUsageTest, CgroupV2) {
  auto u = ParseCgroupV2({"usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
                          "1048576\n", "4194304\n", "max\n",
                          "8:0 rbytes=1000 wbytes=200 rios=3 wios=1\n"
                          "8:16 rbytes=24 wbytes=0 rios=1 wios=0\n"});
  ASSERT_TRUE(u);
  EXPECT_EQ(u->cpu_used_ms, 2500);
  EXPECT_EQ(u->mem_current, 1048576);
  EXPECT_EQ(u->mem_peak, 4194304);
  EXPECT_EQ(u->mem_limit, 0);  // "max": none
  EXPECT_EQ(u->io_read, 1024);
  EXPECT_EQ(u->io_write, 200);
  EXPECT_FALSE(u->gpu_mem);
}

TEST(KernelUsageTest, CgroupV2WithoutPeakOrIo) {
  // Kernels before 5.19 have no memory.peak: the current value is the best peak known.
  auto u = ParseCgroupV2({"usage_usec 999\n", "4096", "", "1073741824\n", ""});
  ASSERT_TRUE(u);
  EXPECT_EQ(u->cpu_used_ms, 0);
  EXPECT_EQ(u->mem_peak, 4096);
  EXPECT_EQ(u->mem_limit, 1073741824);
  EXPECT_EQ(u->io_read, 0);
}

TEST(KernelUsageTest, CgroupV1) {
  auto u = ParseCgroupV1({"7000000000\n", "2097152\n", "3145728\n", "9223372036854771712\n",
                          "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Total 12288\n"
                          "8:16 Read 4096\nTotal 16384\n"});
  ASSERT_TRUE(u);
  EXPECT_EQ(u->cpu_used_ms, 7000);
  EXPECT_EQ(u->mem_current, 2097152);
  EXPECT_EQ(u->mem_peak, 3145728);
  EXPECT_EQ(u->mem_limit, 0);  // v1's "no limit"
  EXPECT_EQ(u->io_read, 8192);
  EXPECT_EQ(u->io_write, 8192);
}

TEST(KernelUsageTest, GoneOrGarbledCgroupIsUnknown) {
  EXPECT_FALSE(ParseCgroupV2({}));
  EXPECT_FALSE(ParseCgroupV2({"user_usec 5\n", "10", "", "", ""}));
  EXPECT_FALSE(ParseCgroupV2({"usage_usec x\n", "10", "", "", ""}));
  EXPECT_FALSE(ParseCgroupV1({"", "10", "", "", ""}));
  EXPECT_FALSE(ParseCgroupV1({"-5", "10", "", "", ""}));
  EXPECT_FALSE(ReadCgroupUsage(2, "/bai/no-such-kernel", "/nonexistent"));
  EXPECT_FALSE(ReadCgroupUsage(1, "/bai/no-such-kernel", "/nonexistent"));
}

TEST(KernelUsageTest, ReadsAV2CgroupDirectory) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("kernel-usage-" + std::to_string(::getpid()));
  fs::create_directories(root / "bai/k1");
  auto put = [&](char const* name, char const* text) {
    std::ofstream(root / "bai/k1" / name) << text;
  };
  put("cpu.stat", "usage_usec 1500\n");
  put("memory.current", "100\n");
  put("memory.peak", "300\n");
  put("memory.max", "1000\n");
  put("io.stat", "8:0 rbytes=5 wbytes=6\n");
  auto u = ReadCgroupUsage(2, "/bai/k1", root.string());
  fs::remove_all(root);
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, (ap::KernelUsage{1, 100, 300, 1000, 5, 6, std::nullopt}));
}

TEST(KernelUsageTest, GpuMemoryIsTheLargerOfLedgerAndNvmlPerDevice) {
  EXPECT_EQ(GpuMemoryHeld(R"({"devices":[{"uuid":"a","ledger":100,"nvml":300},)"
                          R"({"uuid":"b","ledger":50,"nvml":0}]})"),
            350);
  EXPECT_EQ(GpuMemoryHeld(R"({"devices":[]})"), 0);
  EXPECT_FALSE(GpuMemoryHeld("not json"));
  EXPECT_FALSE(GpuMemoryHeld(R"({"other":1})"));
}

TEST(KernelUsageTest, TravelsWithHeartbeatsAndKernelEnds) {
  std::string const id = "0f2c6c52-6a0e-4d1b-9c1e-2a7b1d0e4f11";
  ap::Heartbeat beat;
  beat.usage[id] = ap::KernelUsage{1, 2, 3, 4, 5, 6, 7};
  auto back = ap::DecodeToManager(ap::Encode(ap::ToManager(beat)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  auto const& got = std::get<ap::Heartbeat>(*back);
  ASSERT_EQ(got.usage.size(), 1u);
  EXPECT_EQ(got.usage.at(id), beat.usage[id]);

  ap::KernelStatus end;
  end.session_id = id;
  end.status = protocol::KernelStatus::kTerminated;
  end.usage = ap::KernelUsage{10, 20, 30, 0, 40, 50, std::nullopt};
  auto status = ap::DecodeToManager(ap::Encode(ap::ToManager(end)));
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(std::get<ap::KernelStatus>(*status).usage, end.usage);
}

TEST(KernelUsageTest, MalformedUsageIsRefusedNamingTheField) {
  auto refused = [](std::string const& text) {
    auto m = ap::DecodeToManager(text);
    return m.ok() ? std::string("accepted") : m.status().message();
  };
  std::string const id = "0f2c6c52-6a0e-4d1b-9c1e-2a7b1d0e4f11";
  EXPECT_NE(
      refused(R"({"type":"heartbeat","usage":{")" + id +
              R"(":{"cpu_used_ms":-1,"mem_current":0,"mem_peak":0,"io_read":0,"io_write":0}}})")
          .find("usage." + id + ".cpu_used_ms"),
      std::string::npos);
  EXPECT_NE(refused(R"({"type":"heartbeat","usage":{"../etc":{"cpu_used_ms":1,"mem_current":0,)"
                    R"("mem_peak":0,"io_read":0,"io_write":0}}})")
                .find("usage"),
            std::string::npos);
  EXPECT_NE(refused(R"({"type":"kernel_status","session_id":")" + id +
                    R"(","status":"TERMINATED","usage":{"cpu_used_ms":1}})")
                .find("usage.mem_current"),
            std::string::npos);
}

}  // namespace
}  // namespace bai::agent
