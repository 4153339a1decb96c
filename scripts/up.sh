#!/usr/bin/env bash
# `make up`: the embedded all-in-one. Installs dependencies, builds, starts bai-manager (SQLite)
# and a runc bai-agent on this machine, writes credentials and the `local` profile, runs one
# smoke session and stays up until Ctrl-C. State lives in .bai-up/ and is reused next time. The
# manager runs the storage proxy `local` in process: vfolders on the host local:volume1, kept in
# .bai-up/manager/vfolders/volume1, uploads and downloads on port BAI_UP_STORAGE_PORT.
#
#   BAI_UP_PORT   manager port (default 8081)
#   BAI_UP_STORAGE_PORT  the storage proxy's /upload and /download (default 6021)
#   BAI_UP_WEB_PORT  the web console, bai-webserver (default 8090)
#   BAI_UP_DIR    state directory (default .bai-up in the repository)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
port=${BAI_UP_PORT:-8081}
storage_port=${BAI_UP_STORAGE_PORT:-6021}
web_port=${BAI_UP_WEB_PORT:-8090}
state=${BAI_UP_DIR:-$root/.bai-up}
bin=$root/build/bin

say() { printf '\033[1mbai up:\033[0m %s\n' "$*"; }
die() {
  printf 'bai up: %s\n' "$*" >&2
  exit 1
}

if [[ $(id -u) -ne 0 ]]; then
  die "needs root: the agent runs kernels as runc containers with cgroup limits. Run: sudo make up"
fi

say "installing dependencies"
bash "$root/scripts/install-deps.sh"
say "building"
cmake --preset default -S "$root" >/dev/null
cmake --build "$root/build" --target bai_cli bai_manager bai_agent bai_kernel_runner bai_storage \
  bai_webserver console

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  die "port $port is in use (another make up?); set BAI_UP_PORT to use another"
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$web_port") 2>/dev/null; then
  die "port $web_port is in use; set BAI_UP_WEB_PORT to use another"
fi

mkdir -p "$state/logs"
chmod 0700 "$state"
manager_pid=
agent_pid=
web_pid=
status=0  # what `make up` exits with: non-zero once anything failed
stop() {
  local rc=$?
  [[ $rc -ne 0 && $status -eq 0 ]] && status=$rc
  trap - INT TERM EXIT
  say "shutting down"
  if [[ -n $web_pid ]] && kill -0 "$web_pid" 2>/dev/null; then
    kill -TERM "$web_pid"
    wait "$web_pid" 2>/dev/null || true
  fi
  # The agent first: it ends its kernels and reports them while the manager still listens.
  if [[ -n $agent_pid ]] && kill -0 "$agent_pid" 2>/dev/null; then
    kill -TERM "$agent_pid"
    wait "$agent_pid" 2>/dev/null || true
  fi
  if [[ -n $manager_pid ]] && kill -0 "$manager_pid" 2>/dev/null; then
    kill -TERM "$manager_pid"
    wait "$manager_pid" 2>/dev/null || true
  fi
  say "stopped (state kept in $state)"
  exit "$status"
}
trap stop EXIT
trap 'exit 0' INT TERM  # Ctrl-C is the normal way to stop: 0 unless something failed before

# Waits until PID (a server called NAME) listens on PORT; fails naming its log if it exits.
wait_listening() {
  local name=$1 pid=$2 port=$3
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || die "$name failed to start; see $state/logs/${name#bai-}.log"
    sleep 0.1
  done
}

# --trusted-proxy: the console's sign-ins reach the manager from bai-webserver on 127.0.0.1;
# trusting its X-Forwarded-For counts each browser's failures against that browser's address,
# not the one address every console user would otherwise share (one guesser blocking all).
"$bin/bai-manager" --data-dir "$state/manager" --listen "127.0.0.1:$port" \
  --storage-listen "127.0.0.1:$storage_port" --trusted-proxy 127.0.0.1 \
  >>"$state/logs/manager.log" 2>&1 &
manager_pid=$!
wait_listening bai-manager "$manager_pid" "$port"

"$bin/bai-agent" --manager "http://127.0.0.1:$port" --id local-agent \
  --cluster-secret-file "$state/manager/cluster-secret" --backend runc \
  --state-dir "$state/agent" --stop-kernels-on-exit >>"$state/logs/agent.log" 2>&1 &
agent_pid=$!

# Credentials: the superadmin keypair the manager made on its first start.
# shellcheck disable=SC1091
. "$state/manager/admin-credentials.env"
umask 077
cat >"$state/credentials.env" <<EOF
BACKEND_ENDPOINT=http://127.0.0.1:$port
BACKEND_ACCESS_KEY=$BACKEND_ACCESS_KEY
BACKEND_SECRET_KEY=$BACKEND_SECRET_KEY
BAI_CONSOLE_URL=http://127.0.0.1:$web_port/
BAI_CONSOLE_EMAIL=$BAI_ADMIN_EMAIL
BAI_CONSOLE_PASSWORD=$BAI_ADMIN_PASSWORD
EOF
chmod 0600 "$state/credentials.env"
umask 022

# The `local` profile, for the user who asked (sudo keeps their name in SUDO_USER).
as_user=()
if [[ -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then as_user=(sudo -u "$SUDO_USER" -H); fi
config_dir=$("${as_user[@]}" bash -c 'echo "${BAI_CONFIG_DIR:-${XDG_CONFIG_HOME:-$HOME/.config}/bai}"')
"${as_user[@]}" "$bin/bai" --profile local config set endpoint "http://127.0.0.1:$port" >/dev/null
"${as_user[@]}" "$bin/bai" --profile local config set access_key "$BACKEND_ACCESS_KEY" >/dev/null
printf '%s\n' "$BACKEND_SECRET_KEY" |
  "${as_user[@]}" "$bin/bai" --profile local config set secret_key >/dev/null
if ! grep -q '^default_profile' "$config_dir/config.toml" 2>/dev/null; then
  "${as_user[@]}" "$bin/bai" config set default_profile local >/dev/null
fi

export BACKEND_ENDPOINT="http://127.0.0.1:$port" BACKEND_ACCESS_KEY BACKEND_SECRET_KEY

# The web console: sign-in and /func/* at bai-webserver, on the manager's database.
"$bin/bai-webserver" --manager "http://127.0.0.1:$port" --data-dir "$state/manager" \
  --storage-url "http://127.0.0.1:$storage_port" \
  --listen "127.0.0.1:$web_port" --static-dir "$root/build/console" \
  >>"$state/logs/webserver.log" 2>&1 &
web_pid=$!
wait_listening bai-webserver "$web_pid" "$web_port"
for _ in $(seq 100); do
  # Resource slots are known once an agent has registered.
  if "$bin/bai" api GET /config/resource-slots 2>/dev/null | grep -q '"cpu"'; then break; fi
  kill -0 "$agent_pid" 2>/dev/null || die "bai-agent failed to start; see $state/logs/agent.log"
  sleep 0.1
done

cat <<EOF

  bai is up: manager http://127.0.0.1:$port, agent local-agent (runc), vfolders on local:volume1
  (storage proxy http://127.0.0.1:$storage_port), state in $state; logs in $state/logs,
  Prometheus metrics at http://127.0.0.1:$port/metrics

  web console: http://127.0.0.1:$web_port/  (sign in as $BAI_ADMIN_EMAIL, password
  $BAI_ADMIN_PASSWORD; also BAI_CONSOLE_* in $state/credentials.env)

  credentials ($state/credentials.env, also the profile "local" in $config_dir):
    BACKEND_ENDPOINT=http://127.0.0.1:$port
    BACKEND_ACCESS_KEY=$BACKEND_ACCESS_KEY
    BACKEND_SECRET_KEY=$BACKEND_SECRET_KEY

  try:
    $bin/bai run python -- python3 -c 'print(6*7)'
    $bin/bai run python --name repl -c 'x = 42'; $bin/bai run python --name repl -c 'x + 1'
    $bin/bai run -r mem=256m shell -- sh -c 'uname -a; id; df -h /home/work'

EOF

say "smoke session: bai run python -- python3 -c 'import platform; print(\"hello from\", platform.node())'"
if "$bin/bai" run python -- python3 -c 'import platform; print("hello from", platform.node())'; then
  say "smoke session passed"
else
  rc=$?
  say "smoke session FAILED (exit $rc); see $state/logs/"
  status=1
  exit 1
fi

say "running; press Ctrl-C to stop"
while kill -0 "$manager_pid" 2>/dev/null && kill -0 "$agent_pid" 2>/dev/null &&
  kill -0 "$web_pid" 2>/dev/null; do
  sleep 1 &
  wait $! || true
done
# Ctrl-C reaches the servers too (one process group): a server that ended cleanly (0) was
# stopped; one that failed (a port taken, a crash) makes `make up` fail.
code=0
for p in "$manager_pid" "$agent_pid" "$web_pid"; do
  if ! kill -0 "$p" 2>/dev/null; then wait "$p" 2>/dev/null || code=$?; fi
done
[[ $code == 0 ]] && exit 0
say "a server exited (exit $code); see $state/logs/"
status=1
exit 1
