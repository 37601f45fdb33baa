"""SpMV and SpMM with ``Matmul(optimize=True)`` (the storage chosen from the data) against the default CSR plan,
interleaved, minimum of repeats, with the bytes each streams and its share of the memory-bandwidth bound.

Matrices: banded (11 diagonals), 2-D Poisson, 4x4 blocks, uniform random, power-law rows; ``--quick`` runs
smaller ones. Each line: the storage chosen, its matrix bytes against CSR's, the time of the default plan
and of the optimized plan, their ratio (default / optimized: above 1 means the chosen storage is faster) and
the optimized plan's share of the bound (bytes streamed / read bandwidth measured at the start).

Run: ``.venv/bin/python benchmarks/bench_optimize.py [--quick] [--repeats 7]``
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

import frontend as F


def banded(n: int) -> sp.csr_array:
    return sp.diags_array([np.full(n - abs(k), 1.0 + k) for k in range(-5, 6)], offsets=list(range(-5, 6))).tocsr()


def poisson2d(n: int) -> sp.csr_array:
    one = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(n)
    return (sp.kron(one, eye) + sp.kron(eye, one)).tocsr()


def random_pattern(m: int, n: int, per_row: int, seed: int) -> sp.csr_array:
    """``per_row`` random columns per row (duplicates summed), drawn without an m x n sample space."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(m), per_row)
    return sp.csr_array((rng.standard_normal(rows.size), (rows, rng.integers(0, n, rows.size))), shape=(m, n))


def blocks4(n: int) -> sp.csr_array:
    return sp.kron(random_pattern(n // 4, n // 4, 4, 1), np.ones((4, 4))).tocsr()


def uniform(n: int) -> sp.csr_array:
    return random_pattern(n, n, 10, 0)


def power_law(n: int) -> sp.csr_array:
    rng = np.random.default_rng(0)
    lengths = np.minimum(rng.zipf(2.0, n), n // 10)
    rows = np.repeat(np.arange(n), lengths)
    return sp.csr_array((np.ones(rows.size), (rows, rng.integers(0, n, rows.size))), shape=(n, n))


def bandwidth() -> float:
    """Streaming read bandwidth (bytes/s): NumPy's sum over 400 MB, best of 3."""
    a = np.ones(50_000_000)
    best = min(_timed(a.sum) for _ in range(3))
    return a.nbytes / best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    n = 200_000 if args.quick else 1_000_000
    matrices = {"banded 11 diagonals": banded(n), "poisson2d": poisson2d(int(n ** 0.5)), "block 4x4": blocks4(n),
                "uniform 10/row": uniform(n), "power-law": power_law(n)}
    bw = bandwidth()
    print(f"read bandwidth {bw / 1e9:.1f} GB/s; ratio = default / optimized time (> 1: optimized faster)")
    for name, a in matrices.items():
        for cols in (0, 16):
            x = np.ones(a.shape[1]) if cols == 0 else np.ones((a.shape[1], cols))
            default, optimized = F.Matmul(a, x).plan(), F.Matmul(a, x, optimize=True).plan()
            best = {"default": np.inf, "optimized": np.inf}
            for _ in range(args.repeats):
                for label, mm in (("default", default), ("optimized", optimized)):
                    best[label] = min(best[label], _timed(mm.execute))
            choice = optimized.format_choice
            chosen, csr = choice.chosen, choice.candidates[0]
            streamed = chosen.bytes + x.nbytes + a.shape[0] * max(cols, 1) * 8
            print(f"{name:<20} {'spmv' if cols == 0 else f'spmm{cols}':<7} {chosen.name:<12} "
                  f"bytes {chosen.bytes / csr.bytes:5.0%} of CSR  default {1e3 * best['default']:8.2f} ms  "
                  f"optimized {1e3 * best['optimized']:8.2f} ms  ratio {best['default'] / best['optimized']:5.2f}  "
                  f"{streamed / bw / best['optimized']:5.0%} of bound")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
