#!/usr/bin/env bash
# The web console's targets (issue 26), in headless Chromium on loopback:
#  - bundle size: build/console's gzipped bytes (target ≤ 400 KB);
#  - first render of the session list with N sessions (default 1000; arg 2), median of ROUNDS
#    loads (arg 3, default 5), and its ratio to the same page with no sessions measured in the
#    same run (target ≤ 1 s);
#  - a status change: the manager's answer to a DELETE → the new status in the open list
#    (target ≤ 500 ms), median of ROUNDS.
# A manager, a simulated agent and bai-webserver on free ports; no root needed.
# Usage: bench/console_bench.sh BUILD_DIR [N] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${2:-1000}
rounds=${3:-5}
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. "$(dirname "$0")/lib/stack.sh"
[[ -f $build/console/index.html ]] || { echo "console bench: build/console is missing (make build)"; exit 1; }
bench_manager "$build" "$work"
pids+=("$mpid")
web=$(bench_free_port)
"$build/bin/bai-agent" --manager "$BACKEND_ENDPOINT" --id bench-console --backend dummy \
  --cluster-secret-file "$work/data/cluster-secret" --state-dir "$work/a" \
  --slots "cpu=$((n * 2)),mem=$((n * 2))g" --images python >"$work/a.log" 2>&1 &
pids+=($!)
"$build/bin/bai-webserver" --manager "$BACKEND_ENDPOINT" --data-dir "$work/data" \
  --listen "127.0.0.1:$web" --static-dir "$build/console" >"$work/w.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "console at" "$work/w.log" && break; sleep 0.1; done
out=$(node "$(dirname "$0")/console_render.mjs" "http://127.0.0.1:$web/" "$BAI_ADMIN_EMAIL" \
  "$BAI_ADMIN_PASSWORD" "$n" "$rounds")
gz=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gzip_bytes"])' "$build/console/bundle-size.json")
python3 - "$out" "$gz" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); gz = int(sys.argv[2])
print(f"console bundle: {gz / 1024:.1f} KiB gzipped (target <= 400 KB: {gz / 400000:.2f} of it)")
print(f"session list, first render: {r['n']} sessions {r['full_ms']:.0f} ms, none "
      f"{r['empty_ms']:.0f} ms (ratio {r['full_ms'] / r['empty_ms']:.2f}x; median of {r['rounds']}; "
      f"target <= 1000 ms)")
print(f"status change to the open list: {r['status_change_ms']:.0f} ms (median of {r['rounds']}; "
      f"target <= 500 ms)")
PY
