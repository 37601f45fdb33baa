"""Searching and indexing: ``where`` (sparse where both choices are sparse or zero), ``nonzero`` (the stored
nonzeros' coordinates), ``take`` (a sparse array's entries picked along an axis); ``argmax``, ``argmin``,
``searchsorted`` and ``take_along_axis`` for dense-format arrays."""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.ops.operators import _values as values
from frontend.tensor._tensor import Tensor

from ._arrays import (
    SCALARS,
    as_tensor,
    broadcast_sparse,
    build,
    build_keys,
    canonical,
    dense_of,
    dense_only,
    entries,
    gathered,
    is_sparse,
    numpy_of,
    sparse_result_format,
    wrap,
)

_PYTHON_SCALARS = (bool, int, float, complex)


def _operand(x: Any) -> Any:
    return x if isinstance(x, _PYTHON_SCALARS) else as_tensor(x)


def _zero_or_sparse(x: Any) -> bool:
    if is_sparse(x):
        return True
    if isinstance(x, SCALARS):
        return bool(x == 0)
    return x.ndim == 0 and bool(np.asarray(numpy_of(x)) == 0)


def where(condition: Any, x1: Any, x2: Any, /) -> Tensor:
    """``x1`` where ``condition`` is true, else ``x2`` (broadcast). The result is sparse when ``x1`` and
    ``x2`` are each sparse or zero (it stores at most their entries), else dense."""
    c, a, b = as_tensor(condition), _operand(x1), _operand(x2)
    if not any(is_sparse(v) for v in (c, a, b)):
        return wrap(np.where(numpy_of(c), numpy_of(a), numpy_of(b)))
    shapes = [() if isinstance(v, _PYTHON_SCALARS) else v.shape for v in (c, a, b)]
    shape = tuple(np.broadcast_shapes(*shapes))
    dtype = np.result_type(*(v if isinstance(v, _PYTHON_SCALARS) else np.dtype(v.dtype) for v in (a, b)))
    if not (_zero_or_sparse(a) and _zero_or_sparse(b)):
        return wrap(np.where(dense_of(c), dense_of(a), dense_of(b)).astype(dtype))
    sparse = [broadcast_sparse(v, shape) for v in (a, b) if is_sparse(v)]
    keys = values.aligned(sparse[0], sparse[-1])[0] if sparse else np.zeros(0, np.int64)
    out = np.where(gathered(c, keys, shape), gathered(a, keys, shape), gathered(b, keys, shape)).astype(dtype)
    formats = [v.tensor_format for v in (a, b) if is_sparse(v)] or [c.tensor_format]
    return build_keys(shape, keys, out, sparse_result_format(formats, len(shape)))


def nonzero(x: Any, /) -> tuple[Tensor, ...]:
    """The coordinates of the nonzero elements, one int64 array per axis, in C order."""
    t = as_tensor(x)
    if t.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not defined: reshape it to 1-D first")
    if not t.is_sparse:
        return tuple(wrap(i.astype(np.int64)) for i in np.nonzero(numpy_of(t)))
    keys, val = canonical(t)
    keys = keys[val != 0]
    return tuple(wrap(np.asarray(i, dtype=np.int64)) for i in np.unravel_index(keys, t.shape))


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Tensor:
    """The elements at ``indices`` (a 1-D integer array) along ``axis`` (optional for a 1-D ``x``); a sparse
    array keeps the entries it stores there."""
    t = as_tensor(x)
    idx = np.asarray(dense_of(as_tensor(indices)))
    if axis is None:
        if t.ndim != 1:
            raise ValueError(f"take needs axis= for an array of {t.ndim} dimensions")
        axis = 0
    if not t.is_sparse:
        return wrap(np.take(numpy_of(t), idx, axis=axis))
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        raise TypeError(f"take: indices must be a 1-D integer array, got {idx.dtype} of shape {idx.shape}")
    ax = int(axis) % t.ndim
    n = t.shape[ax]
    if np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"take: an index is out of range for axis {axis} of size {n}")
    idx = np.where(idx < 0, idx + n, idx).astype(np.int64)
    order = np.argsort(idx, kind="stable")
    wanted = idx[order]
    crd, val = entries(t)
    lo = np.searchsorted(wanted, crd[ax], "left")
    count = np.searchsorted(wanted, crd[ax], "right") - lo
    crd, val, lo = np.repeat(crd, count, axis=1), np.repeat(val, count), np.repeat(lo, count)
    within = np.arange(len(val)) - np.repeat(np.cumsum(count) - count, count)
    crd[ax] = order[lo + within]
    shape = t.shape[:ax] + (len(idx),) + t.shape[ax + 1:]
    return build(shape, crd, val, sparse_result_format([t.tensor_format], t.ndim))



def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The index of the first maximum along ``axis`` (dense-format arrays)."""
    arr = dense_only("argmax", x, "the position of an implicit zero is not a stored entry")
    return wrap(np.argmax(arr, axis=axis, keepdims=keepdims).astype(np.int64))


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The index of the first minimum along ``axis`` (dense-format arrays)."""
    arr = dense_only("argmin", x, "the position of an implicit zero is not a stored entry")
    return wrap(np.argmin(arr, axis=axis, keepdims=keepdims).astype(np.int64))


def searchsorted(x1: Any, x2: Any, /, *, side: Any = "left", sorter: Any = None) -> Tensor:
    """Where ``x2``'s elements go in the sorted 1-D ``x1`` (dense-format arrays)."""
    arr = dense_only("searchsorted", x1, "a sorted array is dense")
    s: Any = None if sorter is None else np.asarray(dense_of(as_tensor(sorter)))
    return wrap(np.searchsorted(arr, dense_of(as_tensor(x2)), side=side, sorter=s).astype(np.int64))


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Tensor:
    """The elements at ``indices`` along ``axis``, an index per output element (dense-format arrays)."""
    arr = dense_only("take_along_axis", x, "an index per output element gives a dense result")
    return wrap(np.take_along_axis(arr, np.asarray(dense_of(as_tensor(indices))), axis=axis))
