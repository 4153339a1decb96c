#!/usr/bin/env bash
# Manager throughput: signed `GET /session/{id}` (signature verification, keypair lookup, rate
# limit, session query) against unsigned `GET /` (the server's floor), both with wrk at 64
# keep-alive connections in the same run. Target: signed ≥ 0.7× unsigned, p99 < 20 ms.
# Usage: bench/manager_bench.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=${1:-build}
secs=${2:-10}
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
cleanup() { [[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cat >"$work/bench.json" <<'JSON'
{"users": [{"uuid": "00000000-0000-4000-8000-0000000000be", "username": "bench",
            "email": "bench@bai.local", "password": "bench-password", "role": "user",
            "domain_name": "default"}],
 "keypairs": [{"access_key": "AKIABENCH00000000000", "secret_key": "bench-secret-0000000000000000000000000000",
               "user_id": "00000000-0000-4000-8000-0000000000be", "resource_policy": "default",
               "rate_limit": 1000000000}]}
JSON
"$build/bin/bai-manager" --data-dir "$work/data" fixture load "$work/bench.json" >/dev/null
"$build/bin/bai-manager" --data-dir "$work/data" --listen "127.0.0.1:$port" --threads 2 >"$work/out" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q listening "$work/out" && break; sleep 0.1; done

export BACKEND_ENDPOINT="http://127.0.0.1:$port" BAI_CONFIG_DIR="$work/cfg"
set -a; . "$work/data/admin-credentials.env"; set +a
id=$("$build/bin/bai" api POST /session -o json \
      -d '{"name":"bench-target","image":"python","enqueueOnly":true,"owner_access_key":"AKIABENCH00000000000"}' |
     /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["sessionId"])')
# The session belongs to the bench keypair, whose rate limit is raised for the run.
mapfile -t headers < <("$build/bench/bai_sign_request" GET "/session/$id" "127.0.0.1:$port" \
                        AKIABENCH00000000000 bench-secret-0000000000000000000000000000)
wrk_args=(-t2 -c64 -d"${secs}s" --latency)
wrk "${wrk_args[@]}" "http://127.0.0.1:$port/" >"$work/unsigned.txt"
[[ -n "${BAI_BENCH_PERF:-}" ]] && (perf record -g -p "$pid" -o "$BAI_BENCH_PERF" -- sleep 4 >/dev/null 2>&1 &)
wrk "${wrk_args[@]}" -H "${headers[0]}" -H "${headers[1]}" -H "${headers[2]}" \
    "http://127.0.0.1:$port/session/$id" >"$work/signed.txt"

/usr/bin/python3 - "$work/unsigned.txt" "$work/signed.txt" <<'PY'
import re, sys
def parse(path):
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    def ms(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", text)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    return rps, ms(50), ms(99), int(non2xx.group(1)) if non2xx else 0
u = parse(sys.argv[1]); s = parse(sys.argv[2])
print("bai-manager, wrk -t2 -c64 (same run)")
print(f"  {'request':<26}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}")
print(f"  {'GET / (unsigned)':<26}{u[0]:>10.0f}{u[1]:>9.2f}{u[2]:>9.2f}{u[3]:>9}")
print(f"  {'GET /session/{id} signed':<26}{s[0]:>10.0f}{s[1]:>9.2f}{s[2]:>9.2f}{s[3]:>9}")
ratio = s[0] / u[0]
print(f"  signed/unsigned throughput: {ratio:.2f}x (target >= 0.70x); signed p99 {s[2]:.2f} ms (target < 20 ms)")
ok = ratio >= 0.7 and s[2] < 20 and s[3] == 0
print("  targets", "met" if ok else "MISSED")
PY
