"""ELL's fixed-stride kernels against the bounded ELL walk and CSR on the same matrix.

The fixed-stride variant (``lowering.schedule`` chooses it from the measured fill; ``Contraction.stride``) walks
all K slots of every row with no position loads and K compiled in. Single-threaded planned ``Matmul``s,
interleaved rounds, minimum of the repeats; ratio = time / CSR's time.

    PYTHONPATH=. python benchmarks/bench_ell.py --rounds 7
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import frontend.ops as F
import lowering.schedule as schedule
from frontend.tensor import Tensor


def poisson2d(m: int) -> sp.csr_matrix:
    """The 5-point Laplacian on an m x m grid."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return (sp.kron(sp.eye(m), t) + sp.kron(t, sp.eye(m))).tocsr()


def banded(n: int, half: int, seed: int = 0) -> sp.csr_matrix:
    """``2 half + 1`` random diagonals."""
    rng = np.random.default_rng(seed)
    offs = list(range(-half, half + 1))
    return sp.diags([rng.random(n - abs(k)) + 0.1 for k in offs], offs, shape=(n, n)).tocsr()


def plans(a: sp.csr_matrix, x: np.ndarray) -> dict[str, Any]:
    """Planned single-threaded Matmuls: CSR, ELL (fixed stride as chosen) and ELL forced to the bounded walk."""
    out = {"CSR": F.Matmul(Tensor.from_package(a), x, threads=1),
           "ELL stride": F.Matmul(Tensor.from_package(a).convert("ELL"), x, threads=1)}
    saved = schedule.STRIDE_FILL
    schedule.STRIDE_FILL = 2.0  # never: the bounded walk (fresh buffers, so a fresh schedule)
    try:
        out["ELL bounded"] = F.Matmul(Tensor.from_package(a).convert("ELL"), x, threads=1)
        for m in out.values():
            m.plan()
    finally:
        schedule.STRIDE_FILL = saved
    return out


def best(fns: dict[str, Callable[[], Any]], rounds: int, inner: int) -> dict[str, float]:
    for fn in fns.values():
        fn()
    t = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            t[k] = min(t[k], (time.perf_counter() - t0) / inner)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--inner", type=int, default=20)
    args = ap.parse_args()
    mats = {"poisson 2-D 300^2": poisson2d(300), "banded 9 diag 90k": banded(90000, 4),
            "banded 33 diag 30k": banded(30000, 16)}
    print("| matrix | op | CSR ms | ELL stride / CSR | ELL bounded / CSR | stride chosen |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for name, a in mats.items():
        for op, cols in (("SpMV", None), ("SpMM 16", 16)):
            x = rng.random(a.shape[1] if cols is None else (a.shape[1], cols))
            ps = plans(a, x)
            ref = a @ x
            for m in ps.values():
                r = m.execute()
                got = r.to_dense() if isinstance(r, Tensor) else np.asarray(r)
                np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
            t = best({k: m.execute for k, m in ps.items()}, args.rounds, args.inner)
            print(f"| {name} | {op} | {t['CSR'] * 1e3:.3f} | {t['ELL stride'] / t['CSR']:.2f} | "
                  f"{t['ELL bounded'] / t['CSR']:.2f} | {ps['ELL stride'].info.reason.split(':')[0]} |")


if __name__ == "__main__":
    main()
