#!/usr/bin/env bash
# Log latency (root: a runc agent): a job writes a timestamped line every 100 ms; `bai logs -f`
# prints them; each line's delay is the time it was printed minus the time it was written (one
# host, one clock). Targets: median ≤ 200 ms, p99 ≤ 500 ms. The floor, measured in the same run:
# the same job on the host, piped straight into the same reader.
# Usage: bench/log_latency.sh BUILD_DIR [LINES]
set -euo pipefail
build=${1:-build}
lines=${2:-100}
if [[ $(id -u) != 0 ]]; then echo "log latency bench skipped: needs root (runc)"; exit 0; fi
work=$(mktemp -d)
cleanup() {
  [[ -n "${apid:-}" ]] && kill "$apid" 2>/dev/null
  [[ -n "${mpid:-}" ]] && kill "$mpid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

. "$(dirname "$0")/lib/stack.sh"
bench_stack "$build" "$work" bench-logs

# The job waits 3 s before its first line, so that every line is written while followed.
job="import time
time.sleep(3)
for i in range($lines):
    print('%.6f' % time.time(), flush=True)
    time.sleep(0.1)"
reader='
import sys, time
for line in sys.stdin:
    try: print("%.6f" % (time.time() - float(line)))
    except ValueError: pass'
python3 -c "${job/time.sleep(3)/pass}" | python3 -c "$reader" >"$work/floor.txt"
bench_run_detached "$build" --name latency python -- python3 -c "$job"
"$build/bin/bai" session wait latency --for running --timeout 60s >/dev/null
"$build/bin/bai" logs -f latency 2>/dev/null | python3 -c "$reader" >"$work/bai.txt"

/usr/bin/python3 - "$work/bai.txt" "$work/floor.txt" "$lines" <<'PY'
import statistics, sys
def load(p): return [float(x) * 1000 for x in open(p) if x.strip()]
bai, floor, lines = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
live = bai
def p(v, q): v = sorted(v); return v[min(len(v) - 1, int(q * len(v)))]
print(f"log latency: {len(bai)} of {lines} lines through `bai logs -f` (runc job, one line / 100 ms)")
print(f"  {'':<22}{'median ms':>10}{'p99 ms':>9}")
print(f"  {'bai logs -f':<22}{statistics.median(live):>10.1f}{p(live, 0.99):>9.1f}")
print(f"  {'host pipe (floor)':<22}{statistics.median(floor):>10.1f}{p(floor, 0.99):>9.1f}")
ok = len(bai) == lines and statistics.median(live) <= 200 and p(live, 0.99) <= 500
print(f"log latency targets (median <= 200 ms, p99 <= 500 ms, every line) {'met' if ok else 'MISSED'}")
PY
