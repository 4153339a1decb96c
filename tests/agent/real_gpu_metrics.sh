#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Label `gpu` (never in CI: no GPU there): the agent's /metrics over the real NVML. A manager
# (SQLite) and a simulated-kernel agent that offers this machine's GPUs; a session holding
# cuda.shares=0.5 shows as allocated on GPU 0; NVML's total matches nvidia-smi; while PyTorch
# fills 4 GiB and multiplies matrices, `used` rises by that much and utilization shows.
#   real_gpu_metrics.sh BIN_DIR       (bai-manager, bai-agent, bai inside)
set -euo pipefail
bin=$1
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
mport=$((port + 1))
"$bin/bai-manager" --data-dir "$dir/m" --listen "127.0.0.1:$port" >"$dir/manager.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do
  grep -q "listening on" "$dir/manager.log" && break
  sleep 0.1
done
"$bin/bai-agent" --manager "http://127.0.0.1:$port" --id gpu-node --backend dummy \
  --cluster-secret-file "$dir/m/cluster-secret" --state-dir "$dir/a" \
  --metrics-listen "127.0.0.1:$mport" >"$dir/agent.log" 2>&1 &
pids+=("$!")
scrape() { curl -sf "http://127.0.0.1:$mport/metrics"; }
for _ in $(seq 100); do
  scrape 2>/dev/null | grep -q '^bai_agent_manager_link_up{.*} 1$' && break
  sleep 0.1
done
cat "$dir/agent.log"
set -a
# shellcheck disable=SC1091
. "$dir/m/admin-credentials.env"
set +a
export BACKEND_ENDPOINT="http://127.0.0.1:$port" BAI_CONFIG_DIR="$dir/cfg"
"$bin/bai" session create --name half -r cuda.shares=0.5 python >/dev/null
for _ in $(seq 100); do
  scrape | grep -q 'bai_agent_kernels{status="RUNNING"} 1' && break
  sleep 0.1
done
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | tr -d ' ')
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
before=$(scrape)
grep "^bai_gpu_" <<<"$before" | grep "gpu=\"$uuid\"" || true
grep -q "^bai_gpu_shares{gpu=\"$uuid\",index=\"0\",kind=\"allocated\"} 0.5$" <<<"$before"
grep -q "^bai_gpu_kernels{gpu=\"$uuid\",index=\"0\"} 1$" <<<"$before"
total=$(grep "^bai_gpu_memory_bytes{gpu=\"$uuid\",index=\"0\",kind=\"total\"}" <<<"$before" | awk '{print $2}')
diff=$(((total >> 20) - total_mib))
((diff >= -1 && diff <= 1)) || {  # nvidia-smi rounds to a MiB
  echo "NVML total $total B is not nvidia-smi's $total_mib MiB"
  exit 1
}
used0=$(grep "^bai_gpu_memory_bytes{gpu=\"$uuid\",index=\"0\",kind=\"used\"}" <<<"$before" | awk '{print $2}')
echo "real GPU metrics: total $total B = nvidia-smi's $total_mib MiB; 0.5 shares allocated; used $used0 B"

# A load: 4 GiB held and matrices multiplied for about 8 s.
python3 -c '
import torch, time
x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda")
end = time.time() + 8
while time.time() < end:
    a = (a @ a).clamp_(-1, 1)
torch.cuda.synchronize()
' &
load=$!
pids+=("$load")
max_used=0 max_util=0
while kill -0 "$load" 2>/dev/null; do  # CUDA's start-up takes seconds: scrape until it ends
  sleep 0.25
  now=$(scrape)
  used=$(grep "^bai_gpu_memory_bytes{gpu=\"$uuid\",index=\"0\",kind=\"used\"}" <<<"$now" | awk '{print $2}')
  util=$(grep "^bai_gpu_utilization_percent{gpu=\"$uuid\",index=\"0\"}" <<<"$now" | awk '{print $2}')
  ((used > max_used)) && max_used=$used
  ((${util:-0} > max_util)) && max_util=${util:-0}
done
wait "$load"
echo "real GPU metrics under load: used rose by $(((max_used - used0) >> 20)) MiB; utilization up to $max_util %"
((max_used - used0 >= (4 << 30))) || {
  echo "NVML's used did not rise by the 4 GiB held"
  exit 1
}
((max_util > 0)) || {
  echo "no utilization seen while multiplying matrices"
  exit 1
}
echo "real GPU: the agent's metrics follow NVML"
