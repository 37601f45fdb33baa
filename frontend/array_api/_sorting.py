"""Sorting and set functions: ``sort``/``argsort`` and ``unique_inverse``/``unique_all`` for dense-format
arrays (a sorted or inverse-indexed sparse array is not sparse); ``unique_values``/``unique_counts`` also of
sparse arrays (their stored values and the implicit zeros)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from frontend.tensor._tensor import Tensor

from ._arrays import as_tensor, canonical, dense_only, numpy_of, wrap


class UniqueAll(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCounts(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverse(NamedTuple):
    values: Tensor
    inverse_indices: Tensor



def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis`` (dense-format arrays)."""
    arr = dense_only("sort", x, "sorting moves the implicit zeros among the stored values")
    out = np.sort(arr, axis=axis, kind="stable")
    return wrap(np.flip(out, axis=axis) if descending else out)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The indices that sort ``x`` along ``axis``, stable (dense-format arrays)."""
    arr = dense_only("argsort", x, "the sorting indices of every element are dense")
    if not descending:
        return wrap(np.argsort(arr, axis=axis, kind="stable").astype(np.int64))
    n = arr.shape[axis] if arr.ndim else 1
    flipped = np.argsort(np.flip(arr, axis=axis), axis=axis, kind="stable")
    return wrap((n - 1 - np.flip(flipped, axis=axis)).astype(np.int64))


def _stored_and_zeros(t: Tensor) -> tuple[np.ndarray, int]:
    _, val = canonical(t)
    return val, int(np.prod(t.shape)) - len(val)


def unique_values(x: Any, /) -> Tensor:
    """The distinct values (each NaN distinct), sorted; of a sparse array its stored values and 0 when an
    element is not stored."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.unique_values(numpy_of(t)))
    val, implicit = _stored_and_zeros(t)
    return wrap(np.unique_values(np.concatenate([val, np.zeros(min(implicit, 1), val.dtype)])))


def unique_counts(x: Any, /) -> UniqueCounts:
    """The distinct values and how often each occurs (implicit zeros counted)."""
    t = as_tensor(x)
    if not t.is_sparse:
        got = np.unique_counts(numpy_of(t))
        return UniqueCounts(wrap(got.values), wrap(got.counts.astype(np.int64)))
    val, implicit = _stored_and_zeros(t)
    got = np.unique_counts(val)
    values, counts = got.values, got.counts.astype(np.int64)
    if implicit:
        at = np.flatnonzero(values == 0)
        if len(at):
            counts[at[0]] += implicit
        else:
            spot = int(np.searchsorted(values, 0))
            values = np.insert(values, spot, 0)
            counts = np.insert(counts, spot, implicit)
    return UniqueCounts(wrap(values), wrap(counts))


def unique_inverse(x: Any, /) -> UniqueInverse:
    """The distinct values and each element's index among them (dense-format arrays)."""
    got = np.unique_inverse(dense_only("unique_inverse", x, "an index per element is a dense array"))
    return UniqueInverse(wrap(got.values), wrap(got.inverse_indices.astype(np.int64)))


def unique_all(x: Any, /) -> UniqueAll:
    """Distinct values, first indices, inverse indices and counts (dense-format arrays)."""
    got = np.unique_all(dense_only("unique_all", x, "an index per element is a dense array"))
    return UniqueAll(wrap(got.values), wrap(got.indices.astype(np.int64)),
                     wrap(got.inverse_indices.astype(np.int64)), wrap(got.counts.astype(np.int64)))
