#!/usr/bin/env bash
# The session CLI end to end against curl sending the same signed request (the signature made
# before timing), in the same run, as medians of hyperfine runs:
#   bai -o json ps          vs  curl POST /admin/gql with the body bai sends   (20 sessions)
#   bai session info NAME   vs  curl GET /session/NAME                         (20 sessions)
#   bai -o json ps          vs  the same curl                                  (1,000 sessions)
# Targets: ps and info ≤ 1.3× curl (one request per command: the server's version is remembered
# between runs, Options::server_info_cache); ps over 1,000 sessions ≤ 3× curl.
# bai's request is read from its own --debug log, so both send the same GraphQL document.
# Usage: bench/session_cli_bench.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-40}
work=$(mktemp -d)
cleanup() { [[ -n "${mpid:-}" ]] && kill "$mpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
. "$(dirname "$0")/lib/stack.sh"
bench_manager "$build" "$work" --threads 2
port=$bench_port
url="http://127.0.0.1:$port"

# Sessions that stay queued (they start in an hour), created with one replayed signature.
mapfile -t post < <("$build/bench/bai_sign_request" POST /session "127.0.0.1:$port" \
                     "$BACKEND_ACCESS_KEY" "$BACKEND_SECRET_KEY" application/json)
create() {  # FIRST LAST
  seq "$1" "$2" | xargs -P 4 -I{} curl -sf -o /dev/null -X POST "$url/session" \
    -H "${post[0]}" -H "${post[1]}" -H "${post[2]}" -H "${post[3]}" \
    -d '{"name":"bench-{}","image":"python","type":"batch","startupCommand":"true","startsAt":"1h","enqueueOnly":true}'
}

measure() {  # LABEL: compares bai -o json ps and bai session info with curl
  local label=$1
  body=$("$build/bin/bai" --debug -o json ps 2>&1 >/dev/null | sed -n 's/^\[debug\] > \({"query".*\)$/\1/p')
  printf '%s' "$body" >"$work/gql.json"
  mapfile -t gql < <("$build/bench/bai_sign_request" POST /admin/gql "127.0.0.1:$port" \
                      "$BACKEND_ACCESS_KEY" "$BACKEND_SECRET_KEY" application/json)
  mapfile -t get < <("$build/bench/bai_sign_request" GET /session/bench-1 "127.0.0.1:$port" \
                      "$BACKEND_ACCESS_KEY" "$BACKEND_SECRET_KEY")
  hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/$label.json" \
    -n "bai ps" "$build/bin/bai -o json ps" \
    -n "curl ps" "curl -sf -o /dev/null -X POST $url/admin/gql -H '${gql[0]}' -H '${gql[1]}' -H '${gql[2]}' -H '${gql[3]}' --data-binary @$work/gql.json" \
    -n "bai info" "$build/bin/bai session info bench-1" \
    -n "curl info" "curl -sf -o /dev/null $url/session/bench-1 -H '${get[0]}' -H '${get[1]}' -H '${get[2]}'" \
    >/dev/null 2>&1
}

create 1 20
measure small
create 21 1000
measure large
count=$("$build/bin/bai" -o json ps | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["total_count"])')

/usr/bin/python3 - "$work" "$runs" "$count" <<'PY'
import json, sys
work, runs, count = sys.argv[1], sys.argv[2], sys.argv[3]
def medians(label):
    return {r["command"]: r["median"] for r in json.load(open(f"{work}/{label}.json"))["results"]}
small, large = medians("small"), medians("large")
rows = [("bai -o json ps (20 sessions)", small["bai ps"], small["curl ps"], 1.3),
        ("bai session info", small["bai info"], small["curl info"], 1.3),
        (f"bai -o json ps ({count} sessions)", large["bai ps"], large["curl ps"], 3.0)]
print(f"session CLI vs curl with the same signed request (hyperfine, {runs} runs each, medians)")
print(f"  {'command':<34}{'bai ms':>9}{'curl ms':>9}{'ratio':>8}{'target':>8}")
ok = True
for name, bai, curl, limit in rows:
    ratio = bai / curl
    ok = ok and ratio <= limit
    print(f"  {name:<34}{bai*1000:>9.2f}{curl*1000:>9.2f}{ratio:>7.2f}x{limit:>7.1f}x")
print(f"session CLI targets {'met' if ok else 'MISSED'}")
PY
