#!/usr/bin/env bash
# `bai admin user ls -o json` over 10,000 users against curl sending the same signed requests
# (bai pages the list, 1,000 users a request, a few pages in flight at once: curl sends the same
# bodies, bai's first read from its own --debug log, one after another on one keep-alive
# connection), medians of hyperfine runs in the same run.
# Target (issue 24): ≤ 1.5×. The users are written straight into the manager's database
# (create_user hashes each password with Argon2: 10,000 of them would take many minutes).
# Usage: bench/admin_bench.sh BUILD_DIR [ROUNDS] [USERS]
set -euo pipefail
build=${1:-build}
runs=${2:-9}
users=${3:-10000}
work=$(mktemp -d)
cleanup() { [[ -n "${mpid:-}" ]] && kill "$mpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
. "$(dirname "$0")/lib/stack.sh"
bench_manager "$build" "$work" --threads 2
port=$bench_port
url="http://127.0.0.1:$port"

/usr/bin/python3 - "$work/data/manager.db" "$users" <<'PY'
import sqlite3, sys, uuid
db = sqlite3.connect(sys.argv[1], timeout=30)
n = int(sys.argv[2])
now = "2026-11-25T00:00:00+00:00"
gid = db.execute("SELECT id FROM groups WHERE name = 'default'").fetchone()[0]
rows = [(str(uuid.uuid4()), f"user{i}", f"user{i}@bench.example", "x", f"User {i}", now)
        for i in range(n)]
db.executemany("INSERT INTO users (uuid, username, email, password_hash, full_name, domain_name, "
               "created_at) VALUES (?, ?, ?, ?, ?, 'default', ?)", rows)
db.executemany("INSERT INTO association_groups_users (group_id, user_id) VALUES (?, ?)",
               [(gid, r[0]) for r in rows])
db.commit()
PY

count=$("$build/bin/bai" -o json admin user ls | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["users"]))')
# bai's first request, from its --debug log (its later pages go out concurrently and their log
# lines interleave): the same document with each page's offset.
"$build/bin/bai" --debug -o json admin user ls 2>&1 >/dev/null |
  sed -n 's/^\[debug\] > \({"query".*\)$/\1/p' | sed -n 1p >"$work/first"
/usr/bin/python3 - "$work/first" "$count" >"$work/bodies" <<'PY'
import json, sys
first = json.loads(open(sys.argv[1]).read())
for offset in range(0, int(sys.argv[2]), first["variables"]["limit"]):
    first["variables"]["offset"] = offset
    print(json.dumps(first, separators=(",", ":")))
PY
pages=$(wc -l <"$work/bodies")
mapfile -t gql < <("$build/bench/bai_sign_request" POST /admin/gql "127.0.0.1:$port" \
                    "$BACKEND_ACCESS_KEY" "$BACKEND_SECRET_KEY" application/json)
args=()
i=0
while IFS= read -r body; do
  printf '%s' "$body" >"$work/body$i.json"
  [[ $i -gt 0 ]] && args+=(--next)
  args+=(-sf -o /dev/null -X POST "$url/admin/gql" -H "${gql[0]}" -H "${gql[1]}" -H "${gql[2]}"
         -H "${gql[3]}" --data-binary "@$work/body$i.json")
  i=$((i + 1))
done <"$work/bodies"
printf '%q ' curl "${args[@]}" >"$work/curl.sh"

# Alternating rounds (a few runs of each per round): a machine whose load changes during the
# bench moves both sides of a round together; the figure is the median of the rounds' ratios.
hyperfine -N --warmup 2 --runs 3 -n bai "$build/bin/bai -o json admin user ls" >/dev/null 2>&1
for round in $(seq "$runs"); do
  hyperfine -N --runs 3 --export-json "$work/round$round.json" \
    -n "bai" "$build/bin/bai -o json admin user ls" \
    -n "curl" "bash $work/curl.sh" >/dev/null 2>&1
done
hyperfine -N --warmup 2 --runs 10 --export-json "$work/bash.json" -n "bash" "bash -c true" \
  >/dev/null 2>&1

/usr/bin/python3 - "$work" "$runs" "$count" "$pages" <<'PY'
import json, statistics, sys
work, rounds, count, pages = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
shell = json.load(open(f"{work}/bash.json"))["results"][0]["median"]
bais, curls, ratios = [], [], []
for r in range(1, rounds + 1):
    m = {x["command"]: x["median"] for x in json.load(open(f"{work}/round{r}.json"))["results"]}
    bai, curl = m["bai"], m["curl"] - shell  # curl ran under bash: its start-up is taken off
    bais.append(bai); curls.append(curl); ratios.append(bai / curl)
ratio = statistics.median(ratios)
print(f"bai admin user ls -o json over {count} users ({pages} pages) vs curl, same signed "
      f"requests ({rounds} alternating rounds of 3 runs each, medians)")
print(f"  bai {statistics.median(bais)*1000:.1f} ms, curl {statistics.median(curls)*1000:.1f} ms "
      f"(bash start-up {shell*1000:.1f} ms taken off); ratio per round: "
      f"{' '.join(f'{x:.2f}' for x in sorted(ratios))}")
print(f"  median ratio {ratio:.2f}x (target <= 1.5x) {'met' if ratio <= 1.5 else 'MISSED'}")
PY
