"""Interop, files and drawing speed, with SciPy in the same run as the reference.

* ``from_package``: viewing a scipy CSR / COO and a torch CSR (first view validates in O(nnz), a second
  view of the same object reuses it) and ``to_package`` back; ``tocsr()`` copy time as a yardstick.
* Matrix Market write/read vs ``scipy.io.mmwrite``/``mmread`` (C++ fast_matrix_market).
* ``draw_raw`` on the same matrix.

Times are the best of ``REPEATS`` runs (the machine is shared).
Run: ``.venv/bin/python benchmarks/bench_interop.py [n] [nnz] [file_nnz]``.
"""
from __future__ import annotations

import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from frontend.tensor import Tensor  # noqa: E402

REPEATS = 3
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def timed(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def matrix(n: int, nnz: int, seed: int = 0) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    a = sp.csr_array((rng.random(nnz), (np.sort(rng.integers(0, n, nnz)), rng.integers(0, n, nnz))),
                     shape=(n, n))
    a.sum_duplicates()
    return a


def views(a: sp.csr_array) -> None:
    import torch
    print(f"-- views of a {a.shape[0]:,} x {a.shape[1]:,} matrix with {a.nnz:,} nonzeros")
    ref = timed(lambda: a.tocsr(copy=True))
    print(f"scipy csr copy (yardstick)        : {ref * 1e3:9.1f} ms")
    coo = a.tocoo()
    tcsr = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                   torch.from_numpy(a.indices.astype(np.int64)), torch.from_numpy(a.data),
                                   a.shape, check_invariants=False)
    for name, make in (("scipy csr", lambda: a.copy()), ("scipy coo", lambda: coo.copy()),
                       ("torch csr", lambda: tcsr.clone())):
        objs = [make() for _ in range(REPEATS)]
        it = iter(objs)
        first = timed(lambda: Tensor.from_package(next(it)))
        again = timed(lambda: Tensor.from_package(objs[0]))
        t = Tensor.from_package(objs[0])
        t._source = None
        back = timed(lambda: t.to_package())
        print(f"{name}: first view {first * 1e3:8.1f} ms ({first / ref:5.2f}x copy)   again "
              f"{again * 1e6:7.1f} us   to_package {back * 1e6:7.1f} us")


def files(a: sp.csr_array, folder: Path) -> None:
    print(f"-- Matrix Market, {a.nnz:,} entries")
    t = Tensor.from_package(a)
    ours = timed(lambda: t.to_file(folder / "ours.mtx"), 1)
    theirs = timed(lambda: scipy.io.mmwrite(str(folder / "scipy.mtx"), a), 1)
    print(f"write: ours {ours:6.2f} s   scipy.io.mmwrite {theirs:6.2f} s   ratio {ours / theirs:5.1f}")
    ours = timed(lambda: Tensor.from_file(folder / "ours.mtx"), 1)
    theirs = timed(lambda: scipy.io.mmread(str(folder / "ours.mtx")), 1)
    print(f"read : ours {ours:6.2f} s   scipy.io.mmread  {theirs:6.2f} s   ratio {ours / theirs:5.1f}")


def pictures(a: sp.csr_array, folder: Path) -> None:
    t = Tensor.from_package(a)
    s = timed(lambda: t.draw_raw(folder / "raw.png"), 1)
    print(f"-- draw_raw of {a.nnz:,} nonzeros: {s:5.2f} s")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    nnz = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
    file_nnz = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    big = matrix(n, nnz)
    views(big)
    with tempfile.TemporaryDirectory() as tmp:
        files(matrix(n // 10, file_nnz, 1), Path(tmp))
        pictures(big, Path(tmp))
