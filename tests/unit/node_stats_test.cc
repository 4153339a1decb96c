// SPDX-License-Identifier: Apache-2.0
// The node load an agent sends with its heartbeats (server-reference/agent/node_stats.h): the
// /proc parsers and the difference of two CPU samples.
#include "server-reference/agent/node_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::agent {
namespace {

TEST(NodeStatsTest, ParsesProcStatAndMeminfo) {
  auto cpu = ParseProcStat(
      "cpu  100 0 100 700 100 0 0 0 0 0\n"
      "cpu0 50 0 50 350 50 0 0 0 0 0\n"
      "cpu1 50 0 50 350 50 0 0 0 0 0\n"
      "intr 1 2 3\nctxt 99\n");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->node.total, 1000u);
  EXPECT_EQ(cpu->node.busy, 200u) << "idle and iowait are not busy";
  ASSERT_EQ(cpu->cores.size(), 2u);
  EXPECT_EQ(cpu->cores[1].total, 500u);
  EXPECT_FALSE(ParseProcStat("intr 1\n"));

  auto mem = ParseMeminfo("MemTotal:       16384 kB\nMemFree:  100 kB\nMemAvailable:   4096 kB\n");
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->total, 16384 * 1024);
  EXPECT_EQ(mem->available, 4096 * 1024);
  EXPECT_FALSE(ParseMeminfo("MemTotal: 1 kB\n")) << "no MemAvailable";
}

TEST(NodeStatsTest, LoadIsTheBusyShareBetweenSamples) {
  CpuTimes before{{200, 1000}, {{100, 500}, {100, 500}}};
  CpuTimes after{{500, 2000}, {{350, 1000}, {150, 1000}}};  // core 0 half busy, core 1 a tenth
  auto load = Load(before, after, MemInfo{1000, 250});
  EXPECT_DOUBLE_EQ(load.cpu_pct, 30.0);
  ASSERT_EQ(load.core_pct.size(), 2u);
  EXPECT_DOUBLE_EQ(load.core_pct[0], 50.0);
  EXPECT_DOUBLE_EQ(load.core_pct[1], 10.0);
  EXPECT_EQ(load.mem_used, 750);
  EXPECT_EQ(load.mem_total, 1000);
  // Counters that went backwards (a CPU brought back online) read as idle, never negative.
  auto odd = Load(after, before, MemInfo{10, 20});
  EXPECT_DOUBLE_EQ(odd.cpu_pct, 0.0);
  EXPECT_EQ(odd.mem_used, 0);
}

TEST(NodeStatsTest, TheSamplerReadsThisMachine) {
  NodeSampler sampler;
  auto first = sampler.Sample();
  ASSERT_TRUE(first) << "/proc is readable here";
  EXPECT_GT(first->mem_total, 0);
  EXPECT_GE(first->cpu_pct, 0.0);
  EXPECT_LE(first->cpu_pct, 100.0);
  EXPECT_FALSE(first->core_pct.empty());
  auto second = sampler.Sample();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->core_pct.size(), first->core_pct.size());
}

}  // namespace
}  // namespace bai::agent
