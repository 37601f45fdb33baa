"""Multi-threaded CPU execution of row-range kernels from one shared thread pool.

A row-parallel contraction (``lowering.emitter.row_parallel``: SpMV/SpMM/batched products whose outer
loop runs over a dense outer level of the stored operand, or over the rows of a row-tiled DIA-I walk)
compiles to ``@main(..., %out, %row_begin, %row_end)``, which writes output rows ``[row_begin,
row_end)`` only. :class:`RowParallelFunction` allocates the output, splits its rows into ``n`` equal
chunks and runs ``n - 1`` of them on the pool and one on the calling thread; the kernels are called
through ``ctypes.CDLL`` functions, which release the GIL, so chunks run in parallel. Concurrent calls
from several threads are safe (each call has its own output and argument descriptors; pool workers
never wait on other work, so calls cannot deadlock).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

#: ``threads="auto"`` runs one chunk below this many argument elements (buffers in, output out):
#: handing chunks to the pool costs tens of microseconds, a single-threaded kernel that small is faster.
AUTO_MIN_WORK = 1 << 18

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def cpu_count() -> int:
    return os.cpu_count() or 1


def resolve_threads(threads: Any) -> int | str:
    """``None`` -> 1; a positive int as is; ``"auto"`` -> ``"auto"`` (or 1 on a one-core machine)."""
    if threads is None:
        return 1
    if isinstance(threads, str):
        if threads != "auto":
            raise ValueError(f"threads must be None, a positive int or 'auto', got {threads!r}")
        return "auto" if cpu_count() > 1 else 1
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be None, a positive int or 'auto', got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    return int(threads)


def _executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool, with at least ``workers`` threads (grown by replacing it when needed)."""
    global _pool, _pool_size
    pool = _pool
    if pool is not None and _pool_size >= workers:
        return pool
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            # the old pool is not shut down (a caller may be submitting to it right now): once the last
            # caller drops it, its idle threads exit
            _pool_size = max(workers, cpu_count() - 1, 1)
            _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="ust-mlir")
        return _pool


def chunk_bounds(rows: int, n: int) -> list[int]:
    """``n + 1`` boundaries splitting ``rows`` into ``n`` near-equal ranges."""
    return [rows * k // n for k in range(n + 1)]


class RowParallelFunction:
    """Calls a row-range kernel ``fn(*args, out, row_begin, row_end)`` over ``threads`` chunks of the
    output's first dimension; ``f(*args)`` returns the new output array, like the one-thread kernel."""

    def __init__(self, fn: Any, out_shape: tuple[int, ...], dtype: np.dtype, threads: int | str) -> None:
        self.fn = fn
        self.signature = fn.signature
        self.out_shape = tuple(int(s) for s in out_shape)
        self.dtype = np.dtype(dtype)
        self.threads = threads

    def _chunks(self, args: tuple) -> int:
        if self.threads != "auto":
            return int(self.threads)
        work = int(np.prod(self.out_shape))
        for a in args:
            work += getattr(a, "size", 1)
        return cpu_count() if work >= AUTO_MIN_WORK else 1

    def __call__(self, *args: Any) -> np.ndarray:
        out = np.empty(self.out_shape, self.dtype)
        rows = self.out_shape[0]
        n = min(self._chunks(args), rows)
        fn = self.fn
        if n <= 1:
            fn(*args, out, 0, rows)
            return out
        b = chunk_bounds(rows, n)
        pool = _executor(n - 1)
        futures = [pool.submit(partial(fn, *args, out, b[k], b[k + 1])) for k in range(1, n)]
        try:
            fn(*args, out, b[0], b[1])
        finally:
            for f in futures:  # the output stays in use until every chunk is done
                f.exception()
        for f in futures:
            f.result()
        return out

    def bind(self, *args: Any) -> RowParallelCall:
        """A prepared call (same protocol as ``mlir_bridge`` bound calls: ``call()``, ``rebind(i, x)``)."""
        return RowParallelCall(self, list(args))


class RowParallelCall:
    """``call()`` runs the function on the held arguments; ``rebind(i, x)`` swaps argument ``i``."""

    __slots__ = ("_fn", "_args")

    def __init__(self, fn: RowParallelFunction, args: list[Any]) -> None:
        if len(args) + 3 != len(fn.signature.args):
            raise TypeError(f"@{fn.signature.name} takes {len(fn.signature.args) - 3} arguments, got {len(args)}")
        self._fn, self._args = fn, args

    def rebind(self, i: int, value: Any) -> None:
        if not 0 <= i < len(self._args):
            raise IndexError(f"this call has {len(self._args)} arguments, no argument {i}")
        self._args[i] = value

    def __call__(self) -> np.ndarray:
        return self._fn(*self._args)
