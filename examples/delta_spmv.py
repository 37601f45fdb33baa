"""DELTA(bits) SpMV: a pruned weight matrix stored as column gaps of a few bits (MACKO-style).

``(i, j) -> (i : dense, j : delta(b))`` keeps per row the gaps between stored columns in ``b``-bit
unsigned integers (uint8 here) and inserts explicit zeros where a gap would not fit. MLIR's sparse
compiler has no such level, so ``matmul`` runs ust-mlir's own level-walking code (``path == "emitter"``).

Run: ``python examples/delta_spmv.py``
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from frontend import Matmul, NamedFormats, Tensor


def best_of(fn, reps: int = 20) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(n: int = 4096, sparsity: float = 0.7) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, n)).astype(np.float32)
    w[rng.random((n, n)) < sparsity] = 0.0               # unstructured pruning
    x = rng.standard_normal(n).astype(np.float32)
    csr = Tensor.from_package(sp.csr_matrix(w))
    print(f"{n} x {n} float32, {100 * sparsity:.0f}% zeros, {np.count_nonzero(w)} nonzeros")
    for bits in (4, 8):
        t = csr.convert(NamedFormats.DELTA(bits))
        index_bytes = t.crd(1).nbytes + t.pos(1).nbytes
        mm = Matmul(t, x).plan()
        y = mm.execute().to_dense()
        err = np.abs(y - w @ x).max() / np.abs(w @ x).max()
        print(f"DELTA({bits}): {t.nse} stored entries ({t.nse - np.count_nonzero(w)} padding zeros), "
              f"gaps as {t.crd(1).dtype}, index bytes {index_bytes / 1e6:.1f} MB "
              f"(CSR int32: {(np.count_nonzero(w) + n + 1) * 4 / 1e6:.1f} MB); path {mm.path}; rel err {err:.1e}; "
              f"{best_of(mm.execute) * 1e3:.2f} ms vs dense numpy {best_of(lambda: w @ x) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
