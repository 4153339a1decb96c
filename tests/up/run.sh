#!/usr/bin/env bash
# `make up` end to end (label root): starts the all-in-one in a temporary state directory on a
# free port, waits for the smoke session, checks the credentials and the profile, runs a job with
# the written credentials, stops it with Ctrl-C (SIGINT) and checks that a second start reuses
# the state and that no kernel is left behind.
set -euo pipefail
repo=$1
work=$(mktemp -d)
cleanup() {
  # Whatever happened, the all-in-one this test started goes away with it (TERM to its group:
  # up.sh ends the kernels and both servers), then its state.
  if [[ -n ${pid:-} ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
if [[ $(id -u) -ne 0 ]]; then
  echo "[  SKIPPED ] make up needs root"
  exit 0
fi
# make up's agent puts kernels on a bridge with NAT (DECISIONS.md, "Containers"): the test runs in
# a network namespace of its own, so the bridge and its nftables table never touch the host's.
if [[ -z ${BAI_UP_TEST_NETNS:-} ]]; then
  trap - EXIT
  rm -rf "$work"
  exec env BAI_UP_TEST_NETNS=1 unshare --net -- bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
storage_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
web_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export BAI_UP_DIR=$work/state BAI_UP_PORT=$port BAI_UP_STORAGE_PORT=$storage_port BAI_CONFIG_DIR=$work/cfg
export BAI_UP_WEB_PORT=$web_port

start() {
  setsid bash "$repo/scripts/up.sh" >"$work/up.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    grep -q "running; press Ctrl-C" "$work/up.log" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  cat "$work/up.log"
  echo "FAIL: make up did not come up"
  exit 1
}
stop() {
  kill -INT -- "-$pid"
  wait "$pid" || { echo "FAIL: make up exited $? on Ctrl-C"; cat "$work/up.log"; exit 1; }
  grep -q "stopped (state kept" "$work/up.log" || { echo "FAIL: no clean stop"; exit 1; }
}

start
grep -q "hello from main1" "$work/up.log" || { echo "FAIL: smoke session output missing"; cat "$work/up.log"; exit 1; }
grep -q "smoke session passed" "$work/up.log"
[[ $(stat -c %a "$BAI_UP_DIR/credentials.env") == 600 ]] || { echo "FAIL: credentials.env not 0600"; exit 1; }
grep -q "^BACKEND_ENDPOINT=http://127.0.0.1:$port$" "$BAI_UP_DIR/credentials.env"
grep -Eq "default_profile = ['\"]local['\"]" "$BAI_CONFIG_DIR/config.toml" || { echo "FAIL: no local default profile"; exit 1; }
# The profile alone is enough to run a job (no BACKEND_* in the environment).
out=$(env -u BACKEND_ENDPOINT -u BACKEND_ACCESS_KEY -u BACKEND_SECRET_KEY \
  "$repo/build/bin/bai" run shell -- sh -c 'echo via-profile; exit 5') && rc=0 || rc=$?
[[ $out == via-profile && $rc == 5 ]] || { echo "FAIL: job via profile: '$out' rc=$rc"; exit 1; }
# make up's sessions are on the agent's bridge unless they ask for none.
nics=$("$repo/build/bin/bai" run python -- python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))')
[[ $nics == "['eth0', 'lo']" ]] || { echo "FAIL: a make up session's interfaces: $nics"; exit 1; }
nics=$("$repo/build/bin/bai" run --network none python -- python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))')
[[ $nics == "['lo']" ]] || { echo "FAIL: --network none: $nics"; exit 1; }
# The embedded storage proxy: local:volume1 under the state directory, transfers on its port.
hosts=$("$repo/build/bin/bai" api GET /folders/_/hosts)
[[ $hosts == *'"default":"local:volume1"'* ]] || { echo "FAIL: no local:volume1: $hosts"; exit 1; }
[[ -d $BAI_UP_DIR/manager/vfolders/volume1 ]] || { echo "FAIL: volume1 not under the state directory"; exit 1; }
"$repo/build/bin/bai" api POST /folders -d '{"name": "up-data"}' >/dev/null
ticket=$("$repo/build/bin/bai" api POST /folders/up-data/request-upload -d '{"path": "a.txt", "size": 2}')
[[ $ticket == *"\"url\":\"http://127.0.0.1:$storage_port/upload\""* ]] || { echo "FAIL: upload URL: $ticket"; exit 1; }
# The web console: the printed URL, the written credentials sign in, the page carries its policy.
grep -q "web console: http://127.0.0.1:$web_port/" "$work/up.log" || { echo "FAIL: no console URL printed"; exit 1; }
# shellcheck disable=SC1091
console=$(set -a; . "$BAI_UP_DIR/credentials.env"; printf '%s\n%s\n%s' "$BAI_CONSOLE_URL" "$BAI_CONSOLE_EMAIL" "$BAI_CONSOLE_PASSWORD")
curl_url=$(sed -n 1p <<<"$console")
login=$(curl -sS -c "$work/jar" -H 'Content-Type: application/json' \
  -d "{\"username\": \"$(sed -n 2p <<<"$console")\", \"password\": \"$(sed -n 3p <<<"$console")\"}" \
  "${curl_url}server/login")
[[ $login == *'"authenticated":true'* ]] || { echo "FAIL: console sign-in: $login"; exit 1; }
folders=$(curl -sS -b "$work/jar" "${curl_url}func/folders")
[[ $folders == *'up-data'* ]] || { echo "FAIL: /func/folders through the console: $folders"; exit 1; }
curl -sSI "$curl_url" | grep -qi "^content-security-policy: default-src 'self'" ||
  { echo "FAIL: the console page has no CSP"; exit 1; }
# The console's app launcher: the python image's HTTP service on an app port of its own, entered
# with the one-time link (its permit cookie), serving /home/work at the root.
app_id=$("$repo/build/bin/bai" session create --name up-app python)
opened=$(curl -sS -b "$work/jar" -H 'Content-Type: application/json' \
  -d "{\"session\": \"$app_id\", \"app\": \"http\"}" "${curl_url}server/apps")
app_url=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("url", ""))' "$opened")
[[ $app_url == http://127.0.0.1:102[0-9][0-9]/bai-app-setup* ]] || { echo "FAIL: app launcher: $opened"; exit 1; }
listing=$(curl -sS -L -c "$work/appjar" -b "$work/appjar" "$app_url")
[[ $listing == *"Directory listing for /"* ]] || { echo "FAIL: the http app through its port: $listing"; exit 1; }
"$repo/build/bin/bai" session rm up-app >/dev/null
# A kernel still running at Ctrl-C is ended.
"$repo/build/bin/bai" run python --name up-left -c 'x = 1' >/dev/null
key=$(grep ACCESS_KEY "$BAI_UP_DIR/credentials.env")
stop
if ls "$BAI_UP_DIR/agent/local-agent/kernels/" 2>/dev/null | grep -q .; then
  echo "FAIL: kernels left after Ctrl-C"; exit 1
fi
# Second start: same state, same keypair.
start
grep -q "$key" "$BAI_UP_DIR/credentials.env" || { echo "FAIL: keypair changed on restart"; exit 1; }
grep -q "smoke session passed" "$work/up.log"
stop
# Hardening (fresh machine): a server that cannot bind made `make up` exit 0. With the storage
# port taken, it now stops what it started and exits non-zero.
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(120)' "$storage_port" &
holder=$!
sleep 0.3
rc=0
setsid bash "$repo/scripts/up.sh" >"$work/up-busy.log" 2>&1 || rc=$?
kill "$holder" 2>/dev/null || true
if [[ $rc == 0 ]]; then
  cat "$work/up-busy.log"; echo "FAIL: make up exited 0 with its storage port taken"; exit 1
fi
grep -q "failed to start" "$work/up-busy.log" || { cat "$work/up-busy.log"; echo "FAIL: no reason given"; exit 1; }
echo "make up: 2 passed, 0 failed"
