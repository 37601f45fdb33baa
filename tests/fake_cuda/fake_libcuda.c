/* A fake CUDA driver (libcuda.so.1) for host-side integration tests without a GPU.
 *
 * One device (sm_90). Modules, functions and streams are counters; nothing runs on a device and no
 * device pointer is ever dereferenced. cuModuleLoadData checks the image's magic (fatbin or cubin
 * ELF or PTX text), cuLaunchKernel records the kernel name, grid, block, stream and the first
 * FAKE_PARAMS 8-byte kernel parameters in a text log that fake_log() returns.
 */
#include <stdint.h>
#include <string.h>

#include "fake_log.h"

#define FAKE_PARAMS 25
typedef int CUresult;
static char names[64][128];
static int nnames;
static uintptr_t next_stream = 0x5000;

CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  *v = attr == 75 ? 9 : attr == 76 ? 0 : 1;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = (void *)0xc0; return 0; }
CUresult cuCtxPushCurrent_v2(void *ctx) { return 0; }
CUresult cuCtxPopCurrent_v2(void **ctx) { if (ctx) *ctx = (void *)0xc0; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) { *s = "FAKE_ERROR"; return 0; }

CUresult cuModuleLoadData(void **mod, const void *image) {
  const unsigned char *p = image;
  const char *kind = (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) ? "fatbin"
                     : (p[0] == 0x7f && p[1] == 'E') ? "cubin"
                     : (strstr((const char *)image, ".target") != NULL) ? "ptx" : "unknown";
  say("load %s\n", kind);
  *mod = (void *)0x10;
  return 0;
}
CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, void *o, void **v) {
  return cuModuleLoadData(mod, image);
}
CUresult cuModuleUnload(void *mod) { say("unload\n"); return 0; }
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  if (nnames < 64) {
    snprintf(names[nnames], sizeof names[0], "%s", name);
    *fn = (void *)(uintptr_t)(nnames + 1);
    nnames++;
  }
  return 0;
}
CUresult cuFuncSetAttribute(void *fn, int attr, int value) { return 0; }
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
  int k = (int)(uintptr_t)fn - 1;
  say("launch %s grid %u %u %u block %u %u %u stream %#lx params", k >= 0 && k < nnames ? names[k] : "?",
      gx, gy, gz, bx, by, bz, (unsigned long)(uintptr_t)stream);
  for (int i = 0; params != NULL && i < FAKE_PARAMS; i++)
    say(" %#llx", (unsigned long long)*(uint64_t *)params[i]);
  say("\n");
  return 0;
}
CUresult cuLaunchKernelEx(const void *config, void *fn, void **params, void **extra) { return 0; }
CUresult cuStreamCreate(void **s, unsigned flags) {
  *s = (void *)next_stream++;
  say("stream-create %#lx\n", (unsigned long)(uintptr_t)*s);
  return 0;
}
CUresult cuStreamSynchronize(void *s) { say("stream-sync %#lx\n", (unsigned long)(uintptr_t)s); return 0; }
CUresult cuStreamDestroy_v2(void *s) { say("stream-destroy %#lx\n", (unsigned long)(uintptr_t)s); return 0; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { return 0; }
CUresult cuEventCreate(void **e, unsigned f) { *e = (void *)0xe0; return 0; }
CUresult cuEventDestroy_v2(void *e) { return 0; }
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) { say("alloc %zu\n", n); *p = 0xd000; return 0; }
CUresult cuMemAllocManaged(uint64_t *p, size_t n, unsigned f) { *p = 0xd000; return 0; }
CUresult cuMemFree_v2(uint64_t p) { return 0; }
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { return 0; }
CUresult cuMemHostUnregister(void *p) { return 0; }
CUresult cuMemcpy(uint64_t d, uint64_t s, size_t n) { say("memcpy %zu\n", n); return 0; }
CUresult cuMemcpyAsync(uint64_t d, uint64_t s, size_t n, void *st) { say("memcpy %zu\n", n); return 0; }
CUresult cuMemsetD16Async(uint64_t d, unsigned short v, size_t n, void *s) { return 0; }
CUresult cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *s) { return 0; }
CUresult cuTensorMapEncodeTiled(void *m, int t, unsigned r, void *a, const void *d, const void *s,
                                const void *b, const void *e, int i, int sw, int l2, int oob) { return 0; }
