"""Manipulation: ``permute_dims`` (a view of a sparse Tensor's buffers), and ``reshape``, ``expand_dims``,
``squeeze``, ``broadcast_to``, ``concat``, ``stack``, ``flip``, ``roll``, ``repeat``, ``tile``, ``unstack``
which move a sparse array's stored entries (no zero is ever stored). Dense-format arrays use NumPy."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.tensor._tensor import Tensor

from ._arrays import (
    as_tensor,
    broadcast_sparse,
    build,
    build_keys,
    canonical,
    entries,
    numpy_of,
    sparse_result_format,
    wrap,
)


def _axis(axis: int, ndim: int, name: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of range for {ndim} dimensions")
    return int(axis) % ndim


def permute_dims(x: Any, /, axes: Sequence[int]) -> Tensor:
    """``x`` with its axes reordered (``axes[d]`` is the old axis of new axis ``d``); a sparse Tensor is
    viewed, not copied."""
    t = as_tensor(x)
    axes = tuple(int(a) % t.ndim if t.ndim else int(a) for a in axes)
    if sorted(axes) != list(range(t.ndim)):
        raise ValueError(f"permute_dims: {axes} is not a permutation of the {t.ndim} axes")
    if not t.is_sparse:
        return wrap(np.transpose(numpy_of(t), axes))
    return t.transpose(axes)


def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int], /) -> Tensor:
    """Axes ``source`` moved to ``destination`` (others keep their order)."""
    t = as_tensor(x)
    src = [_axis(s, t.ndim, "moveaxis") for s in np.atleast_1d(source)]
    dst = [_axis(d, t.ndim, "moveaxis") for d in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need as many axes")
    rest = [d for d in range(t.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        rest.insert(d, s)
    return permute_dims(t, rest)


def _new_shape(shape: Sequence[int], size: int) -> tuple[int, ...]:
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise ValueError("reshape: only one dimension may be -1")
    if -1 in shape:
        rest = math.prod(s for s in shape if s != -1)
        if rest == 0 or size % rest:
            raise ValueError(f"reshape: cannot reshape {size} elements into {tuple(shape)}")
        shape[shape.index(-1)] = size // rest
    if math.prod(shape) != size:
        raise ValueError(f"reshape: cannot reshape {size} elements into {tuple(shape)}")
    return tuple(shape)


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
    """``x`` with a new shape (C order). A sparse array's entries get new coordinates (a copy, so
    ``copy=False`` is refused)."""
    t = as_tensor(x)
    new = _new_shape(shape, math.prod(t.shape))
    if not t.is_sparse:
        arr = numpy_of(t)
        out = np.reshape(arr, new, copy=copy)
        return wrap(out.copy() if copy and np.shares_memory(out, arr) else out)
    if copy is False and new != t.shape:
        raise ValueError("reshape(copy=False): a sparse array is reshaped by a copy of its entries")
    if new == t.shape:
        return t.clone() if copy else t
    keys, val = canonical(t)
    return build_keys(new, keys, val, sparse_result_format([t.tensor_format], len(new)))


def expand_dims(x: Any, /, axis: int = 0) -> Tensor:
    """``x`` with a new axis of size 1 at ``axis``."""
    t = as_tensor(x)
    ax = _axis(axis, t.ndim + 1, "expand_dims")
    return reshape(t, t.shape[:ax] + (1,) + t.shape[ax:])


def squeeze(x: Any, /, axis: int | tuple[int, ...]) -> Tensor:
    """``x`` without the size-1 axes ``axis``."""
    t = as_tensor(x)
    axes = {_axis(a, t.ndim, "squeeze") for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis)}
    if any(t.shape[a] != 1 for a in axes):
        raise ValueError(f"squeeze: axes {sorted(axes)} of shape {t.shape} are not all of size 1")
    return reshape(t, tuple(n for d, n in enumerate(t.shape) if d not in axes))


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape``; a sparse array repeats its entries."""
    t = as_tensor(x)
    shape = tuple(int(s) for s in shape)
    if not t.is_sparse:
        return wrap(np.broadcast_to(numpy_of(t), shape))
    return broadcast_sparse(t, shape)


def broadcast_arrays(*arrays: Any) -> list[Tensor]:
    """The arrays broadcast to their common shape."""
    tensors = [as_tensor(a) for a in arrays]
    shape = tuple(np.broadcast_shapes(*(t.shape for t in tensors)))
    return [broadcast_to(t, shape) for t in tensors]


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along ``axis`` (None: flattened). With a sparse one the result is sparse (the dense
    ones' nonzeros join its entries)."""
    tensors = [as_tensor(a) for a in arrays]
    if not tensors:
        raise ValueError("concat needs at least one array")
    if not any(t.is_sparse for t in tensors):
        return wrap(np.concatenate([numpy_of(t) for t in tensors], axis=axis))
    if axis is None:
        tensors = [reshape(t, (-1,)) for t in tensors]
        axis = 0
    ndim = tensors[0].ndim
    if ndim == 0 or any(t.ndim != ndim for t in tensors):
        raise ValueError(f"concat: arrays of shapes {[t.shape for t in tensors]} need one number of dimensions")
    ax = _axis(axis, ndim, "concat")
    rest = [t.shape[:ax] + t.shape[ax + 1:] for t in tensors]
    if any(r != rest[0] for r in rest):
        raise ValueError(f"concat: shapes {[t.shape for t in tensors]} differ outside axis {axis}")
    dtype = np.result_type(*(np.dtype(t.dtype) for t in tensors))
    crds, vals, offset = [], [], 0
    for t in tensors:
        crd, val = entries(t) if t.is_sparse else entries(t.convert(drop_zeros=True))
        crd = crd.copy()
        crd[ax] += offset
        crds.append(crd)
        vals.append(val.astype(dtype))
        offset += t.shape[ax]
    shape = tensors[0].shape[:ax] + (offset,) + tensors[0].shape[ax + 1:]
    fmt = sparse_result_format([t.tensor_format for t in tensors if t.is_sparse], ndim)
    return build(shape, np.concatenate(crds, axis=1), np.concatenate(vals), fmt)


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Tensor:
    """The arrays (of one shape) joined along a new axis."""
    tensors = [as_tensor(a) for a in arrays]
    if not tensors:
        raise ValueError("stack needs at least one array")
    if any(t.shape != tensors[0].shape for t in tensors):
        raise ValueError(f"stack: arrays of shapes {[t.shape for t in tensors]} need one shape")
    if not any(t.is_sparse for t in tensors):
        return wrap(np.stack([numpy_of(t) for t in tensors], axis=axis))
    ax = _axis(axis, tensors[0].ndim + 1, "stack")
    return concat([expand_dims(t, axis=ax) for t in tensors], axis=ax)


def _moved(name: str, x: Any, axis: Any) -> tuple[Tensor, tuple[int, ...]]:
    t = as_tensor(x)
    axes = range(t.ndim) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else axis
    return t, tuple(sorted({_axis(int(a), t.ndim, name) for a in axes}))


def flip(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Tensor:
    """``x`` reversed along ``axis`` (None: every axis)."""
    t, axes = _moved("flip", x, axis)
    if not t.is_sparse:
        return wrap(np.flip(numpy_of(t), axis=axis))
    crd, val = entries(t)
    crd = crd.copy()
    for d in axes:
        crd[d] = t.shape[d] - 1 - crd[d]
    return build(t.shape, crd, val, sparse_result_format([t.tensor_format], t.ndim))


def roll(x: Any, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Tensor:
    """``x`` rolled by ``shift`` along ``axis`` (None: the flattened array)."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.roll(numpy_of(t), shift, axis=axis))
    fmt = sparse_result_format([t.tensor_format], t.ndim)
    if axis is None:
        size = math.prod(t.shape)
        keys, val = canonical(t)
        total = int(np.sum(shift))
        return build_keys(t.shape, (keys + total) % size if size else keys, val, fmt)
    shifts = np.broadcast_to(np.atleast_1d(shift), np.broadcast_shapes(np.shape(np.atleast_1d(shift)),
                                                                      np.shape(np.atleast_1d(axis))))
    axes = np.broadcast_to(np.atleast_1d(axis), shifts.shape)
    crd, val = entries(t)
    crd = crd.copy()
    for s, a in zip(shifts.tolist(), axes.tolist()):
        d = _axis(a, t.ndim, "roll")
        crd[d] = (crd[d] + s) % t.shape[d] if t.shape[d] else crd[d]
    return build(t.shape, crd, val, fmt)


def repeat(x: Any, repeats: int | Any, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times (an int or one count per element along ``axis``; None: the
    flattened array)."""
    t = as_tensor(x)
    reps = repeats if isinstance(repeats, (int, np.integer)) else np.asarray(numpy_of(as_tensor(repeats)))
    if not t.is_sparse:
        return wrap(np.repeat(numpy_of(t), reps, axis=axis))
    if axis is None:
        t, axis = reshape(t, (-1,)), 0
    ax = _axis(axis, t.ndim, "repeat")
    counts = np.broadcast_to(np.asarray(reps, dtype=np.int64), (t.shape[ax],))
    if np.any(counts < 0):
        raise ValueError("repeat: repeats must not be negative")
    starts = np.cumsum(counts) - counts
    crd, val = entries(t)
    per = counts[crd[ax]]
    crd = np.repeat(crd, per, axis=1)
    val = np.repeat(val, per)
    first = np.repeat(np.cumsum(per) - per, per)
    crd[ax] = starts[crd[ax]] + np.arange(len(val)) - first
    shape = t.shape[:ax] + (int(counts.sum()),) + t.shape[ax + 1:]
    return build(shape, crd, val, sparse_result_format([t.tensor_format], t.ndim))


def tile(x: Any, repetitions: tuple[int, ...], /) -> Tensor:
    """``x`` repeated ``repetitions[d]`` times along each axis ``d``."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(np.tile(numpy_of(t), repetitions))
    reps = (1,) * (t.ndim - len(repetitions)) + tuple(int(r) for r in repetitions)
    t = reshape(t, (1,) * (len(reps) - t.ndim) + t.shape)
    crd, val = entries(t)
    for d, r in enumerate(reps):
        n = crd.shape[1]
        crd = np.tile(crd, (1, r))
        crd[d] += np.repeat(np.arange(r) * t.shape[d], n)
        val = np.tile(val, r)
    shape = tuple(n * r for n, r in zip(t.shape, reps))
    return build(shape, crd, val, sparse_result_format([t.tensor_format], len(shape)))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``."""
    t = as_tensor(x)
    if not t.is_sparse:
        return tuple(wrap(a) for a in np.unstack(numpy_of(t), axis=axis))
    ax = _axis(axis, t.ndim, "unstack")
    crd, val = entries(t)
    shape = t.shape[:ax] + t.shape[ax + 1:]
    fmt = sparse_result_format([t.tensor_format], len(shape))
    rest = np.delete(crd, ax, axis=0)
    return tuple(build(shape, rest[:, crd[ax] == i], val[crd[ax] == i], fmt) for i in range(t.shape[ax]))


__all__ = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
           "reshape", "roll", "squeeze", "stack", "tile", "unstack"]
