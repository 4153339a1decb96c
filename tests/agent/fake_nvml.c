/* SPDX-License-Identifier: Apache-2.0
 * A stand-in for libnvidia-ml.so.1 on machines without a GPU: the NVML entry points the agent
 * uses, with NVML's signatures and return codes, describing two H100-like devices. */
#include <stdio.h>
#include <string.h>

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static int initialised = 0;
static long handles[2] = {0, 1};

int nvmlInit_v2(void) {
  initialised = 1;
  return 0;
}
int nvmlShutdown(void) {
  if (!initialised) return 1; /* NVML_ERROR_UNINITIALIZED */
  initialised = 0;
  return 0;
}
const char* nvmlErrorString(int rc) { return rc == 1 ? "Uninitialized" : "Unknown Error"; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
  if (!initialised) return 1;
  *n = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** dev) {
  if (!initialised) return 1;
  if (i >= 2) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *dev = &handles[i];
  return 0;
}
int nvmlDeviceGetUUID(void* dev, char* out, unsigned int len) {
  snprintf(out, len, "GPU-00000000-fake-4000-8000-%012ld", *(long*)dev);
  return 0;
}
int nvmlDeviceGetName(void* dev, char* out, unsigned int len) {
  (void)dev;
  snprintf(out, len, "NVIDIA H100 80GB HBM3 (fake)");
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* dev, nvmlMemory_t* m) {
  (void)dev;
  m->total = 85520809984ULL;
  m->free = m->total;
  m->used = 0;
  return 0;
}
