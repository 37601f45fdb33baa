"""Multi-threaded CPU execution of row-range kernels: a small shared pool of worker threads.

A row-parallel contraction (``lowering.emitter.row_parallel``: SpMV/SpMM/batched products whose outer
loop runs over a dense outer level of the stored operand, or over the rows of a row-tiled DIA-I walk)
compiles to ``@main(..., %out, %row_begin, %row_end)``, which writes output rows ``[row_begin, row_end)``
only (initialization fused). :class:`RowRangeCall` holds one prepared call per chunk over the same
argument descriptors; a call allocates the output once with ``np.empty`` (or takes the caller's), runs one
chunk directly on the calling thread and hands the others to the pool's workers (ctypes releases the
GIL, so chunks run in parallel). One chunk is one direct call: no pool, no extra cost. Concurrent calls
from several threads are safe as long as each thread uses its own :class:`RowRangeCall` (workers never
wait on other work, so calls cannot deadlock).

Inside :func:`on_openmp_team` (TorchUST's products use it), when a GNU OpenMP runtime is already loaded in
the process (torch's ``libgomp``), the chunks run on *its* thread team instead (``GOMP_parallel`` with a
ctypes callback that claims chunks): after each parallel region of torch (a ``relu``, a copy, a GEMM)
libgomp's threads spin for milliseconds waiting for the next one, so a thread of our own pool finds its core
taken and the call runs at one thread's speed; handing the chunks to the team costs a few microseconds.
:data:`USE_OPENMP` turns the team off everywhere.
"""
from __future__ import annotations

import bisect
import ctypes
import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from queue import SimpleQueue
from typing import Any

import numpy as np

from mlir_bridge.marshal import data_pointer
from mlir_bridge.trampoline import packed


def cpu_count() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_threads(threads: Any) -> int:
    """Validates the ``threads`` option and returns the chunk count it forces: ``n`` for an int ``n``, 1 for
    ``None`` / ``"auto"`` (the schedule decides from the operand's size) and for ``1`` (single-threaded)."""
    if threads is None:
        return 1
    if isinstance(threads, str):
        if threads != "auto":
            raise ValueError(f"threads must be None, a positive int or 'auto', got {threads!r}")
        return 1
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be None, a positive int or 'auto', got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    return int(threads)


def chunk_bounds(rows: int, n: int) -> list[int]:
    """``n + 1`` boundaries splitting ``rows`` into ``n`` near-equal ranges."""
    return [rows * k // n for k in range(n + 1)]


def balanced_bounds(offsets: np.ndarray, n: int) -> tuple[int, ...]:
    """``n + 1`` row boundaries splitting rows with cumulative entries ``offsets`` (``offsets[r]`` = entries
    before row r) into ``n`` chunks of near-equal entries: each boundary is the first row whose start reaches
    the ideal share, so every chunk is within one row's length of ``nnz / n``. Integer offsets (int32 or
    int64) are searched in their own type (the first start reaching ``first + ceil(k * nnz / n)``): a float or
    wider target would make NumPy copy the whole buffer (0.5-1 ms on 1M rows)."""
    rows = len(offsets) - 1
    first = int(offsets[0])
    total = int(offsets[-1]) - first
    if offsets.dtype.kind in "iu":
        targets = np.array(_share_starts(first, total, n), dtype=offsets.dtype)
    else:
        targets = first + np.arange(1, n) * (total / n)
    inner = np.searchsorted(offsets, targets, side="left").clip(0, rows)
    return (0, *(int(b) for b in np.maximum.accumulate(inner)), rows)


def summed_bounds(a: np.ndarray, b: np.ndarray, n: int) -> tuple[int, ...]:
    """``balanced_bounds(a + b, n)`` for two cumulative-entry buffers of one length (two operands' row
    positions), found by bisection on the sum at each target: a few dozen scalar reads instead of a pass that
    adds (and widens) both buffers (2 ms on 1M rows). The bounds never decrease and stay inside ``[0, rows]``
    whatever the buffers hold."""
    rows = len(a) - 1

    def at(r: int) -> int:
        return int(a[r]) + int(b[r])
    first = at(0)
    out = [0]
    for target in _share_starts(first, at(rows) - first, n):
        out.append(min(bisect.bisect_left(range(rows + 1), target, lo=out[-1], key=at), rows))
    return (*out, rows)


def _share_starts(first: int, total: int, n: int) -> list[int]:
    """``first + ceil(k * total / n)`` for ``k = 1 .. n - 1``: the entry counts the chunk boundaries must reach
    (integers, exact)."""
    return [first - (-k * total // n) for k in range(1, n)]


class _Worker:
    """A daemon thread running ``(call, done, errors)`` tasks from its queue: ``done`` (a held lock) is
    released when ``call()`` returns; an exception is appended to ``errors``."""

    def __init__(self, k: int) -> None:
        self.tasks: SimpleQueue = SimpleQueue()
        threading.Thread(target=self._run, name=f"ust-mlir-{k}", daemon=True).start()

    def _run(self) -> None:
        get = self.tasks.get
        while True:
            call, done, errors = get()
            try:
                call()
            except BaseException as err:  # handed to the caller, which re-raises it
                errors.append(err)
            finally:
                done.release()


_workers: list[_Worker] = []
_workers_lock = threading.Lock()


def _pool(n: int) -> list[_Worker]:
    """At least ``n`` workers (started on first use, never stopped: they sleep on their queues)."""
    if len(_workers) < n:
        with _workers_lock:
            while len(_workers) < n:
                _workers.append(_Worker(len(_workers)))
    return _workers


#: Let :func:`on_openmp_team` run chunks on an already loaded GNU OpenMP runtime's threads (see the module
#: docstring); False: always on this module's own worker threads.
USE_OPENMP = True
_local = threading.local()


@contextmanager
def on_openmp_team(active: bool = True) -> Iterator[None]:
    """Within the block (on this thread), :func:`run_chunks` runs on the loaded OpenMP runtime's team when
    ``active`` and :data:`USE_OPENMP`: for calls among torch's ops, whose team threads spin between them."""
    before = getattr(_local, "openmp", False)
    _local.openmp = active
    try:
        yield
    finally:
        _local.openmp = before

_OMP_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_omp_tasks: dict[int, Callable[[], None]] = {}
_omp_keys = itertools.count(1).__next__
_omp_state: dict[str, Any] = {"parallel": None, "modules": -1}


@_OMP_ENTRY
def _omp_entry(key: int | None) -> None:
    """What every thread of the OpenMP team runs: the claim loop registered under ``key``."""
    task = _omp_tasks.get(key or 0)
    if task is not None:
        task()


_OMP_ENTRY_ADDRESS = ctypes.cast(_omp_entry, ctypes.c_void_p).value


def openmp_parallel() -> Any:
    """``GOMP_parallel`` of the GNU OpenMP runtime loaded in this process, or None when none is (looked up
    again only after new modules were imported: loading torch loads libgomp)."""
    state = _omp_state
    if state["parallel"] is None and len(sys.modules) != state["modules"]:
        state["modules"] = len(sys.modules)
        try:
            lib = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD)
            fn = lib.GOMP_parallel
        except (OSError, AttributeError):  # not loaded (or not Linux / not GNU OpenMP)
            return None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        fn.restype = None
        state["parallel"] = fn
    return state["parallel"]


def _run_on_openmp(parallel: Any, calls: list[Any], threads: int, errors: list[BaseException]) -> None:
    """``calls`` claimed one at a time by ``threads`` threads of the OpenMP team (this thread is one of them);
    errors collected. (A caller that slept on a condition until the last chunk was done, instead of spinning
    in libgomp's closing barrier, measured 4-17x slower on the loaded 2-core machine: waking it costs a
    time slice.)"""
    nxt, total = itertools.count().__next__, len(calls)

    def task() -> None:
        k = nxt()
        while k < total:
            try:
                calls[k]()
            except BaseException as err:  # noqa: BLE001 -- re-raised by run_chunks on the calling thread
                errors.append(err)
            k = nxt()

    key = _omp_keys()
    _omp_tasks[key] = task
    try:
        parallel(_OMP_ENTRY_ADDRESS, key, threads, 0)  # releases the GIL while it waits
    finally:
        del _omp_tasks[key]


def run_chunks(calls: list[Any]) -> None:
    """Run ``calls`` on this thread and up to ``cpu_count() - 1`` pool workers; return once all are done
    (re-raising the first error). Chunks are claimed dynamically (the next unclaimed index, atomic under the
    GIL): with more chunks than cores, a participant that was delayed (a core busy with another process,
    another library's spinning OpenMP threads) runs fewer of them instead of holding up the call. Handing a
    worker its claim loop costs one queue put and one lock release (a few microseconds)."""
    nxt = itertools.count().__next__
    total = len(calls)

    def claim() -> None:
        k = nxt()
        while k < total:
            calls[k]()
            k = nxt()

    errors: list[BaseException] = []
    parallel = openmp_parallel() if USE_OPENMP and getattr(_local, "openmp", False) else None
    if parallel is not None:
        _run_on_openmp(parallel, calls, min(total, max(cpu_count(), 2)), errors)
        if errors:
            raise errors[0]
        return
    workers = _pool(min(total - 1, max(cpu_count() - 1, 1)))
    pending = []
    for w in workers[:min(total - 1, len(workers))]:
        done = threading.Lock()
        done.acquire()
        w.tasks.put((claim, done, errors))
        pending.append(done)
    try:
        claim()
    except BaseException as err:  # stop the others claiming more, wait for them, then re-raise
        total = 0
        errors.insert(0, err)
    finally:
        for done in pending:  # the output stays in use until every chunk is done
            done.acquire()
    if errors:
        raise errors[0]


class RowRangeFunction:
    """A compiled row-range kernel ``fn(*args, out, row_begin, row_end)`` with its output's shape and dtype:
    ``f(*args)`` runs it as one chunk into a new output; ``f.bind(*args, bounds=...)`` prepares a call."""

    def __init__(self, fn: Any, out_shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.fn = fn
        self.signature = fn.signature
        self.out_shape = tuple(int(s) for s in out_shape)
        self.dtype = np.dtype(dtype)

    def __call__(self, *args: Any) -> np.ndarray:
        out = np.empty(self.out_shape, self.dtype)
        self.fn(*args, out, 0, self.out_shape[0])
        return out

    def bind(self, *args: Any, bounds: tuple[int, ...] | None = None) -> RowRangeCall:
        """A prepared call over ``bounds`` (``n + 1`` row boundaries; None: one chunk of all rows)."""
        return RowRangeCall(self, list(args), bounds or (0, self.out_shape[0]))


class RowRangeCall:
    """``call(out=None)`` runs the kernel over its chunks into ``out`` (a new ``np.empty`` array when None)
    and returns it; ``rebind(i, x)`` swaps argument ``i``; ``set_bounds(b)`` re-splits the rows."""

    __slots__ = ("_fn", "_args", "_calls", "_bounds", "_out_index", "_empty")

    def __init__(self, fn: RowRangeFunction, args: list[Any], bounds: tuple[int, ...]) -> None:
        if len(args) + 3 != len(fn.signature.args):
            raise TypeError(f"@{fn.signature.name} takes {len(fn.signature.args) - 3} arguments, got {len(args)}")
        self._fn, self._args, self._out_index = fn, args, len(args)
        self._empty = np.empty(fn.out_shape, fn.dtype)  # placeholder output of the prepared descriptors
        self._bounds: tuple[int, ...] = ()
        self._calls: list[Any] = []
        self.set_bounds(bounds)

    @property
    def bounds(self) -> tuple[int, ...]:
        return self._bounds

    def set_bounds(self, bounds: tuple[int, ...]) -> None:
        """Chunks ``[bounds[k], bounds[k + 1])`` (empty ones dropped); one prepared call each."""
        if bounds == self._bounds:
            return
        fn = self._fn.fn
        spans = [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo] or [(0, 0)]
        self._calls = [fn.bind(*self._args, self._empty, lo, hi) for lo, hi in spans]
        self._bounds = tuple(bounds)

    def rebind(self, i: int, value: Any) -> None:
        if not 0 <= i < len(self._args):
            raise IndexError(f"this call has {len(self._args)} arguments, no argument {i}")
        self._args[i] = value
        for call in self._calls:
            call.rebind(i, value)

    def runner(self) -> Callable[[], np.ndarray] | None:
        """A function running the prepared chunks into a fresh output and returning it, with the per-call work
        of :meth:`__call__` cut to the allocation, one data pointer written per chunk's descriptor and the
        kernel calls (about 1 us less on small calls); valid until :meth:`set_bounds` changes the chunks
        (:meth:`rebind` keeps it valid: descriptors are updated in place). None when a chunk's call cannot be
        run raw."""
        fn = self._fn
        if any(not hasattr(a, "shape") for a in self._args):  # a scalar argument: rebind() would not reach it
            return None
        raws = [call.raw(self._out_index) for call in self._calls]
        if any(r is None for r in raws):
            return None
        packs = [packed(cfn, cargs) for cfn, cargs, _, _ in raws]  # two ctypes arguments: ~0.4 us less per call
        raws = [r if p is None else (p[0], p[1], r[2], r[3]) for r, p in zip(raws, packs)]
        shape, dtype, empty, keep = fn.out_shape, fn.dtype, np.empty, self
        if len(raws) == 1:
            cfn, cargs, buf, word = raws[0]

            def one() -> np.ndarray:
                out = empty(shape, dtype)
                ptr = data_pointer(out)
                buf[word] = ptr
                buf[word + 1] = ptr
                cfn(*cargs)
                assert keep is not None and packs is not None  # hold the descriptors and the words alive
                return out
            return one
        chunks = [(buf, word, partial(cfn, *cargs)) for cfn, cargs, buf, word in raws]
        calls = [c for _, _, c in chunks]

        def many() -> np.ndarray:
            out = empty(shape, dtype)
            ptr = data_pointer(out)
            for buf, word, _ in chunks:
                buf[word] = ptr
                buf[word + 1] = ptr
            run_chunks(calls)
            assert keep is not None and packs is not None
            return out
        return many

    def __call__(self, out: np.ndarray | None = None) -> np.ndarray:
        fn = self._fn
        if out is None:
            out = np.empty(fn.out_shape, fn.dtype)
        calls, i = self._calls, self._out_index
        for call in calls:
            call.rebind_same(i, out)
        if len(calls) == 1:
            calls[0]()
        else:
            run_chunks(calls)
        return out
