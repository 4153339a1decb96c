#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` of the whole tree (issue 47): every daemon, the kernel runner, the GPU shim,
# the console, the systemd units and their configurations land under the prefix, and the paths
# they name are that prefix's. Then the installed daemons start from the installed units'
# ExecStart lines with the installed configurations (only the state directories, under /var/lib
# as installed, are moved into a scratch directory by flags: a flag wins over the file), and
# answer: the manager its API, the webserver the console's page from the installed files.
# Usage: daemons.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
for f in bin/bai bin/bai-manager bin/bai-agent bin/bai-kernel-runner bin/bai-storage \
  bin/bai-webserver share/bai/console/index.html share/doc/bai/operations.md \
  share/doc/bai/examples/manager.toml; do
  [[ -e $prefix/$f ]] || fail "$f was not installed"
done
shim=$(find "$prefix" -name libbai-gpushim.so | head -1)
[[ $shim == "$prefix"/lib*/bai/libbai-gpushim.so ]] || fail "the GPU shim is at '$shim'"
for s in manager agent storage webserver; do
  unit=$prefix/lib/systemd/system/bai-$s.service
  conf=$prefix/etc/bai/$s.toml
  [[ -f $unit ]] || fail "no unit bai-$s.service"
  [[ -f $conf ]] || fail "no configuration $s.toml"
  grep -q "^ExecStart=$prefix/bin/bai-$s --config $prefix/etc/bai/$s.toml\$" "$unit" ||
    fail "bai-$s.service starts something else: $(grep ExecStart "$unit")"
  if grep -q "@BAI_" "$unit" "$conf"; then fail "an unfilled @VARIABLE@ in bai-$s"; fi
done
grep -q "static-dir = \"$prefix/share/bai/console\"" "$prefix/etc/bai/webserver.toml" ||
  fail "webserver.toml names another console"
if command -v systemd-analyze >/dev/null; then
  # The units as systemd reads them (the binaries named must exist: they do, under the prefix).
  systemd-analyze verify "$prefix"/lib/systemd/system/bai-*.service 2>"$work/verify.log" ||
    { cat "$work/verify.log"; fail "systemd-analyze verify"; }
  echo "ok   systemd-analyze verify: the four units"
else
  echo "note systemd-analyze is missing: the units were not verified by systemd"
fi
# An operator's configuration survives a second install.
echo "# kept" >>"$prefix/etc/bai/agent.toml"
cmake --install "$build" --prefix "$prefix" >/dev/null
grep -q "^# kept" "$prefix/etc/bai/agent.toml" || fail "a second install replaced agent.toml"

# The installed daemons, started as their units start them.
execstart() { sed -n 's/^ExecStart=//p' "$prefix/lib/systemd/system/bai-$1.service"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
state=$work/state
mkdir -p "$state"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
mport=$(free_port)
wport=$(free_port)
# shellcheck disable=SC2046
$(execstart manager) --data-dir "$state/manager" --listen "127.0.0.1:$mport" --storage-listen 127.0.0.1:0 \
  >"$work/manager.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$mport/" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$mport/" | grep -q '"version"' ||
  { cat "$work/manager.log"; fail "the installed manager does not answer"; }
echo "ok   bai-manager from its unit's ExecStart answers"
# shellcheck disable=SC2046
$(execstart webserver) --data-dir "$state/manager" --listen "127.0.0.1:$wport" \
  --manager "http://127.0.0.1:$mport" --app-ports 0 >"$work/webserver.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$wport/" >/dev/null 2>&1 && break
  sleep 0.1
done
# The page (its nonce filled in per response) names the installed bundle, served byte for byte.
page=$(curl -sf "http://127.0.0.1:$wport/") || fail "the installed webserver does not answer"
script=$(grep -o '/assets/app-[0-9a-f]*\.js' <<<"$page" | head -1)
[[ -n $script && -f $prefix/share/bai/console$script ]] ||
  { cat "$work/webserver.log"; fail "the page names no installed bundle: $page"; }
curl -sf "http://127.0.0.1:$wport$script" | cmp -s - "$prefix/share/bai/console$script" ||
  fail "the installed webserver does not serve the installed console"
echo "ok   bai-webserver from its unit's ExecStart serves the installed console"
# The storage proxy from its unit, its state moved by flags: it starts and listens.
mkdir -p "$state/volume"
$(execstart storage) --volume "v=$state/volume" --secret-file "$state/storage-secret" \
  --client-listen 127.0.0.1:0 --manager-listen 127.0.0.1:0 >"$work/storage.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  grep -q "listening" "$work/storage.log" && break
  sleep 0.1
done
grep -q "listening" "$work/storage.log" || { cat "$work/storage.log"; fail "bai-storage did not start"; }
echo "ok   bai-storage from its unit's ExecStart starts"
echo "install test: daemons, runner, shim, console, units and configurations under $prefix"
