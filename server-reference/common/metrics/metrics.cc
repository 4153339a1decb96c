// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/metrics/metrics.h"

#include <cmath>
#include <cstdio>

namespace bai::server::metrics {

namespace {

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Help text: backslash and newline escaped.
std::string EscapeHelp(std::string const& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// A label set with one more label appended (histogram buckets' `le`).
std::string WithLabel(std::string const& set, std::string const& name, std::string const& value) {
  std::string label = name + "=\"" + value + "\"";
  if (set.empty()) return "{" + label + "}";
  return set.substr(0, set.size() - 1) + "," + label + "}";
}

}  // namespace

std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::string RenderLabels(Labels const& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first;
    out += "=\"";
    for (char c : labels[i].second) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '"') {
        out += "\\\"";
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += '"';
  }
  return out + "}";
}

void Registry::Declare(std::string name, std::string help, Kind kind, std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto const& f : families_) {
    if (f.name == name) return;
  }
  families_.push_back({std::move(name), std::move(help), kind, std::move(buckets), {}});
}

void Registry::Counter(std::string name, std::string help) {
  Declare(std::move(name), std::move(help), Kind::kCounter, {});
}

void Registry::Gauge(std::string name, std::string help) {
  Declare(std::move(name), std::move(help), Kind::kGauge, {});
}

void Registry::Histogram(std::string name, std::string help, std::vector<double> buckets) {
  Declare(std::move(name), std::move(help), Kind::kHistogram, std::move(buckets));
}

Registry::Family* Registry::Find(std::string_view name, Kind kind) {
  for (auto& f : families_) {
    if (f.name == name) return f.kind == kind ? &f : nullptr;
  }
  return nullptr;
}

void Registry::Add(std::string_view name, Labels const& labels, double by) {
  std::string key = RenderLabels(labels);
  std::lock_guard<std::mutex> lock(mu_);
  if (Family* f = Find(name, Kind::kCounter)) f->samples[key].value += by;
}

void Registry::Set(std::string_view name, Labels const& labels, double value) {
  std::string key = RenderLabels(labels);
  std::lock_guard<std::mutex> lock(mu_);
  if (Family* f = Find(name, Kind::kGauge)) f->samples[key].value = value;
}

void Registry::Observe(std::string_view name, Labels const& labels, double value) {
  std::string key = RenderLabels(labels);
  std::lock_guard<std::mutex> lock(mu_);
  Family* f = Find(name, Kind::kHistogram);
  if (!f) return;
  auto& s = f->samples[key];
  s.counts.resize(f->buckets.size() + 1);  // the last: above every bucket (+Inf only)
  std::size_t i = 0;
  while (i < f->buckets.size() && value > f->buckets[i]) ++i;
  ++s.counts[i];
  s.sum += value;
  ++s.count;
}

void Registry::OnCollect(std::function<void(Registry&)> collect) {
  std::lock_guard<std::mutex> lock(render_mu_);
  collectors_.push_back(std::move(collect));
}

std::string Registry::Render() {
  std::lock_guard<std::mutex> render(render_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& f : families_) {
      if (f.kind == Kind::kGauge) f.samples.clear();
    }
  }
  for (auto const& collect : collectors_) collect(*this);
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (auto const& f : families_) {
    char const* type = f.kind == Kind::kCounter ? "counter"
                       : f.kind == Kind::kGauge ? "gauge"
                                                : "histogram";
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + type + "\n";
    for (auto const& [labels, s] : f.samples) {
      if (f.kind != Kind::kHistogram) {
        out += f.name + labels + " " + Number(s.value) + "\n";
        continue;
      }
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += s.counts[i];
        out += f.name + "_bucket" + WithLabel(labels, "le", Number(f.buckets[i])) + " " +
               std::to_string(cumulative) + "\n";
      }
      out += f.name + "_bucket" + WithLabel(labels, "le", "+Inf") + " " + std::to_string(s.count) +
             "\n";
      out += f.name + "_sum" + labels + " " + Number(s.sum) + "\n";
      out += f.name + "_count" + labels + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

void DeclareHttpMetrics(Registry& metrics) {
  metrics.Counter("bai_http_requests_total", "Requests answered, by method, route and status.");
  metrics.Histogram("bai_http_request_duration_seconds",
                    "Time from a request's dispatch to its answer (to the start of an event "
                    "stream or a WebSocket), by method and route.");
}

void ObserveHttpRequest(Registry& metrics, std::string_view method, std::string_view route,
                        int status, double seconds) {
  std::string m = route.empty() ? "other" : std::string(method);
  std::string r = route.empty() ? "unmatched" : std::string(route);
  metrics.Add("bai_http_requests_total",
              {{"method", m}, {"route", r}, {"status", std::to_string(status)}});
  metrics.Observe("bai_http_request_duration_seconds", {{"method", m}, {"route", r}}, seconds);
}

}  // namespace bai::server::metrics
