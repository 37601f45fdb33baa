"""Tensor formats to MLIR ``#sparse_tensor.encoding`` attributes and tensor types.

The translation is one-to-one for the level types MLIR 22 has (dense, batch, compressed,
loose_compressed, singleton, structured, with block maps); formats with range or delta levels or
diagonal maps are refused with a ``ValueError`` that says ust-mlir's own code generator lowers them.
Formats are read by duck typing (``levels``, ``map_text``), so this module does not import frontend.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._dtypes import INDEX_WIDTH_TYPES, mlir_type

_MLIR_LEVELS = {"dense", "batch", "compressed", "loose_compressed", "singleton", "structured"}
_WIDTHS = tuple(INDEX_WIDTH_TYPES)


def unsupported_reason(fmt: Any) -> str | None:
    """Why MLIR's sparse_tensor dialect cannot encode ``fmt``, or ``None`` when it can."""
    for k, lv in enumerate(fmt.levels):
        kind = lv.format.value
        if kind not in _MLIR_LEVELS:
            return (f"level {k} ({lv.render()}) uses the {kind} level type, which MLIR's sparse_tensor "
                    "dialect lacks")
        if getattr(lv.expr, "op", None) in ("+", "-"):
            return (f"level {k} ({lv.render()}) is a diagonal map, which MLIR's sparse_tensor dialect "
                    "cannot invert (no lvlToDim)")
    return None


def encoding_text(fmt: Any, pos_width: int = 64, crd_width: int = 64) -> str:
    """``#sparse_tensor.encoding<{ map = ..., posWidth = .., crdWidth = .. }>`` for ``fmt``."""
    if fmt.num_levels == 0:
        raise ValueError("a scalar (0-D) format has no encoding: its MLIR type is a plain tensor<T>")
    reason = unsupported_reason(fmt)
    if reason is not None:
        raise ValueError(f"{fmt} cannot be an MLIR encoding: {reason}; formats with range or delta "
                         "levels are lowered by ust-mlir's own code generator (mlir_support() == 'emitter')")
    for label, w in (("pos_width", pos_width), ("crd_width", crd_width)):
        if w not in _WIDTHS:
            raise ValueError(f"{label} must be one of {_WIDTHS}, got {w!r}")
    return (f"#sparse_tensor.encoding<{{ map = {fmt.map_text(mlir=True)}, "
            f"posWidth = {pos_width}, crdWidth = {crd_width} }}>")


def tensor_type(fmt: Any, shape: Sequence[int], dtype: Any = "f64", pos_width: int = 64,
                crd_width: int = 64) -> str:
    """``tensor<8x8xf64, #sparse_tensor.encoding<...>>``; plain ``tensor<...>`` for row-major dense."""
    if len(shape) != fmt.num_dimensions:
        raise ValueError(f"format has {fmt.num_dimensions} dimensions, shape {tuple(shape)} has {len(shape)}")
    dims = "".join(f"{int(s)}x" if s is not None and s >= 0 else "?x" for s in shape)
    elem = mlir_type(dtype)
    if fmt.is_dense and fmt.is_identity:
        return f"tensor<{dims}{elem}>"
    return f"tensor<{dims}{elem}, {encoding_text(fmt, pos_width, crd_width)}>"
