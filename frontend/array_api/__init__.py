"""The Array API standard (2024.12) namespace of :class:`frontend.Tensor` (``Tensor.__array_namespace__()``).

Dense-format Tensors compute with NumPy over their buffers; sparse ones through :mod:`frontend.ops` or by
moving their stored entries, wherever the result is sparse again. A function whose result would not be zero
where a sparse array stores nothing (``exp``, ``x + 1``, ``full(shape, 5)``) raises a ``ValueError`` naming
the dense alternative; one with no sparse meaning (``sort``, ``argmax``, ``cumulative_sum``) a ``TypeError``.
docs/array_api.md lists every function. Modules: data types and promotion (``_dtypes``), inspection
(``_info``), creation, elementwise, statistical, linear algebra, manipulation, searching, sorting and sets.
"""
from __future__ import annotations

import math as _math

from . import fft, linalg
from ._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._dtypes import (
    astype,
    bool,
    can_cast,
    complex64,
    complex128,
    finfo,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._elementwise import FUNCTIONS as _FUNCTIONS, clip
from ._info import __array_namespace_info__
from ._linalg import matmul, matrix_transpose, tensordot, vecdot
from ._manipulation import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from ._searching import argmax, argmin, nonzero, searchsorted, take, take_along_axis, where
from ._sorting import argsort, sort, unique_all, unique_counts, unique_inverse, unique_values
from ._statistics import (
    all,
    any,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    diff,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)

__array_api_version__ = "2024.12"

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

abs = _FUNCTIONS["abs"]
acos = _FUNCTIONS["acos"]
acosh = _FUNCTIONS["acosh"]
add = _FUNCTIONS["add"]
asin = _FUNCTIONS["asin"]
asinh = _FUNCTIONS["asinh"]
atan = _FUNCTIONS["atan"]
atan2 = _FUNCTIONS["atan2"]
atanh = _FUNCTIONS["atanh"]
bitwise_and = _FUNCTIONS["bitwise_and"]
bitwise_invert = _FUNCTIONS["bitwise_invert"]
bitwise_left_shift = _FUNCTIONS["bitwise_left_shift"]
bitwise_or = _FUNCTIONS["bitwise_or"]
bitwise_right_shift = _FUNCTIONS["bitwise_right_shift"]
bitwise_xor = _FUNCTIONS["bitwise_xor"]
ceil = _FUNCTIONS["ceil"]
conj = _FUNCTIONS["conj"]
copysign = _FUNCTIONS["copysign"]
cos = _FUNCTIONS["cos"]
cosh = _FUNCTIONS["cosh"]
divide = _FUNCTIONS["divide"]
equal = _FUNCTIONS["equal"]
exp = _FUNCTIONS["exp"]
expm1 = _FUNCTIONS["expm1"]
floor = _FUNCTIONS["floor"]
floor_divide = _FUNCTIONS["floor_divide"]
greater = _FUNCTIONS["greater"]
greater_equal = _FUNCTIONS["greater_equal"]
hypot = _FUNCTIONS["hypot"]
imag = _FUNCTIONS["imag"]
isfinite = _FUNCTIONS["isfinite"]
isinf = _FUNCTIONS["isinf"]
isnan = _FUNCTIONS["isnan"]
less = _FUNCTIONS["less"]
less_equal = _FUNCTIONS["less_equal"]
log = _FUNCTIONS["log"]
log1p = _FUNCTIONS["log1p"]
log2 = _FUNCTIONS["log2"]
log10 = _FUNCTIONS["log10"]
logaddexp = _FUNCTIONS["logaddexp"]
logical_and = _FUNCTIONS["logical_and"]
logical_not = _FUNCTIONS["logical_not"]
logical_or = _FUNCTIONS["logical_or"]
logical_xor = _FUNCTIONS["logical_xor"]
maximum = _FUNCTIONS["maximum"]
minimum = _FUNCTIONS["minimum"]
multiply = _FUNCTIONS["multiply"]
negative = _FUNCTIONS["negative"]
nextafter = _FUNCTIONS["nextafter"]
not_equal = _FUNCTIONS["not_equal"]
positive = _FUNCTIONS["positive"]
pow = _FUNCTIONS["pow"]
real = _FUNCTIONS["real"]
reciprocal = _FUNCTIONS["reciprocal"]
remainder = _FUNCTIONS["remainder"]
round = _FUNCTIONS["round"]
sign = _FUNCTIONS["sign"]
signbit = _FUNCTIONS["signbit"]
sin = _FUNCTIONS["sin"]
sinh = _FUNCTIONS["sinh"]
sqrt = _FUNCTIONS["sqrt"]
square = _FUNCTIONS["square"]
subtract = _FUNCTIONS["subtract"]
tan = _FUNCTIONS["tan"]
tanh = _FUNCTIONS["tanh"]
trunc = _FUNCTIONS["trunc"]

__all__ = [
    "fft", "linalg",
    "__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "pi", "newaxis",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
    "complex64", "complex128",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid",
    "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    *_FUNCTIONS, "clip",
    "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
    "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "take", "take_along_axis", "where",
    "argsort", "sort", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "all", "any", "cumulative_prod", "cumulative_sum", "diff", "max", "mean", "min", "prod", "std", "sum", "var",
]


def _register_namespace() -> None:
    """``Tensor.__array_namespace__()`` returns this module (through the operator table: no import ring)."""
    import sys

    from frontend.tensor._operators import register

    module = sys.modules[__name__]
    register({"array_namespace": lambda: module})


_register_namespace()
