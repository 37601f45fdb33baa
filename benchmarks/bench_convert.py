"""Conversion speed against scipy.sparse, in one interleaved run (best of ``REPEATS`` rounds; each round times
every case once, so load from other processes hits ours and scipy's alike).

Matrices: ``uniform`` (n x n, ``per_row`` random columns per row; CSR <-> COO / CSC / BSR 4x4, DCSR),
``banded`` (n x n, ``per_row`` diagonals: CSR <-> DIA), ``short-gap`` (``per_row`` columns per row, every gap
and the first column below 256: DELTA(8) without padding entries) and ``pruned`` (a dense
(n * per_row / 2048) x 4096 matrix pruned to 2 of every 4 columns: n:m 2:4 stores n/m of every row).  All
start from scipy's own CSR (int32 indices) viewed without a copy.  For pairs scipy lacks, the budget is the
bytes a conversion must move (read the source, write the target) and the time NumPy takes to copy that
many bytes; the ratio is our time over that copy's.
Each round times every call once; rounds after the first run them in a seeded shuffle, so no call always
follows the same one (memory a call gives back changes the page faults of the next).
Every time also shows ours as a share of the bound: the bytes the conversion must move (the source read, the
target's new buffers written) over the copy bandwidth NumPy reaches in the same run. ``--suite`` adds the
scipy pairs on suite matrices (2-D Poisson 1000^2, power-law 1M rows without BSR, 4x4 blocks).
Run: ``.venv/bin/python benchmarks/bench_convert.py [n] [per_row] [repeats] [--suite]``.
"""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from frontend import NamedFormats as N, Tensor  # noqa: E402
from suitekit.timing import round_robin  # noqa: E402

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


def stream_rate(nbytes: int = 400_000_000, repeats: int = REPEATS) -> float:
    """Bytes per second a NumPy copy moves (read + write), best of ``repeats``: the bound's bandwidth."""
    a = np.ones(nbytes // 16)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        b = a.copy()
        best = min(best, time.perf_counter() - t0)
        del b
    return 2 * a.nbytes / best


def must_move(source: Any, out: Any) -> int:
    """Bytes a conversion must move: the source read once, the target's new buffers written once (buffers
    shared with the source are not moved)."""
    src = [b for b in (source.buffers() if isinstance(source, Tensor) else []) if b is not None]
    new = [b for b in out.buffers() if b is not None and not any(np.shares_memory(b, s) for s in src)]
    return moved(source) + sum(b.nbytes for b in new)


Case = tuple[str, Callable[[], Any], Callable[[], Any] | None, Any]


def run(cases: list[Case], repeats: int, rate: float) -> None:
    """Times every case interleaved (best of ``repeats``); prints ours, scipy's (or the copy budget's) time,
    the ratio and ours as % of the bound (bytes that must move over ``rate``)."""
    need = {}
    for label, ours, _, source in cases:
        out = ours()
        need[label] = must_move(source, out)
        del out
    scratch = {k: np.ones(v // 16 + 1) for k, v in need.items()}  # a copy moving the same bytes (read + write)
    runs = {f"{slot} {label}": fn for label, ours, theirs, _ in cases
            for slot, fn in ((0, ours), (1, theirs if theirs is not None else
                                         (lambda label=label: scratch[label].copy())))}
    # one call a sample; the first round in order, later ones shuffled (seeded): a call's time depends on what
    # the call before it gave back (scipy's CSR->DIA frees ~1 GB in small pieces, after which the next call's
    # huge pages take compaction), so no call may always follow the same one
    times = round_robin(runs, dict.fromkeys(runs, math.inf), repeats, math.inf)
    best = {label: [times[f"0 {label}"], times[f"1 {label}"]] for label, _, _, _ in cases}
    print(f"{'pair':24s} {'ours s':>8s} {'ref s':>8s} {'ratio':>6s} {'% bound':>8s}  reference")
    for label, _, theirs, _ in cases:
        mine, other = best[label]
        what = "scipy" if theirs is not None else f"numpy copy of {need[label] / 1e6:.0f} MB"
        bound = need[label] / rate / mine * 100
        print(f"{label:24s} {mine:8.3f} {other:8.3f} {mine / other:6.2f} {bound:7.0f}%  {what}", flush=True)


def pairs(name: str, m: sp.csr_matrix, dia: bool, bsr: bool = True) -> list[Case]:
    """CSR <-> COO / CSC (/ BSR 4x4 / DIA) of one matrix, ours against scipy's."""
    t = Tensor.from_package(m)
    src = {"COO": t.convert(N.COO), "CSC": t.convert(N.CSC)}
    ref = {"COO": m.tocoo(), "CSC": m.tocsc()}
    cases: list[Case] = [
        (f"{name} CSR->COO", lambda: t.convert(N.COO), lambda: m.tocoo(), t),
        (f"{name} CSR->CSC", lambda: t.convert(N.CSC), lambda: m.tocsc(), t),
        (f"{name} COO->CSR", lambda: src["COO"].convert(N.CSR), lambda: ref["COO"].tocsr(), src["COO"]),
        (f"{name} CSC->CSR", lambda: src["CSC"].convert(N.CSR), lambda: ref["CSC"].tocsr(), src["CSC"]),
    ]
    if bsr:
        src["BSR"], ref["BSR"] = t.convert(N.BSR((4, 4))), m.tobsr(blocksize=(4, 4))
        cases += [
            (f"{name} CSR->BSR4x4", lambda: t.convert(N.BSR((4, 4))), lambda: m.tobsr(blocksize=(4, 4)), t),
            (f"{name} BSR4x4->CSR", lambda: src["BSR"].convert(N.CSR), lambda: ref["BSR"].tocsr(), src["BSR"]),
        ]
    if dia:
        src["DIA"], ref["DIA"] = t.convert(N.DIAJ), m.todia()
        cases += [(f"{name} CSR->DIA", lambda: t.convert(N.DIAJ), lambda: m.todia(), t),
                  (f"{name} DIA->CSR", lambda: src["DIA"].convert(N.CSR), lambda: ref["DIA"].tocsr(), src["DIA"])]
    return cases


def main(n: int, per_row: int, repeats: int = REPEATS, suite: bool = False) -> None:
    rng = np.random.default_rng(0)
    mats = {"uniform": uniform(n, per_row, rng), "banded": banded(n, per_row, rng)}
    mats["short-gap"] = short_gaps(n, per_row, rng)
    mats["pruned"] = pruned(max(n * per_row // 2048, 1), 4096, rng)
    csr = {k: Tensor.from_package(m) for k, m in mats.items()}
    cases = pairs("uniform", mats["uniform"], False)
    cases += [c for c in pairs("banded", mats["banded"], True) if "DIA" in c[0]]
    cases += [("uniform CSR->DCSR", lambda: csr["uniform"].convert(N.DCSR), None, csr["uniform"]),
              ("short-gap CSR->DELTA8", lambda: csr["short-gap"].convert(N.DELTA(8)), None, csr["short-gap"]),
              ("pruned CSR->NM2:4", lambda: csr["pruned"].convert(N.NM(2, 4)), None, csr["pruned"])]
    rate = stream_rate()
    sizes = ", ".join(f"{k} {m.shape[0]:,} x {m.shape[1]:,} nnz {m.nnz:,}" for k, m in mats.items())
    print(f"{sizes}; best of {repeats}; copy bandwidth {rate / 1e9:.1f} GB/s (read + write)")
    run(cases, repeats, rate)
    if suite:
        from suitekit.matrices import block4x4, poisson, power_law
        # power-law's BSR 4x4 would hold ~30M mostly empty blocks (GBs): its CSR/CSC/COO pairs only
        for family, dia, bsr in ((poisson, True, True), (power_law, False, False), (block4x4, False, True)):
            case = next(iter(family(False)))
            m = sp.csr_matrix(case.matrix)
            print(f"\n{case.name}: {m.shape[0]:,} x {m.shape[1]:,} nnz {m.nnz:,}")
            run(pairs(case.name.split()[0], m, dia, bsr), repeats, rate)


if __name__ == "__main__":
    if "-h" in sys.argv or "--help" in sys.argv:
        print(__doc__)
        sys.exit(0)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 1_000_000, int(args[1]) if len(args) > 1 else 10,
         int(args[2]) if len(args) > 2 else REPEATS, "--suite" in sys.argv)
