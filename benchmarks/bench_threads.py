"""Multi-threaded row-range kernels (``Matmul(..., threads=n)``) against one thread and scipy.

    .venv/bin/python benchmarks/bench_threads.py [--quick]

Rows: CSR SpMV float64 (1,000,000 rows, 10,000,000 nonzeros) with 1 thread (the default sparsifier
kernel), the row-range kernel with 1 chunk and with ``threads=2`` / ``"auto"``, scipy; CSR SpMM with
16 columns; DIA-I SpMV of a 7-diagonal matrix, DELTA(8) SpMV of 8192^2 at 90% sparsity. Times are
medians of one run; ratios are reference / ours (above 1: we are faster).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import frontend as F  # noqa: E402
from bench_ops import banded_csr, median_time  # noqa: E402
from frontend import NamedFormats as N, Tensor  # noqa: E402
from frontend.ops._threads import RowRangeFunction  # noqa: E402


def timed(a, b, threads) -> tuple[float, str]:
    mm = F.Matmul(a, b, threads=threads).plan()
    return median_time(mm.execute) * 1e3, mm.path


def one_chunk(a, b) -> float:
    """Milliseconds of the row-range kernel (planned for two threads) run as one chunk."""
    op = F.Matmul(a, b, threads=2).plan().backend.prepared
    fn = op.kernel.function
    single = RowRangeFunction(fn.fn, fn.out_shape, fn.dtype)
    return median_time(single.bind(*op.kernel.flatten(op.tensors, op.extra))) * 1e3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="100,000 rows instead of 1,000,000")
    args = p.parse_args(argv)
    rows = 100_000 if args.quick else 1_000_000
    print(f"cores: {os.cpu_count()}")
    a = banded_csr(rows, 10)
    x = np.random.default_rng(1).standard_normal(rows)
    X = np.random.default_rng(2).standard_normal((rows, 16))
    cases = [(f"CSR SpMV f64 {rows} rows {a.nnz} nnz", a, x, a),
             (f"CSR SpMM f64 x 16 cols {rows} rows", a, X, a)]
    dia = sp.diags([np.ones(rows - abs(k)) * (k + 4) for k in range(-3, 4)], list(range(-3, 4)),
                   format="csr")
    cases.append((f"DIA-I SpMV f64 {rows} rows 7 diagonals", Tensor.from_package(dia).convert(tensor_format=N.DIAI),
                  x, dia.todia()))
    n = 2048 if args.quick else 8192
    r = sp.random_array((n, n), density=0.1, format="csr", random_state=3)
    cases.append((f"DELTA(8) SpMV f64 {n}^2 at 90% sparsity", Tensor.from_package(r).convert(
        tensor_format=N.DELTA(8)), np.ones(n), r))
    print(f"{'case':44s} {'threads':>8s} {'path':>14s} {'ms':>9s} {'x 1 thread':>10s} {'scipy ms':>9s} "
          f"{'scipy/ours':>10s}")
    for name, ours, b, ref in cases:
        ref_ms = median_time(lambda: ref @ b) * 1e3
        base, _ = timed(ours, b, None)
        for threads in (None, 1, 2, "auto"):
            if threads is None:
                ms, path = base, F.Matmul(ours, b).path
            elif threads == 1:  # the row-range kernel itself in one chunk
                ms, path = one_chunk(ours, b), "emitter-rows/1"
            else:
                ms, path = timed(ours, b, threads)
            print(f"{name:44s} {str(threads):>8s} {path:>14s} {ms:9.2f} {base / ms:10.2f} {ref_ms:9.2f} "
                  f"{ref_ms / ms:10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
