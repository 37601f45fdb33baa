"""Conversion between any two formats: storage -> dimension coordinates and values -> storage.

``entries``/``coordinates`` walk any format (:mod:`frontend.storage._read`) and apply the zeros rules: padded sources
(all-dense, block/diagonal fill, delta gaps, structured slots) keep only nonzeros, unpadded sources keep
their explicitly stored zeros, ``drop_zeros`` drops every zero.  ``from_coordinates`` maps dimension
coordinates to level coordinates (``dim2lvl``), sorts them lexicographically, sums duplicates for unique
formats and builds the levels (:mod:`frontend.storage._assemble`).  Leading batch levels are one build per batch.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import LevelFormat, TensorFormat, as_format, is_dimension, num_batch_levels, stores_padding

from ._assemble import assemble_levels
from ._budget import is_hypersparse, require, storage_bytes
from ._buffers import numpy_dtype
from ._direct import bounds_safe, convert_direct
from ._fill import MAX_FILL, fill_limit, slot_check
from ._kernels import InvalidRows
from ._layout import INDEX_TYPES, index_dtype, is_narrow, level_coordinates_of, narrowest_index_type, to_device, to_host
from ._protocol import StoredTensor, TensorT
from ._read import walk_levels
from ._validate import check_coordinate_span, mark_valid, validate_now


def level_coordinates(t: StoredTensor) -> tuple[list[np.ndarray], np.ndarray]:
    """Level coordinates and values of every stored entry (padding included), in storage order; for
    all-dense formats only the nonzeros (a dense source stores only its nonzeros)."""
    fmt = t.tensor_format
    ext = fmt.level_extents(t.shape)
    off = fmt.diagonal_offset(t.shape)
    val = to_host(t.val)
    if fmt.is_dense:
        arr = val.reshape(ext)
        if not ext:
            return [], arr.reshape(1)
        nz = np.nonzero(arr)  # a dense source stores only its nonzeros
        return [c.astype(np.int64) + o for c, o in zip(nz, off)], arr[nz]
    nb = num_batch_levels(fmt)
    pos = [None if p is None else to_host(p) for p in t._pos]
    crd = [None if c is None else to_host(c) for c in t._crd]
    parts: list[tuple[list[np.ndarray], np.ndarray]] = []
    for b in np.ndindex(*ext[:nb]):
        lvl, at = walk_levels(fmt.levels[nb:], ext[nb:], off[nb:],
                              [None if p is None else p[b] for p in pos[nb:]],
                              [None if c is None else c[b] for c in crd[nb:]])
        vb = val[b].reshape(-1)
        vals = vb[:at.count] if at.index is None else vb[at.index]
        head = [np.full(len(vals), x, dtype=np.int64) for x in b]
        parts.append((head + lvl, vals))
    if not parts:  # a zero batch extent
        return [np.zeros(0, dtype=np.int64)] * fmt.num_levels, np.zeros(0, dtype=val.dtype)
    if len(parts) == 1:
        return parts[0]
    return ([np.concatenate([p[0][k] for p in parts]) for k in range(fmt.num_levels)],
            np.concatenate([p[1] for p in parts]))


def inside_shape(fmt: TensorFormat, dims: Sequence[np.ndarray], shape: Sequence[int]) -> np.ndarray | None:
    """Mask of the entries whose dimension coordinates ``dims`` (from ``fmt.lvl2dim``) fall inside ``shape``;
    None when every level is a plain dimension (then all do; blocks and diagonals may overhang)."""
    if all(is_dimension(lv.expr) for lv in fmt.levels):
        return None
    keep = np.ones(len(dims[0]) if dims else 0, dtype=bool)
    for d, size in zip(dims, shape):
        keep &= (d >= 0) & (d < size)
    return keep


def entries(t: StoredTensor, drop_zeros: bool = False) -> tuple[list[np.ndarray], np.ndarray]:
    """Dimension coordinates (one int64 array per dimension) and values of the tensor's entries after
    the zeros rules (padding outside the shape is always dropped). Index buffers are checked first (unless
    version counters prove them unchanged): they may have been written in place since validation."""
    fmt = t.tensor_format
    validate_now(t)
    lvl, vals = level_coordinates(t)
    n = len(vals)
    dims = [np.broadcast_to(np.asarray(d, dtype=np.int64), (n,)) for d in fmt.lvl2dim(lvl)]
    keep = inside_shape(fmt, dims, t.shape)
    if drop_zeros or stores_padding(fmt):
        keep = vals != 0 if keep is None else keep & (vals != 0)
    if keep is None or keep.all():
        return dims, vals
    return [d[keep] for d in dims], vals[keep]


def coordinates(t: StoredTensor, drop_zeros: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(dims, values)``: an ``(ndim, n)`` int64 array of dimension coordinates and the values of the
    tensor's entries after the zeros rules (padding outside the shape is always dropped)."""
    dims, vals = entries(t, drop_zeros)
    return (np.stack(dims) if dims else np.zeros((0, len(vals)), dtype=np.int64)), vals


def _key_bits(ext: Sequence[int]) -> list[int]:
    """Bits each level coordinate takes in a sort key."""
    return [max(int(e) - 1, 0).bit_length() for e in ext]


def _sort_key(lvl: Sequence[np.ndarray], ext: Sequence[int], off: Sequence[int]) -> np.ndarray | None:
    """One int64 key ordering entries lexicographically by level coordinates: the coordinates' bits
    side by side (shifts, not divisions); None if they need more than 62 bits."""
    bits = _key_bits(ext)
    if sum(bits) > 62:
        return None
    n = len(lvl[0]) if lvl else 0
    key = np.zeros(n, dtype=np.int64)
    for c, b, o in zip(lvl, bits, off):
        key <<= b
        key |= c - o if o else c
    return key


def _argsort_key(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable ``(order, sorted key)`` of non-negative keys: one SIMD ``np.sort`` of ``key << b | index``
    when key and index fit in 64 bits (several times faster than ``argsort``), else ``argsort``."""
    n = len(key)
    ibits = max((n - 1).bit_length(), 1)
    if int(key.max()).bit_length() + ibits <= 64:
        packed = key.astype(np.uint64)
        packed <<= np.uint64(ibits)
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        order = packed & np.uint64((1 << ibits) - 1)
        packed >>= np.uint64(ibits)
        return order.view(np.int64), packed.view(np.int64)
    order = np.argsort(key, kind="stable")
    return order, key[order]


def _decode(key: np.ndarray, ext: Sequence[int], off: Sequence[int]) -> list[np.ndarray]:
    """Level coordinates back from a :func:`_sort_key` key."""
    out: list[np.ndarray] = []
    shift = 0
    for b, o in zip(reversed(_key_bits(ext)), reversed(off)):
        c = key >> shift if shift else key.copy()
        c &= (1 << b) - 1
        if o:
            c += o
        out.append(c)
        shift += b
    return out[::-1]


def sort_entries(lvl: list[np.ndarray], values: np.ndarray, ext: Sequence[int], off: Sequence[int],
                 unique: bool) -> tuple[list[np.ndarray], np.ndarray]:
    """Entries sorted lexicographically by level coordinates (stable); duplicates summed when ``unique``."""
    n = len(values)
    if n < 2 or not lvl:
        return lvl, values
    key = _sort_key(lvl, ext, off)
    if key is not None:
        if not np.all(key[1:] >= key[:-1]):
            order, key = _argsort_key(key)
            lvl, values = _decode(key, ext, off), values[order]
        same = key[1:] == key[:-1]
    else:
        order = np.lexsort(lvl[::-1])
        lvl, values = [c[order] for c in lvl], values[order]
        same = np.logical_and.reduce([c[1:] == c[:-1] for c in lvl])
    if unique and same.any():
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        values = np.add.reduceat(values, starts)
        lvl = [c[starts] for c in lvl]
    return lvl, values


def _stack(rows: Sequence[Any], batch_shape: Sequence[int], edge: bool) -> np.ndarray:
    """Per-batch 1-D buffers as one ``(*batch_shape, n)`` array; shorter rows are padded with their
    last value (positions, ``edge``) or zeros (coordinates, values)."""
    width = max(len(r) for r in rows)
    nbatches = int(np.prod(batch_shape))
    out = np.zeros((nbatches, width), dtype=rows[0].dtype)
    for b, r in enumerate(rows[:nbatches]):
        out[b, :len(r)] = r
        if edge and len(r) < width:
            out[b, len(r):] = r[-1] if len(r) else 0
    return out.reshape(tuple(batch_shape) + (width,))


def from_coordinates(fmt: TensorFormat, shape: Sequence[int], dims: Sequence[np.ndarray], values: np.ndarray,
                     index_type: Any = np.int64, max_fill: float | None = None, positions: Any = np.int64
                     ) -> tuple[list, list, np.ndarray]:
    """``(pos, crd, values)`` buffers of ``fmt`` holding the given entries (any order, duplicates summed
    unless the format is nonunique); ValueError before allocating when a padded ``fmt`` would store more
    value slots than ``max_fill`` allows (:func:`frontend.storage._fill.check_fill`; None: no limit) or
    than the integer type ``positions`` addresses."""
    ext = fmt.level_extents(shape)
    off = fmt.diagonal_offset(shape)
    n = len(values)
    dims = [np.asarray(d, dtype=np.int64) for d in dims]
    lvl = [np.broadcast_to(np.asarray(c, dtype=np.int64), (n,)) for c in level_coordinates_of(fmt, dims)]
    lvl, values = sort_entries(lvl, values, ext, off, unique=fmt.is_unique or fmt.is_dense)
    nl = fmt.num_levels
    if fmt.is_dense:
        out = np.zeros(ext, dtype=values.dtype)
        out[tuple(c - o for c, o in zip(lvl, off))] = values
        return [None] * nl, [None] * nl, out
    nb = num_batch_levels(fmt)
    keep_dups = not fmt.is_unique
    check = slot_check(fmt, n, max_fill, positions)
    if nb == 0:
        return assemble_levels(fmt.levels, ext, off, lvl, values, keep_dups, index_type, check)
    bshape = ext[:nb]
    nbatches = int(np.prod(bshape))
    flat = np.ravel_multi_index(tuple(lvl[:nb]), bshape) if n else np.zeros(0, np.int64)
    bounds = np.searchsorted(flat, np.arange(max(nbatches, 1) + 1))
    per = [assemble_levels(fmt.levels[nb:], ext[nb:], off[nb:],
                           [c[bounds[b]:bounds[b + 1]] for c in lvl[nb:]],
                           values[bounds[b]:bounds[b + 1]], keep_dups, index_type, check)
           for b in range(max(nbatches, 1))]  # one empty build gives the buffer types of 0 batches
    pos: list = [None] * nl
    crd: list = [None] * nl
    for k in range(nl - nb):
        if per[0][0][k] is not None:
            pos[nb + k] = _stack([p[0][k] for p in per], bshape, edge=True)
        if per[0][1][k] is not None:
            crd[nb + k] = _stack([p[1][k] for p in per], bshape, edge=False)
    return pos, crd, _stack([p[2] for p in per], bshape, edge=False)


def fitting_crd_type(fmt: TensorFormat, shape: Sequence[int]) -> np.dtype:
    """The narrowest coordinates type addressing every level of ``fmt`` over ``shape`` (a delta level's gaps
    aside): int8 up to extent 128, int16 up to 32768, and so on (:func:`coordinate_span`)."""
    need = 1
    for lv, e, o in zip(fmt.levels, fmt.level_extents(shape), fmt.diagonal_offset(shape)):
        if lv.has_coordinates and lv.format is not LevelFormat.DELTA:
            top = lv.structure[1] if lv.format is LevelFormat.STRUCTURED else o + e  # type: ignore[index]
            need = max(need, top, -o)
    return narrowest_index_type(need)


def _wider(a: np.dtype, b: np.dtype) -> np.dtype:
    return a if a.itemsize >= b.itemsize else b


def index_types(t: StoredTensor, fmt: TensorFormat, index_type: Any, crd_type: Any) -> tuple[np.dtype, np.dtype]:
    """The positions and coordinates types of ``t`` converted to ``fmt``: the given ones (``crd_type`` defaults
    to ``index_type`` when that is given; a ValueError when a level's extent exceeds the coordinates type),
    else ``t``'s own, the coordinates type widened to address ``fmt``'s levels."""
    it = index_dtype(t.index_type if index_type is None else index_type)
    if crd_type is not None or index_type is not None:
        ct = index_dtype(it if crd_type is None else crd_type, "crd_type")
        check_coordinate_span(fmt, t.shape, ct)
        return it, ct
    own = index_dtype(getattr(t, "crd_type", it), "crd_type")
    return it, _wider(own, fitting_crd_type(fmt, t.shape)) if is_narrow(own) else own


def fit_positions(pos: Sequence[Any], index_type: np.dtype, explicit: bool) -> np.dtype:
    """The positions type: ``index_type``, or (not ``explicit``) the narrowest wider one holding every
    position; a ValueError naming the level and the fix when an explicit one does not hold them."""
    if all(p is None or p.dtype.itemsize <= index_type.itemsize for p in pos):
        return index_type  # built in a type no wider: they fit
    top = max((int(p.max()) for p in pos if p is not None and p.size), default=0)
    if top <= np.iinfo(index_type).max:
        return index_type
    need = next(it for it in INDEX_TYPES if top <= np.iinfo(it).max)
    if not explicit:
        return need
    k = next(k for k, p in enumerate(pos) if p is not None and p.size and int(p.max()) == top)
    fix = (f"index_type=np.{need}" if not is_narrow(index_type) else
           f"index_type=np.{need} (positions) and crd_type=np.{index_type} (coordinates)")
    raise ValueError(f"positions of level {k} reach {top}, beyond {index_type} ({np.iinfo(index_type).max}); "
                     f"convert with {fix}")


def package_index_type(t: StoredTensor) -> np.dtype | None:
    """The one index type SciPy, torch and pydata/sparse accept for ``t``'s buffers: the wider of its positions
    and coordinates types, at least int32; None when ``t`` has it already (every buffer of one wide type)."""
    it, ct = np.dtype(t.index_type), np.dtype(getattr(t, "crd_type", t.index_type))
    if it == ct and not is_narrow(it):
        return None
    return _wider(_wider(it, ct), np.dtype(np.int32))


def with_index_type(t: TensorT, index_type: np.dtype) -> TensorT:
    """``t`` with every index buffer (a delta level's gaps aside) cast to ``index_type`` (copies of those that
    change; the values and the other buffers are shared)."""
    fmt = t.tensor_format
    def cast(b: Any, keep: bool) -> Any:
        if b is None or keep or numpy_dtype(b) == index_type:
            return b
        if hasattr(b, "detach"):  # torch
            import torch
            return b.to(getattr(torch, str(index_type)))
        return b.astype(index_type)  # NumPy, CuPy
    pos = [cast(p, False) for p in t._pos]
    crd = [cast(c, lv.format is LevelFormat.DELTA) for lv, c in zip(fmt.levels, t._crd)]
    out = type(t)(fmt, t.shape, pos, crd, t.val, index_type=index_type, package=t.package, device=t.device)
    if t._validated is not None:
        mark_valid(out)
    return out


def value_dtype(source: np.dtype, dtype: Any) -> np.dtype:
    """The target value dtype; TypeError for a complex -> real conversion (it would drop the imaginary part)."""
    if dtype is None:
        return np.dtype(source)
    dt = np.dtype(dtype)
    if dt.kind not in "biufc":
        raise TypeError(f"dtype must be a numeric type, got {dt}")
    if np.dtype(source).kind == "c" and dt.kind != "c":
        raise TypeError(f"cannot convert complex values ({source}) to {dt}: the imaginary part would be lost")
    return dt


def generic_buffers(t: StoredTensor, fmt: TensorFormat, dtype: np.dtype, drop_zeros: bool = False,
                    max_fill: float | None = None, positions: Any = np.int64) -> tuple[list, list, np.ndarray]:
    """``(pos, crd, values)`` of ``t`` in ``fmt`` by the generic path (any formats; int64 index buffers;
    refused before allocating when over ``max_fill`` or the slots ``positions`` addresses)."""
    dims, vals = entries(t, drop_zeros=drop_zeros)
    return from_coordinates(fmt, t.shape, dims, vals.astype(dtype, copy=False), np.int64, max_fill, positions)


def convert(t: TensorT, tensor_format: TensorFormat | str | None = None, index_type: Any = None,
            dtype: Any = None, drop_zeros: bool = False, max_fill: float | None = MAX_FILL,
            crd_type: Any = None) -> TensorT:
    """``t`` in another format, index type and/or value type: a new tensor of the same package and device
    (computed on the host; GPU results are copied back to the device), of ``t``'s class.

    ``index_type`` sets the positions and coordinates types, ``crd_type`` the coordinates' alone (int8 to int64,
    :func:`index_types`); a type too narrow for a level's extent or for the positions raises a ValueError.
    A target that pads (DELTA gaps, DIA diagonals, BSR blocks, ELL rows, n:m slots) may store at most
    ``max(max_fill * entries, entries + 2**20)`` value slots: more raises a ValueError before anything is
    allocated; ``max_fill=None`` lifts the limit."""
    fmt = t.tensor_format if tensor_format is None else as_format(tensor_format)
    if fmt.num_dimensions != t.ndim:
        raise ValueError(f"cannot convert a {t.ndim}-D tensor to the {fmt.num_dimensions}-D format {fmt}")
    dt = value_dtype(numpy_dtype(t.val), dtype)
    it, ct = index_types(t, fmt, index_type, crd_type)
    work = np.dtype(np.int64) if np.int64 in (it, ct) else np.dtype(np.int32)  # narrow types are built wide
    fill_limit(0, max_fill)  # a bad max_fill is refused whatever the target
    require(f"convert to {fmt.name or fmt}", storage_bytes(fmt, t.shape, 0, dt.itemsize), [t.shape])
    # the direct paths walk rows (work and pointers per row): hypersparse sources take the generic one
    direct = not is_hypersparse([t])
    if not (direct and bounds_safe(t, fmt, drop_zeros)):
        validate_now(t)  # NumPy index buffers checked on every call before a path that is not bounds-safe
    try:
        built = convert_direct(t, fmt, work, dt, drop_zeros, max_fill) if direct else None
    except InvalidRows:  # a bounds-safe kernel found invalid rows: the check says which level and what
        validate_now(t)
        raise
    pos, crd, out = generic_buffers(t, fmt, dt, drop_zeros, max_fill, work) if built is None else built
    it = fit_positions(pos, it, explicit=index_type is not None)
    for k, c in enumerate(crd):  # wide coordinates types are checked by value (narrow ones by extent, above)
        if (c is not None and c.size and c.dtype.kind == "i" and c.dtype.itemsize > ct.itemsize
                and not is_narrow(ct) and np.abs(c).max() > np.iinfo(ct).max):
            raise ValueError(f"crd[{k}] holds values beyond {ct}; use index_type=np.int64")
    pos = [None if p is None else p.astype(it, copy=False) for p in pos]
    crd = [c if c is None or c.dtype.kind == "u" else c.astype(ct, copy=False) for c in crd]
    def place(b: np.ndarray | None) -> Any:
        return to_device(b, t.package, t.device)
    pos, crd, out = [place(b) for b in pos], [place(b) for b in crd], place(out)
    result = type(t)(fmt, t.shape, pos, crd, out, index_type=it, package=t.package, device=t.device)
    mark_valid(result)  # built here: valid by construction
    return result
