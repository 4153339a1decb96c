#!/usr/bin/env bash
# Prints the benchmark table: micro benchmarks (medians of repetitions, with the ratio to a bare
# HMAC measured in the same run) and the start-up of `bai --help` / `bai version` as a ratio to a
# hello world linked against the same shared libraries, also measured in this run.
# Usage: bench/run.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$build/bench/bai_micro_benchmark" --benchmark_repetitions=7 --benchmark_min_time=0.05 \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out/micro.json" 2>/dev/null

export BAI_CONFIG_DIR="$out/config"  # no user configuration is read
hyperfine -N --warmup 20 --runs 300 --export-json "$out/startup.json" \
  -n hello-baseline "$build/bench/bai_hello_baseline" \
  -n "bai --help" "$build/bin/bai --help" \
  -n "bai version" "$build/bin/bai version" >/dev/null 2>&1

/usr/bin/python3 - "$out/micro.json" "$out/startup.json" <<'PY'
import json, sys
micro = json.load(open(sys.argv[1]))
medians = {b["run_name"]: b["real_time"] for b in micro["benchmarks"] if b.get("aggregate_name") == "median"}
base = medians["BM_BaselineSingleHmac"]
print("micro benchmarks (median of 7 repetitions)")
print(f"  {'benchmark':<24}{'ns/op':>12}{'vs one HMAC':>14}")
for name, ns in medians.items():
    print(f"  {name[3:]:<24}{ns:>12.0f}{ns / base:>13.2f}x")
start = {r["command"]: r for r in json.load(open(sys.argv[2]))["results"]}
hello = start["hello-baseline"]["median"]
print()
print("start-up (hyperfine, 300 runs each, same run; target: within 1.2x the baseline)")
print(f"  {'command':<16}{'median ms':>11}{'vs baseline':>13}")
worst = 0.0
for name in ("hello-baseline", "bai --help", "bai version"):
    med = start[name]["median"]
    ratio = med / hello
    if name != "hello-baseline":
        worst = max(worst, ratio)
    print(f"  {name:<16}{med * 1000:>11.3f}{ratio:>12.2f}x")
print()
print(f"start-up target {'met' if worst <= 1.2 else 'MISSED'}: worst ratio {worst:.2f}x (limit 1.20x)")
PY
