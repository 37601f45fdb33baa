"""Conversion speed against scipy.sparse, in one interleaved run (best of ``REPEATS`` rounds; each round times
every case once, so load from other processes hits ours and scipy's alike).

Matrices: ``uniform`` (n x n, ``per_row`` random columns per row; CSR <-> COO / CSC / BSR 4x4, DCSR),
``banded`` (n x n, ``per_row`` diagonals: CSR <-> DIA), ``short-gap`` (``per_row`` columns per row, every gap
and the first column below 256: DELTA(8) without padding entries) and ``pruned`` (a dense
(n * per_row / 2048) x 4096 matrix pruned to 2 of every 4 columns: n:m 2:4 stores n/m of every row).  All
start from scipy's own CSR (int32 indices) viewed without a copy.  For pairs scipy lacks, the budget is the
bytes a conversion must move (read the source, write the target) and the time NumPy takes to copy that
many bytes; the ratio is our time over that copy's.
Run: ``.venv/bin/python benchmarks/bench_convert.py [n] [per_row]``.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from frontend import NamedFormats as N, Tensor  # noqa: E402

REPEATS = 5


def uniform(n: int, per_row: int, rng: np.random.Generator) -> sp.csr_matrix:
    """``per_row`` distinct sorted random columns per row."""
    cols = np.sort(rng.integers(0, n - per_row + 1, size=(n, per_row)), axis=1) + np.arange(per_row)
    indptr = np.arange(0, n * per_row + 1, per_row)
    return sp.csr_matrix((rng.random(n * per_row), cols.ravel(), indptr), shape=(n, n))


def banded(n: int, diagonals: int, rng: np.random.Generator) -> sp.csr_matrix:
    """``diagonals`` diagonals spread over offsets -64 .. 64."""
    offsets = np.linspace(-64, 64, diagonals).astype(int)
    return sp.diags([rng.random(n - abs(int(o))) + 0.5 for o in offsets], offsets, shape=(n, n), format="csr")


def short_gaps(n: int, per_row: int, rng: np.random.Generator) -> sp.csr_matrix:
    """``per_row`` columns per row, the first below 256 and every gap below 256."""
    cols = np.cumsum(rng.integers(1, 256, size=(n, per_row)), axis=1) - 1
    indptr = np.arange(0, n * per_row + 1, per_row)
    return sp.csr_matrix((rng.random(n * per_row), cols.ravel(), indptr), shape=(n, n))


def pruned(rows: int, cols: int, rng: np.random.Generator) -> sp.csr_matrix:
    """Columns 2k, 2k+1 of every group of 4 kept in half the groups, the other two in the rest (2:4)."""
    a = rng.random((rows, cols)) + 0.5
    odd = (rng.random((rows, cols // 4)) < 0.5).repeat(4, axis=1)
    a[(np.arange(cols) % 4 < 2) == odd] = 0
    return sp.csr_matrix(a)


def moved(*objs: Any) -> int:
    """Bytes of the buffers of tensors / scipy matrices."""
    total = 0
    for o in objs:
        if isinstance(o, Tensor):
            total += sum(b.nbytes for b in o.buffers() if b is not None)
        else:
            total += sum(getattr(o, a).nbytes for a in ("data", "indices", "indptr", "row", "col", "offsets")
                         if hasattr(o, a))
    return total


def main(n: int, per_row: int) -> None:
    rng = np.random.default_rng(0)
    mats = {"uniform": uniform(n, per_row, rng), "banded": banded(n, per_row, rng)}
    mats["short-gap"] = short_gaps(n, per_row, rng)
    mats["pruned"] = pruned(max(n * per_row // 2048, 1), 4096, rng)
    csr = {k: Tensor.from_package(m) for k, m in mats.items()}
    u, b = mats["uniform"], mats["banded"]
    # (label, ours, scipy's or None); back-conversions start from our own converted tensor / scipy's object
    src = {"COO": csr["uniform"].convert(N.COO), "CSC": csr["uniform"].convert(N.CSC),
           "BSR": csr["uniform"].convert(N.BSR((4, 4))), "DIA": csr["banded"].convert(N.DIAJ)}
    ref = {"COO": u.tocoo(), "CSC": u.tocsc(), "BSR": u.tobsr(blocksize=(4, 4)), "DIA": b.todia()}
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any] | None]] = [
        ("CSR->COO", lambda: csr["uniform"].convert(N.COO), lambda: u.tocoo()),
        ("CSR->CSC", lambda: csr["uniform"].convert(N.CSC), lambda: u.tocsc()),
        ("CSR->BSR4x4", lambda: csr["uniform"].convert(N.BSR((4, 4))), lambda: u.tobsr(blocksize=(4, 4))),
        ("CSR->DIA", lambda: csr["banded"].convert(N.DIAJ), lambda: b.todia()),
        ("COO->CSR", lambda: src["COO"].convert(N.CSR), lambda: ref["COO"].tocsr()),
        ("CSC->CSR", lambda: src["CSC"].convert(N.CSR), lambda: ref["CSC"].tocsr()),
        ("BSR4x4->CSR", lambda: src["BSR"].convert(N.CSR), lambda: ref["BSR"].tocsr()),
        ("DIA->CSR", lambda: src["DIA"].convert(N.CSR), lambda: ref["DIA"].tocsr()),
        ("CSR->DCSR", lambda: csr["uniform"].convert(N.DCSR), None),
        ("CSR->DELTA8", lambda: csr["short-gap"].convert(N.DELTA(8)), None),
        ("CSR->NM2:4", lambda: csr["pruned"].convert(N.NM(2, 4)), None),
    ]
    sources = {"CSR->DCSR": csr["uniform"], "CSR->DELTA8": csr["short-gap"], "CSR->NM2:4": csr["pruned"]}
    budget_bytes = {}
    for label, ours, _ in cases:
        if label in sources:
            out = ours()
            budget_bytes[label] = moved(sources[label], out)
            del out
    scratch = {k: np.ones(v // 8 + 1) for k, v in budget_bytes.items()}  # a memory pass over the same bytes
    best: dict[str, list[float]] = {label: [np.inf, np.inf] for label, _, _ in cases}
    for _ in range(REPEATS):
        for label, ours, theirs in cases:
            other = theirs if theirs is not None else (lambda label=label: scratch[label].copy())
            for slot, fn in ((0, ours), (1, other)):
                t0 = time.perf_counter()
                out = fn()
                best[label][slot] = min(best[label][slot], time.perf_counter() - t0)
                del out
    sizes = ", ".join(f"{k} {m.shape[0]:,} x {m.shape[1]:,} nnz {m.nnz:,}" for k, m in mats.items())
    print(f"{sizes}; best of {REPEATS}")
    print(f"{'pair':12s} {'ours s':>8s} {'ref s':>8s} {'ratio':>6s}  reference")
    for label, _, theirs in cases:
        mine, other = best[label]
        what = "scipy" if theirs is not None else f"numpy copy of {budget_bytes[label] / 1e6:.0f} MB moved"
        print(f"{label:12s} {mine:8.3f} {other:8.3f} {mine / other:6.2f}  {what}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 10)
