"""Element and index types: NumPy/torch dtypes to MLIR type names."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T")

_MLIR_TYPES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "bool": "i1",
    "uint8": "i8", "complex64": "complex<f32>", "complex128": "complex<f64>",
}
_ALIASES = {v: v for v in _MLIR_TYPES.values()}
#: MLIR element type of position/coordinate buffers by index width (0 = ``index``).
INDEX_WIDTH_TYPES = {0: "index", 8: "i8", 16: "i16", 32: "i32", 64: "i64"}


#: dtype -> its canonical name and index width, for dtypes seen before (a handful in a process: the name is
#: asked on every call of the small-operand fast paths)
_NAMES: dict[Any, str] = {}
_WIDTHS: dict[Any, int] = {}


def _remembered(cache: dict[Any, _T], dtype: Any, compute: Callable[[Any], _T]) -> _T:
    """``compute(dtype)``, remembered in ``cache`` (up to 256 dtypes; unhashable ones are not remembered)."""
    try:
        got = cache.get(dtype)
    except TypeError:
        return compute(dtype)
    if got is None:
        got = compute(dtype)
        if len(cache) < 256:
            cache[dtype] = got
    return got


def dtype_name(dtype: Any) -> str:
    """Canonical dtype name ("float64", ...) of a NumPy/torch dtype, a type or a string."""
    return _remembered(_NAMES, dtype, _name)


def _name(dtype: Any) -> str:
    text = str(dtype)
    if text.startswith("torch."):
        text = text[len("torch."):]
    if text in ("double",):
        text = "float64"
    if text in ("float", "half", "cfloat", "cdouble"):
        text = {"float": "float32", "half": "float16", "cfloat": "complex64", "cdouble": "complex128"}[text]
    if text.startswith("<class 'numpy."):
        text = text[len("<class 'numpy."):-2]
    return text


def mlir_type(dtype: Any) -> str:
    """MLIR element type of a dtype (``float64`` -> ``f64``); accepts MLIR names too."""
    text = str(dtype)
    if text in _ALIASES:
        return text
    name = dtype_name(dtype)
    try:
        return _MLIR_TYPES[name]
    except KeyError:
        raise TypeError(f"dtype {dtype!r} has no MLIR element type (supported: "
                        f"{', '.join(sorted(_MLIR_TYPES))})") from None


def index_width(dtype: Any) -> int:
    """Bit width of an index dtype (int32 -> 32, int64 -> 64)."""
    return _remembered(_WIDTHS, dtype, _width)


def _width(dtype: Any) -> int:
    name = dtype_name(dtype)
    if name not in ("int8", "int16", "int32", "int64"):
        raise TypeError(f"index buffers must be int8/16/32/64, got {dtype!r}")
    return int(name[3:])
