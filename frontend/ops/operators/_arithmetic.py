"""The functions behind ``Tensor``'s operators and reduction methods.

``@`` is :func:`frontend.matmul`; ``+ - *`` are :func:`frontend.add`/``subtract``/``multiply`` (a Tensor
operand is first cast to NumPy's result type with a scalar: ``int Tensor * 2.5`` is float64); unary ``-``,
``abs`` and ``**`` with a positive integer are :func:`frontend.apply` with a traced function; ``/``, ``//``,
``%``, other powers, comparisons and ``& | ^ ~`` are NumPy on the stored values (:mod:`._values`), with their pattern.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontend.tensor._tensor import Tensor
from lowering.scalar_fn import where

from .. import _elementwise as elementwise
from .._api import matmul as _matmul
from ._values import binary, is_scalar, unary

matmul = _matmul  # frontend.matmul itself: a scalar operand gets its TypeError

_SAME_KIND = {float: "fc", int: "iufc", complex: "c"}  # Python scalars that keep these value kinds (NumPy 2)


def _promoted(a: Any, b: Any) -> tuple[Any, Any]:
    """A Tensor operand cast to NumPy's result type with a scalar operand (NumPy's weak Python scalars)."""
    if type(a) is Tensor and a.dtype.kind in _SAME_KIND.get(type(b), ""):  # the common cases, no cast
        return a, b
    if type(b) is Tensor and b.dtype.kind in _SAME_KIND.get(type(a), ""):
        return a, b
    if isinstance(a, Tensor) and is_scalar(b):
        dtype = np.result_type(a.dtype, b)
        return (a if dtype == a.dtype else a.astype(dtype)), b
    if isinstance(b, Tensor) and is_scalar(a):
        dtype = np.result_type(b.dtype, a)
        return a, (b if dtype == b.dtype else b.astype(dtype))
    return a, b


def add(a: Any, b: Any) -> Any:
    return elementwise.add(*_promoted(a, b))


def subtract(a: Any, b: Any) -> Any:
    return elementwise.subtract(*_promoted(a, b))


def multiply(a: Any, b: Any) -> Any:
    return elementwise.multiply(*_promoted(a, b))


def divide(a: Any, b: Any) -> Any:
    return binary(np.true_divide, a, b)


def floor_divide(a: Any, b: Any) -> Any:
    return binary(np.floor_divide, a, b)


def remainder(a: Any, b: Any) -> Any:
    return binary(np.remainder, a, b)


def _power_fn(p: int) -> Any:
    """``v ** p`` for an integer ``p >= 1`` by repeated squaring (traceable)."""
    def power(v: Any) -> Any:
        result, base, n = None, v, p
        while n:
            if n & 1:
                result = base if result is None else result * base
            n >>= 1
            if n:
                base = base * base
        return result
    return power


def power(a: Any, b: Any) -> Any:
    if (isinstance(a, Tensor) and isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b >= 1
            and np.dtype(a.dtype).kind in "fic"):
        return elementwise.apply(a, _power_fn(int(b)))
    return binary(np.power, a, b)


def negative(a: Tensor) -> Any:
    if np.dtype(a.dtype).kind == "b":
        raise TypeError("the - operator is not supported on a boolean Tensor; use ~ (np.logical_not) instead")
    if np.dtype(a.dtype) in (np.float32, np.float64, np.int32, np.int64, np.complex64, np.complex128):
        return elementwise.apply(a, lambda v: -v)  # a compiled kernel
    return unary(np.negative, a)  # other integer widths: NumPy on the stored values (wrapping as NumPy's)


def positive(a: Tensor) -> Any:
    return a.copy()


def absolute(a: Tensor) -> Any:
    if np.dtype(a.dtype) in (np.float32, np.float64, np.int32, np.int64):
        return elementwise.apply(a, lambda v: where(v < 0, -v, v))
    return unary(np.absolute, a)  # complex (a real result), unsigned and boolean values


def invert(a: Tensor) -> Any:
    return unary(np.invert, a)  # ~x maps 0 to nonzero: refused unless densified (on the opt-in)


def comparison(ufunc: Any) -> Any:
    """The operator of a two-operand ufunc on stored values (comparisons, ``&``, ``|``, ``^``)."""
    def compare(a: Any, b: Any) -> Any:
        return binary(ufunc, a, b)
    compare.__name__ = ufunc.__name__
    return compare


def reduction(name: str) -> Any:
    """``Tensor.<name>(axis, **keywords)`` on :mod:`frontend.ops._elementwise`'s reduction of that name."""
    fn = getattr(elementwise, name)

    def reduce(a: Tensor, axis: Any = None, **keywords: Any) -> Any:
        return fn(a, axis, **keywords)
    reduce.__name__ = name
    return reduce


def mean(a: Tensor, axis: Any = None, **keywords: Any) -> Any:
    """The mean along ``axis``: ``frontend.ops.mean`` where it exists, else the sum over the count."""
    fn = getattr(elementwise, "mean", None)
    if fn is not None:
        return fn(a, axis, **keywords)
    axes = range(a.ndim) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else axis
    count = math.prod(a.shape[int(ax)] for ax in axes)
    total = elementwise.sum(a, axis, **keywords)
    with np.errstate(invalid="ignore", divide="ignore"):  # NumPy warns about an empty mean: nan
        return binary(np.true_divide, total, count) if isinstance(total, Tensor) else np.true_divide(total, count)
