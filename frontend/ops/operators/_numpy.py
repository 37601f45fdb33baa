"""``Tensor.__array_ufunc__`` and ``Tensor.__array_function__``: NumPy's ufuncs and functions on Tensors.

Ufuncs with a kernel (``np.add``, ``np.subtract``, ``np.multiply``, ``np.matmul``, ``np.negative``,
``np.absolute``, ``np.power``) run the operators of :mod:`._arithmetic`; every other elementwise ufunc with one
output runs on the stored values (:mod:`._values`) when it keeps zero at zero and raises (or densifies under
the opt-in) when it does not. ``reduce`` of add/multiply/maximum/minimum is sum/prod/max/min. Array functions
listed in :data:`FUNCTIONS` run here; others return ``NotImplemented`` (NumPy then raises its ``TypeError``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.storage._convert import coordinates
from frontend.tensor._indexing import family_format, sparse_format
from frontend.tensor._operators import AUTO_DENSIFY, auto_densify
from frontend.tensor._tensor import Tensor

from .._api import einsum as _einsum
from .._operands import operand
from . import _arithmetic as ar
from ._values import aligned, binary, build, classify, dense, densified, is_scalar, unary

_KERNEL_UFUNCS: dict[Any, Callable[..., Any]] = {
    np.add: ar.add, np.subtract: ar.subtract, np.multiply: ar.multiply, np.matmul: ar.matmul,
    np.negative: ar.negative, np.positive: ar.positive, np.absolute: ar.absolute, np.power: ar.power,
}
_REDUCTIONS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}


def _unsupported(what: str) -> TypeError:
    return TypeError(f"{what} is not supported on a sparse Tensor; densify explicitly with A.todense() "
                     f"(or set {AUTO_DENSIFY}=1 to let NumPy densify it)")


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.method(*inputs, **kwargs)`` with a Tensor among the inputs."""
    out = kwargs.pop("out", None)
    if out is not None and any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
        raise TypeError(f"np.{ufunc.__name__}: out= is not supported with Tensors (results are new tensors)")
    if method == "__call__":
        if kwargs:
            raise TypeError(f"np.{ufunc.__name__}: the keywords {sorted(kwargs)} are not supported with Tensors")
        return _call(ufunc, inputs)
    if method == "reduce" and ufunc in _REDUCTIONS and len(inputs) == 1 and isinstance(inputs[0], Tensor):
        axis = kwargs.pop("axis", 0)
        extra = {k: v for k, v in kwargs.items() if not (k == "keepdims" and v is False)
                 and not (k == "dtype" and v is None)}
        if set(extra) - {"keepdims", "dtype"}:
            raise TypeError(f"np.{ufunc.__name__}.reduce: the keywords {sorted(extra)} are not supported")
        return getattr(inputs[0], _REDUCTIONS[ufunc])(axis=axis, **extra)
    if auto_densify():
        return getattr(ufunc, method)(*(dense(x) for x in inputs), **kwargs)
    raise _unsupported(f"np.{ufunc.__name__}.{method}")


def _call(ufunc: Any, inputs: tuple) -> Any:
    fn = _KERNEL_UFUNCS.get(ufunc)
    if fn is not None:
        return fn(*inputs)
    if ufunc.nout != 1 or ufunc.nin not in (1, 2):
        if auto_densify():
            return ufunc(*(dense(x) for x in inputs))
        raise _unsupported(f"np.{ufunc.__name__} ({ufunc.nin} inputs, {ufunc.nout} outputs)")
    if ufunc.nin == 2:
        return binary(ufunc, *inputs)
    kind, t = classify(inputs[0])
    return unary(ufunc, t) if kind == "sparse" else Tensor.from_dense(ufunc(t))


# ----- array functions ----------------------------------------------------------------------------------------
def array_function(func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    impl = FUNCTIONS.get(func)
    if impl is None:
        return NotImplemented
    return impl(*args, **kwargs)


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else operand(x, "operand")


def dot(a: Any, b: Any, out: Any = None) -> Any:
    if out is not None:
        raise TypeError("np.dot: out= is not supported with Tensors")
    if is_scalar(a) or is_scalar(b):
        return ar.multiply(a, b)
    if max(np.ndim(x) if not isinstance(x, Tensor) else x.ndim for x in (a, b)) > 2:
        return densified("np.dot of arrays above 2-D (use np.matmul or np.einsum)", np.dot, a, b)
    return ar.matmul(a, b)


def einsum(subscripts: Any, *operands: Any, **kwargs: Any) -> Any:
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"np.einsum: the keywords {sorted(kwargs)} are not supported with Tensors")
    if not isinstance(subscripts, str):
        raise TypeError("np.einsum with Tensors takes a subscripts string ('ij,jk->ik')")
    spec = subscripts.replace(" ", "")
    if "->" not in spec:  # NumPy's implicit output: the letters seen once, in order
        letters = spec.replace(",", "")
        spec += "->" + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return _einsum(spec, *operands)


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    ta, tb = _tensor(a), _tensor(b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(ta.ndim - int(axes), ta.ndim)), list(range(int(axes)))
    else:
        ax_a, ax_b = ([int(x)] if isinstance(x, (int, np.integer)) else [int(y) for y in x] for x in axes)
    ax_a = [x % ta.ndim for x in ax_a]
    ax_b = [x % tb.ndim for x in ax_b]
    if len(ax_a) != len(ax_b):
        raise ValueError("np.tensordot: the two axes lists differ in length")
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(ta.ndim)]
    sb = [next(letters) for _ in range(tb.ndim)]
    for x, y in zip(ax_a, ax_b):
        sb[y] = sa[x]
    out = [c for k, c in enumerate(sa) if k not in ax_a] + [c for k, c in enumerate(sb) if k not in ax_b]
    return _einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", ta, tb)


def transpose(a: Any, axes: Any = None) -> Any:
    return _tensor(a).transpose(axes)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """``np.where(cond, x, 0)``: ``x`` on the stored entries of ``cond`` that are true (a sparse result);
    ``np.where(cond)``: the coordinates of its nonzero entries. Other ``y`` make a dense result."""
    c = _tensor(condition)
    if x is None and y is None:
        d = c.convert(drop_zeros=True) if c.is_sparse else Tensor.from_dense(c.to_dense(), "COO" if c.ndim == 2
                                                                            else sparse_format(max(c.ndim, 1)))
        dims, _ = coordinates(d)
        order = np.lexsort(dims[::-1]) if len(dims) else np.zeros(0, np.int64)
        return tuple(np.asarray(r[order]) for r in dims)
    if x is None or y is None:
        raise ValueError("np.where takes either the condition alone or the condition, x and y")
    if not (is_scalar(y) and y == 0) or not c.is_sparse:
        return densified("np.where with a nonzero y (or a dense condition) gives a dense result", np.where,
                         condition, x, y)
    mask = c != 0
    if is_scalar(x):
        return mask._with_values(np.where(np.asarray(mask.val), x, np.zeros((), np.result_type(x))))
    dtype = np.result_type(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype, np.asarray(y))
    return ar.multiply(mask.astype(dtype), x)


def _joined(arrays: Sequence[Any], axis: int, stack: bool) -> Any:
    ts = [_tensor(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to concatenate")
    nd = ts[0].ndim + (1 if stack else 0)
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = int(axis) % nd
    base = ts[0].shape
    if any(t.shape != base if stack else (t.ndim != len(base) or t.shape[:axis] + t.shape[axis + 1:]
                                          != base[:axis] + base[axis + 1:]) for t in ts):
        raise ValueError(f"all the input array dimensions except for the concatenation axis must match, got "
                         f"{[t.shape for t in ts]}")
    dims_all: list[list[np.ndarray]] = [[] for _ in range(nd)]
    vals, offset = [], 0
    for t in ts:
        dims, v = coordinates(t)
        d = list(dims)
        if stack:
            d.insert(axis, np.full(len(v), offset, dtype=np.int64))
            offset += 1
        else:
            d[axis] = d[axis] + offset
            offset += t.shape[axis]
        for k in range(nd):
            dims_all[k].append(d[k])
        vals.append(v)
    shape = list(base)
    if stack:
        shape.insert(axis, len(ts))
    else:
        shape[axis] = offset
    dtype = np.result_type(*(t.dtype for t in ts))
    formats = {t.tensor_format for t in ts}
    fmt = family_format(ts[0].tensor_format, nd) if len(formats) == 1 else sparse_format(nd)
    if ts[0].tensor_format.is_dense and len(formats) == 1 and not stack:
        fmt = ts[0].tensor_format
    return build(fmt, tuple(shape), [np.concatenate(d) for d in dims_all],
                 np.concatenate([v.astype(dtype, copy=False) for v in vals]), ts[0].index_type)


def concatenate(arrays: Sequence[Any], axis: int | None = 0, **kwargs: Any) -> Any:
    if axis is None or kwargs:
        raise TypeError("np.concatenate with Tensors takes the arrays and an integer axis only")
    return _joined(arrays, axis, False)


def stack(arrays: Sequence[Any], axis: int = 0, **kwargs: Any) -> Any:
    if kwargs:
        raise TypeError("np.stack with Tensors takes the arrays and an axis only")
    return _joined(arrays, axis, True)


def _close(a: Any, b: Any, rtol: float, atol: float, equal_nan: bool, exact: bool) -> bool:
    (ka, va), (kb, vb) = classify(a), classify(b)
    if ka == kb == "sparse":
        if va.shape != vb.shape:
            return False if exact else bool(np.allclose(va.to_dense(), vb.to_dense()))
        _, xa, xb = aligned(va, vb)
        if exact:
            return bool(np.array_equal(xa, xb, equal_nan=equal_nan))
        return bool(np.allclose(xa, xb, rtol=rtol, atol=atol, equal_nan=equal_nan))
    da, db = dense(a), dense(b)
    if exact:
        return bool(np.shape(da) == np.shape(db) and np.array_equal(da, db, equal_nan=equal_nan))
    return bool(np.allclose(da, db, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Compares over the union of the stored entries (a dense operand densifies the other)."""
    return _close(a, b, rtol, atol, equal_nan, exact=False)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    return _close(a1, a2, 0.0, 0.0, equal_nan, exact=True)


def _size(a: Any, axis: int | None = None) -> int:
    t = _tensor(a)
    return t.size if axis is None else t.shape[axis]


def _method(name: str, params: tuple[str, ...]) -> Callable[..., Any]:
    """``np.<name>(a, *args, **kwargs)`` as ``Tensor.<name>``, the positional arguments after ``a`` named
    ``params`` in NumPy's order; keywords NumPy has and the method lacks raise ``TypeError``."""
    def call(a: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(zip(params, args))
        extra = sorted(k for k, v in kwargs.items() if k not in params and v is not np._NoValue)
        if extra:
            raise TypeError(f"np.{name}: the keywords {extra} are not supported with Tensors")
        given = {k: v for k, v in kwargs.items() if v is not np._NoValue}
        return getattr(_tensor(a), name)(**given)
    return call


def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """NumPy's ``count_nonzero``: an int without ``axis``, else an int array."""
    got = _tensor(a).__array_namespace__().count_nonzero(_tensor(a), axis=axis, keepdims=keepdims)
    got = np.asarray(got.todense() if isinstance(got, Tensor) else got)
    return int(got) if axis is None and not keepdims else got


def reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: bool | None = None) -> Any:
    if order != "C":
        raise TypeError("np.reshape: only order='C' is supported with Tensors")
    return _tensor(a).reshape(shape if shape is not None else newshape, copy=copy)


_WITH_DTYPE = ("axis", "dtype", "out", "keepdims")  # NumPy's order of sum/prod/mean's arguments after ``a``
_WITHOUT_DTYPE = ("axis", "out", "keepdims")  # ... of max/min/any/all's

FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _method("sum", _WITH_DTYPE), np.prod: _method("prod", _WITH_DTYPE), np.mean: _method("mean", _WITH_DTYPE),
    np.max: _method("max", _WITHOUT_DTYPE), np.min: _method("min", _WITHOUT_DTYPE),
    np.dot: dot, np.einsum: einsum, np.tensordot: tensordot, np.transpose: transpose, np.where: where,
    np.concatenate: concatenate, np.stack: stack, np.allclose: allclose, np.array_equal: array_equal,
    np.shape: lambda a: tuple(_tensor(a).shape), np.ndim: lambda a: _tensor(a).ndim, np.size: _size,
    np.copy: lambda a, **kw: _tensor(a).copy(), np.conjugate: lambda a: _tensor(a).conj(),
    np.std: _method("std", ("axis", "dtype", "out", "ddof", "keepdims")),
    np.var: _method("var", ("axis", "dtype", "out", "ddof", "keepdims")),
    np.any: _method("any", _WITHOUT_DTYPE), np.all: _method("all", _WITHOUT_DTYPE),
    np.nonzero: lambda a: _tensor(a).nonzero(), np.round: _method("round", ("decimals", "out")),
    np.around: _method("round", ("decimals", "out")), np.clip: _method("clip", ("min", "max", "out")),
    np.reshape: reshape, np.ravel: lambda a, order="C": _tensor(a).ravel() if order == "C" else reshape(a, -1, order),
    np.diagonal: lambda a, offset=0: _tensor(a).diagonal(offset), np.count_nonzero: count_nonzero,
}
