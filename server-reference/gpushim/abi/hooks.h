// SPDX-License-Identifier: Apache-2.0
// The one list of entry points the shim wraps. The wrapper table, the reverse map from the
// driver's pointers to ours and the exported names all come from it, so they cannot drift apart
// (gpu-shim.md §1.2: HAMi-core's four hand-kept lists did). A test checks that every cu*/nvml*
// name the built library exports is on it.
#pragma once

// Driver API: each versioned ABI the driver hands out, with its per-thread-stream twin.
#define BAI_GPUSHIM_CUDA_HOOKS(X)   \
  X(cuInit)                         \
  X(cuGetProcAddress)               \
  X(cuGetProcAddress_v2)            \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease)      \
  X(cuDevicePrimaryCtxRelease_v2)   \
  X(cuCtxCreate_v2)                 \
  X(cuCtxCreate_v3)                 \
  X(cuCtxCreate_v4)                 \
  X(cuCtxDestroy_v2)                \
  X(cuDeviceTotalMem_v2)            \
  X(cuMemGetInfo_v2)                \
  X(cuMemAlloc_v2)                  \
  X(cuMemAllocPitch_v2)             \
  X(cuMemAllocManaged)              \
  X(cuMemFree_v2)                   \
  X(cuMemAllocAsync)                \
  X(cuMemAllocAsync_ptsz)           \
  X(cuMemAllocFromPoolAsync)        \
  X(cuMemAllocFromPoolAsync_ptsz)   \
  X(cuMemFreeAsync)                 \
  X(cuMemFreeAsync_ptsz)            \
  X(cuMemPoolTrimTo)                \
  X(cuMemPoolDestroy)               \
  X(cuMemCreate)                    \
  X(cuMemRelease)                   \
  X(cuLaunchKernel)                 \
  X(cuLaunchKernel_ptsz)            \
  X(cuLaunchKernelEx)               \
  X(cuLaunchKernelEx_ptsz)          \
  X(cuLaunchCooperativeKernel)      \
  X(cuLaunchCooperativeKernel_ptsz) \
  X(cuGraphLaunch)                  \
  X(cuGraphLaunch_ptsz)

// NVML: what nvidia-smi and pynvml read for memory and processes.
#define BAI_GPUSHIM_NVML_HOOKS(X)            \
  X(nvmlDeviceGetMemoryInfo)                 \
  X(nvmlDeviceGetMemoryInfo_v2)              \
  X(nvmlDeviceGetComputeRunningProcesses)    \
  X(nvmlDeviceGetComputeRunningProcesses_v2) \
  X(nvmlDeviceGetComputeRunningProcesses_v3)
