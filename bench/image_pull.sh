#!/usr/bin/env bash
# Registry pulls (issue 46), against Debian's docker-registry on loopback:
#  - an image of 8 layers of incompressible bytes (default 1 GiB in all; arg 2 in MiB) pulled
#    by `bai-agent image pull` into an empty store (download, digest and diff_id checks, layers
#    unpacked) beside `skopeo copy docker://… oci:…` of the same image (download and digest
#    checks only: it unpacks nothing), in alternating rounds (arg 3, default 3); medians and
#    the ratio bai/skopeo in time (target ≤ 1.0);
#  - disk: two images sharing a base of half that size pulled into one store against one
#    (target ≤ 1.05×);
#  - `bai session create` of that image to RUNNING on a cold agent (the pull included, its
#    progress lines counted) and on a warm one (the image held).
# Needs root (a layered store: overlay whiteouts are device nodes) and docker-registry, skopeo.
# Usage: bench/image_pull.sh BUILD_DIR [MIB] [ROUNDS]
set -euo pipefail
build=${1:-build}
mib=${2:-1024}
rounds=${3:-3}
bin=$(cd "$build/bin" && pwd)
if [ "$(id -u)" != 0 ]; then echo "image_pull: skipped (needs root for a layered store)"; exit 0; fi
for tool in /usr/bin/docker-registry /usr/bin/skopeo; do
  [ -x "$tool" ] || { echo "image_pull: skipped ($tool missing: scripts/install-deps.sh)"; exit 0; }
done
work=$(mktemp -d)
mpid=; apid=
trap 'kill $rpid $apid $mpid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
EOF
/usr/bin/docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
rpid=$!
host=127.0.0.1:$port

# An OCI layout of LAYERS (directories, bottom first), each a gzip'd tar, tagged t.
layout() { # OUT DIR...
  python3 - "$@" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
out, dirs = sys.argv[1], sys.argv[2:]
os.makedirs(f"{out}/blobs/sha256", exist_ok=True)
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    open(f"{out}/blobs/sha256/{d}", "wb").write(data)
    return "sha256:" + d, len(data)
layers, diff_ids = [], []
for d in dirs:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        t.add(d, arcname=".")
    diff_ids.append("sha256:" + hashlib.sha256(raw.getvalue()).hexdigest())
    digest, size = blob(gzip.compress(raw.getvalue(), compresslevel=1, mtime=0))
    layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest, "size": size})
cfg, cs = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                           "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode())
man, ms = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": cs},
                           "layers": layers}).encode())
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
          "digest": man, "size": ms, "annotations": {"org.opencontainers.image.ref.name": "t"}}]},
          open(f"{out}/index.json", "w"))
open(f"{out}/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
PY
}
push() { # LAYOUT REPO:TAG
  for _ in $(seq 50); do
    skopeo copy -q --dest-tls-verify=false "oci:$1:t" "docker://$host/$2" 2>"$work/push.err" && return
    sleep 0.2
  done
  cat "$work/push.err" >&2; exit 1
}
per=$((mib / 8))
for i in $(seq 8); do
  mkdir -p "$work/l$i"; head -c $((per << 20)) /dev/urandom >"$work/l$i/data$i.bin"
done
# A shell for the kernels (busybox-static), in the first layer.
mkdir -p "$work/l1/bin"; cp /bin/busybox "$work/l1/bin/busybox"; ln -s busybox "$work/l1/bin/sh"
layout "$work/big" "$work"/l{1..8}
push "$work/big" bench/big:1
mkdir -p "$work/top1" "$work/top2" "$work/base"
head -c $(((mib / 2) << 20)) /dev/urandom >"$work/base/base.bin"
echo one >"$work/top1/version"; echo two >"$work/top2/version"
layout "$work/a" "$work/base" "$work/top1"; push "$work/a" bench/app:1
layout "$work/b" "$work/base" "$work/top2"; push "$work/b" bench/app:2

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
: >"$work/t_bai"; : >"$work/t_skopeo"
for r in $(seq "$rounds"); do
  rm -rf "$work/state" "$work/oci"; sync
  t0=$(now); "$bin/bai-agent" image pull "$host/bench/big:1" --name big --state-dir "$work/state" 2>/dev/null >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc >>"$work/t_bai"
  sync
  t0=$(now); skopeo copy -q --src-tls-verify=false "docker://$host/bench/big:1" "oci:$work/oci:t"; t1=$(now)
  echo "$t1 - $t0" | bc >>"$work/t_skopeo"
done
b=$(median <"$work/t_bai"); s=$(median <"$work/t_skopeo")
printf 'image pull, %d MiB in 8 layers, median of %d: bai-agent %.2f s (%.0f MiB/s), skopeo copy %.2f s; bai/skopeo %.2f× (target <= 1.0)\n' \
  "$mib" "$rounds" "$b" "$(echo "$mib / $b" | bc -l)" "$s" "$(echo "$b / $s" | bc -l)"

rm -rf "$work/state"
"$bin/bai-agent" image pull "$host/bench/app:1" --name app1 --state-dir "$work/state" >/dev/null 2>&1
one=$(du -sb "$work/state/images" | cut -f1)
"$bin/bai-agent" image pull "$host/bench/app:2" --name app2 --state-dir "$work/state" >/dev/null 2>&1
two=$(du -sb "$work/state/images" | cut -f1)
printf 'two images on one %d MiB base: %d bytes against one image'"'"'s %d; %.3f× (target <= 1.05)\n' \
  "$((mib / 2))" "$two" "$one" "$(echo "$two / $one" | bc -l)"

# Session create → RUNNING through the whole stack: cold (the agent pulls), then warm.
. "$(dirname "$0")/lib/stack.sh"
mkdir -p "$work/s"
bench_stack "$build" "$work/s" bench-pull
"$bin/bai" admin registry add "$host" --url "http://$host" >/dev/null
"$bin/bai" admin image rescan "$host" >/dev/null
for kind in cold warm; do
  t0=$(now)
  "$bin/bai" session create --name "$kind" "$host/bench/big:1" >/dev/null 2>"$work/$kind.err"
  t1=$(now)
  echo "$t1 - $t0" | bc >"$work/t_$kind"
done
"$bin/bai" rm cold warm >/dev/null 2>&1 || true
printf 'session create -> RUNNING, %d MiB image: cold agent %.2f s (%d pull progress lines), warm %.2f s\n' \
  "$mib" "$(cat "$work/t_cold")" "$(grep -c '^pulling' "$work/cold.err" || true)" "$(cat "$work/t_warm")"
grep '^pulling' "$work/cold.err" | tail -2 || true
