"""How many threads an iterative solve runs on: ``threads=None`` picks every core above a size threshold."""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.ops._threads import cpu_count

#: ``threads=None`` stays single-threaded below this many stored entries plus rows. Each parallel sweep
#: is one OpenMP fork/join (a few microseconds, 3-6 per iteration): below this size the iteration is too
#: short for the second core to repay it (measured with ``benchmarks/bench_solve.py --threads``).
AUTO_MIN_WORK = 100_000


def check_threads(threads: Any) -> int | None:
    """``threads`` validated: None (auto) or a positive int."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be None or a positive int, got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    return int(threads)


def solver_threads(threads: int | None, n: int, nnz: int, parallel_ok: bool = True) -> int:
    """The team size for a system of ``n`` rows and ``nnz`` entries (``parallel_ok``: runtime installed)."""
    if threads is not None:
        return threads
    if not parallel_ok or n + nnz < AUTO_MIN_WORK:
        return 1
    return cpu_count()
