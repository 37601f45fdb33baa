"""Conversion speed: a 1,000,000 x 1,000,000 CSR matrix with 10,000,000 nonzeros to COO, CSC, BSR 4x4
and DELTA(8), with scipy's tocoo/tocsc/tobsr in the same run as reference ratios.

Two matrices: ``uniform`` (10 random columns per row; DELTA(8) would need ~3.5e9 gap-padding entries,
about 30 GB, so only that count is printed) and ``short-gap`` (every gap between a row's stored columns,
and its first column, below 256: DELTA(8) without padding).  Times are the best of ``REPEATS`` runs
(the machine is shared).  Run: ``.venv/bin/python benchmarks/bench_convert.py [n] [per_row]``.
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

REPEATS = 3


def csr_columns(n: int, per_row: int, short_gaps: bool, rng: np.random.Generator) -> np.ndarray:
    """``per_row`` distinct sorted columns per row: anywhere, or with every gap (and the first column)
    below 256."""
    if short_gaps:
        return np.cumsum(rng.integers(1, 256, size=(n, per_row)), axis=1).ravel() - 1
    base = np.sort(rng.integers(0, n - per_row + 1, size=(n, per_row)), axis=1) + np.arange(per_row)
    return base.ravel()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Best time of REPEATS calls and the last result."""
    best, out = float("inf"), None
    for _ in range(REPEATS):
        out = None
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def delta_padding(t: Tensor, bits: int) -> int:
    """Gap-padding entries DELTA(bits) would store for a CSR tensor."""
    crd, pos = t.crd(1).astype(np.int64), t.pos(1)
    prev = np.concatenate(([-1], crd[:-1]))
    prev[pos[:-1][np.diff(pos) > 0]] = -1
    return int(((crd - prev - 1) >> bits).sum())


def run(n: int, per_row: int, short_gaps: bool, label: str) -> None:
    rng = np.random.default_rng(0)
    indptr = np.arange(0, n * per_row + 1, per_row, dtype=np.int64)
    indices = csr_columns(n, per_row, short_gaps, rng)
    data = rng.random(n * per_row)
    t0 = time.perf_counter()  # validation is cached per buffer set: only the first call counts
    t = Tensor.from_buffers(N.CSR, (n, n), pos=[None, indptr], crd=[None, indices], values=data)
    secs = time.perf_counter() - t0
    m = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    check, _ = timed(lambda: m.check_format(full_check=True))
    print(f"\n{label}: {n} x {n} CSR, nnz = {t.nse:,}")
    print(f"  validate: {secs:6.2f} s   scipy check_format {check:6.2f} s   ratio {secs / check:5.1f}x")
    refs = {"COO": lambda: m.tocoo(), "CSC": lambda: m.tocsc(), "BSR4x4": lambda: m.tobsr(blocksize=(4, 4))}
    targets = {"COO": N.COO, "CSC": N.CSC, "BSR4x4": N.BSR((4, 4)), "DELTA8": N.DELTA(8)}
    pad = delta_padding(t, 8)
    for name, fmt in targets.items():
        if name == "DELTA8" and pad > 20 * t.nse:
            print(f"  {name:7s}: skipped, needs {pad:,} gap-padding entries ({pad / t.nse:.0f} per nonzero)")
            continue
        secs, out = timed(lambda: t.convert(fmt))
        line = f"  {name:7s}: {secs:6.2f} s   nse = {out.nse:,}"
        if name == "DELTA8":
            line += f" (padding {pad:,})"
        if name in refs:
            ref, _ = timed(refs[name])
            line += f"   scipy {ref:6.2f} s   ratio {secs / ref:5.1f}x"
        print(line, flush=True)
        del out


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    per_row = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    run(n, per_row, False, "uniform")
    run(n, per_row, True, "short-gap")
