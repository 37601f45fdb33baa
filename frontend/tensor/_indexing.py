"""Reading a tensor by index with NumPy's basic rules: ``A[i, j]`` (a scalar, 0 where nothing is stored),
``A[i]``, slices with steps and negative indices, ``...`` and one integer (or boolean) array.

Sparse results hold the selected entries in the source's format when it has the result's rank and can hold
them (an ``n:m`` group may no longer fit after a slice), else in the sparse format of that rank (a sparse
vector, CSR, COO); dense formats index their NumPy view."""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat
from frontend.storage._convert import entries, from_coordinates
from frontend.storage._lookup import get_value
from frontend.storage._protocol import StoredTensor
from frontend.storage._validate import mark_valid

_Key = int | slice | np.ndarray


def normalize(key: Any, shape: tuple[int, ...]) -> list[_Key]:
    """``key`` as one entry per dimension: non-negative ints, slices, or one 1-D int64 array (in range)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    at = next((n for n, k in enumerate(items) if k is Ellipsis), None)
    if at is not None:
        items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    if len(items) > len(shape):
        raise IndexError(f"too many indices for a tensor of {len(shape)} dimensions: {len(items)} were given")
    items += [slice(None)] * (len(shape) - len(items))
    out: list[_Key] = []
    for axis, (k, size) in enumerate(zip(items, shape)):
        out.append(_one(k, size, axis))
    if sum(isinstance(k, np.ndarray) for k in out) > 1:
        raise IndexError("index with one integer array at a time (NumPy's rules for several arrays, which "
                         "pair them up, are not supported); index once per array instead")
    return out


def _one(k: Any, size: int, axis: int) -> _Key:
    if k is None:
        raise IndexError("np.newaxis/None is not supported in a Tensor index; index first, then reshape")
    if isinstance(k, slice):
        return k
    if isinstance(k, (bool, np.bool_)):
        raise IndexError("a boolean scalar is not a valid Tensor index")
    if isinstance(k, (int, np.integer)):
        if not -size <= k < size:
            raise IndexError(f"index {k} is out of bounds for axis {axis} with size {size}")
        return int(k) % size
    arr = np.asarray(k)
    if arr.dtype == bool:
        if arr.shape != (size,):
            raise IndexError(f"boolean index of shape {arr.shape} does not match axis {axis} of size {size}")
        arr = np.flatnonzero(arr)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise IndexError(f"only integers, slices, '...', and 1-D integer or boolean arrays are valid Tensor "
                         f"indices, got {type(k).__name__} {getattr(k, 'dtype', '')}")
    if arr.size and (arr.min() < -size or arr.max() >= size):
        raise IndexError(f"an index in {arr.tolist()} is out of bounds for axis {axis} with size {size}")
    return np.where(arr < 0, arr + size, arr).astype(np.int64)


def getitem(t: StoredTensor, key: Any, dense_view: Any) -> Any:
    """``t[key]``: a NumPy scalar when every index is an integer, else a tensor of ``type(t)``.
    ``dense_view``: ``t``'s NumPy view when its format is dense (then indexing is NumPy's), else None."""
    keys = normalize(key, t.shape)
    if dense_view is not None:
        return _dense_result(t, np.asarray(dense_view)[tuple(keys)])
    if all(isinstance(k, int) for k in keys):
        v = get_value(t, [k for k in keys if isinstance(k, int)])
        return np.asarray(0 if v is None else v, dtype=t.dtype)[()]
    dims, vals = entries(t)
    keep = np.ones(len(vals), dtype=bool)
    new_dims: list[np.ndarray] = []
    shape: list[int] = []
    array_axis = None
    for axis, k in enumerate(keys):
        c = dims[axis]
        if isinstance(k, int):
            keep &= c == k
        elif isinstance(k, slice):
            start, stop, step = k.indices(t.shape[axis])
            shape.append(len(range(start, stop, step)))
            off = (c - start) if step > 0 else (start - c)
            keep &= (off >= 0) & (off % abs(step) == 0) & (off // abs(step) < shape[-1])
            new_dims.append(off // abs(step))
        else:
            array_axis = len(new_dims)
            shape.append(len(k))
            new_dims.append(c)  # replaced below
    out_dims = [d[keep] for d in new_dims]
    out_vals = vals[keep]
    if array_axis is not None:
        k = next(k for k in keys if isinstance(k, np.ndarray))
        out_dims, out_vals = _take(out_dims, out_vals, array_axis, k)
    return _sparse_result(t, tuple(shape), out_dims, out_vals)


def _take(dims: list[np.ndarray], vals: np.ndarray, axis: int, idx: np.ndarray) -> tuple[list[np.ndarray],
                                                                                          np.ndarray]:
    """Entries picked by the integer array ``idx`` along ``axis`` (repeats repeat entries)."""
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    c = dims[axis]
    lo = np.searchsorted(sorted_idx, c, "left")
    counts = np.searchsorted(sorted_idx, c, "right") - lo
    rep = np.repeat(np.arange(len(c)), counts)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts)
    new = [d[rep] for d in dims]
    new[axis] = order[np.repeat(lo, counts) + within]
    return new, vals[rep]


def family_format(fmt: TensorFormat, ndim: int) -> TensorFormat:
    """The format of a sparse result of rank ``ndim`` taken from a tensor of format ``fmt``."""
    return fmt if fmt.num_dimensions == ndim else sparse_format(ndim)


def sparse_format(ndim: int) -> TensorFormat:
    """The sparse format of a rank: a sparse vector, CSR, ``COO(ndim)``."""
    if ndim == 1:
        return NamedFormats.SparseVector
    if ndim == 2:
        return NamedFormats.CSR
    return NamedFormats.COO(ndim)


def _sparse_result(t: StoredTensor, shape: tuple[int, ...], dims: list[np.ndarray], vals: np.ndarray) -> Any:
    try:
        return from_entries(type(t), family_format(t.tensor_format, len(shape)), shape, dims, vals, t.index_type)
    except ValueError:  # the source format cannot hold the selection (n:m groups, block shapes)
        return from_entries(type(t), sparse_format(len(shape)), shape, dims, vals, t.index_type)


def from_entries(cls: type, fmt: TensorFormat, shape: tuple[int, ...], dims: Any, vals: np.ndarray,
                 index_type: Any) -> Any:
    """A ``cls`` tensor of ``fmt`` holding the entries ``dims`` (one coordinate array per dimension, any order)
    and ``vals``; valid by construction. Narrow (int8/int16) index types become int32: the entries and extents
    of a result may outgrow them, as for the sparse results of the operations."""
    if np.dtype(index_type).itemsize < 4:
        index_type = np.dtype(np.int32)
    pos, crd, out = from_coordinates(fmt, shape, dims, vals, index_type)
    pos = [None if p is None else p.astype(index_type, copy=False) for p in pos]
    crd = [c if c is None or c.dtype.kind == "u" else c.astype(index_type, copy=False) for c in crd]
    return mark_valid(cls(fmt, shape, pos, crd, out, index_type=index_type))


def _dense_result(t: StoredTensor, picked: np.ndarray) -> Any:
    if picked.ndim == 0:
        return picked[()]
    arr = np.ascontiguousarray(picked)
    return type(t)(NamedFormats.Dense(arr.ndim), arr.shape, [None] * arr.ndim, [None] * arr.ndim, arr)
