// SPDX-License-Identifier: Apache-2.0
// The slice of the NVIDIA driver ABI (libcuda.so.1, libnvidia-ml.so.1) that the shim and the
// fake driver speak, declared here so neither needs the CUDA toolkit to build. One definition for
// both sides: the fake answers with these codes and layouts, the shim reads them. Values and
// layouts are the driver's (cuda.h / nvml.h of CUDA 13.0); names keep the driver's spelling so a
// reader can grep the vendor headers.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// ---- driver API -------------------------------------------------------------------------------
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
// Passed through only (cuCtxCreate_v3/_v4): never looked into.
typedef struct CUexecAffinityParam_st CUexecAffinityParam;
typedef struct CUctxCreateParams_st CUctxCreateParams;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUfunc_st* CUfunction;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;

enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_UNKNOWN = 999,
};

// cuGetProcAddress flags and its symbolStatus answers.
enum : unsigned long long {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2,
};
typedef enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

typedef struct {
  char bytes[16];
} CUuuid;

// Device attributes the fake answers (a subset; numbers are cuda.h's).
enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
  CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD = 84,
  CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
  CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120,
  CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 133,
};

// Memory pools (cuMemPoolGetAttribute).
enum {
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
  CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
  CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8,
};

// Virtual memory management (cuMemCreate).
enum { CU_MEM_LOCATION_TYPE_INVALID = 0, CU_MEM_LOCATION_TYPE_DEVICE = 1 };
enum { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1 };
typedef struct {
  int type;
  int id;
} CUmemLocation;
typedef struct {
  int type;
  int requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct {
  int allocType;
  int handleTypes;
  CUmemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

enum { CU_EVENT_DEFAULT = 0, CU_EVENT_BLOCKING_SYNC = 1, CU_EVENT_DISABLE_TIMING = 2 };
enum { CU_MEM_ATTACH_GLOBAL = 1 };

typedef struct {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void* attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

// ---- NVML -------------------------------------------------------------------------------------
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
enum : nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_UNKNOWN = 999,
};
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define BAI_NVML_STRUCT_VERSION(type, ver) (unsigned int)(sizeof(type) | ((ver) << 24U))
#define nvmlMemory_v2 BAI_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
// The layout of both nvmlProcessInfo_v2_t and nvmlProcessInfo_t (v3 functions).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;

}  // extern "C"
