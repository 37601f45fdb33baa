"""The lean paths of the elementwise ops for their commonest operands: two CSR (or two CSC) matrices of the
same shape and value type, SciPy objects or Tensors.

``fast_binary`` runs ``add``/``subtract``/``multiply`` straight through the row merge kernel
(:mod:`lowering.kernels.merge_rows`) and ``fast_rowsum`` runs ``sum(A, axis=1)`` (CSC: ``axis=0``) through
the row-sum kernel (:mod:`lowering.kernels.row_sum`), skipping the general path's operand wrapping,
promotion, broadcasting and format rule (about 0.1 ms a call). Both return None when they do not apply
(then the general path runs). A SciPy object's view is made and validated on its first call and reused
while its buffers are the same (:func:`frontend.interop._view_cache.shared_view`). Values are read on every
call (no result is cached). Index buffers are read as they are, never checked again: the merge, intersection,
row-sum and softmax kernels are bounds-safe (every position range and coordinate they use clamped in the
generated code), so buffers written in place since validation give a wrong result, never an access out of
bounds.
"""
from __future__ import annotations

import ctypes
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from frontend.format import NamedFormats
from frontend.interop._scipy import canonical_compressed
from frontend.interop._view_cache import shared_view
from frontend.tensor._tensor import Tensor
from lowering.kernels import intersect_rows, merge_rows, row_softmax, row_sum

from ._elementwise_kernels import note_kernel, row_kernel_for
from ._operands import check_cpu, operand, out_width, to_caller_package
from ._stats import balanced_bounds
from ._threads import cpu_count, summed_bounds

#: Stored entries (both operands) from which the merge kernels run on every core (below: one thread);
#: measured: docs/performance.md, "Tuning constants".
MERGE_PARALLEL_MIN = 1 << 20
#: Stored entries (both operands) from which the intersection (``mul``) runs on every core: earlier than the
#: union's, its rows are compute-bound (docs/performance.md, "Tuning constants").
INTERSECT_PARALLEL_MIN = 1 << 18
#: Stored entries from which the row sums run on every core, by mean row length: ``(longest mean, entries)``
#: pairs, the first that fits applies (docs/performance.md, "Tuning constants").
ROWSUM_PARALLEL_MIN: tuple[tuple[float, int], ...] = ((16, 1 << 20), (64, 1 << 22), (math.inf, 1 << 24))
#: Stored entries from which softmax's row kernel runs on every core (below: one thread).
ROW_PARALLEL_MIN = 1 << 17
#: Stored entries up to which a lean call reuses the prepared call (descriptors packed once) that it keeps on
#: the operand's view: about 0.7 us a call instead of 4-7 us for packing the descriptors again; above it the
#: packing is noise against the kernel and nothing is kept.
PREPARED_MAX = 1 << 16

_ELEMS = {np.dtype(np.float32): ("f32", "float"), np.dtype(np.float64): ("f64", "float"),
          np.dtype(np.int32): ("i32", "int"), np.dtype(np.int64): ("i64", "int")}
_FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
#: the type row sums of each value type are accumulated and returned in (NumPy sums int32 in int64)
_SUMMED: dict[Any, tuple[str, Any]] = {
    d: ("i64", np.dtype(np.int64)) if d == np.int32 else (e, d) for d, (e, _) in _ELEMS.items()}
_INT32, _INT64 = np.dtype(np.int32), np.dtype(np.int64)
_COMPRESSED = (NamedFormats.CSR, NamedFormats.CSC)
_SCIPY_TYPES = frozenset({"csr_array", "csr_matrix", "csc_array", "csc_matrix"})


def index_type(buf: np.ndarray) -> str:
    """MLIR integer type of an index buffer (int32 -> ``i32``), cheap enough for the per-call paths."""
    return f"i{buf.dtype.itemsize * 8}"


def run_rows(key: tuple, build: Callable[[], str], name: str, holder: Tensor | None,
             inputs: tuple[np.ndarray, ...], outs: tuple[np.ndarray, ...], rows: int, slot: Any = None) -> None:
    """``@name(*inputs, *outs, 0, rows)`` of the row kernel ``row_kernel_for(key, build)``: one chunk. With a
    ``holder`` (the view of the operand whose buffers are ``inputs``) the prepared call
    (:meth:`mlir_bridge.module.Function.bind`) is kept on it under ``slot`` (default ``key``) and reused while
    ``inputs`` are the same objects: only the outputs' data pointers change (no kernel lookup, no descriptor
    packing). Thread-safe: a call takes the prepared call out of the holder while it runs."""
    slot = key if slot is None else slot
    if holder is None:
        row_kernel_for(key, build).function(name)(*inputs, *outs, 0, rows)
        return
    calls = holder.__dict__.get("_prepared_calls")
    if calls is None:
        calls = holder.__dict__.setdefault("_prepared_calls", {})
    entry = calls.pop(slot, None)
    if entry is not None and entry[2] == rows and all(map(operator.is_, entry[0], inputs)):
        bound, kernel = entry[1], entry[3]
        note_kernel(kernel)
        for i, o in enumerate(outs, len(inputs)):
            bound.rebind_same(i, o)
    else:
        kernel = row_kernel_for(key, build)
        bound = kernel.function(name).bind(*inputs, *outs, 0, rows)
    bound()
    calls[slot] = (inputs, bound, rows, kernel)


def _again(t: Tensor, slot: Any, pos: np.ndarray, val: np.ndarray, out_size: int, dtype: Any = None
           ) -> np.ndarray | None:
    """The output of the prepared call a lean one-operand op kept on ``t`` under ``slot`` (:func:`run_rows`),
    run again on a fresh output of ``out_size`` values: the repeat call skips the format, type and kernel
    checks, which passed when the call was prepared. None when ``t`` has none for the buffers ``pos``/``val``
    (then the checks run). ``dtype``: the output's (default: the values')."""
    calls = t.__dict__.get("_prepared_calls")
    if calls is None:
        return None
    entry = calls.pop(slot, None)
    if entry is None:
        return None
    inputs = entry[0]
    if inputs[0] is not pos or inputs[1] is not val:
        return None  # other buffers now: dropped, prepared again
    out = np.empty(out_size, val.dtype if dtype is None else dtype)
    note_kernel(entry[3])
    entry[1].run_fresh(2, out)
    calls[slot] = entry
    return out


def merge_buffers(op: str, a: tuple[np.ndarray, np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray, np.ndarray],
                  elem: str, kind: str, width: int, minor: int, holder: Tensor | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pos, crd, values) of ``a op b`` for two (pos, crd, values) compressed matrices with the same number of
    rows, merged row by row. One chunk below :data:`MERGE_PARALLEL_MIN` entries: the output buffers are views
    of the used part of ``np.empty`` buffers of the bound ``nnz(A) + nnz(B)`` (``min`` of them for the
    intersection; the tail is never paged in);
    row chunks on every core above it. A union's chunks start at their exact offsets (the rows before each
    are counted first, :func:`_union_starts`), so they write the result in place; an intersection's chunks
    write from their bound's offset and are moved down after the chunks before (none when no row before it
    lost entries). ``minor``: the extent of the merged dimension (a union's coordinates are clamped below it)."""
    a_pos, a_crd, a_val = a
    b_pos, b_crd, b_val = b
    idx = np.dtype(f"int{width}")
    types = [index_type(x) for x in (a_pos, a_crd, b_pos, b_crd)] + [f"i{width}", f"i{width}"]
    if op == "mul":
        key: tuple = ("intersect", elem, *types)
        build = lambda: intersect_rows.build(elem, kind, *types)  # noqa: E731 - built once per key
    else:
        key = ("merge", op, elem, *types)
        build = lambda: merge_rows.build(op, elem, kind, *types)  # noqa: E731 - built once per key
    outer = len(a_pos) - 1
    if len(a_crd) > len(a_val):  # (spare coordinate capacity) the kernels clamp ranges to the coordinates
        a_crd = a_crd[:len(a_val)]
    if len(b_crd) > len(b_val):
        b_crd = b_crd[:len(b_val)]
    # slots: a union holds at most both rows' entries, an intersection the shorter row's (the kernels keep
    # every write inside them whatever the positions hold: ends clamped here to the coordinates' lengths)
    a_end, b_end = int(a_pos[-1]), int(b_pos[-1])
    if not (0 <= a_end <= len(a_crd) and 0 <= b_end <= len(b_crd)):
        a_end, b_end = min(max(a_end, 0), len(a_crd)), min(max(b_end, 0), len(b_crd))
    bound = min(a_end, b_end) if op == "mul" else a_end + b_end
    c_pos = np.empty(outer + 1, idx)
    c_pos[0] = 0
    crd, val = np.empty(bound, idx), np.empty(bound, a_val.dtype)
    if bound < (INTERSECT_PARALLEL_MIN if op == "mul" else MERGE_PARALLEL_MIN) or outer <= 1 or cpu_count() == 1:
        small = holder if bound <= PREPARED_MAX else None
        inputs = (a_pos, a_crd, a_val, b_pos, b_crd, b_val, _top(minor))
        run_rows(key, build, "merge", small, inputs, (c_pos, crd, val), outer)
        end = int(c_pos[-1]) if op != "mul" else _join_chunks(crd, val, c_pos, a, b, (0, outer))
        return c_pos, crd[:end], val[:end]
    bounds = summed_bounds(a_pos, b_pos, cpu_count())  # balanced by both operands' entries
    kernel = row_kernel_for(key, build)
    union = op != "mul"
    if union:  # count the rows before each chunk: every chunk writes at its exact offset
        starts = _union_starts(kernel, a_pos, a_crd, b_pos, b_crd, c_pos, bounds)
    kernel([a_pos, a_crd, a_val, b_pos, b_crd, b_val, _top(minor), c_pos, crd], val, bounds, "merge")
    if union and any(int(c_pos[r]) != start for r, start in starts.items()):
        # each chunk ends where the count put the next one's start, unless positions changed in place
        raise ValueError(f"{op}: an operand's row positions are not non-decreasing (changed in place since "
                         "they were checked?); rebuild the matrix from valid buffers")
    end = int(c_pos[-1]) if union else _join_chunks(crd, val, c_pos, a, b, bounds)
    return c_pos, crd[:end], val[:end]


_TOPS: dict[int, np.ndarray] = {}  # extent -> the union kernel's one-entry ``top`` argument (largest coordinate)


def _top(extent: int) -> np.ndarray:
    """``[extent - 1]`` as a read-only int64 array, one per extent."""
    got = _TOPS.get(extent)
    if got is None:
        if len(_TOPS) > 256:
            _TOPS.clear()
        got = _TOPS[extent] = np.array([extent - 1], np.int64)
        got.flags.writeable = False  # ours, shared by calls: the kernel only reads it
    return got


def _join_chunks(crd: np.ndarray, val: np.ndarray, c_pos: np.ndarray, a: tuple[np.ndarray, ...],
                 b: tuple[np.ndarray, ...], bounds: tuple[int, ...]) -> int:
    """Join the chunks an intersection wrote from their bound's offsets (``min(a_pos[r0], b_pos[r0])``,
    :func:`_intersection_start`) in place: each chunk moved down to the end of the ones before (no move when no
    row before lost entries against its shorter operand row, e.g. equal patterns), its positions shifted;
    returns the number of entries. ``a``, ``b``: the operands' (positions, coordinates)."""
    end = 0
    cap = min(crd.size, val.size)
    for r0, r1 in zip(bounds, bounds[1:]):
        if r1 <= r0:
            continue
        lo, hi = _intersection_start(a, b, r0, cap), int(c_pos[r1])
        if lo != end:
            _move_down(crd, lo, hi, end)
            _move_down(val, lo, hi, end)
            c_pos[r0 + 1:r1 + 1] -= lo - end
        end += hi - lo
    return end


def _intersection_start(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...], r0: int, cap: int) -> int:
    """The slot from which the intersection kernel writes the chunk of rows from ``r0``, as the kernel takes
    it: ``min(a_pos[r0], b_pos[r0])``, each position clamped (unsigned, as the kernel does) into its
    coordinates' length and the result into the output's ``cap`` slots, so a chunk is found where the kernel
    put it whatever the positions hold."""
    def clamped(pos: np.ndarray, crd: np.ndarray) -> int:
        p = int(pos[r0])
        return len(crd) if p < 0 else min(p, len(crd))
    return min(clamped(a[0], a[1]), clamped(b[0], b[1]), cap)


def _union_starts(kernel: Any, a_pos: np.ndarray, a_crd: np.ndarray, b_pos: np.ndarray, b_crd: np.ndarray,
                  c_pos: np.ndarray, bounds: tuple[int, ...]) -> dict[int, int]:
    """Set ``c_pos[r]`` to the union's size of rows ``[0, r)`` at every chunk start ``r`` of ``bounds``: the
    rows before the last chunk are counted (``@union_count``) in pieces on every core, each piece's running
    counts starting from 0, then summed across pieces. ``@merge``'s chunks read their start there; the chunk
    before one writes the same value there when it ends. Returns ``{r: c_pos[r]}``."""
    starts = sorted({r for r in bounds[1:-1] if 0 < r < bounds[-1]})
    if not starts:
        return {}
    last = starts[-1]
    pieces = summed_bounds(a_pos[:last + 1], b_pos[:last + 1], cpu_count())
    kernel([a_pos, a_crd, b_pos, b_crd], c_pos, pieces, "union_count")
    spans = []  # (first row, last row, union size of the rows before the first) of each non-empty piece
    before = 0
    for p0, p1 in zip(pieces, pieces[1:]):
        if p1 > p0:
            spans.append((p0, p1, before))
            before += int(c_pos[p1])
    for r in starts:  # each start reads only its own running count: set it in place
        base = next(before for p0, p1, before in spans if p0 < r <= p1)
        c_pos[r] = base + int(c_pos[r])
    return {r: int(c_pos[r]) for r in starts}


def _move_down(buf: np.ndarray, lo: int, hi: int, to: int) -> None:
    """``buf[to:to + hi - lo] = buf[lo:hi]`` for ``to < lo`` (overlapping ranges) with C's ``memmove``: numpy's
    slice assignment copies overlapping ranges through a temporary (2-4x slower on a 130 MB join)."""
    if not (0 <= to <= lo <= hi <= buf.size and buf.flags.c_contiguous):
        raise ValueError(f"merge join: bad move [{lo}, {hi}) -> {to} in a buffer of {buf.size}")
    size = buf.itemsize
    base = buf.ctypes.data
    ctypes.memmove(base + to * size, base + lo * size, (hi - lo) * size)


def _view(x: Any, what: str) -> Tensor | None:
    """The validated CSR/CSC view of ``x``: a Tensor, or a SciPy CSR/CSC object's remembered view (made on its
    first call); None for other operands."""
    tx = type(x)
    if tx is Tensor:
        if x.tensor_format not in _COMPRESSED:
            return None
        t = operand(x, what)
        check_cpu(t, what)
        return t
    if tx.__name__ in _SCIPY_TYPES and tx.__module__.startswith("scipy.sparse"):
        view = shared_view(x)
        if view is None:  # first sight of these buffers: wrapped, validated and remembered once
            view = operand(x, what)
            check_cpu(view, what)
        return view if view.tensor_format in _COMPRESSED else None
    return None


def _package(a: Any, b: Any) -> str | None:
    """:func:`frontend.ops._operands.result_package` of two operands :func:`_view` took (SciPy objects or
    Tensors): None (Tensor results) when either is a Tensor, else ``"scipy"``."""
    return None if type(a) is Tensor or type(b) is Tensor else "scipy"


def _buffers(t: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    pos, crd, val = t._pos[1], t._crd[1], t.val
    if not (type(pos) is type(crd) is type(val) is np.ndarray and val.flags.c_contiguous):
        return None
    if pos.dtype.kind != "i" or crd.dtype.kind != "i":
        return None
    return pos, crd, val


def fast_binary(op: str, a: Any, b: Any) -> Any:
    """``a op b`` (``add``/``sub``/``mul``) of two CSR or two CSC operands of one shape and value type through
    the merge kernel, in the callers' package; None when the general path must run."""
    va = _view(a, "a")
    if va is None:
        return None
    vb = _view(b, "b")
    if vb is None or vb.tensor_format != va.tensor_format or va.ndim != 2 or vb.shape != va.shape:
        return None
    ba, bb = _buffers(va), _buffers(vb)
    if ba is None or bb is None or ba[2].dtype != bb[2].dtype or ba[2].dtype not in _ELEMS:
        return None
    elem, kind = _ELEMS[ba[2].dtype]
    width = out_width([va, vb])
    it = np.dtype(f"int{width}")
    minor = va.shape[1] if va.tensor_format == NamedFormats.CSR else va.shape[0]
    pos, crd, val = merge_buffers(op, ba, bb, elem, kind, width, minor, va)
    package = _package(a, b)
    if package == "scipy":  # straight into scipy: sorted and duplicate-free by construction
        kind = "csr_array" if va.tensor_format == NamedFormats.CSR else "csc_array"
        return canonical_compressed(kind, val, crd, pos, va.shape)
    out = Tensor(va.tensor_format, va.shape, [None, pos], [None, crd], val, index_type=it, package="numpy")
    return to_caller_package(out, package)


def rowsum_parallel_min(entries: int, rows: int) -> int:
    """The stored entries from which row sums over ``rows`` rows holding ``entries`` run on every core
    (:data:`ROWSUM_PARALLEL_MIN`)."""
    return next(least for longest, least in ROWSUM_PARALLEL_MIN if entries <= rows * longest)


def fast_rowsum(a: Any, axis: Any) -> Any:
    """``sum(a, axis)`` of a CSR ``a`` along its rows (``axis=1``) or a CSC ``a`` along its columns
    (``axis=0``) through the row-sum kernel, in the callers' package; None when the general path must run."""
    if type(axis) is not int:
        return None
    t = _view(a, "a")
    if t is None or t.ndim != 2:
        return None
    slot = ("rowsum", axis)
    pos, val = t._pos[1], t.val
    out = _again(t, slot, pos, val, len(pos) - 1, _INT64 if val.dtype is _INT32 else None
                 ) if type(pos) is np.ndarray else None
    if out is not None:
        return out if type(a) is not Tensor else to_caller_package(out, None)
    want = NamedFormats.CSR if axis in (1, -1) else NamedFormats.CSC if axis in (0, -2) else None
    bufs = _buffers(t)
    if t.tensor_format != want or bufs is None or bufs[2].dtype not in _ELEMS:
        return None
    pos, _, val = bufs
    elem, kind = _ELEMS[val.dtype]
    acc, out_dtype = _SUMMED[val.dtype]
    p = index_type(pos)
    key = ("rowsum", elem, p, acc)
    build = lambda: row_sum.build(elem, kind, p, acc)  # noqa: E731 - built once per key
    rows = len(pos) - 1
    out = np.empty(rows, out_dtype)
    if val.size < rowsum_parallel_min(val.size, rows) or rows <= 1 or cpu_count() == 1:
        run_rows(key, build, "rowsum", t if val.size <= PREPARED_MAX else None, (pos, val), (out,), rows, slot)
    else:
        bounds = balanced_bounds(pos, cpu_count())
        row_kernel_for(key, build)([pos, val], out, bounds, "rowsum")
    return out if type(a) is not Tensor else to_caller_package(out, None)


def softmax_values(pos: np.ndarray, val: np.ndarray, logarithm: bool, chunks: int | None = None,
                   holder: Tensor | None = None, slot: Any = None) -> np.ndarray:
    """The values of the softmax (``logarithm``: log-softmax) over each row's stored values of a compressed
    matrix with positions ``pos`` (int32/int64) and C-contiguous f32/f64 values ``val``, through the row
    softmax kernel (:mod:`lowering.kernels.row_softmax`): on ``chunks`` row chunks (None: every core from
    :data:`ROW_PARALLEL_MIN` entries, else one). ``holder``, ``slot``: see :func:`run_rows`."""
    elem, p = _FLOATS[val.dtype], index_type(pos)
    key = ("softmax", elem, p, logarithm)
    build = lambda: row_softmax.build(elem, p, logarithm)  # noqa: E731 - built once per key
    rows = len(pos) - 1
    n = chunks if chunks is not None else cpu_count() if val.size >= ROW_PARALLEL_MIN else 1
    out = np.empty(val.shape, val.dtype)
    if n <= 1 or rows <= 1:
        run_rows(key, build, "main", holder if val.size <= PREPARED_MAX else None, (pos, val), (out,), rows, slot)
        return out
    return row_kernel_for(key, build)([pos, val], out, balanced_bounds(pos, n))


def fast_softmax(a: Any, axis: Any, logarithm: bool) -> Any:
    """``softmax(a, axis)`` (``logarithm``: ``log_softmax``) of a CSR ``a`` along its rows (``axis=1``) or a CSC
    ``a`` along its columns (``axis=0``) through the row softmax kernel, in the callers' package; the result
    shares ``a``'s index buffers (same pattern). None when the general path must run."""
    if type(axis) is not int:
        return None
    t = _view(a, "a")
    if t is None or t.ndim != 2:
        return None
    slot = ("softmax", axis, logarithm)
    pos, crd, val = t._pos[1], t._crd[1], t.val
    out = _again(t, slot, pos, val, val.size) if type(val) is np.ndarray else None
    if out is None:
        want = NamedFormats.CSR if axis in (1, -1) else NamedFormats.CSC if axis in (0, -2) else None
        bufs = _buffers(t)
        if t.tensor_format != want or bufs is None or bufs[2].dtype not in _FLOATS or bufs[0].itemsize not in (4, 8):
            return None
        out = softmax_values(pos, val, logarithm, holder=t, slot=slot)
    want = t.tensor_format
    package = _package(a, a)
    if package == "scipy":  # the input's pattern: sorted and duplicate-free
        return canonical_compressed("csr_array" if want == NamedFormats.CSR else "csc_array", out, crd, pos, t.shape)
    res = Tensor(t.tensor_format, t.shape, list(t._pos), list(t._crd), out, index_type=t.index_type, package="numpy")
    return to_caller_package(res, package)
