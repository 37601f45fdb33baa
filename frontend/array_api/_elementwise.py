"""The standard's elementwise functions.

Dense-format operands compute with NumPy (the standard's semantics). With a sparse operand:

- ``add``, ``subtract``, ``multiply`` run on :mod:`frontend.ops` (union / intersection of the patterns; a
  dense operand gives a dense result, as there; ``x + s`` with a scalar ``s`` only for ``s == 0``);
- every other function runs on the stored values (:mod:`frontend.ops.operators._values`, as ``Tensor``'s
  operators and ufuncs do) where it keeps zero at zero: a unary ``f`` with ``f(0) == 0`` (``abs``, ``sqrt``,
  ``sin``, ``round``, ``isnan``, ...), a scalar ``s`` with ``f(0, s) == 0`` (``x / 2``, ``x ** 2``,
  ``maximum(x, -1)``, ``x < 0``), another sparse operand with ``f(0, 0) == 0`` (the union of the patterns:
  ``maximum``, ``logical_or``, ``less``), a dense one that gives zero wherever ``x`` stores nothing.
  Sparse operands are broadcast first (their entries repeated).

Otherwise (``exp``, ``cos``, ``x + 1``, ``equal(x, y)``, ``logical_not``) the result would not be zero where
the operand stores nothing: a ``ValueError`` names the dense alternatives (``x.todense()``, or the
``UST_MLIR_AUTO_DENSIFY=1`` opt-in, under which the result is computed densely).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from frontend import ops
from frontend.ops._operands import ELEMS
from frontend.ops.operators import _values as values
from frontend.tensor._tensor import Tensor

from ._arrays import as_tensor, broadcast_sparse, dense_of, is_sparse, numpy_of, wrap

_PYTHON_SCALARS = (bool, int, float, complex)
_ON_OPS: dict[str, Callable[..., Any]] = {"add": ops.add, "subtract": ops.subtract, "multiply": ops.multiply}


def _operand(x: Any) -> Any:
    """A Python scalar as it is (weakly typed), anything else as a Tensor."""
    return x if isinstance(x, _PYTHON_SCALARS) else as_tensor(x)


def _scalar_or_tensor(x: Any) -> Any:
    """A 0-d dense Tensor as a 0-d NumPy array (a scalar operand); other operands as they are."""
    if isinstance(x, Tensor) and not x.is_sparse and x.ndim == 0:
        return np.asarray(numpy_of(x))
    return x


def _tensor(result: Any) -> Tensor:
    """An operation's result (a Tensor, or NumPy under the densify opt-in) as a Tensor."""
    return result if isinstance(result, Tensor) else wrap(result)


def _shape(x: Any) -> tuple[int, ...]:
    return () if isinstance(x, _PYTHON_SCALARS) else tuple(x.shape)


def _dtype(x: Any) -> Any:
    return x if isinstance(x, _PYTHON_SCALARS) else np.dtype(x.dtype)


# ----- unary ---------------------------------------------------------------------------------------------------
def unary(fn: Callable[..., Any], x: Any, **kwargs: Any) -> Tensor:
    """``fn`` (a NumPy function) of every element of ``x``; of a sparse ``x``'s stored values when
    ``fn(0) == 0``."""
    t = as_tensor(x)
    if not t.is_sparse:
        return wrap(fn(numpy_of(t), **kwargs))
    return _tensor(values.unary(fn, t, **kwargs))


def _unary_function(name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Tensor]:
    def function(x: Any, /) -> Tensor:
        return unary(fn, x)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of each element (NumPy's ``{fn.__name__}``); sparse when {name}(0) is 0."
    return function


# ----- binary --------------------------------------------------------------------------------------------------
def on_ops(op: Callable[..., Any], a: Any, b: Any) -> Tensor:
    """``op`` of :mod:`frontend.ops` on ``a`` and ``b`` in their result dtype; dtypes the kernels lack
    (small and unsigned integers, bool) compute in int64 and are cast back (the same wrapped result)."""
    want = np.result_type(_dtype(a), _dtype(b))
    compute = want if want in ELEMS or want.kind in "fc" else np.dtype(np.int64)
    args = [x if isinstance(x, _PYTHON_SCALARS) or np.dtype(x.dtype) == compute else x.astype(compute)
            for x in (a, b)]
    out = _tensor(op(*args))
    return out if np.dtype(out.dtype) == want else out.astype(want)


def binary(name: str, fn: Callable[[Any, Any], Any], x1: Any, x2: Any) -> Tensor:
    """``fn`` (a NumPy function) of the broadcast elements of ``x1`` and ``x2`` (see the module docstring for
    what a sparse operand gives)."""
    a, b = _operand(x1), _operand(x2)
    if not (is_sparse(a) or is_sparse(b)):
        return wrap(fn(numpy_of(a), numpy_of(b)))
    try:
        shape = tuple(np.broadcast_shapes(_shape(a), _shape(b)))
    except ValueError:
        raise ValueError(f"{name}: operands of shapes {_shape(a)} and {_shape(b)} do not broadcast") from None
    a, b = (broadcast_sparse(v, shape) if is_sparse(v) else _scalar_or_tensor(v) for v in (a, b))
    op = _ON_OPS.get(name)
    if op is not None and not (name != "multiply" and (values.is_scalar(a) or values.is_scalar(b))):
        return on_ops(op, a, b)
    return _tensor(values.binary(fn, a, b))


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

    clipped.__name__ = "clip"
    if t.is_sparse and not all(v is None or np.ndim(v) == 0 for v in (lo, hi)):
        return _tensor(values.densified("clip of a sparse array by array bounds may be nonzero where it stores "
                                        "nothing", clipped, t))
    return unary(clipped, t)
