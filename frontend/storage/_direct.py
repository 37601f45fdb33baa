"""Direct conversions between common 2-D layouts, chosen by level structure (never by format name).

A source is read into :class:`Rows` (entries grouped by one dimension, the other increasing and unique in
every group) in one or two passes: a dense + compressed level pair as is, ordered COO by counting its
groups, blocks through a compiled kernel, diagonals with one gather.  A target is written from ``Rows``:
the same pair by copying or a compiled transpose, COO by expanding the pointers, blocks through a compiled
kernel, diagonals by counting diagonals, and any target whose level coordinates are ordered like the
rows (DCSR, DELTA, n:m, ...) by the generic level builder without sorting.  The results equal the generic
path's (:mod:`frontend.storage._convert`) buffer for buffer, zeros rules included; ``None`` means "no
direct path", and the caller takes the generic one.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontend.format import BinaryExpr, Level, LevelFormat as F, TensorFormat, is_block, is_diagonal
from mlir_bridge.errors import CompileError

from . import _kernels
from ._assemble import assemble_levels
from ._fill import slot_check
from ._layout import delta_crd_dtype, level_coordinates_of, pack_gaps, to_host
from ._protocol import StoredTensor

_INT32_MAX = int(np.iinfo(np.int32).max)
Buffers = tuple[list[Any], list[Any], np.ndarray]


@dataclass(frozen=True)
class Rows:
    """Entries of a 2-D tensor grouped by dimension ``major``: ``ptr`` (one group per coordinate of
    ``major``), ``idx`` (the other dimension's coordinates, increasing in every group) and ``val``."""

    major: int
    extents: tuple[int, int]  # (extent of major, extent of the other dimension)
    ptr: np.ndarray
    idx: np.ndarray
    val: np.ndarray

    def transposed(self) -> Rows:
        """The same entries grouped by the other dimension (a compiled counting sort)."""
        n, m = self.extents
        ptr, idx, val = _kernels.transpose(n, m, self.ptr, self.idx, self.val)
        return Rows(1 - self.major, (m, n), ptr, idx, val)

    def oriented(self, major: int) -> Rows:
        return self if self.major == major else self.transposed()

    def majors(self, dtype: np.dtype) -> np.ndarray:
        """The major coordinate of every entry."""
        return np.repeat(np.arange(self.extents[0], dtype=dtype), np.diff(self.ptr))

    def dims(self) -> list[np.ndarray]:
        """int64 dimension coordinates of the entries, in dimension order."""
        pair = [self.majors(np.dtype(np.int64)), self.idx.astype(np.int64, copy=False)]
        return pair if self.major == 0 else pair[::-1]

    def kept(self, keep: np.ndarray) -> Rows:
        """Only the entries where ``keep`` is True."""
        if keep.all():
            return self
        counts = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        return Rows(self.major, self.extents, counts[self.ptr].astype(self.ptr.dtype), self.idx[keep],
                    self.val[keep])


# ----- structure of a 2-D format ------------------------------------------------------------------------
def _axis(fmt: TensorFormat, e: Any) -> int | None:
    """Index of ``e`` among ``fmt``'s dimensions, None unless ``e`` is one of them."""
    return fmt.dimensions.index(e) if e in fmt.dimensions else None


def _sorted_level(lv: Level, f: F, unique: bool = True) -> bool:
    return lv.format is f and lv.ordered and lv.unique == unique


def grouped_axis(fmt: TensorFormat) -> int | None:
    """``major`` of ``(a : dense, b : compressed)`` (CSR, CSC)."""
    lv = fmt.levels
    if len(lv) != 2 or lv[0].format is not F.DENSE or not _sorted_level(lv[1], F.COMPRESSED):
        return None
    a, b = _axis(fmt, lv[0].expr), _axis(fmt, lv[1].expr)
    return a if a is not None and b is not None and a != b else None


def coo_axis(fmt: TensorFormat) -> int | None:
    """``major`` of ``(a : compressed(nonunique), b : singleton)`` (COO; the reader refuses duplicates)."""
    lv = fmt.levels
    if (len(lv) != 2 or not _sorted_level(lv[0], F.COMPRESSED, unique=False)
            or lv[1].format is not F.SINGLETON or not lv[1].ordered):
        return None
    a, b = _axis(fmt, lv[0].expr), _axis(fmt, lv[1].expr)
    return a if a is not None and b is not None and a != b else None


def block_axes(fmt: TensorFormat) -> tuple[int, int, int] | None:
    """``(major, r, c)`` of ``(a // r : dense, b // c : compressed, a % r : dense, b % c : dense)`` (BSR)."""
    lv = fmt.levels
    if (len(lv) != 4 or lv[0].format is not F.DENSE or not _sorted_level(lv[1], F.COMPRESSED)
            or lv[2].format is not F.DENSE or lv[3].format is not F.DENSE
            or not all(is_block(x.expr) for x in lv)):
        return None
    e = [x.expr for x in lv]
    ops = [x.op for x in e]  # type: ignore[attr-defined]
    if ops != ["//", "//", "%", "%"] or e[0].lhs != e[2].lhs or e[1].lhs != e[3].lhs:  # type: ignore[attr-defined]
        return None
    if e[0].rhs != e[2].rhs or e[1].rhs != e[3].rhs:  # type: ignore[attr-defined]
        return None
    a, b = _axis(fmt, e[0].lhs), _axis(fmt, e[1].lhs)  # type: ignore[attr-defined]
    if a is None or b is None or a == b:
        return None
    return a, int(e[0].rhs.value), int(e[1].rhs.value)  # type: ignore[attr-defined]


def _plain_pair(fmt: TensorFormat, first: F, second: F) -> int | None:
    """``major`` of ``(a : first, b : second)`` over two plain dimensions, both levels ordered and unique."""
    lv = fmt.levels
    if len(lv) != 2 or not _sorted_level(lv[0], first) or not _sorted_level(lv[1], second):
        return None
    a, b = _axis(fmt, lv[0].expr), _axis(fmt, lv[1].expr)
    return a if a is not None and b is not None and a != b else None


def doubly_compressed_axis(fmt: TensorFormat) -> int | None:
    """``major`` of ``(a : compressed, b : compressed)`` (DCSR, DCSC)."""
    return _plain_pair(fmt, F.COMPRESSED, F.COMPRESSED)


def delta_axis(fmt: TensorFormat) -> tuple[int, int] | None:
    """``(major, bits)`` of ``(a : dense, b : delta(bits))`` (DELTA)."""
    major = _plain_pair(fmt, F.DENSE, F.DELTA)
    bits = fmt.levels[1].bits if major is not None else None
    return None if major is None or bits is None or bits > 32 else (major, bits)


def structured_axes(fmt: TensorFormat) -> tuple[int, int, int] | None:
    """``(major, n, m)`` of ``(a : dense, b // m : dense, b % m : structured[n, m])`` (n:m)."""
    lv = fmt.levels
    if (len(lv) != 3 or not _sorted_level(lv[0], F.DENSE) or not _sorted_level(lv[1], F.DENSE)
            or not _sorted_level(lv[2], F.STRUCTURED) or lv[2].structure is None):
        return None
    n, m = lv[2].structure
    e1, e2 = lv[1].expr, lv[2].expr
    if not (is_block(e1) and e1.op == "//" and e2 == BinaryExpr("%", e1.lhs, e1.rhs)  # type: ignore[attr-defined]
            and int(e1.rhs.value) == m):  # type: ignore[attr-defined]
        return None
    a, b = _axis(fmt, lv[0].expr), _axis(fmt, e1.lhs)  # type: ignore[attr-defined]
    return (a, n, m) if a is not None and b is not None and a != b else None


def diagonal_axes(fmt: TensorFormat) -> tuple[BinaryExpr, int] | None:
    """``(x op y, z)`` of ``(x op y : compressed, z : range)`` with ``z`` one of ``x``, ``y`` (DIA)."""
    lv = fmt.levels
    if len(lv) != 2 or not _sorted_level(lv[0], F.COMPRESSED) or lv[1].format is not F.RANGE:
        return None
    e, z = lv[0].expr, _axis(fmt, lv[1].expr)
    if not is_diagonal(e) or z is None or lv[1].expr not in e.dimensions():
        return None
    return e, z  # type: ignore[return-value]


def row_ordered_axis(fmt: TensorFormat) -> int | None:
    """``major`` when entries sorted by (major, other) have sorted level coordinates: the levels of one
    dimension (``d``, or ``d // c`` then ``d % c``) come before the other's (DCSR, DELTA, n:m, ...)."""
    if fmt.is_dense or any(lv.format in (F.BATCH, F.RANGE, F.LOOSE_COMPRESSED) or not lv.ordered
                           for lv in fmt.levels):
        return None
    order: list[int] = []
    k, levels = 0, fmt.levels
    while k < len(levels):
        e = levels[k].expr
        if is_block(e) and e.op == "//" and k + 1 < len(levels):  # type: ignore[attr-defined]
            nxt = levels[k + 1].expr
            if nxt != BinaryExpr("%", e.lhs, e.rhs):  # type: ignore[attr-defined]
                return None
            e, k = e.lhs, k + 1  # type: ignore[attr-defined]
        a = _axis(fmt, e)
        if a is None or a in order:
            return None
        order.append(a)
        k += 1
    return order[0] if len(order) == 2 else None


# ----- reading a source ---------------------------------------------------------------------------------
def read_rows(t: StoredTensor, dtype: np.dtype, index: np.dtype, drop_zeros: bool) -> Rows | None:
    """``t``'s entries after the zeros rules as :class:`Rows` with values of ``dtype`` and index buffers of
    ``index``; None when ``t``'s layout has no direct reader."""
    fmt = t.tensor_format
    pos = [None if p is None else to_host(p) for p in t._pos]
    crd = [None if c is None else to_host(c) for c in t._crd]
    val = to_host(t.val).reshape(-1)
    shape = (int(t.shape[0]), int(t.shape[1]))
    major = grouped_axis(fmt)
    if major is not None:
        rows = _grouped(major, shape, pos[1], crd[1], val)
    elif (major := coo_axis(fmt)) is not None:
        rows = _coo(major, shape, pos[0], crd[0], crd[1], val, index)
    elif (blocks := block_axes(fmt)) is not None:
        return _blocks(blocks, shape, pos[1], crd[1], val, dtype, index)
    elif (diagonal := diagonal_axes(fmt)) is not None:
        return _diagonals(fmt, diagonal, shape, pos[0], crd[0], val, dtype, index)
    else:
        return None
    if rows is None:
        return None
    rows = Rows(rows.major, rows.extents, rows.ptr.astype(index, copy=False), rows.idx.astype(index, copy=False),
                rows.val.astype(dtype, copy=False))
    return rows.kept(rows.val != 0) if drop_zeros else rows


def _extents(major: int, shape: tuple[int, int]) -> tuple[int, int]:
    return (shape[0], shape[1]) if major == 0 else (shape[1], shape[0])


def _stored(n: int, *buffers: Any) -> int:
    """``n``, the entries the positions say; a ValueError when a buffer holds fewer (or ``n`` is negative):
    index buffers written in place after validation."""
    if n < 0 or any(len(b) < n for b in buffers):
        raise ValueError(f"the positions say {n} entries, outside what the coordinates and values buffers "
                         f"hold ({min(len(b) for b in buffers)}): index buffers changed after validation")
    return n


def _grouped(major: int, shape: tuple[int, int], ptr: Any, idx: Any, val: np.ndarray) -> Rows | None:
    """The pair's buffers as they are (the kernels that read them clamp what they address)."""
    if len(ptr) and int(ptr[0]) != 0:
        return None
    n = _stored(int(ptr[-1]) if len(ptr) else 0, idx, val)
    return Rows(major, _extents(major, shape), ptr, idx[:n], val[:n])


def _coo(major: int, shape: tuple[int, int], pos: Any, majors: Any, others: Any, val: np.ndarray,
         index: np.dtype) -> Rows | None:
    """Ordered COO without duplicates (a source with duplicates takes the generic path, which sums them):
    its row pointers from the steps between neighbours (compiled); the other coordinates and values as
    they are."""
    if int(pos[0]) != 0:
        return None
    n = _stored(int(pos[1]), majors, others, val)
    a = np.ascontiguousarray(majors[:n], dtype=index)
    b = np.ascontiguousarray(others[:n], dtype=index)
    ext = _extents(major, shape)
    ptr = _kernels.coo_pointers(ext[0], a, b, ext[1])
    return None if ptr is None else Rows(major, ext, ptr, b, val[:n])


def _blocks(blocks: tuple[int, int, int], shape: tuple[int, int], bptr: Any, bidx: Any, bval: np.ndarray,
            dtype: np.dtype, index: np.dtype) -> Rows:
    """The nonzero slots inside the shape of every block, row by row (compiled; padding never leaves the
    kernel)."""
    major, r, c = blocks
    n, m = _extents(major, shape)
    nblocks = int(bptr[-1]) if len(bptr) else 0
    bval = bval.reshape(-1)[:nblocks * r * c].astype(dtype, copy=False)
    if len(bval) < nblocks * r * c or len(bidx) < nblocks:  # the kernel reads every slot of every block
        raise ValueError(f"block buffers hold fewer than the {nblocks} blocks of {r}x{c} their positions say")
    ptr, idx, val = _kernels.from_blocks(n, m, r, c, np.ascontiguousarray(bptr, dtype=index),
                                         np.ascontiguousarray(bidx[:nblocks], dtype=index), bval)
    return Rows(major, (n, m), ptr, idx, val)


def _diagonals(fmt: TensorFormat, diagonal: tuple[BinaryExpr, int], shape: tuple[int, int], pos: Any,
               offsets: Any, val: np.ndarray, dtype: np.dtype, index: np.dtype) -> Rows:
    """Diagonals read row by row of the dimension the other one increases with along a row (compiled):
    the nonzero slots inside the shape only."""
    e, z = diagonal
    lhs, rhs = _axis(fmt, e.lhs), _axis(fmt, e.rhs)
    assert lhs is not None and rhs is not None  # a diagonal level reads two dimensions
    major = rhs if e.op == "-" else lhs  # other = d + major (x - y: major y) or d - major (x + y: major x)
    n, m = _extents(major, shape)
    d = offsets[int(pos[0]):int(pos[1])]
    ext_z = fmt.level_extents(shape)[1]  # slots per diagonal: shape[z], or fewer for a range(w) level
    vals = val[:len(d) * ext_z].astype(dtype, copy=False)
    if len(vals) < len(d) * ext_z:  # the kernel reads every slot of every diagonal
        raise ValueError(f"the values buffer holds fewer than the {len(d)} x {ext_z} diagonal slots")
    ptr, idx, out = _kernels.dia_rows(n, m, d, vals, ext_z, e.op == "-", z == major, index)
    return Rows(major, (n, m), ptr, idx, out)


# ----- writing a target ---------------------------------------------------------------------------------
def write_rows(rows: Rows, fmt: TensorFormat, index: np.dtype, max_fill: float | None = None) -> Buffers | None:
    """``(pos, crd, values)`` of ``fmt`` holding ``rows``; None when ``fmt`` has no direct writer.  A padded
    ``fmt`` counts its value slots before allocating them and refuses more than ``max_fill`` allows
    (:func:`frontend.storage._fill.check_fill`)."""
    check = slot_check(fmt, len(rows.val), max_fill, index)
    if (major := grouped_axis(fmt)) is not None:
        r = rows.oriented(major)
        return [None, r.ptr], [None, r.idx], r.val
    if (major := coo_axis(fmt)) is not None:
        r = rows.oriented(major)
        return [np.array([0, len(r.idx)], dtype=index), None], [_kernels.expand(r.ptr), r.idx], r.val
    if (blocks := block_axes(fmt)) is not None:
        return _write_blocks(rows.oriented(blocks[0]), blocks[1], blocks[2], check)
    if (diagonal := diagonal_axes(fmt)) is not None:
        return _write_diagonals(rows, fmt, diagonal, index, check)
    if (major := doubly_compressed_axis(fmt)) is not None:
        r = rows.oriented(major)
        rows_held = np.flatnonzero(r.ptr[1:] != r.ptr[:-1])
        starts = np.append(r.ptr[rows_held], r.ptr[-1]).astype(index, copy=False)
        return ([np.array([0, len(rows_held)], dtype=index), starts], [rows_held.astype(index), r.idx], r.val)
    if (delta := delta_axis(fmt)) is not None:
        r = rows.oriented(delta[0])
        optr, gaps, out = _kernels.delta_rows(r.ptr, r.idx, r.val, delta[1], delta_crd_dtype(delta[1]), check)
        return [None, optr], [None, pack_gaps(gaps, delta[1])], out
    if (nm := structured_axes(fmt)) is not None:
        r = rows.oriented(nm[0])
        _, n, m = nm
        if check is not None:
            check(r.extents[0] * -(-r.extents[1] // m) * n)
        got = _kernels.structured_rows(r.ptr, r.idx, r.val, -(-r.extents[1] // m), m, n)
        if got is None:
            return None  # a group over n entries: the generic path says which
        return [None, None, None], [None, None, got[0]], got[1]
    if (major := row_ordered_axis(fmt)) is not None:
        r = rows.oriented(major)
        shape = r.extents if major == 0 else r.extents[::-1]
        lvl = level_coordinates_of(fmt, r.dims())
        return assemble_levels(fmt.levels, fmt.level_extents(shape), fmt.diagonal_offset(shape), lvl, r.val,
                               not fmt.is_unique, np.int64, check)
    return None


def _write_blocks(rows: Rows, r: int, c: int, check: Callable[[int], None] | None) -> Buffers:
    """Blocks sorted by block column in every block row (compiled: the block row's rows merged); ``check``
    sees the number of value slots before they are allocated."""
    bptr, bidx, bval = _kernels.to_blocks(*rows.extents, r, c, rows.ptr, rows.idx, rows.val, check)
    return [None, bptr, None, None], [None, bidx, None, None], bval


def _write_diagonals(rows: Rows, fmt: TensorFormat, diagonal: tuple[BinaryExpr, int], index: np.dtype,
                     check: Callable[[int], None] | None) -> Buffers:
    """Diagonals present counted by ``bincount`` (no sort), values put at (diagonal, range coordinate);
    ``check`` sees the number of value slots before they are allocated."""
    e, z = diagonal
    if rows.idx.size and (int(rows.idx.min()) < 0 or int(rows.idx.max()) >= rows.extents[1]):
        raise ValueError(f"a coordinate lies outside [0, {rows.extents[1]}): index buffers changed after validation")
    dims = rows.dims()
    shape = rows.extents if rows.major == 0 else rows.extents[::-1]
    ext = fmt.level_extents(shape)
    off = fmt.diagonal_offset(shape)[0]
    key = e.evaluate(dict(zip(fmt.dimensions, dims)))
    key -= off
    present = np.bincount(key, minlength=ext[0]) > 0
    slot = np.cumsum(present) - 1
    diags = np.flatnonzero(present) + off
    if len(dims[z]) and int(dims[z].max()) >= ext[1]:
        raise ValueError(f"level {fmt.levels[1].render()} stores {ext[1]} slots per diagonal but an entry "
                         f"lies at coordinate {int(dims[z].max())}; convert to a format without range(n)")
    if check is not None:
        check(len(diags) * ext[1])
    out = np.zeros(len(diags) * ext[1], dtype=rows.val.dtype)
    at = slot[key]
    at *= ext[1]
    at += dims[z]
    np.put(out, at, rows.val)
    return [np.array([0, len(diags)], dtype=index), None], [diags.astype(index), None], out


def bounds_safe(t: StoredTensor, fmt: TensorFormat, drop_zeros: bool) -> bool:
    """Whether the direct path from ``t`` to ``fmt`` reads and writes in bounds whatever ``t``'s index buffers
    hold, and builds a valid result or raises ValueError (then ``t`` need not be checked first): a CSR/CSC or
    COO source (read as it is: the kernels clamp what they address; COO's pointer kernel refuses what is out
    of range or order) to the other grouping (a transpose that flags invalid rows), CSR/CSC from COO, blocks
    or diagonals. Copies of the source's own buffers (CSR -> CSR, CSR -> COO) and the other targets are not."""
    if drop_zeros or t.ndim != 2 or fmt.num_dimensions != 2:
        return False
    src = t.tensor_format
    if (major := grouped_axis(src)) is not None:
        target = grouped_axis(fmt)
        return (target is not None and target != major) or block_axes(fmt) is not None \
            or diagonal_axes(fmt) is not None
    if coo_axis(src) is not None:
        return grouped_axis(fmt) is not None or block_axes(fmt) is not None or diagonal_axes(fmt) is not None
    return False


def convert_direct(t: StoredTensor, fmt: TensorFormat, index: np.dtype, dtype: np.dtype,
                   drop_zeros: bool, max_fill: float | None = None) -> Buffers | None:
    """``(pos, crd, values)`` of ``t`` in ``fmt`` by a direct path, or None (then the generic path runs).
    Index buffers come out as ``index`` where they fit (the caller checks and casts as for the generic path)."""
    if t.ndim != 2 or fmt.num_dimensions != 2 or not _kernels.supports(dtype, index):
        return None
    if index == np.int32 and _exceeds_int32(t):
        return None
    try:
        rows = read_rows(t, dtype, index, drop_zeros)
        built = None if rows is None else write_rows(rows, fmt, index, max_fill)
    except CompileError:  # no working toolchain for the kernels: the generic path needs none
        return None
    return None if built is None else _owned(built, t.buffers())


def _exceeds_int32(t: StoredTensor) -> bool:
    """Whether an extent, a stored count or a diagonal offset of ``t`` may not fit in int32."""
    slots = int(np.prod(tuple(t.val.shape)))
    return sum(int(s) for s in t.shape) + slots > _INT32_MAX


def _owned(built: Buffers, sources: Sequence[Any]) -> Buffers:
    """The buffers, sharing the source's index and value buffers that come out unchanged (like SciPy's
    ``tocoo``/``tocsr``: CSR -> COO is a row expansion, COO -> CSR a row count); copies of all of them when
    nothing new was built (a conversion to the source's own layout returns new buffers)."""
    host = [to_host(s) for s in sources if s is not None]
    pos, crd, val = built
    every = [b for b in (*pos, *crd, val) if b is not None and b.size]
    if not all(any(np.may_share_memory(b, s) for s in host) for b in every):
        return built
    return [None if p is None else p.copy() for p in pos], [None if c is None else c.copy() for c in crd], val.copy()
