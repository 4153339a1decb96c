#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Label `gpu` (never in CI: no GPU there): the shim over the real driver. A 1 GiB cap on GPU 0;
# raw cuMemAlloc in 256 MiB steps must stop after 4 with CUDA_ERROR_OUT_OF_MEMORY (2), and
# cuMemGetInfo and NVML must report the cap as the total.
#   real_gpu.sh SHIM PROBE
set -euo pipefail
shim=$1 probe=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | tr -d ' ')
cap=$((1 << 30))
"$probe" ledger "$dir/ledger" "$uuid" "$cap"
printf 'mode=timeslice\nledger=%s\ndevice.0.uuid=%s\ndevice.0.memory=%s\n' \
  "$dir/ledger" "$uuid" "$cap" > "$dir/conf"
out=$(LD_PRELOAD=$shim BAI_GPUSHIM_CONFIG=$dir/conf "$probe" alloc plain $((256 << 20)) 100)
echo "$out"
grep -q '^allocated 4 of 100 first_error 2$' <<<"$out"
grep -q "^cuMemGetInfo 0 free [0-9]* total $cap\$" <<<"$out"
grep -q "^nvmlMemory_v2 0 total $cap " <<<"$out"
echo "real GPU: the cap holds"

# libcudart's own resolver (cudaGetDriverEntryPointByVersion) must hand out the shim's wrapper
# too: cudart asks the driver through the cuGetProcAddress it got from dlsym, which is the shim's
# (on the fake driver cudart cannot initialise, so only a real GPU can show it).
cudart=""
for c in "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcudart.so.1[23] \
  $(python3 -c 'import nvidia.cuda_runtime, os; print(os.path.dirname(nvidia.cuda_runtime.__file__) + "/lib/libcudart.so.12")' 2>/dev/null); do
  if [[ -r $c ]]; then cudart=$c; break; fi
done
if [[ -n $cudart ]]; then
  out=$(LD_PRELOAD=$shim BAI_GPUSHIM_CONFIG=$dir/conf "$probe" cudart "$cudart")
  echo "$out"
  grep -q '^cudaGetDriverEntryPointByVersion 0 0 libbai-gpushim.so ' <<<"$out"
  echo "real GPU: libcudart's entry points lead to the shim ($cudart)"
else
  echo "real GPU: no libcudart found; the entry-point check did not run"
fi
