"""The standard's elementwise functions.

Dense-format operands compute with NumPy (the standard's semantics). With a sparse operand a function runs
where its result is sparse again:

- ``add``, ``subtract``, ``multiply`` run on :mod:`frontend.ops` (union / intersection of the patterns;
  a dense operand gives a dense result, as there);
- a unary function ``f`` with ``f(0) == 0`` (``abs``, ``negative``, ``sqrt``, ``sin``, ``tanh``, ``round``,
  ``isnan``, ...) maps the stored values; index buffers are shared;
- a binary function with a scalar maps the stored values when ``f(0, s) == 0`` (``x / 2``, ``x ** 2``,
  ``maximum(x, -1)``, ``x < 0``); two sparse operands give a sparse result on the union of their patterns
  when ``f(0, 0) == 0`` (``maximum``, ``logical_or``, ``less``, ``bitwise_xor``); with a dense array the
  result is sparse when ``f(0, y) == 0`` for its every value ``y``, else dense.

Otherwise (``exp``, ``cos``, ``x + 1``, ``equal(x, y)``, ``logical_not``) the result would not be zero where
the operand stores nothing: a ``ValueError`` names the dense alternative.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from frontend import ops
from frontend.ops._operands import ELEMS
from frontend.tensor._tensor import Tensor

from ._arrays import (
    aligned,
    as_tensor,
    broadcast_sparse,
    build_keys,
    dense_of,
    fill_error,
    gathered,
    is_sparse,
    numpy_of,
    sparse_result_format,
    with_values,
    wrap,
)

_PYTHON_SCALARS = (bool, int, float, complex)
_ON_OPS: dict[str, Callable[..., Any]] = {"add": ops.add, "subtract": ops.subtract, "multiply": ops.multiply}


def _operand(x: Any) -> Any:
    """A Python scalar as it is (weakly typed), anything else as a Tensor."""
    return x if isinstance(x, _PYTHON_SCALARS) else as_tensor(x)


def _scalar(x: Any) -> Any:
    """``x`` as a scalar when it is a Python scalar or a 0-d dense array, else None."""
    if isinstance(x, _PYTHON_SCALARS):
        return x
    if not x.is_sparse and x.ndim == 0:
        return np.asarray(numpy_of(x))
    return None


def _zero(x: Any) -> Any:
    return np.zeros((), dtype=x.dtype)


def _all_zero(v: Any) -> bool:
    with np.errstate(all="ignore"):
        return bool(np.all(np.asarray(v) == 0))


def _shown(v: Any) -> str:
    """A computed scalar as Python writes it (``1.0``, ``True``)."""
    arr = np.asarray(v)
    return repr(arr.item()) if arr.size == 1 else repr(arr)


def _shape(x: Any) -> tuple[int, ...]:
    return () if isinstance(x, _PYTHON_SCALARS) else tuple(x.shape)


def _dtype(x: Any) -> Any:
    return x if isinstance(x, _PYTHON_SCALARS) else np.dtype(x.dtype)


# ----- unary ---------------------------------------------------------------------------------------------------
def unary(name: str, fn: Callable[[Any], Any], x: Any) -> Tensor:
    """``fn`` (a NumPy function) of every element of ``x``; on a sparse ``x`` of its stored values when
    ``fn(0) == 0``."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(fn(numpy_of(t)))
    zero = fn(_zero(t))
    if not _all_zero(zero):
        raise fill_error(name, f"{name}(0) is {_shown(zero)}")
    return with_values(t, fn(np.asarray(t.val)))


def _unary_function(name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Tensor]:
    def function(x: Any, /) -> Tensor:
        return unary(name, fn, x)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of each element (NumPy's ``{fn.__name__}``); sparse when {name}(0) is 0."
    return function


# ----- binary --------------------------------------------------------------------------------------------------
def on_ops(op: Callable[..., Any], a: Any, b: Any) -> Tensor:
    """``op`` of :mod:`frontend.ops` on ``a`` and ``b`` in their result dtype; dtypes the kernels lack
    (small and unsigned integers, bool) compute in int64 and are cast back (the same wrapped result)."""
    want = np.result_type(_dtype(a), _dtype(b))
    compute = want if want in ELEMS or want.kind in "fc" else np.dtype(np.int64)
    from ._dtypes import astype
    args = [x if isinstance(x, _PYTHON_SCALARS) or np.dtype(x.dtype) == compute else astype(x, compute)
            for x in (a, b)]
    out = op(*args)
    out = out if isinstance(out, Tensor) else wrap(out)
    return out if np.dtype(out.dtype) == want else astype(out, want)


def binary(name: str, fn: Callable[[Any, Any], Any], x1: Any, x2: Any) -> Tensor:
    """``fn`` (a NumPy function) of the broadcast elements of ``x1`` and ``x2`` (see the module docstring for
    when a sparse operand gives a sparse result)."""
    a, b = _operand(x1), _operand(x2)
    if not (is_sparse(a) or is_sparse(b)):
        return wrap(fn(numpy_of(a), numpy_of(b)))
    try:
        shape = tuple(np.broadcast_shapes(_shape(a), _shape(b)))
    except ValueError:
        raise ValueError(f"{name}: operands of shapes {_shape(a)} and {_shape(b)} do not broadcast") from None
    op = _ON_OPS.get(name)
    sa, sb = (None if is_sparse(x) else _scalar(x) for x in (a, b))
    if sa is not None or sb is not None:  # a sparse operand and a scalar
        sparse_first = sb is not None
        sp, s = (a, sb) if sparse_first else (b, sa)
        zero = fn(_zero(sp), s) if sparse_first else fn(s, _zero(sp))
        if not _all_zero(zero):
            shown = f"{name}(0, {_shown(s)})" if sparse_first else f"{name}({_shown(s)}, 0)"
            raise fill_error(name, f"{shown} is {_shown(zero)}")
        sp = broadcast_sparse(sp, shape)
        if op is not None:
            return on_ops(op, sp, s) if sparse_first else on_ops(op, s, sp)
        vals = np.asarray(sp.val)
        return with_values(sp, fn(vals, s) if sparse_first else fn(s, vals))
    if op is not None:
        return on_ops(op, a, b)
    if is_sparse(a) and is_sparse(b):
        zero = fn(_zero(a), _zero(b))
        if not _all_zero(zero):
            raise fill_error(name, f"{name}(0, 0) is {_shown(zero)}")
        keys, (va, vb) = aligned([a, b], shape)
        fmt = sparse_result_format([a.tensor_format, b.tensor_format], len(shape))
        return build_keys(shape, keys, fn(va, vb), fmt)
    sparse_first = is_sparse(a)
    sp, dense = (a, b) if sparse_first else (b, a)
    d = numpy_of(dense)
    if _all_zero(fn(_zero(sp), d) if sparse_first else fn(d, _zero(sp))):  # the result keeps sp's pattern
        keys, (vs,) = aligned([sp], shape)
        dv = gathered(dense, keys, shape)
        vals = fn(vs, dv) if sparse_first else fn(dv, vs)
        return build_keys(shape, keys, vals, sparse_result_format([sp.tensor_format], len(shape)))
    return wrap(fn(dense_of(a), dense_of(b)))  # a dense result, as a sparse + dense sum is


def _binary_function(name: str, fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Tensor]:
    def function(x1: Any, x2: Any, /) -> Tensor:
        return binary(name, fn, x1, x2)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of the broadcast elements (NumPy's ``{fn.__name__}``)."
    return function


UNARY_NAMES = ("abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "conj", "cos",
               "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log", "log1p", "log2",
               "log10", "logical_not", "negative", "positive", "real", "reciprocal", "round", "sign", "signbit",
               "sin", "sinh", "square", "sqrt", "tan", "tanh", "trunc")
BINARY_NAMES = ("add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
                "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot",
                "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum",
                "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract")

#: The generated functions by name (``frontend.array_api`` exports each).
FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    **{name: _unary_function(name, getattr(np, name)) for name in UNARY_NAMES},
    **{name: _binary_function(name, getattr(np, name)) for name in BINARY_NAMES},
}


def clip(x: Any, /, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - the standard's names
    """``x`` limited to ``[min, max]`` (scalars or arrays), in ``x``'s dtype; sparse when clipping keeps 0
    at 0 (scalar bounds)."""
    t = as_tensor(x)
    dtype = np.dtype(t.dtype)
    lo: Any
    hi: Any
    lo, hi = (None if v is None else v if isinstance(v, _PYTHON_SCALARS) else dense_of(as_tensor(v))
              for v in (min, max))

    def clipped(v: Any) -> Any:
        out = np.asarray(v)
        if lo is not None:
            out = np.where(out < lo, np.asarray(lo).astype(dtype), out)
        if hi is not None:
            out = np.where(out > hi, np.asarray(hi).astype(dtype), out)
        return np.broadcast_to(out, np.broadcast_shapes(np.shape(v), np.shape(lo), np.shape(hi))).astype(dtype)

    if not t.is_sparse:
        return wrap(clipped(numpy_of(t)))
    if not all(v is None or np.ndim(v) == 0 for v in (lo, hi)):
        return wrap(clipped(t.to_dense()))
    zero = clipped(_zero(t))
    if not _all_zero(zero):
        raise fill_error("clip", f"clip(0, {min!r}, {max!r}) is {_shown(zero)}")
    return with_values(t, clipped(np.asarray(t.val)))
