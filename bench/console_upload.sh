#!/usr/bin/env bash
# Upload through the console (issue 26 target: >= 0.8x `bai vfolder upload`): one file of
# SIZE_MIB (default 1024) uploaded ROUNDS times (default 3) each way into a folder of a manager
# on loopback: with `bai vfolder upload`, and with the console's Data page in headless Chromium
# (tus straight to the storage proxy, or through bai-webserver's /storage relay). Prints the
# medians, the ratio, and the CPU seconds each side spent (client and server).
# Usage: bench/console_upload.sh BUILD_DIR [SIZE_MIB] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
size=${2:-1024}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. "$here/lib/stack.sh"
[[ -f $build/console/index.html ]] || { echo "console upload bench: build/console is missing (make build)"; exit 1; }
bench_manager "$build" "$work"
pids+=("$mpid")
web=$(bench_free_port)
bai=$build/bin/bai
"$bai" vfolder create bench-upload >/dev/null
# The storage proxy's URL (from a ticket): the console sends uploads straight to it, as `make up`
# configures it (--storage-url); BAI_BENCH_RELAY=1 measures the webserver's relay instead.
storage=$("$bai" api POST /folders/bench-upload/request-upload -d '{"path": "probe", "size": 1}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["url"])')
direct=(--storage-url "$storage")
[[ ${BAI_BENCH_RELAY:-0} == 1 ]] && direct=()
"$build/bin/bai-webserver" --manager "$BACKEND_ENDPOINT" --data-dir "$work/data" \
  --listen "127.0.0.1:$web" --static-dir "$build/console" --app-ports 0 "${direct[@]}" \
  >"$work/w.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "console at" "$work/w.log" && break; sleep 0.1; done
head -c $((size * 1024 * 1024)) /dev/urandom >"$work/big.bin"
head -c 1 /dev/zero >"$work/one.bin"
# CPU seconds as well as wall time: the client's (bash's `time`: the process and the children
# it waited for, Chromium's processes for the console) and the server's (the manager, which
# holds the storage proxy), to show where a 2-core machine's time goes.
tick=$(getconf CLK_TCK)
server_cpu() { awk -v t="$tick" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$mpid/stat"; }
TIMEFORMAT='%U %S'
console() {  # FILE: prints the upload's seconds; its CPU goes to $work/t
  { time node "$here/console_upload.mjs" "http://127.0.0.1:$web/" "$BAI_ADMIN_EMAIL" \
    "$BAI_ADMIN_PASSWORD" bench-upload "$1" >"$work/o" 2>"$work/e"; } 2>"$work/t" ||
    { cat "$work/e" >&2; return 1; }
  cat "$work/o"
}
cpu_of() { awk '{ printf "%.2f", $1 + $2 }' "$work/t"; }
since() { awk -v a="$(server_cpu)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
rows=()
for i in $(seq "$rounds"); do
  s0=$(server_cpu) start=$(date +%s%N)
  { time "$bai" vfolder upload bench-upload "$work/big.bin" >/dev/null; } 2>"$work/t"
  cli_s="$(( ($(date +%s%N) - start) / 1000000 ))e-3" cli_cpu=$(cpu_of) cli_srv=$(since "$s0")
  "$bai" vfolder rm-files bench-upload big.bin >/dev/null
  s0=$(server_cpu)
  web_s=$(console "$work/big.bin")
  web_cpu=$(cpu_of) web_srv=$(since "$s0")
  "$bai" vfolder rm-files bench-upload big.bin >/dev/null
  console "$work/one.bin" >/dev/null  # the browser's start and sign-in alone, to take off
  base_cpu=$(cpu_of)
  "$bai" vfolder rm-files bench-upload one.bin >/dev/null
  rows+=("$cli_s $cli_cpu $cli_srv $web_s $web_cpu $web_srv $base_cpu")
done
python3 - "$size" "${BAI_BENCH_RELAY:-0}" "${rows[@]}" <<'PY'
import statistics, sys
size = int(sys.argv[1]); relay = sys.argv[2] == "1"
rows = [[float(x) for x in r.split()] for r in sys.argv[3:]]
med = lambda i: statistics.median(r[i] for r in rows)
c, w = med(0), med(3)
browser = statistics.median(r[4] - r[6] for r in rows)
print(f"upload {size} MiB ({'through the relay' if relay else 'straight to the storage proxy'}): bai vfolder upload {size / c:.0f} MiB/s (median {c:.2f} s), console "
      f"{size / w:.0f} MiB/s (median {w:.2f} s); console/CLI throughput {c / w:.2f}x "
      f"(target >= 0.8x; {len(rows)} rounds each)")
print(f"  CPU seconds (medians): bai vfolder upload {med(1):.1f} + server {med(2):.1f}; "
      f"console: Chromium {browser:.1f} (its start and sign-in, {med(6):.1f}, taken off) + server {med(5):.1f}; "
      f"on 2 cores the console cannot take under {(browser + med(5)) / 2:.2f} s here "
      f"(best ratio {c / ((browser + med(5)) / 2):.2f}x)")
PY
