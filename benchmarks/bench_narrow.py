"""SpMV with int16 (or int8) column coordinates against int32 CSR (SciPy's layout): same matrix, same kernel
path, fewer bytes per entry (float32 values + int16 columns = 6 bytes instead of 8).

Matrices: the suite's magnitude-pruned float32 4096^2 weights (``suitekit/matrices.py``, 50% and 90% pruned)
and its tall-skinny matrix (500k x 1000, the large CSR of the suite whose columns fit int16); ``--quick`` runs
the suite's quick sizes. Each line: the index types (positions/coordinates), the matrix bytes, the minimum time
per call over interleaved repeats (the schedule's threads, then one thread, with its minimum CPU time too: the
steadier number on a shared machine), and the speedup over int32 CSR. Results are checked against scipy first.

Run: ``.venv/bin/python benchmarks/bench_narrow.py [--quick] [--repeats 20]``
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import frontend as F  # noqa: E402
from suitekit.matrices import Case, pruned_weights, skewed_shapes  # noqa: E402
from suitekit.timing import interleaved_min  # noqa: E402


def cases(quick: bool) -> list[Case]:
    pruned = [c for c in pruned_weights(quick) if c.name.endswith(("50%", "90%"))]
    tall = [c for c in skewed_shapes(quick) if c.name.startswith("tall")]
    return pruned + tall


def bench(case: Case, repeats: int) -> None:
    a = case.matrix
    x = np.random.default_rng(0).standard_normal(a.shape[1]).astype(a.dtype)
    want = a @ x
    base = F.Tensor.from_package(a).convert(index_type=np.int32)
    narrow_crd = F.Tensor.from_package(a).convert(crd_type=np.int16 if a.shape[1] > 128 else np.int8)
    variants = {"int32/int32": base, f"int32/{narrow_crd.crd_type}": narrow_crd}
    for t in variants.values():
        got = F.matmul(t, x)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    print(f"{case.name:28s} nnz {a.nnz:>9d}")
    for threads in (None, 1):
        plans = {k: F.Matmul(t, x, threads=threads) for k, t in variants.items()}
        best = interleaved_min({k: p.execute for k, p in plans.items()}, repeats)
        cpu = cpu_min({k: p.execute for k, p in plans.items()}, repeats) if threads == 1 else None
        for k, t in variants.items():
            line = (f"    {k:12s} threads {plans[k].info.threads:<2d} path {plans[k].path:13s} "
                    f"{t.nbytes / 2**20:6.1f} MiB  wall {best[k] * 1e3:7.3f} ms x{best['int32/int32'] / best[k]:.2f}")
            if cpu is not None:
                line += f"  cpu {cpu[k] * 1e3:7.3f} ms x{cpu['int32/int32'] / cpu[k]:.2f}"
            print(line)


def cpu_min(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Minimum CPU seconds of this process per call (one-thread kernels run in the calling thread), interleaved:
    time other processes take from the shared cores does not count."""
    best = {k: math.inf for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the suite's quick sizes")
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args(argv)
    for case in cases(args.quick):
        bench(case, args.repeats)


if __name__ == "__main__":
    main()
