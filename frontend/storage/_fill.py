"""How many value slots a padded target stores, counted before anything is allocated, and the limit on them.

Formats that pad (DELTA's gap entries, DIA's and skew-DIA's diagonal fill, BSR's and BSC's block fill, ELL's
row padding, n:m's empty slots) may store far more slots than the entries they hold: a DELTA(8) row whose
first entry lies at column 200000 stores ~780 padding entries, DIA of a scattered ``n x n`` matrix up to
``(2n - 1) n`` slots.  A conversion counts the slots first (:func:`level_slots` from sorted level coordinates,
:func:`delta_slots` from sorted rows, or a kernel's counting pass) and :func:`check_fill` refuses it when they
exceed :func:`fill_limit`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from frontend.format import Level, LevelFormat as F, TensorFormat, stores_padding

from ._assemble import _changes
from ._layout import structured_groups

#: Default ``max_fill``: at most 16 value slots per stored entry (BSR((4, 4)) of scattered entries still fits;
#: DELTA(8) of a 2-D Poisson matrix, ~390 slots per entry, does not) ...
MAX_FILL = 16.0
#: ... or 2**20 slots more than the entries (8 MiB of float64), so that small matrices convert to any format.
FILL_SLACK = 1 << 20


def may_pad(fmt: TensorFormat) -> bool:
    """Whether converting to ``fmt`` can store more value slots than entries (all-dense targets excluded:
    their size is the shape the caller asked for)."""
    if fmt.is_dense:
        return False
    return stores_padding(fmt) or any(lv.format is F.LOOSE_COMPRESSED for lv in fmt.levels)


def fill_limit(nnz: int, max_fill: float | None) -> int | None:
    """The most value slots a conversion of ``nnz`` entries may store: ``max(max_fill * nnz, nnz + FILL_SLACK)``;
    None (no limit) when ``max_fill`` is None."""
    if max_fill is None:
        return None
    if isinstance(max_fill, bool) or not isinstance(max_fill, (int, float, np.integer, np.floating)):
        raise TypeError(f"max_fill must be a number (value slots per stored entry) or None, got {max_fill!r}")
    if not max_fill > 0:
        raise ValueError(f"max_fill must be positive (value slots per stored entry) or None, got {max_fill!r}")
    return max(int(float(max_fill) * nnz), nnz + FILL_SLACK)


def check_fill(fmt: TensorFormat, slots: int, nnz: int, max_fill: float | None) -> None:
    """ValueError when ``slots`` value slots for ``nnz`` stored entries exceed :func:`fill_limit`."""
    limit = fill_limit(nnz, max_fill)
    if limit is None or max_fill is None or slots <= limit:
        return
    ratio = f"{slots / nnz:.1f}x" if nnz else "no entries"
    raise ValueError(
        f"converting to {_named(fmt)} would store {slots} value slots "
        f"(padding included) for {nnz} stored entries ({ratio}), over the limit of {limit} slots "
        f"= max({float(max_fill):g} x entries, entries + {FILL_SLACK}); pass a larger max_fill, or max_fill=None "
        f"for no limit, or choose a format that stores no padding (CSR, CSC, COO, DCSR)")


def _named(fmt: TensorFormat) -> str:
    """``fmt``'s name and levels, e.g. ``DELTA8 (i, j) -> (i : dense, j : delta(8))``."""
    return f"{fmt.name} {fmt}" if getattr(fmt, "name", None) else str(fmt)


def level_slots(levels: Sequence[Level], extents: Sequence[int], offsets: Sequence[int],
                coords: Sequence[np.ndarray]) -> int:
    """Value slots :func:`frontend.storage._assemble.assemble_levels` stores for entries given as level
    coordinates sorted lexicographically (without duplicates for unique formats); only small arrays
    are allocated."""
    n = len(coords[0]) if len(coords) else 0
    nparents = 1
    new = np.zeros(n, dtype=bool)  # entry starts a new position at the current level
    new[:1] = True
    par = np.zeros(n, dtype=np.int64)  # position among the dense levels above (while only dense levels seen)
    dense_above = True
    for k, lv in enumerate(levels):
        e, off, f, c = int(extents[k]), int(offsets[k]), lv.format, coords[k]
        starts = new | _changes(c)
        if lv.is_dense_like or f is F.RANGE:
            if dense_above:
                par = par * e + (c - off)
            nparents *= e
        elif f is F.LOOSE_COMPRESSED and k and dense_above:  # ELL: the longest row's length in every row
            cnt = np.bincount(par[starts], minlength=nparents) if n else np.zeros(1, dtype=np.int64)
            nparents *= int(cnt.max()) if len(cnt) else 0
        elif f in (F.COMPRESSED, F.LOOSE_COMPRESSED):
            nparents = int(np.count_nonzero(starts)) if lv.unique else n
        elif f is F.DELTA:
            assert lv.bits is not None  # a delta level always has a width
            sc = c[starts]
            prev = np.empty_like(sc)
            prev[:1] = -1
            prev[1:] = sc[:-1]
            prev[new[starts]] = -1  # the first entry of a parent: its gap is its coordinate
            nparents = len(sc) + int(((sc - prev - 1) >> lv.bits).sum())
        elif f is F.STRUCTURED:
            nparents *= structured_groups(lv, e) * lv.structure[0]  # type: ignore[index]
        dense_above = dense_above and (lv.is_dense_like or f is F.RANGE)
        new = starts
    return nparents


def delta_slots(ptr: np.ndarray, idx: np.ndarray, bits: int) -> int:
    """Slots of a ``bits``-bit delta level holding sorted rows ``ptr``/``idx``: one per entry plus one
    padding entry per ``2**bits`` columns of every gap (the first gap of a row is its first column)."""
    nnz = int(ptr[-1]) - int(ptr[0]) if len(ptr) else 0
    if nnz == 0:
        return 0
    c = np.asarray(idx[int(ptr[0]):int(ptr[-1])], dtype=np.int64)
    prev = np.empty_like(c)
    prev[0] = -1
    prev[1:] = c[:-1]
    firsts = np.asarray(ptr[:-1], dtype=np.int64)
    firsts = firsts[np.asarray(ptr[1:]) > np.asarray(ptr[:-1])] - int(ptr[0])
    prev[firsts] = -1
    gap = c - prev  # a new array: ``c`` may be the caller's buffer
    gap -= 1
    gap >>= bits
    return nnz + int(gap.sum())
