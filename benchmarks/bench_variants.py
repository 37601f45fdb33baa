"""The emitter's kernel variants (``Contraction.lanes``) on a spread of matrices, against scipy.

Each case compiles the row-range kernel (``emit_contraction(c, rows=True)``) for every variant asked for
and times one single-threaded call over all rows, round-robin with scipy (minimum of the repeats: the
machine may be shared). Prints one line per case: time per call (us) of scipy and each variant, and the
ratio variant/scipy. The rules in ``lowering/schedule.py`` (``docs/performance.md``) come from this::

    PYTHONPATH=. python benchmarks/bench_variants.py                 # SpMV, every matrix, lanes 1 / 4 / 8 / 16
    PYTHONPATH=. python benchmarks/bench_variants.py --cols 16 64    # SpMM with 16 and 64 dense columns
    PYTHONPATH=. python benchmarks/bench_variants.py --split         # 1 vs 2 chunks by work (auto threshold)
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from frontend import NamedFormats, Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.emitter import emit_contraction, operand_buffers
from lowering.pipelines import Pipeline
from mlir_bridge import compile_module


def _uniform(m: int, n: int, per_row: int, rng: np.random.Generator) -> sp.csr_matrix:
    rows = np.repeat(np.arange(m), per_row)
    cols = rng.integers(0, n, rows.size)
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(m, n))


def _power_law(n: int, mean: float, rng: np.random.Generator) -> sp.csr_matrix:
    lengths = np.minimum((rng.pareto(1.5, n) + 1) * mean / 3, n).astype(np.int64)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, rows.size)
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(n, n))


def _pruned(n: int, keep: float, rng: np.random.Generator) -> sp.csr_matrix:
    w = rng.standard_normal((n, n)).astype(np.float32)
    w[np.abs(w) < np.quantile(np.abs(w), 1 - keep)] = 0
    return sp.csr_matrix(w)


def matrices(scale: int) -> dict[str, Callable[[], sp.csr_matrix]]:
    """Name -> builder of the suite's CSR matrices (``scale`` 1 = about 1M rows for the large ones)."""
    from pyamg.gallery import load_example, poisson

    rng = np.random.default_rng(0)
    n = 1_000_000 // scale
    side = int(np.sqrt(n))
    return {
        "tiny-8x8": lambda: sp.random(8, 8, 0.4, format="csr", random_state=0),
        "airfoil": lambda: sp.csr_matrix(load_example("airfoil")["A"]),
        "bar": lambda: sp.csr_matrix(load_example("bar")["A"]),
        "ldg-diffusion": lambda: sp.csr_matrix(load_example("local_disc_galerkin_diffusion")["A"]),
        "poisson2d": lambda: sp.csr_matrix(poisson((side, side))),
        "random-10/row": lambda: _uniform(n, n, 10, rng),
        "power-law": lambda: _power_law(n, 12, rng),
        "banded-65": lambda: sp.diags([np.ones(n)] * 65, list(range(-32, 33)), shape=(n, n), format="csr"),
        "blocks-4x4": lambda: sp.csr_matrix(sp.kron(_uniform(n // 4, n // 4, 3, rng), np.ones((4, 4)))),
        "pruned-4096-f32": lambda: _pruned(4096, 0.5, rng),
        "random-2000-1%": lambda: _uniform(2000, 2000, 20, rng),
        "short-wide": lambda: _uniform(1000, 500_000 // scale, 4000, rng),
        "long-rows-200": lambda: _uniform(n // 20, n // 20, 200, rng),
    }


def kernel(a: sp.csr_matrix, lanes: int | None, cols: int) -> Callable[..., None]:
    """The compiled row-range kernel of ``a @ x`` (``cols == 0``) or ``a @ X`` (``cols`` columns)."""
    elem = "f32" if a.dtype == np.float32 else "f64"
    m, n = a.shape
    x = TensorSpec(None, (n,) if cols == 0 else (n, cols), elem)
    y = TensorSpec(None, (m,) if cols == 0 else (m, cols), elem)
    c = Contraction(("ik", "k" if cols == 0 else "kj"), (TensorSpec(NamedFormats.CSR, (m, n), elem, 32, 32), x),
                    "i" if cols == 0 else "ij", y, row_range=True, lanes=lanes)
    return compile_module(emit_contraction(c, rows=True), Pipeline()).function("main")


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Seconds of one call: the minimum over ``repeat`` timings of enough calls to take about 2 ms."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(2e-3 / once))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def run_case(name: str, a: sp.csr_matrix, variants: list[int | None], cols: int, rounds: int) -> None:
    a = sp.csr_matrix(a)
    a.indptr, a.indices = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    if a.dtype != np.float32:
        a = a.astype(np.float64)
    m, n = a.shape
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n if cols == 0 else (n, cols)).astype(a.dtype)
    out = np.empty(m if cols == 0 else (m, cols), a.dtype)
    t = Tensor.from_package(a)
    bufs = operand_buffers(t)
    calls: dict[str, Callable[[], object]] = {"scipy": lambda: a @ x}  # (allocates its result)
    for lanes in variants:
        fn = kernel(a, lanes, cols)
        fn(*bufs, x, out, 0, m)
        ref = a @ x
        assert np.abs(out - ref).max() <= 1e-4 * max(np.abs(ref).max(), 1.0), f"lanes={lanes}: wrong result"
        calls[f"lanes={lanes}"] = fn.bind(*bufs, x, out, 0, m)  # a prepared call: the kernel's time
    best = {k: float("inf") for k in calls}
    for _ in range(rounds):  # round-robin: every variant sees the same machine load
        for k, f in calls.items():
            best[k] = min(best[k], best_time(f, 3))
    s = best["scipy"]
    row = "  ".join(f"{k} {v * 1e6:9.1f}us ({v / s:4.2f})" for k, v in best.items())
    lengths = np.diff(a.indptr)
    print(f"{name:18s} rows {m:8d} nnz {a.nnz:9d} avg {lengths.mean():6.1f} cv "
          f"{lengths.std() / max(lengths.mean(), 1e-9):4.2f} | {row}", flush=True)


def run_split(rows: int, rounds: int) -> None:
    """One call over all rows against two halves (by entries) on two threads, for 2-D Poisson of ``rows``
    rows: where the second thread starts to pay (``lowering.schedule.AUTO_MIN_WORK``)."""
    from concurrent.futures import ThreadPoolExecutor

    from pyamg.gallery import poisson

    side = max(int(np.sqrt(rows)), 2)
    a = sp.csr_matrix(poisson((side, side)))
    a.indptr, a.indices = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    m = a.shape[0]
    x = np.random.default_rng(0).standard_normal(m)
    out = np.empty(m)
    fn = kernel(a, 1, 0)
    bufs = operand_buffers(Tensor.from_package(a))
    mid = int(np.searchsorted(a.indptr, a.nnz // 2))
    pool = ThreadPoolExecutor(1)

    def two() -> None:
        f = pool.submit(fn, *bufs, x, out, mid, m)
        fn(*bufs, x, out, 0, mid)
        f.result()

    one = fn.bind(*bufs, x, out, 0, m)
    best = {"1": float("inf"), "2": float("inf")}
    for _ in range(rounds):
        best["1"] = min(best["1"], best_time(one, 3))
        best["2"] = min(best["2"], best_time(two, 3))
    print(f"poisson2d rows {m:8d} nnz {a.nnz:9d} work {a.nnz + m:9d} | 1 thread {best['1'] * 1e6:9.1f}us  "
          f"2 threads {best['2'] * 1e6:9.1f}us ({best['2'] / best['1']:4.2f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cols", type=int, nargs="*", default=[0], help="0 = SpMV, else SpMM columns")
    parser.add_argument("--lanes", type=lambda s: None if s == "None" else int(s), nargs="*",
                        default=[1, 4, 8, 16])
    parser.add_argument("--scale", type=int, default=1, help="divide the large matrices' rows by this")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="matrix names")
    parser.add_argument("--split", action="store_true", help="time 1 vs 2 chunks on growing Poisson matrices")
    args = parser.parse_args()
    if args.split:
        for rows in (1_000, 4_000, 16_000, 32_000, 64_000, 256_000):
            run_split(rows, args.rounds)
        return
    for cols in args.cols:
        print(f"--- {'SpMV' if cols == 0 else f'SpMM {cols} columns'} (one thread) ---")
        for name, build in matrices(args.scale).items():
            if args.only and name not in args.only:
                continue
            run_case(name, build(), args.lanes, cols, args.rounds)


if __name__ == "__main__":
    main()
