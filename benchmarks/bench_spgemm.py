"""SpGEMM (sparse x sparse -> sparse) against scipy and torch.sparse.mm on a suite of matrices.

    .venv/bin/python benchmarks/bench_spgemm.py [--quick] [--only NAME ...] [--reps N] [--json out.json]

Each case is ``A @ B`` in CSR (``frontend.Matmul(A, B).execute()``, scipy ``A @ B``, torch.sparse.mm on
CSR tensors); ours runs with the default threads (all cores above the work threshold) and with
``threads=1``. The calls are interleaved (ours, ours one thread, scipy, torch, ours, ...) and each column
is the minimum over the repeats, so load from other processes hits every column alike; ratios are ours
over scipy (< 1: faster). The last row is the geometric mean of the ratios.

Suite: pyamg's example matrices (A @ A) and smoothed-aggregation products (A @ P, P^T @ (A P)), 2-D and
3-D Poisson (A @ A), uniform random 200,000^2 with 8 nonzeros per row, random 2000^3 at 1%, power-law
row lengths, banded, block-structured (dense 4x4 blocks); float64, and float32 for a subset.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import frontend as F  # noqa: E402

Case = tuple[str, Callable[[], tuple[sp.csr_array, sp.csr_array]]]


def _csr(m: Any, dtype: Any = np.float64) -> sp.csr_array:
    """``m`` as a canonical CSR array (sorted, no duplicates) with int32 indices and ``dtype`` values."""
    c = sp.csr_array(m, dtype=dtype)
    c.sum_duplicates()
    c.sort_indices()
    c.indptr, c.indices = c.indptr.astype(np.int32), c.indices.astype(np.int32)
    return c


def random_rows(rows: int, cols: int, lengths: np.ndarray, rng: np.random.Generator,
                col_weights: np.ndarray | None = None) -> sp.csr_array:
    """A matrix whose row ``i`` has about ``lengths[i]`` random columns (uniform, or drawn by weight)."""
    lengths = np.minimum(lengths.astype(np.int64), cols)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    if col_weights is None:
        indices = rng.integers(0, cols, int(indptr[-1]))
    else:
        indices = rng.choice(cols, int(indptr[-1]), p=col_weights / col_weights.sum())
    data = rng.standard_normal(int(indptr[-1]))
    return _csr(sp.csr_array((data, indices, indptr), shape=(rows, cols)))


def uniform_random(n: int, per_row: int, seed: int) -> sp.csr_array:
    return random_rows(n, n, np.full(n, per_row), np.random.default_rng(seed))


def power_law(n: int, mean: float, seed: int) -> sp.csr_array:
    """Row lengths and column popularity both power-law (Zipf-like, exponent ~2), mean ``mean`` per row."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.pareto(1.5, n) + 1, n / 10)
    lengths = np.maximum(1, np.round(lengths * mean / lengths.mean()))
    weights = 1.0 / np.arange(1, n + 1) ** 0.8
    return random_rows(n, n, lengths, rng, rng.permutation(weights))


def banded(n: int, half: int, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    offsets = list(range(-half, half + 1))
    return _csr(sp.diags_array([rng.standard_normal(n - abs(k)) for k in offsets], offsets=offsets, shape=(n, n)))


def block_structured(blocks: int, per_row: int, size: int, seed: int) -> sp.csr_array:
    """``blocks`` x ``blocks`` grid of ``size`` x ``size`` cells, ``per_row`` random dense cells per block row."""
    rng = np.random.default_rng(seed)
    pattern = random_rows(blocks, blocks, np.full(blocks, per_row), rng)
    dense = rng.standard_normal((pattern.nnz, size, size))
    return _csr(sp.bsr_array((dense, pattern.indices, pattern.indptr), shape=(blocks * size, blocks * size)))


def poisson(shape: tuple[int, ...]) -> sp.csr_array:
    import pyamg.gallery
    return _csr(pyamg.gallery.poisson(shape, format="csr"))


def pyamg_example(name: str) -> sp.csr_array:
    import pyamg.gallery
    a = pyamg.gallery.load_example(name)["A"]
    return _csr(a, a.dtype)


def sa_products(a: sp.csr_array) -> tuple[sp.csr_array, sp.csr_array, sp.csr_array]:
    """A, P and A P of the first level of a pyamg smoothed-aggregation hierarchy of ``a``."""
    import pyamg
    ml = pyamg.smoothed_aggregation_solver(sp.csr_matrix(a), max_levels=2)
    p = _csr(ml.levels[0].P)
    return a, p, _csr(a @ p)


def suite(quick: bool = False) -> list[Case]:
    """The benchmark cases (built lazily, in order)."""
    n = 50_000 if quick else 200_000
    side2, side3 = (300, 40) if quick else (700, 70)

    def sa(shape: tuple[int, ...], which: str) -> tuple[sp.csr_array, sp.csr_array]:
        a, p, ap = sa_products(poisson(shape))
        return (a, p) if which == "AP" else (_csr(p.T), ap)

    def f32(pair: tuple[sp.csr_array, sp.csr_array]) -> tuple[sp.csr_array, sp.csr_array]:
        return _csr(pair[0], np.float32), _csr(pair[1], np.float32)

    cases: list[Case] = [
        ("pyamg airfoil A@A", lambda: (pyamg_example("airfoil"),) * 2),
        ("pyamg bar A@A", lambda: (pyamg_example("bar"),) * 2),
        ("pyamg ldg-diffusion A@A", lambda: (pyamg_example("local_disc_galerkin_diffusion"),) * 2),
        ("pyamg helmholtz_2D A@A c128", lambda: (pyamg_example("helmholtz_2D"),) * 2),
        (f"pyamg SA 2-D {side2}^2 A@P", lambda: sa((side2, side2), "AP")),
        (f"pyamg SA 2-D {side2}^2 P^T@AP", lambda: sa((side2, side2), "PtAP")),
        (f"Poisson 2-D {side2}^2 A@A", lambda: (poisson((side2, side2)),) * 2),
        (f"Poisson 3-D {side3}^3 A@A", lambda: (poisson((side3,) * 3),) * 2),
        (f"uniform {n:,}^2 8/row", lambda: (uniform_random(n, 8, 7), uniform_random(n, 8, 8))),
        ("random 2000^3 1%", lambda: (uniform_random(2000, 20, 7), uniform_random(2000, 20, 8))),
        (f"power-law {n // 2:,}^2 mean 8", lambda: (power_law(n // 2, 8, 7),) * 2),
        (f"banded {n:,}^2 11 diag", lambda: (banded(n, 5, 7),) * 2),
        (f"block 4x4 {n // 8:,}^2 6/row", lambda: (block_structured(n // 32, 6, 4, 7),) * 2),
        ("pyamg bar A@A f32", lambda: f32((pyamg_example("bar"),) * 2)),
        (f"Poisson 3-D {side3}^3 A@A f32", lambda: f32((poisson((side3,) * 3),) * 2)),
        (f"uniform {n:,}^2 8/row f32", lambda: f32((uniform_random(n, 8, 7), uniform_random(n, 8, 8)))),
        ("random 2000^3 1% f32", lambda: f32((uniform_random(2000, 20, 7), uniform_random(2000, 20, 8)))),
    ]
    return cases


def _torch_mm(a: sp.csr_array, b: sp.csr_array) -> Callable[[], Any] | None:
    """torch.sparse.mm on CSR tensors of ``a`` and ``b`` (None without torch or when it fails)."""
    try:
        import torch
        ta, tb = (torch.sparse_csr_tensor(torch.from_numpy(m.indptr.astype(np.int64)),
                                          torch.from_numpy(m.indices.astype(np.int64)),
                                          torch.from_numpy(m.data), m.shape) for m in (a, b))
        torch.sparse.mm(ta, tb)
        return lambda: torch.sparse.mm(ta, tb)
    except Exception:  # noqa: BLE001 - unsupported dtype or layout: no column
        return None


def bench_case(name: str, a: sp.csr_array, b: sp.csr_array, reps: int) -> dict[str, Any]:
    ours, ours1 = F.Matmul(a, b).plan(), F.Matmul(a, b, threads=1).plan()
    got = ours.execute()
    ref = sp.csr_array(a @ b)
    ref.sort_indices()
    g = got.copy()
    g.eliminate_zeros()  # scipy drops products that cancel to exactly zero, ours keeps their entries
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices), name
    fns: dict[str, Callable[[], Any]] = {"ours": ours.execute, "ours_1": ours1.execute, "scipy": lambda: a @ b}
    torch_mm = _torch_mm(a, b)
    if torch_mm is not None:
        fns["torch"] = torch_mm
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    best = {k: min(v) * 1e3 for k, v in times.items()}
    return {"name": name, "nnz": int(ref.nnz), **best,
            "ratio": best["ours"] / best["scipy"], "ratio_1": best["ours_1"] / best["scipy"]}


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'case':<34} {'nnz(C)':>11} {'ours ms':>9} {'1 thr ms':>9} {'scipy ms':>9} {'torch ms':>9} "
          f"{'ours/sp':>8} {'1thr/sp':>8}")
    for r in rows:
        torch_ms = f"{r['torch']:9.3f}" if "torch" in r else f"{'-':>9}"
        print(f"{r['name']:<34} {r['nnz']:>11,} {r['ours']:9.3f} {r['ours_1']:9.3f} {r['scipy']:9.3f} {torch_ms} "
              f"{r['ratio']:7.2f}x {r['ratio_1']:7.2f}x")
    geo = {k: math.exp(sum(math.log(r[k]) for r in rows) / len(rows)) for k in ("ratio", "ratio_1")}
    print(f"{'geometric mean':<34} {'':>11} {'':>9} {'':>9} {'':>9} {'':>9} {geo['ratio']:7.2f}x "
          f"{geo['ratio_1']:7.2f}x")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller large cases (50,000 rows)")
    p.add_argument("--only", nargs="*", default=[], help="run the cases whose name contains one of these")
    p.add_argument("--reps", type=int, default=7, help="interleaved repeats per case (minimum reported)")
    p.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "spgemm.json"))
    args = p.parse_args(argv)
    rows = []
    for name, build in suite(args.quick):
        if args.only and not any(o in name for o in args.only):
            continue
        rows.append(bench_case(name, *build(), args.reps))
        print(f"  {name}: {rows[-1]['ratio']:.2f}x scipy", file=sys.stderr, flush=True)
    print(f"threads: {os.cpu_count()} cores; ours = default threads (all cores above the work threshold)")
    print_table(rows)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": os.uname().machine, "cpus": os.cpu_count(), "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
