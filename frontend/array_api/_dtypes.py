"""The standard's data types (NumPy dtypes, so ``x.dtype == float32`` holds for every Tensor), their limits
(``finfo``/``iinfo``), kinds (``isdtype``), promotion (``result_type``, ``can_cast``) and ``astype``."""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontend.tensor._tensor import Tensor

from ._arrays import SCALARS, as_tensor, check_device, numpy_of, wrap

bool = np.dtype(np.bool_)  # noqa: A001 - the standard's name
int8, int16, int32, int64 = (np.dtype(f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (np.dtype(f"uint{b}") for b in (8, 16, 32, 64))
float32, float64 = np.dtype(np.float32), np.dtype(np.float64)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

#: Every data type of the namespace, by the standard's name.
DTYPES: dict[str, np.dtype] = {
    "bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
    "uint16": uint16, "uint32": uint32, "uint64": uint64, "float32": float32, "float64": float64,
    "complex64": complex64, "complex128": complex128,
}


def dtype_of(x: Any) -> np.dtype:
    """The dtype of a Tensor, array or dtype-like ``x``."""
    if isinstance(x, Tensor) or hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.dtype(x)


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's spelling
    """Limits of a floating-point dtype, as Python numbers."""
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's spelling
    """Limits of an integer dtype."""
    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: Any) -> finfo_object:  # noqa: A002 - the standard's parameter name
    """Machine limits of a floating-point dtype (of a complex one: of its real part)."""
    info = np.finfo(dtype_of(type))
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), np.dtype(info.dtype))


def iinfo(type: Any) -> iinfo_object:  # noqa: A002 - the standard's parameter name
    """Machine limits of an integer dtype."""
    info = np.iinfo(dtype_of(type))
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dtype_of(type))


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is of ``kind`` (a dtype, a kind name such as ``"real floating"``, or a tuple of them)."""
    return builtins.bool(np.isdtype(np.dtype(dtype), kind))


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype the standard's promotion gives for arrays, dtypes and Python scalars (weak) together."""
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    args = [x if isinstance(x, SCALARS) and not isinstance(x, np.generic) else dtype_of(x)
            for x in arrays_and_dtypes]
    if all(isinstance(a, SCALARS) for a in args):
        raise ValueError("result_type needs at least one array or dtype besides Python scalars")
    return np.result_type(*args)


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or array) casts to ``to`` by the promotion rules (NumPy's ``"safe"``)."""
    return builtins.bool(np.can_cast(dtype_of(from_), np.dtype(to)))


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Tensor:
    """``x`` with values of ``dtype``. A sparse Tensor keeps its pattern (zero casts to zero; ``Tensor.astype``).
    ``copy=False`` returns ``x`` itself when it already has ``dtype``."""
    check_device(device)
    t = as_tensor(x)
    want = np.dtype(dtype)
    if not copy and np.dtype(t.dtype) == want:
        return t
    if t.is_sparse:
        return t.astype(want)
    return wrap(np.asarray(numpy_of(t)).astype(want, copy=True))


