#!/usr/bin/env bash
# Virtual folder transfers over loopback against bai-manager's embedded storage proxy:
#  - a large file (default 1 GiB; arg 2 in MiB) up and down with `bai vfolder upload/download`,
#    beside curl doing the same tus PATCHes (64 MiB each, the proxy's largest chunk) and one
#    GET of the same file to the same endpoint, in alternating rounds (arg 3, default 3);
#    medians and the ratio bai/curl in throughput (target ≥ 0.9× both ways);
#  - the manager's RSS (the proxy runs inside it) sampled during the large transfers
#    (target < 64 MiB for the proxy: streams, no whole-file buffers);
#  - 1,000 files of 64 KiB up and down with `bai … -r` (files/s; target ≥ 500).
# Usage: bench/vfolder_bench.sh BUILD_DIR [MIB] [ROUNDS]
set -euo pipefail
build=${1:-build}
mib=${2:-1024}
rounds=${3:-3}
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d)
trap 'kill $mpid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
sport=$(free_port)
"$bin/bai-manager" --data-dir "$work/m" --listen "127.0.0.1:$port" \
  --storage-listen "127.0.0.1:$sport" >"$work/m.log" 2>&1 &
mpid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/m.log" && break; sleep 0.1; done
set -a; . "$work/m/admin-credentials.env"; set +a
export BACKEND_ENDPOINT=http://127.0.0.1:$port BAI_CONFIG_DIR=$work/cfg XDG_STATE_HOME=$work/state
bai() { "$bin/bai" "$@"; }
bai vfolder create bench >/dev/null
head -c $((mib << 20)) /dev/urandom >"$work/big.bin"
size=$((mib << 20))
rss_before=$(awk '/VmRSS/ {print $2}' /proc/$mpid/status)
# The manager's resident size, sampled every 50 ms while the large transfers run.
# Each sample is tagged with who is transferring (bai or curl).
echo bai >"$work/phase"
(while kill -0 $mpid 2>/dev/null; do
  echo "$(cat "$work/phase") $(awk '/VmRSS/ {print $2}' /proc/$mpid/status)"; sleep 0.05
done) >"$work/rss" &
sampler=$!

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ticket() { # FOLDER OP JSON → url?token=
  bai api POST "/folders/$1/$2" -d "$3" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["url"] + "?token=" + d["token"])'
}
# curl's chunks: 64 MiB files cut before timing (curl sends each with a Content-Length).
mkdir "$work/chunks"
split -b 64M -d -a 4 "$work/big.bin" "$work/chunks/c"
curl_upload() { # REMOTE
  local url off=0 c
  url=$(ticket bench request-upload "{\"path\": \"$1\", \"size\": $size}")
  for c in "$work/chunks"/c*; do
    curl -sf -X PATCH -H "Tus-Resumable: 1.0.0" -H "Upload-Offset: $off" \
      -H "Content-Type: application/offset+octet-stream" --data-binary @"$c" "$url" -o /dev/null
    off=$((off + $(stat -c %s "$c")))
  done
}
: >"$work/up_bai"; : >"$work/up_curl"; : >"$work/down_bai"; : >"$work/down_curl"
for r in $(seq "$rounds"); do
  echo bai >"$work/phase"
  t0=$(now); bai vfolder upload bench "$work/big.bin" --dst "b$r" --progress none >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc >>"$work/up_bai"
  echo curl >"$work/phase"
  t0=$(now); curl_upload "c$r/big.bin"; t1=$(now)
  echo "$t1 - $t0" | bc >>"$work/up_curl"
  rm -rf "$work/d"
  echo bai >"$work/phase"
  t0=$(now); bai vfolder download bench "b$r/big.bin" --dst "$work/d" --progress none >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc >>"$work/down_bai"
  cmp -s "$work/big.bin" "$work/d/big.bin" || { echo "download differs"; exit 1; }
  url=$(ticket bench request-download "{\"path\": \"c$r/big.bin\"}")
  echo curl >"$work/phase"
  t0=$(now); curl -sf "$url" -o "$work/d/curl.bin"; t1=$(now)
  echo "$t1 - $t0" | bc >>"$work/down_curl"
done
kill $sampler 2>/dev/null || true
rss_bai=$(awk '$1 == "bai" {print $2}' "$work/rss" | sort -n | tail -1)
rss_curl=$(awk '$1 == "curl" {print $2}' "$work/rss" | sort -n | tail -1)
rate() { awk -v s="$size" -v t="$1" 'BEGIN {printf "%.0f", s / t / 1048576}'; }
ub=$(median <"$work/up_bai"); uc=$(median <"$work/up_curl")
db=$(median <"$work/down_bai"); dc=$(median <"$work/down_curl")
echo "vfolder ${mib} MiB, $rounds rounds (medians):"
printf '  upload:   bai %s MiB/s, curl %s MiB/s, ratio %.2fx (target >= 0.9x)\n' "$(rate "$ub")" "$(rate "$uc")" "$(echo "$uc / $ub" | bc -l)"
printf '  download: bai %s MiB/s, curl %s MiB/s, ratio %.2fx (target >= 0.9x)\n' "$(rate "$db")" "$(rate "$dc")" "$(echo "$dc / $db" | bc -l)"
printf '  manager (with the proxy) RSS: %d MiB idle; at most %d MiB during bai'"'"'s transfers (16 MiB chunks), %d MiB during curl'"'"'s (64 MiB chunks) (target: growth < 64 MiB)\n' \
  $((rss_before / 1024)) $((rss_bai / 1024)) $((rss_curl / 1024))

mkdir -p "$work/small"
for i in $(seq 1000); do head -c 65536 /dev/urandom >"$work/small/f$i"; done
t0=$(now); bai vfolder upload bench "$work/small" -r --parallel 8 --progress none >/dev/null; t1=$(now)
up=$(echo "1000 / ($t1 - $t0)" | bc -l)
t0=$(now); bai vfolder download bench small -r --parallel 8 --dst "$work/sd" --progress none >/dev/null; t1=$(now)
down=$(echo "1000 / ($t1 - $t0)" | bc -l)
diff -r "$work/small" "$work/sd/small" >/dev/null || { echo "small files differ"; exit 1; }
printf '  1,000 x 64 KiB: up %.0f files/s, down %.0f files/s (target >= 500)\n' "$up" "$down"
