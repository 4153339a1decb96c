#!/usr/bin/env bash
# The shipped /etc/bai/*.toml examples (packaging/etc/bai) are read by the daemons they are for:
# each gets past its configuration to a problem of this machine (no database, no secret file),
# never to an unknown or malformed option.
set -uo pipefail
bin=$1
etc=$(cd "$(dirname "$0")/../../packaging/etc/bai" && pwd)
failed=0
check() {
  local name=$1 want=$2
  shift 2
  local out
  out=$(timeout 10 "$@" 2>&1)
  if grep -qiE "not expected|not recognized|unknown|malformed|invalid|expected one of" <<<"$out" ||
    ! grep -q "$want" <<<"$out"; then
    echo "FAIL $name: $out"
    failed=1
  else
    echo "ok   $name: ${out%%$'\n'*}"
  fi
}
# The data directory on the command line (a flag wins): nothing is made under /var/lib.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
check manager.toml "cannot connect to the database" \
  "$bin/bai-manager" --config "$etc/manager.toml" --listen 127.0.0.1:0 --data-dir "$scratch/m"
check agent.toml "cluster-secret-file" "$bin/bai-agent" --config "$etc/agent.toml"
# Not as root: the storage proxy would make /etc/bai/storage-secret here.
check storage.toml "storage-secret" setpriv --reuid=nobody --regid=nogroup --clear-groups \
  "$bin/bai-storage" --config "$etc/storage.toml"
check webserver.toml "database" "$bin/bai-webserver" --config "$etc/webserver.toml" \
  --database "$scratch/none.db"
# A misspelt key is refused, naming it (CLI11's words), not ignored.
bad=$(mktemp)
printf 'id = "x"\nmanagr = "http://127.0.0.1:1"\n' >"$bad"
out=$("$bin/bai-agent" --config "$bad" 2>&1)
rc=$?
rm -f "$bad"
if [[ $rc -eq 0 ]] || ! grep -q managr <<<"$out"; then
  echo "FAIL a misspelt key: exit $rc: $out"
  failed=1
else
  echo "ok   a misspelt key: $out" | head -1
fi
exit $failed
