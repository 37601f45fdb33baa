"""Cheap statistics of a stored operand, measured from its buffers at plan time, and chunk bounds balanced
by stored entries (:class:`lowering.schedule.OperandStats` feeds :func:`lowering.schedule.choose_schedule`).

Both are O(rows) NumPy on the position buffer (the bandwidth from a sample of rows) and remembered per
buffer set: planning over the same buffers again costs one dictionary lookup.
"""
from __future__ import annotations

import math
import threading
import weakref
from typing import Any

import numpy as np

from frontend.tensor._tensor import Tensor
from lowering.schedule import MID_LANES, OperandStats

from ._threads import balanced_bounds, chunk_bounds

#: Rows sampled to estimate the bandwidth (mean |col - row|).
BANDWIDTH_SAMPLE = 64


class StoredRows:
    """A stored operand's :class:`OperandStats` and its cumulative entries per chunkable row (``offsets``,
    length rows + 1, None when the format has no position buffer to balance by); chunk bounds per count."""

    __slots__ = ("stats", "offsets", "_bounds", "schedules")

    def __init__(self, stats: OperandStats, offsets: np.ndarray | None) -> None:
        self.stats, self.offsets = stats, offsets
        self._bounds: dict[tuple[int, int, str], tuple[int, ...]] = {}
        self.schedules: dict[Any, Any] = {}  # PreparedOp.key -> its Schedule over these buffers; one per plan kind

    def bounds(self, rows: int, n: int, split: str) -> tuple[int, ...]:
        """``n + 1`` boundaries of ``n`` chunks of ``rows`` output rows: balanced by stored entries when
        ``split == "nnz"`` and the offsets cover those rows, else equal row counts."""
        key = (rows, n, split)
        got = self._bounds.get(key)
        if got is None:
            offsets = self.offsets
            if split == "nnz" and offsets is not None and len(offsets) == rows + 1:
                got = balanced_bounds(offsets, n)
            else:
                got = tuple(chunk_bounds(rows, n))
            self._bounds[key] = got
        return got


_MEMO: dict[int, tuple[Any, dict[Any, Any]]] = {}  # id(first buffer) -> (weakref to it, memo); live buffers only
_LOCK = threading.Lock()


def buffer_memo(t: Tensor) -> dict[Any, Any] | None:
    """A dictionary remembered for ``t``'s buffer set, keyed by its first buffer (weakref-checked) and dropped
    when that buffer is freed: the measurements (:func:`stored_rows`) and converted copies
    (``_reroute.converted``) of an operand live here. None when the buffer takes no weak references."""
    head = memo_head(t)
    got = _MEMO.get(id(head))
    if got is not None and got[0]() is head:
        return got[1]
    try:
        ref = weakref.ref(head)
        weakref.finalize(head, _forget, id(head), ref)
    except TypeError:  # a buffer without weak references: not remembered
        return None
    memo: dict[Any, Any] = {}
    with _LOCK:
        _MEMO[id(head)] = (ref, memo)
    return memo


def memo_head(t: Tensor) -> Any:
    """The buffer a memo is keyed by: the first position or coordinate buffer, else the values."""
    return next((b for b in (*t._pos, *t._crd) if b is not None), t.val)


def stored_rows(t: Tensor) -> StoredRows:
    """The measurements of ``t``'s buffers (computed once per buffer set)."""
    memo = buffer_memo(t)
    got = None if memo is None else memo.get("rows")
    if got is None:
        got = _measure(t)
        if memo is not None:
            memo["rows"] = got
    return got


def _forget(key: int, ref: Any) -> None:
    with _LOCK:
        got = _MEMO.get(key)
        if got is not None and got[0] is ref:
            del _MEMO[key]


def _row_lengths(t: Tensor) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """(entries per row, cumulative entries per chunk row, index of the positioned level) from the first
    positioned level under a dense or batch outer level; (None, None, -1) for other layouts."""
    levels = t.tensor_format.levels
    k = next((i for i, lv in enumerate(levels) if lv.has_positions), -1)
    if k < 1 or any(lv.format.value not in ("dense", "batch") for lv in levels[:k]):
        return None, None, -1
    pos = np.asarray(t.pos(k))
    if levels[k].format.value == "loose_compressed":  # (lo, hi) pairs: a row's entries are hi - lo
        pairs = pos.reshape(pos.shape[:-1] + (-1, 2))
        lengths = (pairs[..., 1] - pairs[..., 0]).reshape(-1)
        return lengths, np.concatenate(([0], np.cumsum(lengths))), k
    if pos.ndim == 1:
        return np.diff(pos), pos, k
    lengths = np.diff(pos.reshape(-1, pos.shape[-1]), axis=-1)
    per_batch = lengths.reshape(pos.shape[0], -1).sum(axis=-1)
    return lengths.ravel(), np.concatenate(([0], np.cumsum(per_batch))), k


def _measure(t: Tensor) -> StoredRows:
    """Row-length statistics and the bandwidth estimate of ``t`` (see :class:`OperandStats`)."""
    val = np.asarray(t.val)
    nnz = int(val.size)
    shape = t.shape
    cols = int(shape[-1]) if shape else 1
    lengths, offsets, k = _row_lengths(t)
    if lengths is None:
        rows = int(shape[-2]) if len(shape) >= 2 else 1
        mean = nnz / rows if rows else 0.0
        stats = OperandStats(rows, cols, nnz, math.ceil(mean), mean, 0.0, _diagonal_bandwidth(t, cols))
        return StoredRows(stats, None)
    entries = int(lengths.sum())
    scale = nnz // entries if entries else 1  # entries per stored coordinate (block formats)
    rows = int(lengths.size)
    mean = nnz / rows if rows else 0.0
    if rows and mean:
        row_max = int(lengths.max()) * scale
        cv = float(lengths.std() * scale / mean)
    else:
        row_max, cv = 0, 0.0
    stride, fill = _fixed_stride(t, k, rows, entries)
    stats = OperandStats(rows, cols, nnz, row_max, mean, cv, _sampled_bandwidth(t, k, cols), stride, fill,
                         _sampled_runs(t, k))
    # a copy: the offsets may be the position buffer itself, which the memo must not keep alive
    return StoredRows(stats, None if offsets is None else np.array(offsets, order="C"))


def _fixed_stride(t: Tensor, k: int, rows: int, entries: int) -> tuple[int, float]:
    """``(K, entries / slots)`` when level ``k`` is loose_compressed (unbatched) with exactly ``K`` slots per
    row (``lo_r = r * K`` for every row and ``rows * K`` coordinates: ELLPACK's layout), else ``(0, 1.0)``."""
    if t.tensor_format.levels[k].format.value != "loose_compressed" or rows <= 0:
        return 0, 1.0
    pos, crd = np.asarray(t.pos(k)), np.asarray(t.crd(k))
    if pos.ndim != 1 or crd.ndim != 1 or crd.size % rows or not crd.size:
        return 0, 1.0
    stride = crd.size // rows
    if not np.array_equal(pos[0::2], np.arange(rows, dtype=np.int64) * stride):
        return 0, 1.0
    if np.any(pos[1::2] - pos[0::2] > stride):
        return 0, 1.0
    return stride, entries / crd.size


def _sampled_bandwidth(t: Tensor, k: int, cols: int) -> float:
    """mean |col - row| / cols over up to :data:`BANDWIDTH_SAMPLE` evenly spaced rows of the first batch
    (level coordinates scaled to the matrix's extents); nan when the level stores no plain coordinates."""
    lv = t.tensor_format.levels[k]
    if lv.format.value not in ("compressed", "loose_compressed") or not lv.has_coordinates:
        return math.nan
    pos, crd = np.asarray(t.pos(k)), np.asarray(t.crd(k))
    if pos.ndim > 1:  # batched: the first batch (indexing, not reshape: a batch may hold no entries)
        pos, crd = pos[(0,) * (pos.ndim - 1)], crd[(0,) * (crd.ndim - 1)]
    rows = len(pos) - 1
    if rows <= 0 or pos[-1] == 0:
        return 0.0
    level_cols = max(1, int(crd.max()) + 1) if crd.size else 1
    row_scale = len(t.shape) >= 2 and t.shape[-2] / rows or 1.0
    col_scale = max(cols / level_cols, 1.0) if level_cols < cols else 1.0
    picks = np.unique(np.linspace(0, rows - 1, min(rows, BANDWIDTH_SAMPLE)).astype(np.int64))
    total = count = 0.0
    for r in picks:
        c = crd[pos[r]:pos[r + 1]]
        if c.size:
            total += float(np.abs(c * col_scale - r * row_scale).sum())
            count += c.size
    return total / count / max(cols, 1) if count else 0.0


def _sampled_runs(t: Tensor, k: int) -> float:
    """Share of the entries of up to :data:`BANDWIDTH_SAMPLE` evenly spaced rows (first batch) that lie in
    runs: groups of :data:`lowering.schedule.MID_LANES` entries aligned to the row's start whose columns are
    consecutive (4x4-block rows: 1.0); 0.0 when level ``k`` is no plain compressed level."""
    lv = t.tensor_format.levels[k]
    if lv.format.value != "compressed" or not lv.has_coordinates:
        return 0.0
    pos, crd = np.asarray(t.pos(k)), np.asarray(t.crd(k))
    if pos.ndim > 1:
        pos, crd = pos[(0,) * (pos.ndim - 1)], crd[(0,) * (crd.ndim - 1)]
    rows = len(pos) - 1
    if rows <= 0 or pos[-1] == 0:
        return 0.0
    g = MID_LANES
    picks = np.unique(np.linspace(0, rows - 1, min(rows, BANDWIDTH_SAMPLE)).astype(np.int64))
    hits = count = 0
    for r in picks:
        c = crd[pos[r]:pos[r + 1]].astype(np.int64)
        count += c.size
        full = c.size - c.size % g
        if full:
            hits += g * int(np.count_nonzero(c[g - 1:full:g] - c[0:full:g] == g - 1))
    return hits / count if count else 0.0


def _diagonal_bandwidth(t: Tensor, cols: int) -> float:
    """For diagonal formats (an outer level of offsets over a range level): mean |offset| / cols; else nan."""
    levels = t.tensor_format.levels
    if len(levels) < 2 or levels[1].format.value != "range" or not levels[0].has_coordinates:
        return math.nan
    offsets = np.asarray(t.crd(0))
    return float(np.abs(offsets).mean()) / max(cols, 1) if offsets.size else 0.0
