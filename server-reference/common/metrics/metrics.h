// SPDX-License-Identifier: Apache-2.0
#pragma once
// Prometheus metrics of a daemon (`GET /metrics`, text exposition format 0.0.4): counters and
// histograms the daemon updates as it works, gauges read from its state at each scrape. No I/O:
// Render() returns the text.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::server::metrics {

/// Label names and values, in the order rendered.
using Labels = std::vector<std::pair<std::string, std::string>>;

/// Seconds: 1 ms … 10 s, for request and pass latencies.
std::vector<double> LatencyBuckets();

class Registry {
 public:
  /// Declares a family; its samples are added with Add, Observe or (gauges, from a collector)
  /// Set. A family declared again keeps its first declaration.
  void Counter(std::string name, std::string help);
  void Gauge(std::string name, std::string help);
  void Histogram(std::string name, std::string help,
                 std::vector<double> buckets = LatencyBuckets());

  /// Counter += by. An undeclared name is ignored (as are the wrong kinds below).
  void Add(std::string_view name, Labels const& labels, double by = 1);
  /// One observation of a histogram.
  void Observe(std::string_view name, Labels const& labels, double value);
  /// A gauge's value; meant for collectors: every gauge is cleared before they run.
  void Set(std::string_view name, Labels const& labels, double value);

  /// Runs at each Render(), to set the gauges from the daemon's state now.
  void OnCollect(std::function<void(Registry&)> collect);

  /// The text exposition of every family, in the order declared.
  std::string Render();

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Sample {
    double value = 0;                   // counter, gauge
    std::vector<std::uint64_t> counts;  // histogram: per bucket (not cumulative)
    double sum = 0;
    std::uint64_t count = 0;
  };
  struct Family {
    std::string name;
    std::string help;
    Kind kind;
    std::vector<double> buckets;
    std::map<std::string, Sample> samples;  // by rendered label set
  };
  void Declare(std::string name, std::string help, Kind kind, std::vector<double> buckets);
  Family* Find(std::string_view name, Kind kind);

  std::mutex mu_;
  std::vector<Family> families_;
  std::mutex render_mu_;  // one Render at a time (collectors, then the text)
  std::vector<std::function<void(Registry&)>> collectors_;
};

/// The request families every daemon's HTTP server feeds: `bai_http_requests_total` (method,
/// route, status) and `bai_http_request_duration_seconds` (method, route).
void DeclareHttpMetrics(Registry& metrics);
/// One answered request. `route` is its pattern, "" when none matched: then method and route
/// are `other` and `unmatched` (unknown paths are the client's words, not label values).
void ObserveHttpRequest(Registry& metrics, std::string_view method, std::string_view route,
                        int status, double seconds);

/// `{a="x",b="y"}` with values escaped (backslash, quote, newline); "" for no labels.
std::string RenderLabels(Labels const& labels);

}  // namespace bai::server::metrics
