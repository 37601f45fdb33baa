/* Linked into every GPU module: lets the caller's CUDA stream carry the module's work.
 *
 * The host code MLIR generates creates a stream per async chain (mgpuStreamCreate), launches on it,
 * synchronizes and destroys it. While ust_set_stream(s, 1) is in effect on the calling thread, these
 * calls resolve here (a module's own definitions come before its libmlir_cuda_runtime.so dependency):
 * "creating" a stream returns s, and synchronizing or destroying s does nothing, so kernels are queued
 * on the caller's stream in order and the call returns without waiting. Otherwise they forward to the
 * runtime, found through the handle of the already loaded runtime library UST_RUNTIME (RTLD_NEXT
 * finds nothing from a library opened RTLD_LOCAL, as ctypes does).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

#ifndef UST_RUNTIME
#define UST_RUNTIME "libmlir_cuda_runtime.so"
#endif

typedef void *ust_stream_t;

static __thread ust_stream_t ust_stream = NULL;
static __thread int ust_active = 0;

void ust_set_stream(ust_stream_t stream, int active) {
  ust_stream = stream;
  ust_active = active;
}

static void *ust_next(const char *name) {
  void *lib = dlopen(UST_RUNTIME, RTLD_LAZY | RTLD_NOLOAD);
  void *fn = lib != NULL ? dlsym(lib, name) : NULL;
  if (lib != NULL)
    dlclose(lib); /* drops the reference RTLD_NOLOAD took; the module's dependency keeps it loaded */
  if (fn == NULL)
    fprintf(stderr, "ust-mlir stream shim: %s not found in %s\n", name, UST_RUNTIME);
  return fn;
}

ust_stream_t mgpuStreamCreate(void) {
  static ust_stream_t (*real)(void) = NULL;
  if (ust_active)
    return ust_stream;
  if (real == NULL)
    real = (ust_stream_t(*)(void))ust_next("mgpuStreamCreate");
  return real != NULL ? real() : NULL; /* NULL: the legacy default stream */
}

void mgpuStreamSynchronize(ust_stream_t stream) {
  static void (*real)(ust_stream_t) = NULL;
  if (ust_active && stream == ust_stream)
    return;
  if (real == NULL)
    real = (void (*)(ust_stream_t))ust_next("mgpuStreamSynchronize");
  if (real != NULL)
    real(stream);
}

void mgpuStreamDestroy(ust_stream_t stream) {
  static void (*real)(ust_stream_t) = NULL;
  if (ust_active && stream == ust_stream)
    return;
  if (real == NULL)
    real = (void (*)(ust_stream_t))ust_next("mgpuStreamDestroy");
  if (real != NULL)
    real(stream);
}
