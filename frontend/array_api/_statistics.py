"""Statistical and utility functions: ``sum``, ``prod``, ``max``, ``min``, ``mean`` on :mod:`frontend.ops`
(implicit zeros take part, NumPy's result dtypes); ``var``/``std`` (the stored entries' deviations plus the
implicit zeros'), ``count_nonzero``, ``all``/``any`` on the stored entries; ``cumulative_*`` and ``diff``
for dense-format arrays. Results are dense-format Tensors (a full reduction: a 0-d one)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontend import ops
from frontend.tensor._tensor import Tensor

from ._arrays import as_tensor, dense_only, entries, numpy_of, wrap


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    axes = tuple(range(ndim)) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ValueError(f"axis {ax} is out of range for an array of {ndim} dimensions")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdims or d not in axes)


def _tensor(result: Any) -> Tensor:
    return result if isinstance(result, Tensor) else wrap(result)


def _reduction(name: str, x: Any, axis: Any, keepdims: bool, dtype: Any = None) -> Tensor:
    """``name`` (sum, prod, max, min, mean) along ``axis``: NumPy on a dense-format ``x``, frontend.ops on a
    sparse one (keywords passed only when they differ from the defaults)."""
    t = as_tensor(x)
    if not t.is_sparse:
        kw = {} if dtype is None else {"dtype": dtype}
        return wrap(getattr(np, name)(numpy_of(t), axis=axis, keepdims=keepdims, **kw))
    kwargs: dict[str, Any] = {}
    if keepdims:
        kwargs["keepdims"] = True
    if dtype is not None:
        kwargs["dtype"] = dtype
    return _tensor(getattr(ops, name)(t, axis, **kwargs))


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The sum along ``axis`` (int32 and narrower integers accumulate in int64, as NumPy's)."""
    return _reduction("sum", x, axis, keepdims, dtype)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """The product along ``axis``; implicit zeros take part."""
    return _reduction("prod", x, axis, keepdims, dtype)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The maximum along ``axis``; implicit zeros take part."""
    return _reduction("max", x, axis, keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The minimum along ``axis``; implicit zeros take part."""
    return _reduction("min", x, axis, keepdims)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The mean along ``axis``; implicit zeros take part."""
    return _reduction("mean", x, axis, keepdims)


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """The variance along ``axis`` with ``correction`` degrees of freedom removed (real floating dtypes). On a
    sparse ``x``: the squared deviations of the stored entries from the mean plus those of the implicit zeros
    (``(n - stored) * mean**2``), so no dense copy is made."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.var(numpy_of(t), axis=axis, ddof=correction, keepdims=keepdims))
    if np.dtype(t.dtype).kind != "f":
        raise TypeError(f"var needs a real floating-point array, got {t.dtype}")
    axes = _axes(axis, t.ndim)
    m = np.asarray(numpy_of(mean(t, axis=axes, keepdims=True)))
    crd, val = entries(t)
    kept = tuple(np.zeros_like(crd[d]) if d in axes else crd[d] for d in range(t.ndim))
    slot = np.ravel_multi_index(kept, m.shape) if t.ndim else np.zeros(len(val), np.int64)
    flat_m = m.reshape(-1)
    deviation = np.bincount(slot, (val - flat_m[slot]) ** 2, minlength=flat_m.size)
    stored = np.bincount(slot, minlength=flat_m.size)
    n = math.prod(t.shape[d] for d in axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = ((deviation + (n - stored) * flat_m ** 2) / (n - correction)).astype(t.dtype)
    return wrap(out.reshape(_kept_shape(t.shape, axes, keepdims)))


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """The standard deviation: the square root of :func:`var`."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.std(numpy_of(t), axis=axis, ddof=correction, keepdims=keepdims))
    return wrap(np.sqrt(numpy_of(var(t, axis=axis, correction=correction, keepdims=keepdims))))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The number of nonzero elements along ``axis`` (a sparse array counts its stored nonzeros)."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.count_nonzero(numpy_of(t), axis=axis, keepdims=keepdims))
    axes = _axes(axis, t.ndim)
    crd, val = entries(t)
    crd = crd[:, val != 0]
    shape = _kept_shape(t.shape, axes, True)
    kept = tuple(np.zeros_like(crd[d]) if d in axes else crd[d] for d in range(t.ndim))
    counts = np.bincount(np.ravel_multi_index(kept, shape), minlength=math.prod(shape)) if crd.shape[1] else \
        np.zeros(math.prod(shape), np.int64)
    return wrap(counts.astype(np.int64).reshape(_kept_shape(t.shape, axes, keepdims)))


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether any element along ``axis`` is nonzero."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.any(numpy_of(t), axis=axis, keepdims=keepdims))
    return wrap(np.asarray(numpy_of(count_nonzero(t, axis=axis, keepdims=keepdims))) > 0)


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element along ``axis`` is nonzero (of a sparse array: every one is stored, nonzero)."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.all(numpy_of(t), axis=axis, keepdims=keepdims))
    n = math.prod(t.shape[d] for d in _axes(axis, t.ndim))
    return wrap(np.asarray(numpy_of(count_nonzero(t, axis=axis, keepdims=keepdims))) == n)



def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Tensor:
    """Running sums along ``axis`` (dense-format arrays: a running sum fills in every entry after a nonzero)."""
    arr = dense_only("cumulative_sum", x, "a running sum stores every entry after the first nonzero")
    return wrap(np.cumulative_sum(arr, axis=axis, dtype=dtype, include_initial=include_initial))


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Tensor:
    """Running products along ``axis`` (dense-format arrays)."""
    arr = dense_only("cumulative_prod", x, "a running product is not a sparse pattern of the input")
    return wrap(np.cumulative_prod(arr, axis=axis, dtype=dtype, include_initial=include_initial))


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Tensor:
    """The ``n``-th forward difference along ``axis`` (dense-format arrays)."""
    arr = dense_only("diff", x, "differences of neighbours are nonzero around every stored entry")
    kw = {k: np.asarray(numpy_of(as_tensor(v))) for k, v in (("prepend", prepend), ("append", append))
          if v is not None}
    return wrap(np.diff(arr, n=n, axis=axis, **kw))

