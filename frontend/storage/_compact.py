"""Hypersparse operands: extents far above the stored entries (``2**31 x 2**31`` holding two entries).

A kernel's work and memory follow the extents of dense loops and of the result (positions per row, a
dense workspace per row), so an operation on such operands computes on a compacted problem instead:

1. per index letter whose extent is hypersparse (over :data:`HYPERSPARSE_EXTENT` and above the stored
   entries), the sorted coordinates the stored operands use (:func:`used_coordinates`), plus *spare*
   coordinates standing for every unused one when some are unused (they hold no entry: a reduction or a
   dense result reads there what an unused coordinate of the original holds, e.g. an implicit zero);
2. each operand rebuilt over those compact coordinates (:func:`compacted`): a small tensor;
3. the ordinary operation runs on the small operands, and its result is mapped back to the original
   coordinates (:func:`expanded`): a sparse result's entries through the used coordinates (in a format whose
   storage follows its entries, COO when the operation's own format would not), a dense result gathered
   (``MemoryError`` through :func:`frontend.storage._budget.require` when it cannot be allocated).

Memory and time follow the stored entries; the answer is the one the operation gives on the original.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat

from ._budget import HYPERSPARSE_EXTENT, is_hypersparse, require, storage_bytes
from ._convert import entries, from_coordinates
from ._protocol import StoredTensor
from ._validate import mark_valid

#: letter -> (sorted used coordinates, original extent)
Used = dict[str, tuple[np.ndarray, int]]


def used_coordinates(operands: Sequence[tuple[Any, str]]) -> Used | None:
    """Per hypersparse letter, the sorted coordinates the stored operands use; None when no letter is
    hypersparse or a dense operand is indexed by one (its values differ at unused coordinates)."""
    huge: dict[str, int] = {}
    for t, letters in operands:
        for letter, e in zip(letters, t.shape):
            if e > HYPERSPARSE_EXTENT:
                huge[letter] = int(e)
    if not huge or any(not t.is_sparse and set(letters) & set(huge) for t, letters in operands):
        return None
    parts: dict[str, list[np.ndarray]] = {letter: [] for letter in huge}
    for t, letters in operands:
        dims, _ = entries(t)
        for letter, d in zip(letters, dims):
            if letter in parts:
                parts[letter].append(np.asarray(d, dtype=np.int64))
    return {letter: (np.unique(np.concatenate(p)) if p else np.zeros(0, np.int64), huge[letter])
            for letter, p in parts.items()}


def compact_extent(used: np.ndarray, extent: int) -> int:
    """The used coordinates, plus spare ones when some coordinate is unused: a power of two of at least 8 (so
    that compacted problems of similar sizes share their compiled kernels), at most ``extent``."""
    if len(used) >= extent:
        return extent
    return min(extent, 1 << max(3, len(used).bit_length()))


def compacted(t: StoredTensor, letters: str, used: Used, fmt: TensorFormat) -> Any:
    """``t`` over the compact coordinates of ``used`` (other letters keep theirs), in ``fmt`` with int64
    index buffers, a NumPy tensor of ``type(t)``."""
    dims, vals = entries(t)
    shape, out = [], []
    for letter, d, e in zip(letters, dims, t.shape):
        if letter in used:
            u, extent = used[letter]
            shape.append(compact_extent(u, extent))
            out.append(np.searchsorted(u, d))
        else:
            shape.append(int(e))
            out.append(d)
    pos, crd, val = from_coordinates(fmt, shape, out, np.ascontiguousarray(vals), np.int64)
    return mark_valid(type(t)(fmt, tuple(shape), pos, crd, val, index_type=np.int64, package="numpy"))


def coo_format(rank: int) -> TensorFormat:
    """A format of ``rank`` whose storage follows its entries."""
    return NamedFormats.SparseVector if rank == 1 else NamedFormats.COO if rank == 2 else NamedFormats.COO(rank)


def _follows_entries(fmt: TensorFormat, shape: tuple[int, ...], n: int, itemsize: int) -> bool:
    return storage_bytes(fmt, shape, n, itemsize) <= 64 * (n + 1) * (itemsize + 8) + (1 << 20)


def expanded(result: Any, letters: str, used: Used, shape: tuple[int, ...], want: TensorFormat | None,
             what: str, shapes: Sequence[Sequence[int]]) -> Any:
    """The compact problem's ``result`` (indexed by ``letters``) at the original coordinates, of ``shape``:
    a sparse result in ``want`` (its own format when None) if that format's storage follows the entries,
    else in COO; a dense result (an array or a dense tensor) as a NumPy array; a scalar as it is."""
    if not hasattr(result, "tensor_format"):
        arr = np.asarray(result)
        return result if arr.ndim == 0 else _gathered(arr, letters, used, shape, what, shapes)
    if not result.is_sparse:
        return _gathered(np.asarray(result.val), letters, used, shape, what, shapes)
    dims, vals = entries(result)
    keep = np.ones(len(vals), dtype=bool)
    for letter, d in zip(letters, dims):
        if letter in used:
            keep &= d < len(used[letter][0])
    out = []
    for letter, d in zip(letters, dims):
        d = np.asarray(d)[keep]
        out.append(used[letter][0][d] if letter in used else d)
    vals = np.ascontiguousarray(np.asarray(vals)[keep])
    fmt = want if want is not None else result.tensor_format
    if fmt.num_dimensions != len(shape) or not _follows_entries(fmt, shape, len(vals), vals.itemsize):
        fmt = coo_format(len(shape))
    pos, crd, val = from_coordinates(fmt, shape, out, vals, np.int64)
    return mark_valid(type(result)(fmt, shape, pos, crd, val, index_type=np.int64, package="numpy"))


def _gathered(arr: np.ndarray, letters: str, used: Used, shape: tuple[int, ...], what: str,
              shapes: Sequence[Sequence[int]]) -> np.ndarray:
    """A dense compact result at every original coordinate (unused ones read the spare coordinate)."""
    require(what, math.prod(shape) * arr.itemsize + sum(e * 8 for e in shape), shapes)
    index = []
    for letter, e in zip(letters, shape):
        if letter in used:
            u = used[letter][0]
            m = np.full(e, len(u), dtype=np.int64)  # the spare coordinate (only read when some is unused)
            m[u] = np.arange(len(u))
            index.append(m)
        else:
            index.append(np.arange(e))
    return np.ascontiguousarray(arr[np.ix_(*index)]) if index else arr


def huge(objs: Sequence[Any]) -> bool:
    """Whether an object (of any package) has an extent over :data:`HYPERSPARSE_EXTENT`: the cheap test
    before :func:`run_compacted` looks closer."""
    for x in objs:
        shape = getattr(x, "shape", None)
        if shape is not None:
            for e in shape:
                if e is not None and e > HYPERSPARSE_EXTENT:
                    return True
    return False


def run_compacted(fn: Any, operands: Sequence[tuple[Any, str]], out_letters: str, want: TensorFormat | None,
                  what: str, entry_format: Any) -> Any:
    """``fn(*compact operands)`` at the original coordinates (:func:`expanded`), or None when no operand is
    hypersparse (the caller runs the operation as usual). ``operands``: (tensor, its index letters);
    stored operands are rebuilt in ``entry_format(rank)``, dense ones passed as they are."""
    tensors = [t for t, _ in operands]
    if not is_hypersparse(tensors):
        return None
    used = used_coordinates(operands)
    if used is None:
        return None
    extent = {letter: int(e) for t, letters in operands for letter, e in zip(letters, t.shape)}
    shape = tuple(extent[letter] for letter in out_letters)
    small = [compacted(t, letters, used, entry_format(t.ndim)) if t.is_sparse else t for t, letters in operands]
    return expanded(fn(*small), out_letters, used, shape, want, what, [t.shape for t in tensors])
