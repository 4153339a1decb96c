#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real-GPU benchmarks of the GPU shim (issue 13; docs/gpu-sharing.md). Run on a machine with an
# NVIDIA GPU, the driver, python3 with PyTorch, from the repository root, with a build tree made
# elsewhere (build/lib/libbai-gpushim.so, build/bin/gpushim_probe):
#
#   bash bench/gpu/run.sh [PHASE…]        phases: facts memory share overhead smi mnist report
#                                         (default: all of them, then report)
#
# Each phase appends JSON lines to $RESULTS (default bench/gpu/results/); `report` turns them into
# the table in docs/gpu-results.md. Phases can run in separate calls (a lent GPU machine allows
# 10 minutes per command). A "container" here is what the agent gives one: its own ledger, its
# own limits file, the shim preloaded; no runc (the lent machine has none), so `smi` checks
# nvidia-smi under the shim, not inside a runc container.
#
# Knobs: CAP (memory cap, default 10g), SECONDS_PER_RUN (default 20), TASKS (default 50),
# SERIAL_SAMPLE (tasks timed one at a time on the whole GPU, default TASKS; the whole-GPU time is
# scaled from the sample when smaller), EPOCHS (default 2), MNIST_MODES (default all four).
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build}
SHIM=$(realpath "$BUILD/lib/libbai-gpushim.so")
PROBE=$(realpath "$BUILD/bin/gpushim_probe")
RESULTS=${RESULTS:-bench/gpu/results}
CAP=${CAP:-10g}
SECS=${SECONDS_PER_RUN:-20}
TASKS=${TASKS:-50}
SERIAL_SAMPLE=${SERIAL_SAMPLE:-$TASKS}
EPOCHS=${EPOCHS:-2}
MNIST_MODES=${MNIST_MODES:-serial unlimited timeslice mps}  # which of the mnist runs (a later
                                                            # call's rows are appended)
PY=${PYTHON:-python3}
W="$PY bench/gpu/workloads.py"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$RESULTS"

bytes() { numfmt --from=iec "${1^^}"; }
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | tr -d ' ')
MEM_TOTAL=$(( $(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1) << 20 ))

# container NAME CAP_BYTES QUANTA [MODE] [COMPUTE]: a ledger and limits file; prints the env.
container() {
  local name=$1 cap=$2 quanta=$3 mode=${4:-timeslice} compute=${5:-hard}
  "$PROBE" ledger "$WORK/$name.ledger" "$UUID" "$cap" >/dev/null
  {
    echo "version=1"; echo "mode=$mode"; echo "compute=$compute"
    echo "ledger=$WORK/$name.ledger"; echo "context_bytes=${CONTEXT_BYTES:-0}"
    echo "device.0.uuid=$UUID"
    [[ $cap != 0 ]] && echo "device.0.memory=$cap"
    [[ -n $quanta ]] && echo "device.0.quanta=$quanta"
  } > "$WORK/$name.conf"
  echo "LD_PRELOAD=$SHIM BAI_GPUSHIM_CONFIG=$WORK/$name.conf"
}
record() { echo "{\"phase\": \"$1\", \"case\": \"$2\", \"result\": $3}" >> "$RESULTS/$1.jsonl"; }
# quanta for a share in 0..1 starting at quantum $2
quanta() { awk -v s="$1" -v o="${2:-0}" 'BEGIN { n = int(s * 1000 + 0.5); printf "%d-%d", o, o + n - 1 }'; }

phase_facts() {
  : > "$RESULTS/facts.jsonl"
  local driver gpu torchv
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  torchv=$($PY -c 'import torch; print(torch.__version__)')
  record facts machine "{\"gpu\": \"$gpu\", \"uuid\": \"$UUID\", \"driver\": \"$driver\", \"torch\": \"$torchv\", \"date\": \"$(date -u +%FT%TZ)\"}"
}

phase_memory() {
  : > "$RESULTS/memory.jsonl"
  local cap; cap=$(bytes "$CAP")
  for kind in default expandable async; do
    local conf=""
    case $kind in
      expandable) conf="expandable_segments:True" ;;
      async) conf="backend:cudaMallocAsync" ;;
    esac
    local env; env=$(container "mem-$kind" "$cap" "")
    # Host-side truth: the process's own usage as NVML reports it, sampled while it holds the cap.
    env $env PYTORCH_CUDA_ALLOC_CONF="$conf" $W mem "$kind" > "$WORK/mem.out" &
    local pid=$! peak=0
    while kill -0 $pid 2>/dev/null; do
      local used
      used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
             awk -F, -v p=$pid '$1 == p { print $2 }')
      [[ -n $used && $used -gt $peak ]] && peak=$used
      sleep 0.2
    done
    wait $pid || true
    record memory "torch-$kind" "$(sed "s/}\$/, \"cap\": $cap, \"host_peak_mib\": $peak}/" "$WORK/mem.out")"
  done
  local env; env=$(container mem-raw "$cap" "")
  # Whole output first: `| head` would end the probe with SIGPIPE, which pipefail turns fatal.
  local raw; raw=$(env $env "$PROBE" alloc plain 268435456 100000)
  raw=$(head -2 <<<"$raw" | tr '\n' ' ')
  record memory raw-cuMemAlloc "{\"probe\": \"$raw\", \"cap\": $cap}"
}

phase_share() {
  : > "$RESULTS/share.jsonl"
  local solo
  solo=$($W gemm "$SECS")
  record share solo-gemm "$solo"
  local solo_graph; solo_graph=$($W graph "$SECS")
  record share solo-graph "$solo_graph"
  for split in "0.3 0.7" "0.1 0.9"; do
    set -- $split
    for load in gemm graph; do
      local ea eb
      ea=$(container "share-a" 0 "$(quanta "$1" 0)")
      eb=$(container "share-b" 0 "$(quanta "$2" "$(awk -v s="$1" 'BEGIN { print int(s * 1000 + 0.5) }')")")
      env $ea $W $load "$SECS" > "$WORK/a.out" & local pa=$!
      env $eb $W $load "$SECS" > "$WORK/b.out" & local pb=$!
      wait $pa $pb
      record share "$load-$1-$2" "{\"a\": $(cat "$WORK/a.out"), \"b\": $(cat "$WORK/b.out"), \"solo\": $([[ $load == gemm ]] && echo "$solo" || echo "$solo_graph")}"
    done
  done
}

phase_overhead() {
  : > "$RESULTS/overhead.jsonl"
  local nolimit; nolimit=$(container overhead 0 "")
  for load in gemm tiny; do
    # Alternating rounds, shim absent and present (no limits), five each.
    for _ in 1 2 3 4 5; do
      record overhead "$load-bare" "$($W $load 10)"
      record overhead "$load-shim" "$(env $nolimit $W $load 10)"
    done
  done
}

phase_smi() {
  : > "$RESULTS/smi.jsonl"
  local half=$(( MEM_TOTAL / 2 ))
  local env; env=$(container smi "$half" "$(quanta 0.5)")
  local total used
  total=$(env $env nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
  used=$(env $env nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  record smi half "{\"memory_total_mib\": $total, \"memory_used_mib\": $used, \"cap_mib\": $(( half >> 20 ))}"
}

run_tasks() {  # run_tasks LABEL N PARALLEL MODE: N mnist tasks; prints the makespan in seconds
  local label=$1 n=$2 parallel=$3 mode=$4
  local start; start=$(date +%s.%N)
  local pids=()
  for i in $(seq 1 "$n"); do
    local env=""
    if [[ $mode != none ]]; then
      # 1/TASKS of the GPU each: memory and time quanta side by side.
      local q; q=$(awk -v i="$i" -v n="$TASKS" 'BEGIN { w = int(1000 / n); printf "%d-%d", (i - 1) * w, i * w - 1 }')
      env=$(container "task$i" $(( MEM_TOTAL / TASKS )) "$([[ $mode == timeslice ]] && echo "$q")" "$mode" soft)
    fi
    if [[ $parallel == 1 ]]; then
      (env $env $W mnist "$EPOCHS" "$i" > "$WORK/$label.$i.out" 2> "$WORK/$label.$i.err" ||
        echo "exit status $?" >> "$WORK/$label.$i.err") & pids+=($!)
    else
      env $env $W mnist "$EPOCHS" "$i" > "$WORK/$label.$i.out" 2> "$WORK/$label.$i.err"
    fi
  done
  [[ ${#pids[@]} -gt 0 ]] && wait "${pids[@]}"
  awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'
}

failed() { grep -L '"seconds"' "$WORK/$1".*.out 2>/dev/null | wc -l; }
# why(LABEL): the last line of each failed task's stderr, as a JSON list (the causes, for the table)
why() {
  local f lines=()
  for f in $(grep -L '"seconds"' "$WORK/$1".*.out 2>/dev/null); do
    lines+=("$(tail -1 "${f%.out}.err" | tr -d '"\\\000-\037' | cut -c1-200)")
  done
  printf '['; local sep=""
  for f in "${lines[@]}"; do printf '%s"%s"' "$sep" "$f"; sep=", "; done
  printf ']'
}

phase_mnist() {
  [[ $MNIST_MODES == *serial* ]] && : > "$RESULTS/mnist.jsonl"
  local secs
  if [[ $MNIST_MODES == *serial* ]]; then
    secs=$(run_tasks serial "$SERIAL_SAMPLE" 0 none)
    record mnist serial "{\"tasks\": $SERIAL_SAMPLE, \"seconds\": $secs, \"scaled_to\": $TASKS, \"epochs\": $EPOCHS}"
  fi
  if [[ $MNIST_MODES == *unlimited* ]]; then
    secs=$(run_tasks free "$TASKS" 1 none)
    record mnist unlimited "{\"tasks\": $TASKS, \"seconds\": $secs, \"failed\": $(failed free), \"why\": $(why free)}"
  fi
  if [[ $MNIST_MODES == *timeslice* ]]; then
    secs=$(run_tasks ts "$TASKS" 1 timeslice)
    record mnist timeslice "{\"tasks\": $TASKS, \"seconds\": $secs, \"failed\": $(failed ts), \"why\": $(why ts)}"
  fi
  if [[ $MNIST_MODES == *mps* ]] && command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps-pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d
    export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${MPS_THREADS:-10}
    local secs; secs=$(run_tasks mps "$TASKS" 1 mps)
    record mnist mps "{\"tasks\": $TASKS, \"seconds\": $secs, \"failed\": $(failed mps), \"why\": $(why mps)}"
    unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
    echo quit | nvidia-cuda-mps-control
  fi
}

phase_report() { $PY bench/gpu/report.py "$RESULTS" docs/gpu-results.md; }

phases=("$@")
[[ ${#phases[@]} -eq 0 ]] && phases=(facts memory share overhead smi mnist report)
for p in "${phases[@]}"; do
  echo "== $p"
  "phase_$p"
done
