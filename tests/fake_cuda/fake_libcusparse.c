/* A fake cuSPARSE for host-side tests of the blocked-ELL SpMM glue without a GPU.
 *
 * It implements the calls mlir_bridge/gpu/cusparse.py makes, on host memory ("device pointers" are host
 * addresses), with cuSPARSE's documented semantics: a Blocked-ELL matrix is int32 column indices
 * [rows / block][ell_cols / block] (-1: empty slot) and row-major values [rows][ell_cols]; B and C are
 * row-major with leading dimension ld; C = alpha * A @ B + beta * C (beta == 0 ignores C's values).
 * Arguments cuSPARSE would refuse for this operation (transposes, another algorithm, 64-bit or one-based
 * indices, mixed value types, column-major B/C, a short ld, a missing workspace) return
 * CUSPARSE_STATUS_INVALID_VALUE (3). Only float32 and float64 are computed. Descriptors and handles are
 * counted (fake_live() is the number not yet destroyed); fake_log() has one line per SpMM.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fake_log.h"

typedef struct { int64_t rows, cols, block, ell_cols; const int32_t *col; const void *val; int idx, base, type; } Ell;
typedef struct { int64_t rows, cols, ld; void *val; int type, order; } Dn;
typedef struct { void *stream; } Handle;

static int live;

int fake_live(void) { return live; }

int cusparseCreate(Handle **h) { *h = calloc(1, sizeof(Handle)); live++; return 0; }
int cusparseDestroy(Handle *h) { free(h); live--; return 0; }
int cusparseSetStream(Handle *h, void *s) { h->stream = s; return 0; }

int cusparseCreateBlockedEll(Ell **d, int64_t rows, int64_t cols, int64_t block, int64_t ell_cols,
                             void *col, void *val, int idx, int base, int type) {
  if (block <= 0 || rows % block || cols % block || ell_cols % block) return 3;
  Ell *e = malloc(sizeof(Ell));
  *e = (Ell){rows, cols, block, ell_cols, col, val, idx, base, type};
  *d = e;
  live++;
  return 0;
}

int cusparseCreateDnMat(Dn **d, int64_t rows, int64_t cols, int64_t ld, void *val, int type, int order) {
  Dn *m = malloc(sizeof(Dn));
  *m = (Dn){rows, cols, ld, val, type, order};
  *d = m;
  live++;
  return 0;
}

int cusparseDestroySpMat(Ell *d) { free(d); live--; return 0; }
int cusparseDestroyDnMat(Dn *d) { free(d); live--; return 0; }

static int refuse(int opA, int opB, const Ell *a, const Dn *b, const Dn *c, int compute, int alg) {
  if (opA != 0 || opB != 0 || alg != 13 || a->idx != 2 || a->base != 0) return 1;
  if (a->type != b->type || a->type != c->type || compute != a->type) return 1;
  if (b->order != 2 || c->order != 2 || b->ld < b->cols || c->ld < c->cols) return 1;
  return b->rows != a->cols || c->rows != a->rows || b->cols != c->cols;
}

int cusparseSpMM_bufferSize(Handle *h, int opA, int opB, const void *alpha, Ell *a, Dn *b, const void *beta, Dn *c,
                            int compute, int alg, size_t *size) {
  if (refuse(opA, opB, a, b, c, compute, alg)) return 3;
  *size = 256;
  return 0;
}

#define SPMM(T)                                                                                                  \
  for (int64_t r = 0; r < a->rows; r++)                                                                          \
    for (int64_t j = 0; j < b->cols; j++) {                                                                      \
      T acc = 0;                                                                                                 \
      for (int64_t s = 0; s < slots; s++) {                                                                      \
        int32_t bc = a->col[(r / a->block) * slots + s];                                                         \
        if (bc < 0) continue;                                                                                    \
        for (int64_t q = 0; q < a->block; q++)                                                                   \
          acc += ((const T *)a->val)[r * a->ell_cols + s * a->block + q] *                                       \
                 ((const T *)b->val)[(bc * a->block + q) * b->ld + j];                                           \
      }                                                                                                          \
      T *out = (T *)c->val + r * c->ld + j;                                                                      \
      *out = *(const T *)alpha * acc + (*(const T *)beta == 0 ? 0 : *(const T *)beta * *out);                    \
    }

int cusparseSpMM(Handle *h, int opA, int opB, const void *alpha, Ell *a, Dn *b, const void *beta, Dn *c,
                 int compute, int alg, void *buffer) {
  if (refuse(opA, opB, a, b, c, compute, alg) || buffer == NULL) return 3;
  int64_t slots = a->ell_cols / a->block;
  for (int64_t k = 0; k < (a->rows / a->block) * slots; k++)
    if (a->col[k] < -1 || a->col[k] >= a->cols / a->block) return 3;
  if (a->type == 0) {
    SPMM(float)
  } else if (a->type == 1) {
    SPMM(double)
  } else {
    return 10;
  }
  say("spmm stream %p rows %lld cols %lld block %lld ell_cols %lld n %lld type %d\n", h->stream,
      (long long)a->rows, (long long)a->cols, (long long)a->block, (long long)a->ell_cols, (long long)b->cols,
      a->type);
  return 0;
}
