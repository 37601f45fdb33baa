"""Storage-layout facts shared by validation, conversion, lookup and printing (no I/O, no logic
beyond the layout contract documented in :mod:`frontend.tensor`)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import Level, LevelFormat, TensorFormat, delta_packed, is_block

from ._buffers import as_torch, device_ordinal, numpy_dtype

#: Index buffer types, narrowest first: MLIR's ``posWidth``/``crdWidth`` of 8, 16, 32 and 64 bits (signed, so
#: that NumPy, SciPy and torch read the same values the kernels do).
INDEX_TYPES = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))
VALUE_KINDS = "biufc"  # bool, signed, unsigned, float, complex


def index_dtype(index_type: Any, what: str = "index_type") -> np.dtype:
    """``index_type`` as a NumPy dtype; TypeError unless it is int8, int16, int32 or int64."""
    try:
        it = np.dtype(index_type)
    except TypeError:
        raise TypeError(f"{what} must be int8, int16, int32 or int64, got {index_type!r}") from None
    if it not in INDEX_TYPES:
        raise TypeError(f"{what} must be int8, int16, int32 or int64, got {it}")
    return it


def is_narrow(dtype: Any) -> bool:
    """Whether an index dtype is one of the narrow ones (int8, int16)."""
    return np.dtype(dtype).itemsize < 4


def coordinate_span(dtype: Any) -> int:
    """The largest extent a coordinates buffer of ``dtype`` addresses (coordinates ``0 .. span - 1``): 128 for
    int8, 32768 for int16, ``2**31`` for int32."""
    return int(np.iinfo(dtype).max) + 1


def narrowest_index_type(extent: int) -> np.dtype:
    """The narrowest index type whose coordinates address ``extent`` (:func:`coordinate_span`)."""
    for it in INDEX_TYPES:
        if extent <= coordinate_span(it):
            return it
    return INDEX_TYPES[-1]


def coordinates_type(fmt: TensorFormat, crd: Sequence[Any], index_type: Any) -> np.dtype:
    """The dtype every coordinates buffer of ``fmt`` but a delta level's has: the first one's, or
    ``index_type`` when there is none (the layout allows narrower coordinates than positions)."""
    for lv, c in zip(fmt.levels, crd):
        if c is not None and lv.format is not LevelFormat.DELTA:
            return np.dtype(c.dtype) if isinstance(c, np.ndarray) else numpy_dtype(c)
    return np.dtype(index_type)


def delta_crd_dtype(bits: int) -> np.dtype:
    """The dtype of a delta level's gap buffer: the narrowest unsigned type holding ``bits`` bits."""
    if bits <= 8:
        return np.dtype(np.uint8)
    if bits <= 16:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32)


def delta_crd_length(bits: int, entries: int) -> int:
    """Elements of a delta level's crd buffer holding ``entries`` gaps."""
    return -(-entries * bits // 8) if delta_packed(bits) else entries


def pack_gaps(gaps: np.ndarray, bits: int) -> np.ndarray:
    """``gaps`` (one per entry, each below ``2**bits``) as a delta level stores them (see :func:`delta_packed`)."""
    if not delta_packed(bits):
        return gaps
    per = 8 // bits
    flat = np.zeros(delta_crd_length(bits, len(gaps)) * per, dtype=np.uint8)
    flat[:len(gaps)] = gaps
    g = flat.reshape(-1, per)
    out = g[:, 0].copy()
    for k in range(1, per):
        out |= g[:, k] << np.uint8(k * bits)
    return out


def unpack_gaps(crd: np.ndarray, bits: int) -> np.ndarray:
    """One gap per slot of a delta level's crd buffer (``len(crd) * 8 // bits`` of them when packed: the
    entries, then the last byte's unused slots)."""
    if not delta_packed(bits):
        return crd
    per, mask = 8 // bits, np.uint8((1 << bits) - 1)
    c = np.ascontiguousarray(crd, dtype=np.uint8).reshape(-1, 1)
    return ((c >> (np.arange(per, dtype=np.uint8) * np.uint8(bits))) & mask).reshape(-1)


def crd_dtype(level: Level, crd_type: Any) -> np.dtype:
    """The dtype a level's coordinates buffer has: ``crd_type``, or the gap type of a delta level."""
    if level.format is LevelFormat.DELTA:
        return delta_crd_dtype(level.bits)  # type: ignore[arg-type]
    return np.dtype(crd_type)


def is_padded(fmt: TensorFormat) -> bool:
    """Whether the format stores zeros it needs for its shape: all-dense formats, dense levels below a
    sparse level (block fill), range (diagonal fill), delta (gap entries) and structured (empty slots)."""
    seen_sparse = False
    for lv in fmt.levels:
        if lv.format in (LevelFormat.RANGE, LevelFormat.DELTA, LevelFormat.STRUCTURED):
            return True
        if lv.is_dense_like:
            if seen_sparse:
                return True
        else:
            seen_sparse = True
    return not seen_sparse


def structured_groups(level: Level, extent: int) -> int:
    """Groups of ``m`` coordinates a structured level holds per parent (1 for ``j % m``)."""
    m = level.structure[1]  # type: ignore[index]
    return -(-extent // m)


def to_host(x: Any) -> np.ndarray:
    """A NumPy view (CPU) or copy (GPU) of a NumPy/torch/CuPy array."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach"):  # torch
        t = x.detach()
        return t.numpy() if t.device.type == "cpu" else t.cpu().numpy()
    if hasattr(x, "get") and hasattr(x, "__cuda_array_interface__"):  # cupy
        return x.get()
    return np.asarray(x)


def to_device(x: np.ndarray | None, package: str, device: str) -> Any:
    """A host array placed where a tensor of ``package`` on ``device`` keeps its buffers (NumPy on the
    CPU; torch/CuPy arrays on a GPU)."""
    if x is None or device == "cpu":
        return x
    if package == "cupy":
        import cupy
        with cupy.cuda.Device(device_ordinal(device)):
            return cupy.asarray(x)
    return as_torch(np.ascontiguousarray(x)).to(device)


def value_count(values: np.ndarray, nbatch: int) -> int:
    """Stored values per batch of a sparse format's values buffer (trailing axes flattened)."""
    size = 1
    for s in values.shape[nbatch:]:
        size *= int(s)
    return size


def level_coordinates_of(fmt: TensorFormat, dims: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``fmt.dim2lvl`` on int64 arrays of in-bounds coordinates, with power-of-two blocks as shifts and
    masks (integer division is the slowest step of a block conversion otherwise)."""
    values = dict(zip(fmt.dimensions, dims))
    out = []
    for lv in fmt.levels:
        e = lv.expr
        c = e.rhs.value if is_block(e) else 0  # type: ignore[attr-defined]
        if c and c & (c - 1) == 0:
            d = values[e.lhs]  # type: ignore[attr-defined]
            out.append(d >> (c.bit_length() - 1) if e.op == "//" else d & (c - 1))  # type: ignore[attr-defined]
        else:
            out.append(e.evaluate(values))
    return out
