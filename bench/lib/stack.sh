# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks that need a running stack (bash; set -euo pipefail in the caller).
# bench_stack BUILD WORK AGENT_ID: starts bai-manager on a free port and a runc bai-agent
# (2 CPUs, 2 GiB) with their state in WORK, exports BACKEND_* and BAI_CONFIG_DIR for `bai`,
# sets mpid/apid (the caller's cleanup kills them) and returns once the manager answers; fails
# with the servers' output when they do not come up.
# bench_manager BUILD WORK [FLAG…]: bai-manager alone (FLAGs added to its command line), with
# the same exports, mpid and bench_port.
# bench_run_detached BUILD ARGS…: `bai run --detach ARGS…`, retried until the agent has
# registered its images (a fresh agent takes a moment), failing with bai's error after 60 s.
bench_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bench_manager() {
  local build=$1 work=$2
  shift 2
  bench_port=$(bench_free_port)
  "$build/bin/bai-manager" --data-dir "$work/data" --listen "127.0.0.1:$bench_port" "$@" \
    >"$work/m.out" 2>&1 &
  mpid=$!
  for _ in $(seq 100); do grep -q listening "$work/m.out" && break; sleep 0.1; done
  if ! grep -q listening "$work/m.out"; then
    echo "bench: bai-manager did not start:" >&2
    cat "$work/m.out" >&2
    return 1
  fi
  export BACKEND_ENDPOINT="http://127.0.0.1:$bench_port" BAI_CONFIG_DIR="$work/cfg"
  set -a
  . "$work/data/admin-credentials.env"
  set +a
}

bench_stack() {
  local build=$1 work=$2 id=$3
  bench_manager "$build" "$work" || return 1
  "$build/bin/bai-agent" --manager "http://127.0.0.1:$bench_port" --id "$id" --backend runc \
    --cluster-secret-file "$work/data/cluster-secret" --state-dir "$work/agent" \
    --stop-kernels-on-exit --slots cpu=2,mem=2g >"$work/a.out" 2>&1 &
  apid=$!
}

bench_run_detached() {
  local build=$1
  shift
  local err
  for _ in $(seq 120); do
    if err=$("$build/bin/bai" run --detach "$@" 2>&1 >/dev/null); then return 0; fi
    sleep 0.5
  done
  echo "bench: bai run --detach $* failed: $err" >&2
  echo "bench: the agent said:" >&2
  tail -20 "$work/a.out" >&2 || true
  return 1
}
