// SPDX-License-Identifier: Apache-2.0
// What an agent's scrape shows (SetAgentGauges): links, kernels by status, per GPU the memory
// NVML reported and the shares its kernels hold (a whole device counts as all of its shares),
// and nothing invented when NVML could not be asked.
#include "server-reference/agent/agent_metrics.h"

#include "server-reference/common/http/http_server.h"
#include "tests/testing_util/raw_http.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace ap = server::agent_protocol;

AgentScrape TwoGpus() {
  AgentScrape s;
  s.agent_id = "node1";
  s.shares_per_gpu = protocol::Decimal::FromInteger(4);
  s.gpus = {{0, "GPU-a", "H100", 80LL << 30, 3LL << 30, 37},
            {1, "GPU-b", "H100", 80LL << 30, 0, 0}};
  s.links = {{"http://m1:8081", true, true}, {"http://m2:8081", false, false}};
  ap::KernelStatus running;
  running.session_id = "s1";
  running.status = protocol::KernelStatus::kRunning;
  ap::KernelStatus preparing = running;
  preparing.session_id = "s2";
  preparing.status = protocol::KernelStatus::kPreparing;
  s.kernels = {running, preparing};
  auto half = protocol::Decimal::Parse("1.5");
  s.devices["s1"] = {{"cuda.shares", "GPU-a", *half}};
  s.devices["s2"] = {{"cuda.shares", "GPU-a", *half},
                     {"cuda.device", "GPU-b", protocol::Decimal::FromInteger(1)}};
  ap::KernelUsage u;
  u.cpu_used_ms = 2500;
  u.mem_current = 1000;
  u.mem_peak = 2000;
  u.gpu_mem = 4096;
  s.usage["s1"] = u;
  return s;
}

std::string Render(AgentScrape const& s) {
  server::metrics::Registry r;
  DeclareAgentMetrics(r);
  r.OnCollect([&s](server::metrics::Registry& reg) { SetAgentGauges(reg, s); });
  return r.Render();
}

TEST(AgentMetricsTest, GpusShowMemorySharesAndKernels) {
  auto text = Render(TwoGpus());
  EXPECT_THAT(text, HasSubstr("bai_gpu_memory_bytes{gpu=\"GPU-a\",index=\"0\",kind=\"total\"} "
                              "85899345920\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_memory_bytes{gpu=\"GPU-a\",index=\"0\",kind=\"used\"} "
                              "3221225472\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_utilization_percent{gpu=\"GPU-a\",index=\"0\"} 37\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{gpu=\"GPU-a\",index=\"0\",kind=\"capacity\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{gpu=\"GPU-a\",index=\"0\",kind=\"allocated\"} 3\n"));
  // A whole device is all four of its shares.
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{gpu=\"GPU-b\",index=\"1\",kind=\"allocated\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_kernels{gpu=\"GPU-a\",index=\"0\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_kernels{gpu=\"GPU-b\",index=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_metrics_nvml_up 1\n"));
}

TEST(AgentMetricsTest, LinksKernelsAndUsage) {
  auto text = Render(TwoGpus());
  EXPECT_THAT(text, HasSubstr("bai_agent_manager_link_up{manager=\"http://m1:8081\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_manager_link_primary{manager=\"http://m1:8081\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_manager_link_up{manager=\"http://m2:8081\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_kernels{status=\"RUNNING\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_kernels{status=\"PREPARING\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bai_agent_kernels{status=\"ERROR\"} 0\n"));  // every status shown
  EXPECT_THAT(text, HasSubstr("bai_kernel_cpu_seconds{session=\"s1\"} 2.5\n"));
  EXPECT_THAT(text, HasSubstr("bai_kernel_memory_bytes{session=\"s1\",kind=\"peak\"} 2000\n"));
  EXPECT_THAT(text, Not(HasSubstr("kind=\"limit\"")));  // none known: not shown as 0
  EXPECT_THAT(text, HasSubstr("bai_kernel_gpu_memory_bytes{session=\"s1\"} 4096\n"));
}

TEST(AgentMetricsTest, NvmlUnreadableShowsSharesButNoMemoryFigures) {
  auto s = TwoGpus();
  s.gpus_read = false;
  auto text = Render(s);
  EXPECT_THAT(text, Not(HasSubstr("bai_gpu_memory_bytes{")));
  EXPECT_THAT(text, Not(HasSubstr("bai_gpu_utilization_percent{")));
  EXPECT_THAT(text, HasSubstr("bai_gpu_shares{gpu=\"GPU-a\",index=\"0\",kind=\"allocated\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("bai_gpu_metrics_nvml_up 0\n"));
}

TEST(AgentMetricsTest, NoGpusNoGpuFamiliesSamples) {
  auto s = TwoGpus();
  s.gpus.clear();
  s.devices.clear();
  auto text = Render(s);
  EXPECT_THAT(text, Not(HasSubstr("bai_gpu_shares{")));
  EXPECT_THAT(text, Not(HasSubstr("\nbai_gpu_metrics_nvml_up ")));
}

}  // namespace
}  // namespace bai::agent

namespace bai::agent {
namespace {

// Issue 43, 5h: the scrape names every running session, so /metrics asks for a bearer token,
// and an address other hosts reach is refused without one.
TEST(AgentMetricsServerTest, MetricsAskForTheTokenAndOtherHostsNeedOne) {
  server::metrics::Registry metrics;
  DeclareAgentMetrics(metrics);
  auto open = ServeMetrics("0.0.0.0:0", metrics);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(open.status().message(), HasSubstr("--metrics-token-file"));
  auto served = ServeMetrics("127.0.0.1:0", metrics, "s3cret-token");
  ASSERT_TRUE(served.ok()) << served.status().message();
  int port = (*served)->port();
  auto get = [port](std::string const& auth) {
    return testing_util::RawHttp(
        port, "GET /metrics HTTP/1.1\r\nHost: x\r\n" + auth + "Connection: close\r\n\r\n");
  };
  auto none = get("");
  EXPECT_EQ(none.status, 401);
  EXPECT_THAT(none.body, Not(HasSubstr("bai_agent_kernels")));
  EXPECT_EQ(get("Authorization: Bearer wrong-token!\r\n").status, 401);
  EXPECT_EQ(get("Authorization: Bearer s3cret-tok\r\n").status, 401);
  auto ok = get("Authorization: Bearer s3cret-token\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_THAT(ok.body, HasSubstr("bai_agent_kernels"));
  auto health =
      testing_util::RawHttp(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.status, 200);
  (*served)->Stop();
  // On loopback without a token: open, as before.
  auto local = ServeMetrics("127.0.0.1:0", metrics);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(testing_util::RawHttp((*local)->port(),
                                  "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .status,
            200);
  (*local)->Stop();
  EXPECT_TRUE(LoopbackHost("127.0.0.1"));
  EXPECT_TRUE(LoopbackHost("::1"));
  EXPECT_FALSE(LoopbackHost("10.77.0.11"));
  EXPECT_FALSE(LoopbackHost("0.0.0.0"));
}

}  // namespace
}  // namespace bai::agent
