"""Compiled conversion kernels (:mod:`lowering.kernels.convert`, compiled once per buffer layout through
``mlir_bridge``'s cache) run in ranges of rows, one range per core when the work is large enough.

Each entry point is one or two passes over the entries in compiled code: a transpose (per-range column
counts, then a counting sort), row pointers of sorted COO, row coordinates of CSR, CSR -> BSR (rows of a
block row merged by block column, blocks sorted), BSR -> CSR and DIA -> CSR (nonzeros inside the shape only).
Index buffers are int32 or int64; values of every numeric dtype are moved as raw words (:func:`supports`).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import numpy as np

from lowering.kernels.convert import Layout, block_module, compile_kernels, dia_module, module, nm_module

_INDEX = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
#: Entries (or slots) below which a kernel runs on one thread: a chunk handed to a worker costs a few us.
PARALLEL_WORK = 1 << 17
#: The row expansion only streams 4-8 bytes per entry out: one thread is as fast up to ~8M entries here
#: (5M-entry CSR -> COO: 2.2 ms on one thread, 3.9 ms on two; benchmarks/bench_convert.py --suite).
EXPAND_SHARE = 64
#: DIA -> CSR runs on one thread below ~8M slots: later ranges may move back over the zeros dropped before
#: them (docs/performance.md, "Tuning constants").
DIA_SHARE = 64
#: Most diagonals with a kernel of their own (``dia_rows_<s><z><nd>``: offsets loaded once, the rows whose
#: every slot lies inside walked by a straight-line row, unchecked); more take the checked loop.
DIA_UNROLL_MAX = 16
#: ... from this many slots (rows x diagonals): each diagonal count is a module of its own (~0.4 s to compile
#: once, then on disk), worth it where the checked loop's extra ~0.5 ns a slot adds up.
DIA_UNROLL_MIN_SLOTS = 1 << 18
#: Bucketed transpose: entries per bucket (its counting sort stays in L2) and most buckets (write streams).
BUCKET_ENTRIES = 1 << 14
MAX_BUCKETS = 1 << 11
#: The direct counting sort while its column cursors stay in L2 (``SCATTER_COLUMNS``) or rows span few columns
#: (``SCATTER_SPAN``), the bucketed one otherwise (docs/performance.md, "Tuning constants").
SCATTER_COLUMNS = 1 << 16
SCATTER_SPAN = 1 << 14
SPAN_SAMPLE = 4096
#: BSR -> CSR in one pass (values read once) when this share of sampled block slots is nonzero.
FULL_BLOCKS = 0.9
#: n:m patterns with a kernel of their own (constants: loops unrolled); others take the general kernel.
CONST_NM = frozenset({(1, 2), (2, 4), (4, 8), (1, 4)})


class InvalidRows(ValueError):
    """The rows' positions or coordinates are not valid (out of range, not increasing): index buffers
    written in place after validation. The kernel that found it read and wrote in bounds only."""


def _rows_checked(bad: np.ndarray) -> None:
    """Raises :class:`InvalidRows` where a count pass flagged its rows."""
    if bad.any():
        raise InvalidRows("the positions or coordinates of the rows are out of range or not increasing")


def _empty_minor(n_minor: int, ptr: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The transpose of rows without columns (no entry can be addressed: none is kept)."""
    return np.zeros(n_minor + 1, dtype=ptr.dtype), np.zeros(0, dtype=ptr.dtype), np.zeros(0, dtype=val.dtype)


def layout(values: np.dtype, index: np.dtype) -> Layout | None:
    """The kernels' buffer layout for values of ``values`` and indices of ``index``; None if unsupported."""
    values, index = np.dtype(values), np.dtype(index)
    ity = _INDEX.get(index)
    if ity is None or values.kind not in "biufc" or values.itemsize > 16:
        return None
    lanes = 2 if values.kind == "c" else 1
    bits = values.itemsize * 8 // lanes
    if bits not in (8, 16, 32, 64):
        return None
    return Layout(ity, bits, lanes, values.kind in "fc")


def supports(values: np.dtype, index: np.dtype) -> bool:
    """Whether the kernels take values of dtype ``values`` with indices of dtype ``index``."""
    return layout(values, index) is not None


@cache
def _functions(lay: Layout) -> Any:
    return compile_kernels(module(lay))


@cache
def _nm_functions(lay: Layout, n: int, m: int) -> Any:
    return compile_kernels(nm_module(lay, n, m))


@cache
def _block_functions(lay: Layout, r: int, c: int) -> Any:
    return compile_kernels(block_module(lay, r, c))


@cache
def _dia_functions(lay: Layout, nd: int) -> Any:
    return compile_kernels(dia_module(lay, nd))


#: Bytes of scratch kept between calls (the transposes' per-range counts, the bucketed transpose's bucket
#: columns): fresh memory costs a page fault per page on first touch, which under memory pressure costs
#: more than the pass itself. Outputs are never taken from here.
SCRATCH_KEEP = 1 << 26
_scratch_lock = threading.Lock()
_scratch_free: list[np.ndarray] = []


def _take_scratch(nbytes: int) -> np.ndarray:
    """A uint8 buffer of at least ``nbytes`` (a kept one when one is large enough, else new); give it back
    with :func:`_give_scratch`. Never shared between two holders."""
    with _scratch_lock:
        fits = [k for k, b in enumerate(_scratch_free) if b.nbytes >= nbytes]
        if fits:
            return _scratch_free.pop(min(fits, key=lambda k: _scratch_free[k].nbytes))
    return np.empty(max(nbytes, 1), dtype=np.uint8)


def _give_scratch(buf: np.ndarray) -> None:
    """Keeps ``buf`` for later calls while the kept total stays within ``SCRATCH_KEEP`` (largest first)."""
    if buf.nbytes > SCRATCH_KEEP:
        return
    with _scratch_lock:
        _scratch_free.append(buf)
        _scratch_free.sort(key=lambda b: -b.nbytes)
        while sum(b.nbytes for b in _scratch_free) > SCRATCH_KEEP:
            _scratch_free.pop()


def _scratch_view(buf: np.ndarray, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """The first bytes of ``buf`` as an array of ``shape`` and ``dtype``."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    return buf[:size].view(dtype).reshape(shape)


def _words(val: np.ndarray, lay: Layout) -> np.ndarray:
    """``val`` as the kernels' raw words (a view)."""
    return np.ascontiguousarray(val).reshape(-1).view(f"i{lay.bits // 8}")


def _threads(work: int) -> int:
    if work < PARALLEL_WORK:
        return 1
    from frontend.ops._threads import cpu_count
    return cpu_count()


def _run(calls: list[Callable[[], Any]]) -> None:
    """Run the calls, on the pool when there are several."""
    if len(calls) <= 1:
        for call in calls:
            call()
        return
    from frontend.ops._threads import run_chunks
    run_chunks(calls)


def _bounds(offsets: np.ndarray, n: int) -> list[tuple[int, int]]:
    """Non-empty ranges of rows with near-equal entries (``offsets``: cumulative entries per row)."""
    if n == 1:
        return [(0, len(offsets) - 1)]
    from frontend.ops._threads import balanced_bounds
    b = balanced_bounds(offsets, n)
    return [(lo, hi) for lo, hi in zip(b, b[1:]) if hi > lo] or [(0, 0)]


def _prefix_sums(ptr: np.ndarray) -> np.ndarray:
    """``ptr`` with counts at ``ptr[1:]`` turned into offsets (``ptr[0] = 0``), in place."""
    ptr[0] = 0
    np.cumsum(ptr[1:], out=ptr[1:])
    return ptr


def _bucket_shift(n_minor: int, nnz: int) -> int:
    """log2 of the columns per bucket of the bucketed transpose: about ``BUCKET_ENTRIES`` entries per bucket
    (its sort stays in the cache), at most ``MAX_BUCKETS`` buckets (one write stream each in pass 1)."""
    buckets = min(MAX_BUCKETS, max(1, nnz // BUCKET_ENTRIES))
    return min(16, max(0, (max(n_minor - 1, 1) // buckets).bit_length()))


def scattered(ptr: np.ndarray, idx: np.ndarray, n_minor: int) -> bool:
    """Whether a transpose's scatter would miss the cache: more than ``SCATTER_COLUMNS`` columns whose
    cursors the direct counting sort keeps, and rows spanning more than ``SCATTER_SPAN`` columns on average
    (one write stream per column in flight; over ``SPAN_SAMPLE`` evenly spaced rows)."""
    n = len(ptr) - 1
    if n_minor <= SCATTER_COLUMNS or n == 0 or len(idx) < PARALLEL_WORK:
        return False
    rows = np.linspace(0, n - 1, min(n, SPAN_SAMPLE)).astype(np.int64)
    a, b = (np.clip(ptr[x].astype(np.int64), 0, len(idx)) for x in (rows, rows + 1))
    full = b > a
    if not full.any():
        return False
    span = idx[b[full] - 1].astype(np.int64) - idx[a[full]]
    return float(span.mean()) > SCATTER_SPAN


def transpose_bucketed(n_major: int, n_minor: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
                       shift: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`transpose` in two cache-friendly passes: entries scattered by column bucket (``2**shift``
    columns) into a scratch copy, then every bucket sorted by column inside the cache. Row ranges run the
    first pass in parallel, bucket ranges the second."""
    lay = layout(val.dtype, ptr.dtype)
    assert lay is not None and idx.dtype == ptr.dtype and len(val) >= len(idx)
    if n_minor == 0:
        return _empty_minor(n_minor, ptr, val)
    fns = _functions(lay)
    shift = _bucket_shift(n_minor, len(idx)) if shift is None else shift
    nb = max(1, -(-n_minor // (1 << shift)))
    ranges = _bounds(ptr, _threads(len(idx)))
    counts = np.zeros((len(ranges), nb), dtype=ptr.dtype)
    bad = np.zeros((len(ranges), 1), dtype=np.int8)
    count = fns.function("bucket_count")
    _run([partial(count, ptr, idx, counts[k], bad[k], lo, hi, shift, n_minor) for k, (lo, hi) in enumerate(ranges)])
    _rows_checked(bad)
    nnz = int(counts.sum(dtype=np.int64))  # what the fill writes: the entries the count pass walked
    flat = counts.T.reshape(-1)  # bucket-major, range-minor: each range's first slot in each bucket
    starts = np.empty(len(flat) + 1, dtype=np.int64)
    starts[0] = 0
    np.cumsum(flat, out=starts[1:])
    cursors = starts[:-1].reshape(nb, len(ranges)).T.astype(ptr.dtype, order="C")  # a copy: pass 1 moves them
    bstart = starts[::len(ranges)].astype(ptr.dtype)  # nb + 1 bucket starts
    out_ptr = np.empty(n_minor + 1, dtype=ptr.dtype)
    out_ptr[n_minor] = nnz
    out_idx = np.empty(nnz, dtype=ptr.dtype)
    out_val = np.empty(nnz, dtype=val.dtype)
    held = _take_scratch(2 * nnz)
    tcol = _scratch_view(held, (nnz,), np.int16)  # each entry's column inside its bucket
    words, out_words = _words(val, lay), _words(out_val, lay)
    try:
        scatter = fns.function("bucket_scatter")
        _run([partial(scatter, ptr, idx, words, cursors[k], out_idx, out_words, tcol, lo, hi, shift, n_minor)
              for k, (lo, hi) in enumerate(ranges)])
        if n_minor:
            branges = _bounds(bstart, len(ranges))
            big = int(np.diff(bstart).max(initial=0))
            srow = np.empty((len(branges), max(big, 1)), dtype=ptr.dtype)
            sval = np.empty((len(branges), max(big, 1) * lay.lanes), dtype=out_words.dtype)
            cur = np.empty((len(branges), 1 << shift), dtype=ptr.dtype)
            sort = fns.function("bucket_sort")
            _run([partial(sort, bstart, tcol, out_ptr, out_idx, out_words, srow[k], sval[k], cur[k], lo, hi,
                          shift, n_minor) for k, (lo, hi) in enumerate(branges) if hi > lo])
    finally:
        del tcol
        _give_scratch(held)
    return out_ptr, out_idx, out_val


def transpose(n_major: int, n_minor: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries grouped by major coordinate regrouped by minor coordinate (stable: majors stay increasing).
    Each range of rows counts its columns, then scatters from its own offsets (so ranges run in parallel)."""
    if scattered(ptr, idx, n_minor):
        return transpose_bucketed(n_major, n_minor, ptr, idx, val)
    lay = layout(val.dtype, ptr.dtype)
    assert lay is not None and idx.dtype == ptr.dtype and len(val) >= len(idx)
    if n_minor == 0:
        return _empty_minor(n_minor, ptr, val)
    fns = _functions(lay)
    ranges = _bounds(ptr, _threads(len(idx)))
    held = _take_scratch(len(ranges) * n_minor * ptr.dtype.itemsize)
    counts = _scratch_view(held, (len(ranges), n_minor), ptr.dtype)
    counts.fill(0)
    try:
        return _transpose_direct(fns, lay, n_minor, ptr, idx, val, ranges, counts)
    finally:
        del counts
        _give_scratch(held)


def _transpose_direct(fns: Any, lay: Layout, n_minor: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
                      ranges: list[tuple[int, int]], counts: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The direct counting sort of :func:`transpose` (``counts``: zeroed, one row of columns per range)."""
    bad = np.zeros((len(ranges), 1), dtype=np.int8)
    count = fns.function("transpose_count")
    _run([partial(count, ptr, idx, counts[k], bad[k], lo, hi, n_minor) for k, (lo, hi) in enumerate(ranges)])
    _rows_checked(bad)
    out_ptr = np.empty(n_minor + 1, dtype=ptr.dtype)
    fns.function("transpose_offsets")(counts.reshape(-1), out_ptr, len(ranges), n_minor)  # counts -> cursors
    nnz = int(out_ptr[-1])  # what the fill writes: the entries the count pass walked
    cursors = counts
    out_idx = np.empty(nnz, dtype=ptr.dtype)
    out_val = np.empty(nnz, dtype=val.dtype)
    words, out_words = _words(val, lay), _words(out_val, lay)
    fill = fns.function("transpose_fill")
    _run([partial(fill, ptr, idx, words, cursors[k], out_idx, out_words, lo, hi, n_minor)
          for k, (lo, hi) in enumerate(ranges)])
    return out_ptr, out_idx, out_val


def expand(ptr: np.ndarray) -> np.ndarray:
    """The major coordinate of every entry of rows ``ptr`` (dtype of ``ptr``)."""
    lay = layout(np.dtype(np.int8), ptr.dtype)
    assert lay is not None
    n = len(ptr) - 1
    nnz = int(ptr[-1]) if n >= 0 else 0
    out = np.empty(nnz, dtype=ptr.dtype)
    fn = _functions(lay).function("expand")
    _run([partial(fn, ptr, out, lo, hi) for lo, hi in _bounds(ptr, _threads(nnz // EXPAND_SHARE))])
    return out


def coo_pointers(n: int, majors: np.ndarray, others: np.ndarray, m: int | None = None) -> np.ndarray | None:
    """Row pointers (``n + 1``, dtype of ``majors``) of COO entries sorted by (major, other) without
    duplicates; None when they are not (or a major coordinate is outside ``[0, n)``, or an other one outside
    ``[0, m)``; ``m=None``: no bound)."""
    lay = layout(np.dtype(np.int8), majors.dtype)
    assert lay is not None and others.dtype == majors.dtype
    nnz = len(majors)
    ptr = np.zeros(n + 1, dtype=majors.dtype)
    if nnz == 0:
        return ptr
    k = _threads(nnz)
    cuts = [nnz * j // k for j in range(k + 1)]
    bad = np.zeros((k, 1), dtype=np.int8)
    fn = _functions(lay).function("coo_ptr")
    top = np.iinfo(np.int64).max if m is None else m
    _run([partial(fn, majors, others, ptr, bad[j], cuts[j], cuts[j + 1], n, nnz, top) for j in range(k)])
    return None if bad.any() else ptr


def _inside_before(rows: np.ndarray, d: np.ndarray, m: int, minus: bool) -> np.ndarray:
    """Slots inside ``[0, m)`` of diagonals ``d`` in the rows before each of ``rows`` (other coordinate
    ``d + i`` (``minus``) or ``d - i``): ``(len(rows),)``."""
    r = rows[:, None]
    lo, hi = (np.maximum(0, -d), np.minimum(r, m - d)) if minus else (np.maximum(0, d - m + 1), np.minimum(r, d + 1))
    return np.maximum(hi - lo, 0).sum(axis=1)


def _inside_rows(n: int, m: int, d: np.ndarray, ext_z: int, minus: bool, z_is_row: bool) -> tuple[int, int]:
    """``(ia, ib)``: the rows ``[ia, ib)`` (within ``[0, n)``; empty when ``ia >= ib``) where every diagonal's
    slot lies inside the shape (other coordinate ``d + i`` (``minus``) or ``d - i`` in ``[0, m)``) and inside
    the data (``i`` (``z_is_row``) or the other coordinate below ``ext_z``); ``d``: the int64 offsets."""
    if minus:  # 0 <= d + i < m
        lo, hi = -d, m - d
        if not z_is_row:
            hi = np.minimum(hi, ext_z - d)
    else:  # 0 <= d - i < m
        lo, hi = d - m + 1, d + 1
        if not z_is_row:
            lo = np.maximum(lo, d - ext_z + 1)
    top = min(n, ext_z) if z_is_row else n
    ia = max(0, int(lo.max()))
    return ia, max(ia, min(top, int(hi.min())))


def dia_rows(n: int, m: int, offsets: np.ndarray, val: np.ndarray, ext_z: int, minus: bool, z_is_row: bool,
             index: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``(ptr, idx, val)`` of diagonals: row ``i`` holds (other coordinate ``d + i`` (``minus``) or
    ``d - i``) for every offset ``d`` inside ``[0, m)`` whose value, at ``t * ext_z + (i if z_is_row else
    other)`` of diagonal ``t``, is nonzero. One pass: each row range writes from its first inside slot; ranges
    are moved together afterwards where zeros were dropped."""
    lay = layout(val.dtype, index)
    assert lay is not None
    offsets = np.ascontiguousarray(offsets, dtype=index)
    nd = len(offsets)
    words = _words(val, lay)
    k = _threads(n * nd // DIA_SHARE)
    cuts = np.array([n * j // k for j in range(k + 1)], dtype=np.int64)
    d = offsets.astype(np.int64)
    starts = _inside_before(cuts, d, m, minus)  # slots before each range
    bound = int(starts[-1])
    ptr = np.empty(n + 1, dtype=index)
    ptr[0] = 0
    out_idx = np.empty(bound, dtype=index)
    out_val = np.empty(bound, dtype=val.dtype)
    out_words = _words(out_val, lay)
    fns = _functions(lay)
    name = f"dia_rows_{'m' if minus else 'p'}{'r' if z_is_row else 'o'}"
    mid: tuple[int, ...] = ()
    tail: tuple[int, ...] = ()
    if 0 < nd <= DIA_UNROLL_MAX and n * nd >= DIA_UNROLL_MIN_SLOTS:  # (..., m, extz, start, ia, ib)
        fn, tail = _dia_functions(lay, nd).function(f"{name}{nd}"), _inside_rows(n, m, d, ext_z, minus, z_is_row)
    else:  # (..., nd, m, extz, start)
        fn, mid = fns.function(name), (nd,)
    _run([partial(fn, offsets, words, ptr, out_idx, out_words, int(cuts[j]), int(cuts[j + 1]), *mid, m, ext_z,
                  int(starts[j]), *tail) for j in range(k) if cuts[j + 1] > cuts[j]])
    # close the gaps the dropped zeros left between ranges
    end = _close_gaps(fns, ptr, out_idx, out_words, [int(x) for x in cuts], [int(x) for x in starts[:k]])
    out_idx, out_val = _trimmed(out_idx, out_val, end)
    return ptr, out_idx, out_val


def to_blocks(n: int, m: int, r: int, c: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
              check: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(block pointers, block columns, values (nblocks * r * c))`` of the sorted rows ``ptr``/``idx``/
    ``val`` of an ``n x m`` matrix in ``r x c`` blocks, sorted by block column in every block row;
    ``check`` sees the number of value slots once counted, before they are allocated (it may raise)."""
    lay = layout(val.dtype, ptr.dtype)
    assert lay is not None and idx.dtype == ptr.dtype and len(val) >= len(idx) and len(ptr) == n + 1
    fns = _block_functions(lay, r, c)
    nbr, nbc = -(-n // r), -(-m // c)
    if m == 0:  # no column to address: no entry is kept
        return np.zeros(nbr + 1, dtype=ptr.dtype), np.zeros(0, dtype=ptr.dtype), np.zeros(0, dtype=val.dtype)
    starts = ptr[np.minimum(np.arange(nbr + 1, dtype=np.int64) * r, n)]  # entries before each block row
    ranges = _bounds(starts, _threads(len(idx)))
    marks = np.full((len(ranges), nbc), -1, dtype=ptr.dtype)  # one per range: ranges run in parallel
    bptr = np.empty(nbr + 1, dtype=ptr.dtype)
    count = fns.function("to_blocks_count")
    _run([partial(count, ptr, idx, bptr, marks[k], lo, hi, n, m) for k, (lo, hi) in enumerate(ranges)])
    _prefix_sums(bptr)
    nblocks = int(bptr[-1])
    if check is not None:
        check(nblocks * r * c)
    bidx = np.empty(nblocks, dtype=ptr.dtype)
    bval = np.zeros(nblocks * r * c, dtype=val.dtype)  # fresh zero pages: the kernel writes the entries only
    words, out_words = _words(val, lay), _words(bval, lay)
    marks[:] = -1
    fill = fns.function("to_blocks_fill")
    _run([partial(fill, ptr, idx, words, bptr, bidx, out_words, marks[k], lo, hi, n, m)
          for k, (lo, hi) in enumerate(ranges)])
    return bptr, bidx, bval


def full_blocks(bval: np.ndarray, slots: int) -> bool:
    """Whether the blocks look full (at least ``FULL_BLOCKS`` of ``SPAN_SAMPLE`` evenly spaced slots nonzero):
    then BSR -> CSR writes every slot in one pass into a buffer as large as the blocks (reading the values
    once, not twice)."""
    if slots == 0:
        return False
    flat = np.asarray(bval).reshape(-1)[:slots]
    sample = flat[np.linspace(0, slots - 1, min(slots, SPAN_SAMPLE)).astype(np.int64)]
    return bool(np.count_nonzero(sample) >= FULL_BLOCKS * len(sample))


def _close_gaps(fns: Any, ptr: np.ndarray, idx: np.ndarray, words: np.ndarray, cuts: list[int],
                starts: list[int]) -> int:
    """Moves the rows of every range (rows ``cuts[j] .. cuts[j + 1]``, written from slot ``starts[j]``) down
    to follow the range before; returns the entries. ``ptr`` is shifted with them."""
    end = 0
    for j in range(len(cuts) - 1):
        lo, hi = cuts[j], cuts[j + 1]
        if hi == lo:
            continue
        first, last = starts[j], int(ptr[hi])
        if first != end:
            fns.function("shift_down")(idx, words, first, end, last - first)
            ptr[lo + 1:hi + 1] -= first - end
        end += last - first
    return end


def _trimmed(idx: np.ndarray, val: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``end`` entries: a prefix view when little was dropped, else exact-size copies."""
    bound = len(idx)
    if end < bound:
        idx, val = idx[:end], val[:end]
        if bound - end > end // 8:
            idx, val = idx.copy(), val.copy()
    return idx, val


def _from_full_blocks(fns: Any, lay: Layout, n: int, m: int, r: int, rc: int, bptr: np.ndarray, bidx: np.ndarray,
                      words: np.ndarray, dtype: np.dtype, ranges: list[tuple[int, int]]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BSR -> rows in one pass: each range of block rows from its first block's first slot (``rc`` slots a
    block bound what it writes), then the ranges moved together."""
    bound = len(bidx) * rc
    ptr = np.empty(n + 1, dtype=bptr.dtype)
    ptr[0] = 0
    idx = np.empty(bound, dtype=bptr.dtype)
    val = np.empty(bound, dtype=dtype)
    out_words = _words(val, lay)
    starts = [int(bptr[lo]) * rc for lo, _ in ranges]
    fill = fns.function("from_blocks_rows")
    _run([partial(fill, bptr, bidx, words, ptr, idx, out_words, lo, hi, n, m, starts[k])
          for k, (lo, hi) in enumerate(ranges) if hi > lo])
    cuts = [min(lo * r, n) for lo, _ in ranges] + [min(ranges[-1][1] * r, n)]
    end = _close_gaps(_functions(lay), ptr, idx, out_words, cuts, starts)
    idx, val = _trimmed(idx, val, end)
    return ptr, idx, val


def from_blocks(n: int, m: int, r: int, c: int, bptr: np.ndarray, bidx: np.ndarray, bval: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``(ptr, idx, val)`` of an ``n x m`` matrix stored in sorted ``r x c`` blocks: the nonzero slots
    inside the shape only."""
    lay = layout(bval.dtype, bptr.dtype)
    assert lay is not None and bidx.dtype == bptr.dtype
    fns = _block_functions(lay, r, c)
    assert (len(bptr) - 1) * r >= n, "every row in a block row"
    ranges = _bounds(bptr, _threads(len(bidx) * r * c))
    words = _words(bval, lay)
    if full_blocks(bval, len(bidx) * r * c):
        return _from_full_blocks(fns, lay, n, m, r, r * c, bptr, bidx, words, bval.dtype, ranges)
    ptr = np.empty(n + 1, dtype=bptr.dtype)
    count = fns.function("from_blocks_count")
    _run([partial(count, bptr, bidx, words, ptr, lo, hi, n, m) for lo, hi in ranges])
    _prefix_sums(ptr)
    nnz = int(ptr[-1])
    idx = np.empty(nnz, dtype=bptr.dtype)
    val = np.empty(nnz, dtype=bval.dtype)
    out_words = _words(val, lay)
    fill = fns.function("from_blocks_fill")
    _run([partial(fill, bptr, bidx, words, ptr, idx, out_words, lo, hi, n, m) for lo, hi in ranges])
    return ptr, idx, val


def _delta8_one_pass(fns: Any, lay: Layout, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
                     ranges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """DELTA(8) in one pass when no gap needs padding entries (the positions are ``ptr``'s); None otherwise
    (nothing returned is kept: the caller runs the two passes)."""
    nnz = len(idx)
    if len(ptr) == 0 or int(ptr[0]) != 0 or int(ptr[-1]) != nnz:
        return None
    gaps = np.empty(nnz, dtype=np.uint8)
    out = np.empty(nnz, dtype=val.dtype)
    bad = np.zeros((len(ranges), 1), dtype=np.int8)
    words, out_words = _words(val, lay), _words(out, lay)
    fill = fns.function("delta8_nopad")
    _run([partial(fill, ptr, idx, words, gaps.view(np.int8), out_words, bad[k], lo, hi)
          for k, (lo, hi) in enumerate(ranges)])
    if bad.any():
        return None
    return ptr.copy(), gaps, out


def delta_rows(ptr: np.ndarray, idx: np.ndarray, val: np.ndarray, bits: int, gap_dtype: np.dtype,
               check: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pos, gaps, values)`` of sorted rows in a ``bits``-bit delta level: each column as the gap to the
    previous one minus one (the first: its column), zero entries where a gap exceeds ``2**bits - 1``;
    ``check`` sees the number of entries once counted, before they are allocated (it may raise)."""
    lay = layout(val.dtype, ptr.dtype)
    assert lay is not None and idx.dtype == ptr.dtype and 1 <= bits <= 32
    gap_dtype = np.dtype(gap_dtype)
    fns = _functions(lay)
    ranges = _bounds(ptr, _threads(len(idx)))
    if bits == 8 and gap_dtype.itemsize == 1:
        got = _delta8_one_pass(fns, lay, ptr, idx, val, ranges)
        if got is not None:
            return got
    optr = np.empty(len(ptr), dtype=ptr.dtype)
    count = fns.function("delta_count")
    _run([partial(count, ptr, idx, optr, lo, hi, bits) for lo, hi in ranges])
    total = int(optr[1:].sum(dtype=np.int64))  # the positions' prefix sums must not wrap around
    if check is not None:
        check(total)
    if total > np.iinfo(optr.dtype).max:
        raise ValueError(f"a {bits}-bit delta level of these rows stores {total} entries (padding included), "
                         f"more than {optr.dtype} positions address; use index_type=np.int64")
    _prefix_sums(optr)
    gaps = np.empty(total, dtype=gap_dtype)
    out = np.empty(total, dtype=val.dtype)
    words, out_words = _words(val, lay), _words(out, lay)
    fill = fns.function(f"delta_fill_{gap_dtype.itemsize * 8}")
    signed = gaps.view(f"i{gap_dtype.itemsize}")
    _run([partial(fill, ptr, idx, words, optr, signed, out_words, lo, hi, bits) for lo, hi in ranges])
    return optr, gaps, out


def structured_rows(ptr: np.ndarray, idx: np.ndarray, val: np.ndarray, groups: int, m: int, n: int
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(coordinates, values)`` of sorted rows in an n:m level (``groups`` groups of ``m`` columns per row,
    ``n`` slots each: the group's entries, then its smallest free columns with zeros, increasing); None when
    a group holds more than ``n`` entries."""
    lay = layout(val.dtype, ptr.dtype)
    assert lay is not None and idx.dtype == ptr.dtype
    rows = len(ptr) - 1
    total = rows * groups * n
    ranges = _bounds(ptr, _threads(max(total, len(idx))))
    crd = np.empty(total, dtype=ptr.dtype)
    out = np.empty(total, dtype=val.dtype)
    bad = np.zeros((len(ranges), 1), dtype=np.int8)
    words, out_words = _words(val, lay), _words(out, lay)
    if (n, m) in CONST_NM:  # n and m compiled in: the group loops unrolled
        fill = _nm_functions(lay, n, m).function("nm_fill_const")
        _run([partial(fill, ptr, idx, words, crd, out_words, bad[k], lo, hi, groups)
              for k, (lo, hi) in enumerate(ranges)])
    else:
        fill = _functions(lay).function("nm_fill")
        _run([partial(fill, ptr, idx, words, crd, out_words, bad[k], lo, hi, groups, m, n)
              for k, (lo, hi) in enumerate(ranges)])
    return None if bad.any() else (crd, out)
