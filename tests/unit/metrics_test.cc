// SPDX-License-Identifier: Apache-2.0
// The metrics registry's text exposition (Prometheus 0.0.4): counters by label set, histograms
// with cumulative buckets, gauges set afresh by collectors at each scrape, escaping.
#include "server-reference/common/metrics/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bai::server::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, CountersAddUpByLabelSet) {
  Registry r;
  r.Counter("bai_requests_total", "Requests answered.");
  r.Add("bai_requests_total", {{"route", "/session"}, {"status", "200"}});
  r.Add("bai_requests_total", {{"route", "/session"}, {"status", "200"}});
  r.Add("bai_requests_total", {{"route", "/session"}, {"status", "404"}}, 3);
  r.Add("not_declared", {});  // ignored
  auto text = r.Render();
  EXPECT_THAT(text, HasSubstr("# HELP bai_requests_total Requests answered.\n"
                              "# TYPE bai_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("bai_requests_total{route=\"/session\",status=\"200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("bai_requests_total{route=\"/session\",status=\"404\"} 3\n"));
  EXPECT_THAT(text, Not(HasSubstr("not_declared")));
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  Registry r;
  r.Histogram("pass_seconds", "Pass time.", {0.1, 1});
  r.Observe("pass_seconds", {}, 0.05);
  r.Observe("pass_seconds", {}, 0.1);  // on the bound: in that bucket
  r.Observe("pass_seconds", {}, 0.5);
  r.Observe("pass_seconds", {}, 7);
  auto text = r.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE pass_seconds histogram\n"
                              "pass_seconds_bucket{le=\"0.1\"} 2\n"
                              "pass_seconds_bucket{le=\"1\"} 3\n"
                              "pass_seconds_bucket{le=\"+Inf\"} 4\n"
                              "pass_seconds_sum 7.65\n"
                              "pass_seconds_count 4\n"));
  r.Observe("pass_seconds", {{"group", "gpu"}}, 0.2);
  EXPECT_THAT(r.Render(), HasSubstr("pass_seconds_bucket{group=\"gpu\",le=\"1\"} 1\n"));
}

TEST(MetricsTest, GaugesAreWhatTheCollectorsSayAtEachScrape) {
  Registry r;
  r.Gauge("sessions", "Sessions by status.");
  int scrape = 0;
  r.OnCollect([&scrape](Registry& reg) {
    ++scrape;
    reg.Set("sessions", {{"status", "RUNNING"}}, scrape == 1 ? 4 : 2);
    if (scrape == 1) reg.Set("sessions", {{"status", "PENDING"}}, 1);
  });
  auto first = r.Render();
  EXPECT_THAT(first, HasSubstr("sessions{status=\"RUNNING\"} 4\n"));
  EXPECT_THAT(first, HasSubstr("sessions{status=\"PENDING\"} 1\n"));
  auto second = r.Render();
  EXPECT_THAT(second, HasSubstr("sessions{status=\"RUNNING\"} 2\n"));
  EXPECT_THAT(second, Not(HasSubstr("PENDING"))) << "a status no longer seen is not kept";
}

TEST(MetricsTest, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(RenderLabels({{"path", "a\"b\\c\nd"}}), "{path=\"a\\\"b\\\\c\\nd\"}");
  EXPECT_EQ(RenderLabels({}), "");
  Registry r;
  r.Counter("c", "line one\nline two \\");
  EXPECT_THAT(r.Render(), HasSubstr("# HELP c line one\\nline two \\\\\n"));
}

}  // namespace
}  // namespace bai::server::metrics
