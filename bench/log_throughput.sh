#!/usr/bin/env bash
# Log throughput (root: a runc agent): a job prints 80 MB of 80-byte lines; `bai logs -f` relays
# them (runner → agent → manager → CLI). The rate is the output's bytes over the time from the
# job's first line (it prints its clock) to the reader's last byte. Baseline, same run: the same
# job on the host piped straight into the same reader. Target: ≥ 0.5× the host pipe's rate.
# Also checks the stored log afterwards: its head and tail are kept with a marker between.
# Usage: bench/log_throughput.sh BUILD_DIR [MEGABYTES] [ROUNDS]
set -euo pipefail
build=${1:-build}
mb=${2:-80}
rounds=${3:-3}
if [[ $(id -u) != 0 ]]; then echo "log throughput bench skipped: needs root (runc)"; exit 0; fi
work=$(mktemp -d)
cleanup() {
  [[ -n "${apid:-}" ]] && kill "$apid" 2>/dev/null
  [[ -n "${mpid:-}" ]] && kill "$mpid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

. "$(dirname "$0")/lib/stack.sh"
bench_stack "$build" "$work" bench-tput

lines=$((mb * 1000 * 1000 / 80))
# The job waits before its first line (when followed), prints its clock, then the lines.
job="import sys, time
time.sleep(WAIT)
out = sys.stdout
out.write('%.6f\n' % time.time())
line = 'x' * 79 + '\n'
for i in range($lines):
    out.write(line)
out.flush()"
# The reader: the job's start clock from the first line, then bytes until all have come.
reader="
import sys, time
inp = sys.stdin.buffer
first = inp.readline()
start = float(first)
want = $lines * 80
got = 0
while got < want:
    b = inp.read1(1 << 20)
    if not b: break
    got += len(b)
end = time.time()
print('%d %.6f' % (got, end - start))
sys.stdout.flush()
for b in iter(lambda: inp.read1(1 << 20), b''): pass"
for r in $(seq "$rounds"); do
  python3 -c "${job/WAIT/0}" | python3 -c "$reader" >>"$work/host.txt"
  bench_run_detached "$build" --name "tput-$r" python -- python3 -c "${job/WAIT/3}"
  "$build/bin/bai" session wait "tput-$r" --for running --timeout 60s >/dev/null
  "$build/bin/bai" logs -f "tput-$r" 2>/dev/null | python3 -c "$reader" >>"$work/bai.txt"
done
"$build/bin/bai" logs tput-1 >"$work/stored.txt" 2>"$work/stored.err" || true

/usr/bin/python3 - "$work/bai.txt" "$work/host.txt" "$lines" "$mb" "$work/stored.txt" "$work/stored.err" <<'PY'
import statistics, sys
def load(p): return [tuple(map(float, x.split())) for x in open(p) if x.strip()]
bai, host, lines, mb = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want = lines * 80
def rate(rows): return [got / secs / 1e6 for got, secs in rows]
b, h = statistics.median(rate(bai)), statistics.median(rate(host))
complete = all(got == want for got, _ in bai)
print(f"log throughput: {mb} MB of 80-byte lines, {len(bai)} rounds, medians")
print(f"  {'':<22}{'MB/s':>10}{'vs host':>10}")
print(f"  {'bai logs -f':<22}{b:>10.1f}{b / h:>9.2f}x")
print(f"  {'host pipe (baseline)':<22}{h:>10.1f}{1:>9.2f}x")
stored = open(sys.argv[5], 'rb').read()
notice = open(sys.argv[6], 'rb').read()
marked = b'bytes of output dropped here' in notice
tail_kept = stored.endswith(b'x' * 79 + b'\n')
print(f"  stored log (64 MiB limit): {len(stored)} bytes of stdout, the end kept: {tail_kept}, "
      f"notice on stderr: {marked}")
ok = complete and b / h >= 0.5
print(f"log throughput target (>= 0.5x the host pipe, every byte) {'met' if ok else 'MISSED'}")
PY
