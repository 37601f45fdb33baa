"""One thread against row chunks on every core for the lean elementwise kernels (add, multiply, row sums):
where the thresholds of ``frontend/ops/_elementwise_fast.py`` (``MERGE_PARALLEL_MIN``,
``INTERSECT_PARALLEL_MIN``, ``ROWSUM_PARALLEL_MIN``) come from.

    .venv/bin/python benchmarks/bench_elementwise_threads.py [--per 5 16 64 256] [--sizes 18 20 22]

Random CSR operands with ``per`` entries a row and ``2^size`` stored entries (both operands for add and
multiply). Each line: the best of interleaved repeats with the thresholds forced to "never" and to "always",
and their ratio (below 1: the chunks pay).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import frontend as F  # noqa: E402
from frontend.ops import _elementwise_fast as fast  # noqa: E402

NEVER, ALWAYS = 1 << 62, 1


def force(threshold: int) -> None:
    """Every lean elementwise kernel chunks from ``threshold`` entries."""
    fast.MERGE_PARALLEL_MIN = fast.INTERSECT_PARALLEL_MIN = threshold
    fast.ROWSUM_PARALLEL_MIN = ((math.inf, threshold),)


def best_ms(fn: Callable[[], object], threshold: int, repeats: int) -> float:
    force(threshold)
    fn()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=int, nargs="+", default=[5, 16, 64, 256], help="entries per row")
    ap.add_argument("--sizes", type=int, nargs="+", default=[17, 18, 19, 20, 21, 22, 23], help="log2 entries")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    saved = fast.MERGE_PARALLEL_MIN, fast.INTERSECT_PARALLEL_MIN, fast.ROWSUM_PARALLEL_MIN
    print(f"cores: {fast.cpu_count()}")
    try:
        for per in args.per:
            for size in args.sizes:
                cols = per * 20
                rows = max((1 << size) // per, 1)
                a, b = (sp.random_array((rows, cols), density=per / cols, format="csr", rng=rng) for _ in "ab")
                ops = {"add": lambda: F.add(a, b), "multiply": lambda: F.multiply(a, b),
                       "rowsum": lambda: F.sum(a, 1)}
                for name, fn in ops.items():
                    one, every = [], []
                    for _ in range(args.rounds):  # interleaved: both sides see the same load
                        one.append(best_ms(fn, NEVER, args.repeats))
                        every.append(best_ms(fn, ALWAYS, args.repeats))
                    entries = a.nnz if name == "rowsum" else a.nnz + b.nnz
                    print(f"{name:8s} {per:4d}/row {entries:9d} entries: one thread {min(one):8.3f} ms, "
                          f"chunks {min(every):8.3f} ms, ratio {min(every) / min(one):.2f}", flush=True)
    finally:
        fast.MERGE_PARALLEL_MIN, fast.INTERSECT_PARALLEL_MIN, fast.ROWSUM_PARALLEL_MIN = saved


if __name__ == "__main__":
    main()
