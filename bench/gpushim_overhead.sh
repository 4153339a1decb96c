#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU shim's host-side cost per launch, on the fake driver (no GPU needed): gpushim_probe's
# tiny-kernel launch loop (`cuLaunchKernel` through the pointer cudart would hold) for SECONDS,
# the fake launch costing no GPU time, so what is timed is the call path alone:
#   plain   no shim (the baseline, same run)
#   shim    the shim preloaded, a memory cap and no compute limit (the issue's "shim present,
#           no limit")
#   soft    the shim with a half share in soft mode and no neighbour active: every launch goes
#           through the limiter's gate and the activity board, and none waits
# Rounds alternate; medians of launches/s, the ratio to plain, and the nanoseconds the shim adds
# per launch. A real launch costs microseconds on the host, so the fake's ratio is a bound on the
# call path, not the GPU figure (bench/gpu/run.sh `overhead` measures that on a GPU).
# Usage: bench/gpushim_overhead.sh BUILD_DIR [ROUNDS] [SECONDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
secs=${3:-1}
probe=$(realpath "$build/bin/gpushim_probe")
shim=$(realpath "$build/lib/libbai-gpushim.so")
fake=$(realpath "$build/lib/fake-driver")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
uuid=GPU-b58cbfff-a7f3-2498-9d0d-4f988f981200
for c in shim soft; do
  "$probe" ledger "$work/$c.ledger" "$uuid" $((40 << 30))
  printf 'mode=timeslice\nledger=%s\ndevice.0.uuid=%s\n' "$work/$c.ledger" "$uuid" > "$work/$c.conf"
done
mkdir "$work/board"
head -c 8 /dev/zero > "$work/board/me"
printf 'compute=soft\ndevice.0.quanta=0-499\ndevice.0.activity=%s\ndevice.0.activity_self=me\n' \
  "$work/board" >> "$work/soft.conf"

run() {  # run CASE: prints launches per second
  local pre="" conf=/dev/null
  if [[ $1 != plain ]]; then pre=$shim conf=$work/$1.conf; fi
  env LD_LIBRARY_PATH="$fake" BAI_FAKE_GPU_NS_PER_BLOCK=0 BAI_GPUSHIM_CONFIG="$conf" \
    LD_PRELOAD="$pre" "$probe" launch "$secs" 1 | awk -v s="$secs" '/^launches/ { printf "%.0f\n", $2 / s }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for r in $(seq "$rounds"); do
  for c in plain shim soft; do run "$c" >> "$work/$c.rates"; done
done
plain=$(median < "$work/plain.rates")
printf '%-8s %14s %8s %16s\n' case "launches/s" ratio "ns per launch"
for c in plain shim soft; do
  m=$(median < "$work/$c.rates")
  awk -v c="$c" -v m="$m" -v p="$plain" 'BEGIN {
    printf "%-8s %14.0f %7.3fx %16.1f\n", c, m, m / p, (1e9 / m) - (1e9 / p) }'
done
