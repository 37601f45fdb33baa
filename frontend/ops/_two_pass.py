"""Two-pass row-range kernels with sparse results (SpGEMM), run in row chunks on the shared thread pool.

A kernel registered with ``row_ranges`` (:mod:`lowering.kernels.registry`) exports, beside the whole
product ``@<name>(*args) -> (c_pos, c_crd, c_val)``, the pair ``@<name>_count`` and ``@<name>_fill``.
:class:`TwoPassFunction` runs small products as one call of the whole function (its own exact-size
buffers) and larger ones in two passes: every chunk of rows counts its rows' entries into ``c_pos``, the
counts become offsets (prefix sums), the result buffers are allocated once (numpy: large ones are backed
by huge pages, fewer page faults than the kernel's ``malloc``), and every chunk writes its rows at their
offsets. Pass 1 splits the rows into chunks of equal stored entries of the row operand, pass 2 into
chunks of equal result entries.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from ._stats import balanced_bounds
from ._threads import cpu_count, resolve_threads, run_chunks

#: Below this many estimated products (multiply-adds) a product runs as one call of the whole function
#: on the calling thread (``threads=None``/``"auto"``/1); from it on, in two passes with numpy-allocated
#: buffers, on every core unless ``threads=1``. About 1 ms of single-threaded work: handing chunks to the
#: pool costs tens of microseconds, the passes' own calls about 30.
PARALLEL_MIN_PRODUCTS = 1 << 19


def kernel_threads(entry: Any, threads: Any) -> int | str | None:
    """The threads setting of a two-pass kernel ``entry`` (None: the kernel has no row-range pair):
    ``threads=None`` means ``"auto"`` here."""
    if entry is None or entry.row_ranges is None:
        return None
    return "auto" if threads in (None, "auto") else resolve_threads(threads)


class TwoPassFunction:
    """``f(*args) -> (c_pos, c_crd, c_val)`` like the whole function, in chunks when large (module doc)."""

    def __init__(self, module: Any, name: str, lead: int, threads: int | str) -> None:
        self.whole = module.function(name)
        self.count = module.function(f"{name}_count")
        self.fill = module.function(f"{name}_fill")
        self.signature = self.whole.signature
        self.lead = lead  # the input whose rows are the result's rows (3 buffers per input: pos, crd, val)
        self.threads = threads
        fill = self.fill.signature.args
        self._dtypes = (fill[-5].dtype, fill[-4].dtype, fill[-3].dtype)  # c_pos, c_crd, c_val

    def products(self, args: Sequence[Any]) -> float:
        """The expected number of products: nnz(A) * (mean entries per row of B)."""
        a, b = 3 * self.lead, 3 * (1 - self.lead)
        return args[a + 1].shape[0] * args[b + 1].shape[0] / max(1, args[b].shape[0] - 1)

    def chunks(self, args: Sequence[Any]) -> int | None:
        """Row chunks to run in (None: one call of the whole function)."""
        big = self.products(args) >= PARALLEL_MIN_PRODUCTS
        if self.threads == "auto":
            return cpu_count() if big else None
        n = int(self.threads)
        return n if n > 1 or big else None

    def __call__(self, *args: Any) -> Any:
        return self.run(args, self.chunks(args))

    def run(self, args: tuple, chunks: int | None) -> Any:
        """The product as one call of the whole function (``chunks=None``) or in two passes over
        ``chunks`` row ranges (1: both passes on the calling thread)."""
        if chunks is None:
            return self.whole(*args)
        lead_pos = args[3 * self.lead]
        rows = lead_pos.shape[0] - 1
        n = max(1, min(chunks, rows))
        pos_t, crd_t, val_t = self._dtypes
        pos = np.empty(rows + 1, pos_t)
        pos[0] = 0
        _run_chunks(self.count, args, (pos,), _balanced(lead_pos, n))
        np.cumsum(pos, out=pos)
        nnz = int(pos[-1])
        crd, val = np.empty(nnz, crd_t), np.empty(nnz, val_t)
        _run_chunks(self.fill, args, (pos, crd, val), _balanced(pos, n))
        return pos, crd, val

    def bind(self, *args: Any) -> TwoPassCall:
        """A prepared call (same protocol as ``mlir_bridge`` bound calls: ``call()``, ``rebind(i, x)``)."""
        return TwoPassCall(self, list(args))


class TwoPassCall:
    """``call()`` runs the function on the held arguments; ``rebind(i, x)`` swaps argument ``i``. Small
    products go through a prepared call of the whole function (its descriptors reused)."""

    __slots__ = ("_fn", "_args", "_whole")

    def __init__(self, fn: TwoPassFunction, args: list[Any]) -> None:
        self._fn, self._args = fn, args
        self._whole = fn.whole.bind(*args)

    def rebind(self, i: int, value: Any) -> None:
        self._whole.rebind(i, value)
        self._args[i] = value

    def __call__(self) -> Any:
        chunks = self._fn.chunks(self._args)
        return self._whole() if chunks is None else self._fn.run(tuple(self._args), chunks)


def _balanced(pos: np.ndarray, n: int) -> list[int]:
    """``n + 1`` row boundaries splitting the rows of positions ``pos`` into ranges of near-equal entries
    (:func:`balanced_bounds`, empty ranges dropped; every row in exactly one range)."""
    rows = pos.shape[0] - 1
    if n <= 1 or rows <= 1:
        return [0, rows]
    return sorted(set(balanced_bounds(pos, n)))


def _run_chunks(fn: Any, args: tuple, out: tuple, bounds: list[int]) -> None:
    """``fn(*args, *out, begin, end)`` for each consecutive pair of ``bounds``: the first on this thread,
    the others on the pool."""
    run_chunks([partial(fn, *args, *out, bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)])
