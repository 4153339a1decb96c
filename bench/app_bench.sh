#!/usr/bin/env bash
# `bai app` against a direct loopback connection to the same HTTP service, same run:
#  - throughput of one large download (default 1 GiB; arg 2 in MiB), alternating rounds (arg 3,
#    default 3), medians and the ratio tunnel/direct (target ≥ 0.5×);
#  - added latency per small keep-alive request: 200 GETs of a 100-byte file on one connection,
#    median per request through the tunnel minus direct (target ≤ 2 ms).
# The service is a Python HTTP/1.1 server on this host, reached by the simulated agent's
# preopen port (a simulated kernel's services are its host's), so the direct connection and the
# tunnel (bai → manager → agent → the same port) end at the very same server. No root needed.
# Usage: bench/app_bench.sh BUILD_DIR [MIB] [ROUNDS]
set -euo pipefail
build=${1:-build}
mib=${2:-1024}
rounds=${3:-3}
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. "$(dirname "$0")/lib/stack.sh"
port=$(bench_free_port)
"$bin/bai-manager" --data-dir "$work/m" --listen "127.0.0.1:$port" >"$work/m.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/m.log" && break; sleep 0.1; done
"$bin/bai-agent" --manager "http://127.0.0.1:$port" --id bench-app --backend dummy \
  --cluster-secret-file "$work/m/cluster-secret" --state-dir "$work/a" --slots cpu=4,mem=8g \
  >"$work/a.log" 2>&1 &
pids+=($!)
set -a; . "$work/m/admin-credentials.env"; set +a
export BACKEND_ENDPOINT=http://127.0.0.1:$port BAI_CONFIG_DIR=$work/cfg

mkdir "$work/www"
truncate -s $((mib << 20)) "$work/www/big.bin"
head -c 100 /dev/zero >"$work/www/small.txt"
svc=$(bench_free_port)
python3 - "$work/www" "$svc" >"$work/svc.log" 2>&1 <<'PY' &
import functools, http.server, socket, sys
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, delayed ACKs add 40 ms.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])),
    functools.partial(H, directory=sys.argv[1])).serve_forever()
PY
pids+=($!)
for _ in $(seq 120); do
  "$bin/bai" session create --name bench-apps --preopen "$svc" python >/dev/null 2>&1 && break
  sleep 0.5
done
tun=$(bench_free_port)
"$bin/bai" app bench-apps "$svc" -b "$tun" >"$work/app.out" 2>"$work/app.err" &
pids+=($!)
for _ in $(seq 100); do grep -q http "$work/app.out" && break; sleep 0.1; done
grep -q http "$work/app.out" || { echo "bench: bai app did not start:" >&2; cat "$work/app.err" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rate() {  # MB/s of one download
  curl -s -o /dev/null -w '%{size_download} %{time_total}\n' "$1" | awk '{printf "%.1f\n", $1/$2/1e6}'
}
# CPU seconds (user + system) a process has used so far.
cpu_s() { awk '{printf "%.2f\n", ($14 + $15) / 100}' "/proc/$1/stat" 2>/dev/null || echo 0; }
app_pid=${pids[3]}
declare -A before=() spent=()
for r in $(seq "$rounds"); do
  rate "http://127.0.0.1:$svc/big.bin" >>"$work/direct.rate"
  for name in manager:${pids[0]} agent:${pids[1]} service:${pids[2]} bai-app:$app_pid; do
    before[${name%%:*}]=$(cpu_s "${name#*:}")
  done
  rate "http://127.0.0.1:$tun/big.bin" >>"$work/tunnel.rate"
  for name in manager:${pids[0]} agent:${pids[1]} service:${pids[2]} bai-app:$app_pid; do
    n=${name%%:*}
    spent[$n]=$(echo "${spent[$n]:-0} + $(cpu_s "${name#*:}") - ${before[$n]}" | bc)
  done
done
urls() { for _ in $(seq 200); do printf -- '-o /dev/null %s ' "http://127.0.0.1:$1/small.txt"; done; }
for r in $(seq "$rounds"); do
  # One curl, one keep-alive connection, 200 requests; the first (connect) left out.
  curl -s -w '%{time_total}\n' $(urls "$svc") | tail -n +2 >>"$work/direct.lat"
  curl -s -w '%{time_total}\n' $(urls "$tun") | tail -n +2 >>"$work/tunnel.lat"
done
d=$(median <"$work/direct.rate")
t=$(median <"$work/tunnel.rate")
dl=$(median <"$work/direct.lat")
tl=$(median <"$work/tunnel.lat")
echo "app_bench: ${mib} MiB download, median of $rounds: direct $d MB/s, bai app $t MB/s, ratio $(echo "scale=2; $t / $d" | bc)x (target >= 0.5x)"
gib=$(echo "scale=4; $rounds * $mib / 1024" | bc)
line=""
for n in bai-app manager agent service; do
  line+=" $n $(echo "scale=2; ${spent[$n]} / $gib" | bc)"
done
echo "app_bench: CPU seconds per GiB through the tunnel:$line"
echo "app_bench: small keep-alive requests, median of $((rounds * 199)): direct $(echo "scale=3; $dl * 1000" | bc) ms, bai app $(echo "scale=3; $tl * 1000" | bc) ms, added $(echo "scale=3; ($tl - $dl) * 1000" | bc) ms (target <= 2 ms)"
