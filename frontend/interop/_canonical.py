"""Sorted, duplicate-free copies of COO sources that are not so (scipy COO with unsorted or repeated
coordinates, uncoalesced torch COO), remembered per source.

The kernels read COO as MLIR does: coordinates sorted row-major, each entry once. A source that is not
canonical is never changed (scipy's ``sum_duplicates``/torch's ``coalesce`` would replace its buffers); instead
:func:`canonical_coo` sorts its coordinates into new buffers (the library's, validated once) and
:meth:`Canonical.values` sums the values of repeated coordinates into a values array of the library's, made again
whenever the source's values differ from the last ones (compared on every call: values changed in place are
always seen). The sorting is remembered per source object (dropped when it is garbage
collected, a weakref finalizer) together with a copy of the coordinates it was made from: coordinates
changed in place are noticed (compared, O(nnz)) and sorted again.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np


class Canonical:
    """The canonical order of one COO coordinate set: ``coords`` (sorted, unique; new arrays), and how
    values map onto it (``order`` gathers, None when the source was sorted already; ``starts`` begins each run
    of repeated coordinates)."""

    __slots__ = ("coords", "order", "starts", "repeated", "_last")

    def __init__(self, coords: list[np.ndarray], order: np.ndarray | None, starts: np.ndarray,
                 repeated: bool) -> None:
        self.coords, self.order, self.starts, self.repeated = coords, order, starts, repeated
        self._last: tuple[np.ndarray, np.ndarray] | None = None  # (a copy of the source values, the result)

    def values(self, data: Any) -> np.ndarray:
        """``data`` (one value, or one dense block, per source entry) in the canonical order, repeated
        coordinates summed: ``data`` itself when the source was sorted already, else a read-only array of the
        library's, the same one again while ``data`` holds the same values (compared: a sequential pass,
        cheaper than the gather, and the kernels' argument memo keeps its hit)."""
        if self.order is None:
            return np.ascontiguousarray(data)
        data = np.asarray(data)
        last = self._last
        if last is not None and last[0].shape == data.shape and last[0].dtype == data.dtype and \
                np.array_equal(last[0], data):
            return last[1]
        gathered = data[self.order]
        if self.repeated and gathered.shape[0]:
            gathered = np.add.reduceat(gathered, self.starts, axis=0)
        out = np.ascontiguousarray(gathered)
        out.flags.writeable = False  # shared by the views of this source
        self._last = (data.copy(), out)
        return out


class _Entry:
    __slots__ = ("ref", "snapshot", "result")

    def __init__(self, ref: Any, snapshot: list[np.ndarray], result: Canonical) -> None:
        self.ref, self.snapshot, self.result = ref, snapshot, result


_ENTRIES: dict[int, _Entry] = {}  # id of a source object -> its entry; one per live source object
_LOCK = threading.RLock()  # reentrant: a weakref finalizer (_forget) may run while it is held


def _forget(key: int) -> None:
    with _LOCK:
        _ENTRIES.pop(key, None)


def _same(snapshot: list[np.ndarray], coords: Sequence[np.ndarray]) -> bool:
    return len(snapshot) == len(coords) and all(
        s.shape == c.shape and s.dtype == c.dtype and np.array_equal(s, c) for s, c in zip(snapshot, coords))


def canonical_coo(owner: Any, coords: Sequence[np.ndarray], shape: Sequence[int], what: str) -> Canonical:
    """The :class:`Canonical` order of ``coords`` (one array per sparse dimension), remembered for ``owner`` (the
    source object). Coordinates already sorted without repeats are copied as they are (the source's buffers are
    never validated: its flags stay as they are). ValueError for coordinates outside ``shape``."""
    coords = [np.asarray(c) for c in coords]
    with _LOCK:
        entry = _ENTRIES.get(id(owner))
    if entry is not None and entry.ref() is owner and _same(entry.snapshot, coords):
        return entry.result
    result = _sorted(coords, shape, what)
    try:
        ref = weakref.ref(owner)
        if entry is None or entry.ref() is not owner:  # one finalizer per source object
            weakref.finalize(owner, _forget, id(owner))
    except TypeError:  # no weak references to this type: not remembered
        return result
    with _LOCK:
        _ENTRIES[id(owner)] = _Entry(ref, [c.copy() for c in coords], result)
    return result


def _sorted(coords: list[np.ndarray], shape: Sequence[int], what: str) -> Canonical:
    nnz = int(coords[0].shape[0]) if coords else 0
    for k, c in enumerate(coords):
        if nnz and (int(c.min()) < 0 or int(c.max()) >= int(shape[k])):
            raise ValueError(f"{what}: coordinates of dimension {k} lie outside [0, {int(shape[k])})")
    if nnz < 2:
        return Canonical([c.copy() for c in coords], None, np.zeros(min(nnz, 1), np.intp), False)
    later = np.zeros(nnz - 1, dtype=bool)  # entry k+1 after entry k (row-major)
    tied = np.ones(nnz - 1, dtype=bool)
    for c in coords:
        step = c[1:].astype(np.int64) - c[:-1]
        later |= tied & (step > 0)
        tied &= step == 0
    if later.all():
        return Canonical([c.copy() for c in coords], None, np.arange(nnz), False)
    order = np.lexsort(coords[::-1])  # np.lexsort sorts by its last key first
    ordered = [c[order] for c in coords]
    first = np.ones(nnz, dtype=bool)  # entry begins a run of equal coordinates
    first[1:] = False
    for c in ordered:
        first[1:] |= c[1:] != c[:-1]
    starts = np.flatnonzero(first)
    repeated = int(starts.shape[0]) < nnz
    unique = [np.ascontiguousarray(c[starts]) if repeated else c for c in ordered]  # new arrays
    return Canonical(unique, order, starts, repeated)
