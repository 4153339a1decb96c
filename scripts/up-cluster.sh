#!/usr/bin/env bash
# `make up-cluster`: several "nodes" on this machine. PostgreSQL, two bai-managers on it behind
# HAProxy, and three runc bai-agents, each in a network namespace of its own with its own
# address on a bridge (bai-cluster0, 10.77.0.0/24), linked to both managers. Runs a session on
# each node, then stays up until Ctrl-C. With --check it also kills each manager in turn
# (kill -9), checks that bai (and the official client, when BAI_OFFICIAL_CLIENT names it) still
# work through HAProxy, restarts it, and exits with the result.
#
#   BAI_UP_PORT    HAProxy's port, the cluster's endpoint (default 8081)
#   BAI_UP_DIR     state directory (default .bai-cluster in the repository)
#   BAI_UP_PGDIR   PostgreSQL's cluster (default /var/lib/bai-cluster/postgresql)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
port=${BAI_UP_PORT:-8081}
state=${BAI_UP_DIR:-$root/.bai-cluster}
pgdir=${BAI_UP_PGDIR:-/var/lib/bai-cluster/postgresql}
pgrun=/run/bai-cluster
bin=$root/build/bin
check=0
[[ ${1:-} == --check ]] && check=1
manager_ports=(8091 8092)
storage_ports=(6031 6032)
bridge=bai-cluster0
host_ip=10.77.0.1
nodes=(node1 node2 node3)

say() { printf '\033[1mbai up-cluster:\033[0m %s\n' "$*"; }
die() {
  printf 'bai up-cluster: %s\n' "$*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, runc). Run: sudo make up-cluster"

say "installing dependencies"
bash "$root/scripts/install-deps.sh"
command -v haproxy >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
}
say "building"
cmake --preset default -S "$root" >/dev/null
cmake --build "$root/build" --target bai_cli bai_manager bai_agent bai_kernel_runner

for p in "$port" "${manager_ports[@]}" "${storage_ports[@]}"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    die "port $p is in use (another make up-cluster?)"
  fi
done

mkdir -p "$state/logs" "$state/manager"
chmod 0700 "$state"
pids=()
manager_pid=(0 0)
status=0
pg_bin=/usr/lib/postgresql/15/bin

stop() {
  local rc=$?
  [[ $BASHPID == "$$" ]] || exit "$rc"  # a subshell's exit is not the cluster's
  [[ $rc -ne 0 && $status -eq 0 ]] && status=$rc
  trap - INT TERM EXIT
  say "shutting down"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [[ -f $pgdir/postmaster.pid ]] && runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pgdir" -m fast \
    -w stop >/dev/null 2>&1 || true
  for n in "${nodes[@]}"; do ip netns del "bai-$n" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
  say "stopped (state kept in $state, the database in $pgdir)"
  exit "$status"
}
trap stop EXIT
trap 'exit 0' INT TERM

# --- PostgreSQL: a cluster of its own, on a Unix socket only -----------------------------------
mkdir -p "$pgrun" "$(dirname "$pgdir")"
chown postgres:postgres "$pgrun"
if [[ ! -f $pgdir/PG_VERSION ]]; then
  say "initdb $pgdir"
  mkdir -p "$pgdir" && chown postgres:postgres "$pgdir" && chmod 0700 "$pgdir"
  runuser -u postgres -- "$pg_bin/initdb" -D "$pgdir" -A peer -E UTF8 --no-instructions \
    >"$state/logs/initdb.log" 2>&1 || die "initdb failed; see $state/logs/initdb.log"
fi
# Its log is the server's to write: beside its data, not in the root-only state directory.
runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pgdir" -l "$pgdir/postgresql.log" -w \
  -o "-k $pgrun -c listen_addresses=''" start >/dev/null ||
  die "PostgreSQL did not start; see $pgdir/postgresql.log"
# The managers connect as root (peer authentication): a role and a database of its own.
runuser -u postgres -- psql -h "$pgrun" -qtAc "SELECT 1 FROM pg_roles WHERE rolname = 'root'" |
  grep -q 1 || runuser -u postgres -- createuser -h "$pgrun" root
runuser -u postgres -- psql -h "$pgrun" -qtAc "SELECT 1 FROM pg_database WHERE datname = 'bai'" |
  grep -q 1 || runuser -u postgres -- createdb -h "$pgrun" -O root bai
database="postgresql:///bai?host=$pgrun"

# --- the nodes' network: a bridge, a namespace and an address per node -------------------------
ip link show "$bridge" >/dev/null 2>&1 || {
  ip link add "$bridge" type bridge
  ip addr add "$host_ip/24" dev "$bridge"
}
ip link set "$bridge" up
i=0
for n in "${nodes[@]}"; do
  i=$((i + 1))
  ns=bai-$n
  ip netns del "$ns" 2>/dev/null || true
  ip link del "bai-$n-h" 2>/dev/null || true
  ip netns add "$ns"
  ip link add "bai-$n-h" type veth peer name eth0 netns "$ns"
  ip link set "bai-$n-h" master "$bridge" up
  ip -n "$ns" addr add "10.77.0.1$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

# --- two managers on the database, one data directory (cluster secret, folders) ---------------
start_manager() {
  local k=$1
  "$bin/bai-manager" --data-dir "$state/manager" --database "$database" \
    --listen "0.0.0.0:${manager_ports[$k]}" --storage-listen "0.0.0.0:${storage_ports[$k]}" \
    --trusted-proxy 127.0.0.1 \
    >>"$state/logs/manager$((k + 1)).log" 2>&1 &
  manager_pid[$k]=$!
  pids+=("$!")
  for _ in $(seq 150); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${manager_ports[$k]}") 2>/dev/null; then return 0; fi
    kill -0 "${manager_pid[$k]}" 2>/dev/null ||
      die "bai-manager $((k + 1)) failed to start; see $state/logs/manager$((k + 1)).log"
    sleep 0.1
  done
  die "bai-manager $((k + 1)) did not listen within 15 s"
}
start_manager 0  # the first bootstraps a new database
start_manager 1

# --- HAProxy: the cluster's one endpoint; a dead manager is skipped within a second -----------
# It adds X-Forwarded-For, which the managers trust from 127.0.0.1 (--trusted-proxy): logins are
# throttled per client, not all against HAProxy's one address.
cat >"$state/haproxy.cfg" <<EOF
global
  log stderr format short local0 warning
defaults
  mode http
  option forwardfor
  option redispatch 1
  retries 2
  timeout connect 1s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
frontend bai
  bind 127.0.0.1:$port
  default_backend managers
backend managers
  balance roundrobin
  option httpchk GET /health
  default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
  server manager1 127.0.0.1:${manager_ports[0]} check
  server manager2 127.0.0.1:${manager_ports[1]} check
EOF
haproxy -f "$state/haproxy.cfg" -db >>"$state/logs/haproxy.log" 2>&1 &
pids+=("$!")

# --- three agents, one per node, each linked to both managers ----------------------------------
managers="http://$host_ip:${manager_ports[0]},http://$host_ip:${manager_ports[1]}"
# The nodes' /metrics name every running session: they ask for this bearer token (bai-agent
# refuses a non-loopback --metrics-listen without one).
[[ -s $state/metrics-token ]] ||
  (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$state/metrics-token")
for n in "${nodes[@]}"; do
  # nsenter, not `ip netns exec`: that one remounts /sys, hiding the cgroup mount runc needs.
  nsenter --net="/run/netns/bai-$n" "$bin/bai-agent" --manager "$managers" --id "$n" \
    --cluster-secret-file "$state/manager/cluster-secret" --backend runc \
    --state-dir "$state/$n" --slots cpu=1,mem=1g --stop-kernels-on-exit \
    --metrics-listen "0.0.0.0:9100" --metrics-token-file "$state/metrics-token" \
    >>"$state/logs/$n.log" 2>&1 &
  pids+=("$!")
done

[[ -f $state/manager/admin-credentials.env ]] ||
  die "the database in $pgdir was made by another state directory: its superadmin's keys are in
  that one's manager/admin-credentials.env (remove $pgdir to start afresh)"
# shellcheck disable=SC1091
. "$state/manager/admin-credentials.env"
umask 077
cat >"$state/credentials.env" <<EOF
BACKEND_ENDPOINT=http://127.0.0.1:$port
BACKEND_ACCESS_KEY=$BACKEND_ACCESS_KEY
BACKEND_SECRET_KEY=$BACKEND_SECRET_KEY
EOF
umask 022
export BACKEND_ENDPOINT="http://127.0.0.1:$port" BACKEND_ACCESS_KEY BACKEND_SECRET_KEY
export BAI_CONFIG_DIR="$state/bai-config"

alive_agents() {
  "$bin/bai" -o json admin agent ls 2>/dev/null | grep -o '"status": *"ALIVE"' | wc -l
}
for _ in $(seq 150); do
  [[ $(alive_agents) -ge 3 ]] && break
  sleep 0.2
done
[[ $(alive_agents) -ge 3 ]] || die "the three agents did not register; see $state/logs/node*.log"

cat <<EOF

  bai cluster is up: HAProxy http://127.0.0.1:$port → managers :${manager_ports[0]} and
  :${manager_ports[1]} on PostgreSQL ($pgdir); agents ${nodes[*]} at 10.77.0.11-13
  (network namespaces bai-node1…3 on bridge $bridge). State in $state.
  Metrics: http://127.0.0.1:$port/metrics (the managers), http://10.77.0.11:9100/metrics (node1;
  .12 and .13 the others; with the header "Authorization: Bearer \$(cat $state/metrics-token)").

    set -a; . $state/credentials.env; set +a
    $bin/bai run python -- python3 -c 'print(6*7)'
    $bin/bai admin agent ls

EOF

# One session on each node (superadmins may name the agent: config.agent_list).
on_node() {
  local node=$1 name=$2 answer
  answer=$("$bin/bai" api POST /session -d "$(printf '{"image": "python", "name": "%s",
    "type": "batch", "startupCommand": "echo ran on %s", "config": {"agent_list": ["%s"]}}' \
    "$name" "$node" "$node")") || {
    echo "$answer" >&2
    return 1
  }
  "$bin/bai" session wait "$name" >/dev/null && "$bin/bai" session logs "$name"
}
check_sessions() {
  local tag=$1 n
  for n in "${nodes[@]}"; do
    say "$tag: a session on $n"
    on_node "$n" "$tag-$n" || return 1
  done
}
check_sessions smoke || die "a session failed; see $state/logs/"
say "a session ran on each node"

if [[ $check == 1 ]]; then
  for k in 0 1; do
    say "kill -9 manager $((k + 1))"
    kill -9 "${manager_pid[$k]}"
    wait "${manager_pid[$k]}" 2>/dev/null || true
    t0=$(date +%s%N)
    "$bin/bai" ps >/dev/null || die "bai ps failed after manager $((k + 1)) died"
    say "first request after the kill answered in $((($(date +%s%N) - t0) / 1000000)) ms"
    "$bin/bai" run python -- python3 -c 'print("after the kill")' ||
      die "bai run failed after manager $((k + 1)) died"
    check_sessions "killed$((k + 1))" || die "a node's session failed after manager $((k + 1)) died"
    if [[ -n ${BAI_OFFICIAL_CLIENT:-} ]]; then
      BACKEND_ENDPOINT_TYPE=api "$BAI_OFFICIAL_CLIENT" ps >/dev/null 2>&1 ||
        die "the official client's ps failed after manager $((k + 1)) died"
      BACKEND_ENDPOINT_TYPE=api "$BAI_OFFICIAL_CLIENT" admin manager status 2>/dev/null ||
        die "the official client's admin manager status failed after manager $((k + 1)) died"
      say "the official client's ps and admin manager status work"
    fi
    start_manager "$k"
  done

  # Each node's /metrics (bai-agent --metrics-listen): both managers linked again.
  node_links_up() {
    curl -sf -H "Authorization: Bearer $(cat "$state/metrics-token")" \
      "http://10.77.0.1$1:9100/metrics" | grep -c '^bai_agent_manager_link_up{.*} 1$'
  }
  i=0
  for n in "${nodes[@]}"; do
    i=$((i + 1))
    up=0
    for _ in $(seq 100); do
      up=$(node_links_up "$i")
      [[ $up == 2 ]] && break
      sleep 0.2
    done
    [[ $up == 2 ]] || die "$n's /metrics shows $up of 2 manager links up"
  done
  say "each node's /metrics shows both managers linked"

  # A node unplugged (the link of its namespace down) is LOST once silent past the heartbeat
  # timeout, and ALIVE again, running sessions, once plugged back.
  agent_status() {
    "$bin/bai" -o json admin agent ls 2>/dev/null | python3 -c '
import json, sys
print(next((a["status"] for a in json.load(sys.stdin)["agents"] if a["id"] == sys.argv[1]), ""))' "$1"
  }
  wait_status() {
    local node=$1 want=$2 limit=$3
    for _ in $(seq $((limit * 5))); do
      [[ $(agent_status "$node") == "$want" ]] && return 0
      sleep 0.2
    done
    return 1
  }
  say "unplug node1"
  ip link set "bai-node1-h" down
  t0=$(date +%s%N)
  wait_status node1 LOST 60 || die "node1 was not marked LOST within 60 s of its unplugging"
  say "node1 LOST after $((($(date +%s%N) - t0) / 1000000)) ms"
  ip link set "bai-node1-h" up
  t0=$(date +%s%N)
  wait_status node1 ALIVE 60 || die "node1 did not come back within 60 s of its plugging back"
  say "node1 ALIVE again after $((($(date +%s%N) - t0) / 1000000)) ms"
  on_node node1 replugged-node1 || die "a session on node1 failed after its plugging back"
  say "check passed"
  exit 0
fi

say "running; press Ctrl-C to stop"
while true; do
  sleep 1 &
  wait $! || true
done
