#!/usr/bin/env bash
# Upload through the console (issue 26 target: >= 0.8x `bai vfolder upload`): one file of
# SIZE_MIB (default 1024) uploaded ROUNDS times (default 3) each way into a folder of a manager
# on loopback: with `bai vfolder upload`, and with the console's Data page in headless Chromium
# (tus through bai-webserver's /storage relay). Prints the medians and the ratio.
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
cli=() web_times=()
for i in $(seq "$rounds"); do
  start=$(date +%s%N)
  "$bai" vfolder upload bench-upload "$work/big.bin" >/dev/null
  cli+=("$(( ($(date +%s%N) - start) / 1000000 ))e-3")
  "$bai" vfolder rm-files bench-upload big.bin >/dev/null
  web_times+=("$(node "$here/console_upload.mjs" "http://127.0.0.1:$web/" "$BAI_ADMIN_EMAIL" \
    "$BAI_ADMIN_PASSWORD" bench-upload "$work/big.bin")")
  "$bai" vfolder rm-files bench-upload big.bin >/dev/null
done
python3 - "$size" "${cli[*]}" "${web_times[*]}" "${BAI_BENCH_RELAY:-0}" <<'PY'
import statistics, sys
relay = sys.argv[4] == "1"
size = int(sys.argv[1]); cli = [float(x) for x in sys.argv[2].split()]; web = [float(x) for x in sys.argv[3].split()]
c, w = statistics.median(cli), statistics.median(web)
print(f"upload {size} MiB ({'through the relay' if relay else 'straight to the storage proxy'}): bai vfolder upload {size / c:.0f} MiB/s (median {c:.2f} s), console "
      f"{size / w:.0f} MiB/s (median {w:.2f} s); console/CLI throughput {c / w:.2f}x "
      f"(target >= 0.8x; {len(cli)} rounds each)")
PY
