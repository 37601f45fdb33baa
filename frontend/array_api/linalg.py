"""The Array API ``linalg`` extension: the products and transposes (sparse operands run on
:mod:`frontend.ops`), norms and traces over stored entries, and the factorizations and solvers on dense-format
arrays only (NumPy over their buffers); a sparse operand of those raises ``TypeError`` naming the way out."""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.tensor._tensor import Tensor

from ._arrays import as_tensor, dense_only, entries, wrap
from ._linalg import matmul, matrix_transpose, tensordot, vecdot

_WHY = "it has no sparse form here (its result is dense); frontend.solve solves sparse systems"


def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two vectors (sparse ones stay sparse)."""
    a, b = as_tensor(x1), as_tensor(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer takes two 1-D arrays, got shapes {a.shape} and {b.shape}")
    return tensordot(a, b, axes=0)


def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of the last two axes (a dense-format array)."""
    t = as_tensor(x)
    if t.is_sparse:
        t = Tensor.from_dense(t.to_dense())
    return wrap(np.diagonal(np.asarray(t.val), offset=offset, axis1=-2, axis2=-1).copy())


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of the ``offset`` diagonal of the last two axes (NumPy's accumulator dtypes)."""
    t = as_tensor(x)
    if t.is_sparse and t.ndim == 2:
        (rows, cols), vals = entries(t)
        on = np.asarray(cols) - np.asarray(rows) == offset
        total = np.asarray(vals)[on].sum(dtype=dtype)
        return wrap(np.asarray(np.trace(np.zeros((1, 1), t.dtype), dtype=dtype).dtype.type(total)))
    arr = dense_only("trace", t, "a batched sparse trace") if t.is_sparse else np.asarray(t.val)
    return wrap(np.trace(arr, offset=offset, axis1=-2, axis2=-1, dtype=dtype))


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:  # noqa: A002
    """The vector norm; over every element of a sparse array its stored values (implicit zeros count for the
    negative orders and ``-inf``), along axes on dense-format arrays."""
    t = as_tensor(x)
    if not t.is_sparse or axis is not None:
        arr = dense_only("vector_norm along axes", t, _WHY) if t.is_sparse else np.asarray(t.val)
        return wrap(_norm(arr, axis, keepdims, ord))
    _, vals = entries(t)
    v = np.abs(np.asarray(vals))
    if v.size < int(np.prod(t.shape)):  # implicit zeros are elements too
        v = np.concatenate([v, np.zeros(1, v.dtype)])
    res = _norm(v, None, False, ord)
    return wrap(res.reshape((1,) * t.ndim) if keepdims else res)


def _norm(arr: np.ndarray, axis: Any, keepdims: bool, order: Any) -> np.ndarray:
    axes = tuple(range(arr.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    a = np.abs(arr)
    if order == np.inf:
        return np.asarray(a.max(axis=axes, keepdims=keepdims, initial=0))
    if order == -np.inf:
        return np.asarray(a.min(axis=axes, keepdims=keepdims))
    if order == 0:
        return np.asarray((a != 0).sum(axis=axes, keepdims=keepdims).astype(a.dtype))
    with np.errstate(divide="ignore"):
        return np.asarray((a ** order).sum(axis=axes, keepdims=keepdims) ** (1.0 / order))


def _dense(name: str, fn: Any) -> Any:
    def run(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        out = fn(dense_only(name, x, _WHY), *[dense_only(name, a, _WHY) if isinstance(a, Tensor) else a
                                              for a in args], **kwargs)
        if isinstance(out, tuple):
            return tuple(wrap(o) for o in out)
        return wrap(out)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"``{name}`` of a dense-format array (NumPy's ``linalg.{name}``); sparse operands are refused."
    return run


cholesky = _dense("cholesky", lambda a, upper=False: np.linalg.cholesky(a, upper=upper))
cross = _dense("cross", lambda a, b, axis=-1: np.cross(a, b, axis=axis))
det = _dense("det", np.linalg.det)
eigh = _dense("eigh", np.linalg.eigh)
eigvalsh = _dense("eigvalsh", np.linalg.eigvalsh)
inv = _dense("inv", np.linalg.inv)
matrix_norm = _dense("matrix_norm", lambda a, keepdims=False, ord="fro": np.linalg.matrix_norm(a, keepdims=keepdims,
                                                                                                ord=ord))
matrix_power = _dense("matrix_power", np.linalg.matrix_power)
matrix_rank = _dense("matrix_rank", lambda a, rtol=None: np.linalg.matrix_rank(a, rtol=rtol))
pinv = _dense("pinv", lambda a, rtol=None: np.linalg.pinv(a, rtol=rtol))
qr = _dense("qr", lambda a, mode="reduced": np.linalg.qr(a, mode=mode))
slogdet = _dense("slogdet", np.linalg.slogdet)
solve = _dense("solve", np.linalg.solve)
svd = _dense("svd", lambda a, full_matrices=True: np.linalg.svd(a, full_matrices=full_matrices))
svdvals = _dense("svdvals", np.linalg.svdvals)

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
           "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
           "trace", "vecdot", "vector_norm"]
