#!/usr/bin/env bash
# Manager throughput: signed `GET /session/{id}` (signature verification, keypair lookup, rate
# limit, session query) against unsigned `GET /` (the server's floor), both with wrk at 64
# keep-alive connections in the same run. Target: signed ≥ 0.7× unsigned, p99 < 20 ms.
# The machines are shared and noisy, so the two run in turns (ROUNDS pairs of SECONDS each) and
# the verdict uses the median of the per-round ratios and of the p99s.
# Usage: bench/manager_bench.sh BUILD_DIR [SECONDS] [ROUNDS]
# BAI_BENCH_DATABASE=postgresql://… runs the manager on that (empty) database instead of SQLite
# (bench/scale.sh does, for the signed GET on PostgreSQL).
set -euo pipefail
build=${1:-build}
secs=${2:-4}
rounds=${3:-5}
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
db_args=()
[[ -n ${BAI_BENCH_DATABASE:-} ]] && db_args=(--database "$BAI_BENCH_DATABASE")
"$build/bin/bai-manager" --data-dir "$work/data" "${db_args[@]}" fixture load "$work/bench.json" >/dev/null
"$build/bin/bai-manager" --data-dir "$work/data" "${db_args[@]}" --listen "127.0.0.1:$port" \
  --threads 2 >"$work/out" 2>&1 &
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
for round in $(seq "$rounds"); do
  wrk "${wrk_args[@]}" "http://127.0.0.1:$port/" >"$work/unsigned.$round.txt"
  if [[ -n "${BAI_BENCH_PERF:-}" && $round == 1 ]]; then
    (perf record -g -p "$pid" -o "$BAI_BENCH_PERF" -- sleep 3 >/dev/null 2>&1 &)
  fi
  wrk "${wrk_args[@]}" -H "${headers[0]}" -H "${headers[1]}" -H "${headers[2]}" \
      "http://127.0.0.1:$port/session/$id" >"$work/signed.$round.txt"
done

/usr/bin/python3 - "$work" "$rounds" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def parse(path):
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    def ms(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", text)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    return rps, ms(50), ms(99), int(non2xx.group(1)) if non2xx else 0
print(f"bai-manager, wrk -t2 -c64, {rounds} rounds of unsigned then signed")
print(f"  {'round':<7}{'GET / req/s':>13}{'p99 ms':>8}{'signed req/s':>14}{'p50 ms':>8}{'p99 ms':>8}{'ratio':>8}")
ratios, p99s, errors = [], [], 0
for r in range(1, rounds + 1):
    u = parse(f"{work}/unsigned.{r}.txt")
    s = parse(f"{work}/signed.{r}.txt")
    ratios.append(s[0] / u[0])
    p99s.append(s[2])
    errors += u[3] + s[3]
    print(f"  {r:<7}{u[0]:>13.0f}{u[2]:>8.2f}{s[0]:>14.0f}{s[1]:>8.2f}{s[2]:>8.2f}{ratios[-1]:>7.2f}x")
ratio, p99 = statistics.median(ratios), statistics.median(p99s)
print(f"  median signed/unsigned throughput: {ratio:.2f}x (target >= 0.70x); "
      f"median signed p99 {p99:.2f} ms (target < 20 ms); non-2xx responses: {errors}")
ok = ratio >= 0.7 and p99 < 20 and errors == 0
print("  targets", "met" if ok else "MISSED")
PY
