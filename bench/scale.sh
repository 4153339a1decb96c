#!/usr/bin/env bash
# `make bench-scale` (issue 25): the control plane at scale. Starts a throwaway PostgreSQL
# cluster (bai-test-postgres, as the tests do) and runs:
#   1. the full scheduling pass, database included, 10,000 pending x 1,000 agents, on SQLite and
#      on PostgreSQL (bai_scheduling_bench --scale; target: PostgreSQL < 1 s);
#   2. session creates per manager CPU-second with one and two managers on PostgreSQL
#      (bench/creates_bench.sh; target: a fall of at most 15 %);
#   3. signed GET /session/{id} throughput on SQLite, then on PostgreSQL (bench/manager_bench.sh
#      against each; compare the two "median signed" lines).
# Usage: bench/scale.sh BUILD_DIR [PASSES] [CREATE_ROUNDS]
set -euo pipefail
build=${1:-build}
passes=${2:-5}
dir=/tmp/bai-bench-postgres-$$
cleanup() { "$build/bin/bai-test-postgres" stop "$dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$build/bin/bai-test-postgres" start "$dir" >/dev/null
url="postgresql:///postgres?host=$dir&user=bai"
"$build/bench/bai_scheduling_bench" --scale --postgres "$url" --passes "$passes"
echo
bash "$(dirname "$0")/creates_bench.sh" "$build" "$dir" 5 "${3:-3}"
echo
echo "signed GET, SQLite:"
bash "$(dirname "$0")/manager_bench.sh" "$build" 3 3 | tail -6
/usr/lib/postgresql/15/bin/createdb -h "$dir" -U bai getbench
echo "signed GET, PostgreSQL:"
BAI_BENCH_DATABASE="postgresql:///getbench?host=$dir&user=bai" \
  bash "$(dirname "$0")/manager_bench.sh" "$build" 3 3 | tail -6
