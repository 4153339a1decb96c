// SPDX-License-Identifier: Apache-2.0
// Usage's pure core (server-reference/manager/usage/usage.h) and its wire type
// (bai/protocol/usage_wire.h): stats in 24.09's shape, windows, reports.
#include "bai/protocol/usage_wire.h"

#include "server-reference/manager/usage/usage.h"

#include <gtest/gtest.h>

namespace bai::manager::usage {
namespace {

namespace ap = server::agent_protocol;
using nlohmann::json;

UsageRecord Record(std::string const& id, std::string const& project, std::string const& created,
                   std::optional<std::string> ended, ap::KernelUsage const& figures) {
  UsageRecord r;
  auto& s = r.row.session;
  s.id = id;
  s.name = "s-" + id;
  s.access_key = "AKIA";
  s.user_id = "u1";
  s.domain_name = "default";
  s.group_id = project;
  s.image = "python";
  s.agent_id = "agent-1";
  s.status = ended ? protocol::SessionStatus::kTerminated : protocol::SessionStatus::kRunning;
  s.created_at = created;
  s.terminated_at = ended;
  s.requested["cpu"] = protocol::Decimal::FromInteger(2);
  s.requested["mem"] = protocol::Decimal::FromInteger(1 << 30);
  s.resource_opts["shmem"] = "64m";
  s.vfolder_mounts.push_back({"data", "f1", "/vfroot/f1", "/home/work/data", "rw"});
  r.row.user_email = "u@example.com";
  r.row.group_name = "proj-" + project;
  r.row.main_kernel_id = "k-" + id;
  r.stat = StatJson(figures).dump();
  return r;
}

// cpu_util: CPU time over wall time between two samples, in percent of one core.
TEST(UsageCoreTest, CpuUtilIsCpuTimeOverWallTime) {
  EXPECT_DOUBLE_EQ(*CpuUtilPercent(1000, 2500, 1000), 150.0);
  EXPECT_DOUBLE_EQ(*CpuUtilPercent(1000, 1000, 5000), 0.0);
  EXPECT_FALSE(CpuUtilPercent(1000, 900, 1000)) << "CPU time going back says nothing";
  EXPECT_FALSE(CpuUtilPercent(1000, 2000, 0));
  auto j = StatJson({1, 2, 2, 0, 0, 0, std::nullopt}, 37.25);
  EXPECT_EQ(j["cpu_util"]["current"], "37.2");
  EXPECT_EQ(j["cpu_util"]["unit_hint"], "percent");
  EXPECT_FALSE(StatJson({1, 2, 2, 0, 0, 0, std::nullopt}).contains("cpu_util"));
}

TEST(UsageCoreTest, StatIn2409ShapeAndBack) {
  ap::KernelUsage u{1500, 100, 400, 1000, 7, 9, 4096};
  auto j = StatJson(u);
  EXPECT_EQ(j["cpu_used"]["current"], "1500");
  EXPECT_EQ(j["cpu_used"]["unit_hint"], "msec");
  EXPECT_EQ(j["mem"]["current"], "100");
  EXPECT_EQ(j["mem"]["capacity"], "1000");
  EXPECT_EQ(j["mem"]["pct"], "10.00");
  EXPECT_EQ(j["mem"]["stats.max"], "400");
  EXPECT_EQ(j["io_read"]["current"], "7");
  EXPECT_EQ(j["cuda_mem"]["current"], "4096");
  EXPECT_EQ(FromStat(j.dump()), u);
  // No limit: capacity and pct are null; no GPU: no cuda_mem.
  auto none = StatJson({1, 2, 2, 0, 0, 0, std::nullopt});
  EXPECT_TRUE(none["mem"]["capacity"].is_null());
  EXPECT_TRUE(none["mem"]["pct"].is_null());
  EXPECT_FALSE(none.contains("cuda_mem"));
  // 24.09's own stats (numbers as strings with decimals) read too; garbage reads as zero.
  auto theirs = FromStat(R"({"cpu_used":{"current":"2500.000"},"mem":{"current":"10",)"
                         R"("capacity":"20","stats.max":"15"},"io_write":{"current":"3"}})");
  EXPECT_EQ(theirs.cpu_used_ms, 2500);
  EXPECT_EQ(theirs.mem_peak, 15);
  EXPECT_EQ(theirs.io_write, 3);
  EXPECT_EQ(FromStat("nonsense"), ap::KernelUsage{});
  // Out of range or negative: nothing known, never an overflow.
  EXPECT_EQ(FromStat(R"({"cpu_used":{"current":"1e30"},"mem":{"current":-5}})").cpu_used_ms, 0);
  EXPECT_EQ(FromStat(R"({"mem":{"current":-5}})").mem_current, 0);
}

TEST(UsageCoreTest, Windows) {
  auto w = PeriodWindow("20261101", "20261130");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->start, 1793491200);           // 2026-11-01T00:00:00Z
  EXPECT_EQ(w->end - w->start, 30 * 86400);  // the end date included
  auto one = PeriodWindow("20261101", "20261101");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->end - one->start, 86400);
  EXPECT_FALSE(PeriodWindow("20261102", "20261101").ok());
  EXPECT_FALSE(PeriodWindow("20260101", "20261231").ok());  // over 100 days
  EXPECT_NE(PeriodWindow("2026-11-01", "20261130").status().message().find("start_date"),
            std::string::npos);
  EXPECT_FALSE(PeriodWindow("20260230", "20260301").ok());  // no such day
  EXPECT_TRUE(PeriodWindow("20240229", "20240301").ok());   // a leap day
  auto m = MonthWindow("202612");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->end - m->start, 31 * 86400);
  EXPECT_EQ(MonthWindow("202602")->end - MonthWindow("202602")->start, 28 * 86400);
  EXPECT_FALSE(MonthWindow("202613").ok());
  EXPECT_FALSE(MonthWindow("2026-1").ok());
}

TEST(UsageCoreTest, DurationsAndTimes) {
  EXPECT_EQ(DurationText(0), "0:00:00");
  EXPECT_EQ(DurationText(303'250'000), "0:05:03.250000");
  EXPECT_EQ(DurationText(2 * 86'400'000'000LL + 3'600'000'000LL), "2 days, 1:00:00");
  EXPECT_EQ(DurationText(86'400'000'000LL), "1 day, 0:00:00");
  EXPECT_EQ(Micros("2026-11-01T00:00:01.5+00:00"), 1793491201'500000);
  EXPECT_FALSE(Micros("yesterday"));
}

TEST(UsageCoreTest, ProjectsTotalTheirSessions) {
  std::vector<UsageRecord> records{
      Record("a", "p1", "2026-11-01T10:00:00.000000+00:00", "2026-11-01T10:05:03.250000+00:00",
             {1000, 10, 300, 0, 5, 6, std::nullopt}),
      Record("b", "p2", "2026-11-01T11:00:00.000000+00:00", std::nullopt,
             {500, 10, 200, 0, 1, 1, std::nullopt}),
      Record("c", "p1", "2026-11-01T23:00:00.000000+00:00", "2026-11-02T01:00:00.000000+00:00",
             {2000, 10, 700, 0, 5, 6, std::nullopt}),
  };
  auto projects = ProjectUsages(records);
  ASSERT_EQ(projects.size(), 2u);
  EXPECT_EQ(projects[0].project_id, "p1");
  EXPECT_EQ(projects[0].project_name, "proj-p1");
  ASSERT_EQ(projects[0].sessions.size(), 2u);
  EXPECT_EQ(projects[0].total_usage.cpu_used, 3000);
  EXPECT_EQ(projects[0].total_usage.mem_used, 1000);  // peaks summed
  EXPECT_EQ(projects[0].total_usage.cpu_allocated, 4);
  EXPECT_EQ(projects[0].total_usage.io_read, 10);
  EXPECT_EQ(projects[0].total_usage.shared_memory, 2 * (64 << 20));
  EXPECT_EQ(projects[0].total_usage.nfs, std::vector<std::string>{"/vfroot/f1"});  // once
  auto const& a = projects[0].sessions[0];
  EXPECT_EQ(a.used_time, "0:05:03.250000");
  EXPECT_EQ(a.used_days, 1);
  EXPECT_EQ(projects[0].sessions[1].used_days, 2);  // over midnight
  EXPECT_FALSE(projects[1].sessions[0].used_time);  // still running
  EXPECT_EQ(projects[1].sessions[0].total_usage.cpu_used, 500);

  // The wire: what the manager encodes, the SDK decodes, field for field.
  auto text = protocol::EncodeProjectUsages(projects);
  auto j = json::parse(text);
  EXPECT_EQ(j[0]["group_unit"], "project");
  EXPECT_EQ(j[0]["sessions"]["a"]["group_unit"], "session");
  EXPECT_EQ(j[0]["sessions"]["a"]["kernels"]["k-a"]["group_unit"], "kernel");
  EXPECT_EQ(j[0]["sessions"]["a"]["last_stat"]["cpu_used"]["current"], "1000");
  auto back = protocol::DecodeProjectUsages(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  auto const& ba = (*back)[0].sessions[0];
  EXPECT_EQ(ba.session_id, "a");
  EXPECT_EQ(ba.kernel_id, "k-a");
  EXPECT_EQ(ba.user_email, "u@example.com");
  EXPECT_EQ(ba.used_time, a.used_time);
  EXPECT_EQ(ba.total_usage.cpu_used, 1000);
  EXPECT_EQ((*back)[0].total_usage.mem_used, 1000);
  EXPECT_FALSE(protocol::DecodeProjectUsages("{}").ok());

  // usage/month's shape, as the 22.03 client prints it.
  auto month = MonthGroups(projects);
  EXPECT_EQ(month[0]["g_id"], "p1");
  EXPECT_EQ(month[0]["g_cpu_used"], 3000.0);
  EXPECT_EQ(month[0]["c_infos"].size(), 2u);
  EXPECT_EQ(month[0]["c_infos"][0]["name"], "s-a");
  EXPECT_EQ(month[1]["c_infos"][0]["terminated_at"], "None");
}

TEST(UsageCoreTest, MonthlyBinsCountEveryBinASessionTouches) {
  std::int64_t now = 1793491200 + 3600;  // 2026-11-01T01:00:00Z
  std::vector<UsageRecord> records{
      // 00:00 to 00:20: bins 00:00 and 00:15.
      Record("a", "p1", "2026-11-01T00:00:00+00:00", "2026-11-01T00:20:00+00:00",
             {0, 0, 0, 0, 100, 0, std::nullopt}),
      // Running since 00:50: bins 00:45 and 01:00 (now).
      Record("b", "p1", "2026-11-01T00:50:00+00:00", std::nullopt, {}),
      // Long before the 30 days: nowhere.
      Record("c", "p1", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00", {}),
  };
  auto bins = MonthlyBins(records, now);
  ASSERT_EQ(bins.size(), 2880u);
  std::int64_t start = now - 2880 * 900;
  auto at = [&](std::int64_t t) -> json const& { return bins[(t - start) / 900]; };
  EXPECT_EQ(at(1793491200)["num_sessions"]["value"], 1);
  EXPECT_EQ(at(1793491200)["io_read_bytes"]["value"], 100);
  EXPECT_EQ(at(1793491200)["cpu_allocated"]["value"], 2.0);
  EXPECT_EQ(at(1793491200 + 900)["num_sessions"]["value"], 1);
  EXPECT_EQ(at(1793491200 + 1800)["num_sessions"]["value"], 0);
  EXPECT_EQ(at(1793491200 + 2700)["num_sessions"]["value"], 1);
  EXPECT_EQ(bins[2879]["num_sessions"]["value"], 1);
  EXPECT_EQ(bins[2879]["mem_allocated"]["unit_hint"], "bytes");
  EXPECT_EQ(bins[0]["num_sessions"]["value"], 0);
}

}  // namespace
}  // namespace bai::manager::usage
