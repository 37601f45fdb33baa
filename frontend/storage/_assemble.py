"""Writing storage: level buffers from entries given as sorted level coordinates and values.

One generic, vectorized builder: entries come sorted lexicographically by level coordinates (and
without duplicates when the format is unique); each level assigns positions to them from their
parent positions.  Padding (dense expansion, delta gap entries, empty structured slots) is simply
positions no entry lands on: the values buffer starts as zeros.  Batch levels are handled by the caller.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.format import Level, LevelFormat

from ._layout import delta_crd_dtype, pack_gaps, structured_groups


def _changes(c: np.ndarray) -> np.ndarray:
    """``True`` where an entry's coordinate differs from the previous entry's (and at entry 0)."""
    out = np.ones(len(c), dtype=bool)
    if len(c) > 1:
        np.not_equal(c[1:], c[:-1], out=out[1:])
    return out


def _counts(parents: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Positions buffer from the parent of every child (children sorted by parent)."""
    cnt = np.bincount(parents, weights=weights, minlength=n).astype(np.int64)
    return np.concatenate(([0], np.cumsum(cnt)))


def _singleton_run(levels: Sequence[Level], k: int) -> range:
    """Indices of the singleton levels directly after level ``k``."""
    end = k + 1
    while end < len(levels) and levels[end].format is LevelFormat.SINGLETON:
        end += 1
    return range(k + 1, end)


def assemble_levels(levels: Sequence[Level], extents: Sequence[int], offsets: Sequence[int],
                    coords: Sequence[np.ndarray], values: np.ndarray, keep_duplicates: bool,
                    index_type: Any, check: Callable[[int], None] | None = None
                    ) -> tuple[list[np.ndarray | None], list[np.ndarray | None], np.ndarray]:
    """``(pos, crd, values)`` of the levels holding the given entries (sorted by level coordinates);
    ``check`` (it may raise) sees every padded level's number of positions before they are allocated."""
    n = len(values)
    idx_t = np.dtype(index_type)
    par = np.zeros(n, dtype=np.int64)  # position of each entry at the current level
    nparents = 1
    new = np.zeros(n, dtype=bool)      # entry starts a new position at the current level
    new[:1] = True
    diffs = [_changes(c) for c in coords]
    dup = np.zeros(n, dtype=bool)  # entry repeats the previous one (kept only in nonunique formats)
    if keep_duplicates and diffs:
        dup = ~np.logical_or.reduce(diffs)
    pos: list[np.ndarray | None] = [None] * len(levels)
    crd: list[np.ndarray | None] = [None] * len(levels)
    for k, lv in enumerate(levels):
        e, off, f = int(extents[k]), int(offsets[k]), lv.format
        c = coords[k]
        starts = new | diffs[k]
        if lv.is_dense_like or f is LevelFormat.RANGE:
            if lv.stored is not None and len(c) and int(c.max()) - off >= e:
                raise ValueError(f"level {k} ({lv.render()}) stores {e} slots per parent but an entry lies at "
                                 f"coordinate {int(c.max())}; convert to a format without range(n)")
            if nparents == 1:
                par = c - off if off else c.copy()
            else:
                par *= e
                par += c
                if off:
                    par -= off
            nparents *= e
            new = starts
        elif f in (LevelFormat.COMPRESSED, LevelFormat.LOOSE_COMPRESSED):
            if not lv.unique:  # a nonunique level stores its singleton followers' coordinates once each
                for s in _singleton_run(levels, k):
                    starts = starts | diffs[s]
                starts = starts | dup
            if f is LevelFormat.LOOSE_COMPRESSED and k and all(levels[q].is_dense_like for q in range(k)):
                par, nparents, pos[k], crd[k] = _fixed_stride(par, nparents, c, starts, check)
                new = starts
                continue
            every = bool(starts.all())  # one position per entry (COO): no selections needed
            seg = np.arange(n, dtype=np.int64) if every else np.cumsum(starts) - 1
            p = _counts(par if every else par[starts], nparents)
            if f is LevelFormat.LOOSE_COMPRESSED:
                pairs = np.empty(2 * nparents, dtype=np.int64)
                pairs[0::2], pairs[1::2] = p[:-1], p[1:]
                p = pairs
            pos[k], crd[k] = p, c.copy() if every else c[starts]
            par, nparents, new = seg, len(seg) if every else int(seg[-1]) + 1 if n else 0, starts
        elif f is LevelFormat.SINGLETON:
            if nparents == n and new.all():  # parent positions are the entries themselves
                crd[k] = c.copy()
                continue
            if np.any(starts & ~new):
                bad = int(np.argmax(starts & ~new))
                raise ValueError(f"level {k} ({lv.render()}): a singleton level stores one coordinate per "
                                 f"parent, but parent position {int(par[bad])} has several")
            out = np.zeros(nparents, dtype=np.int64)  # parents without entries (padding) get coordinate 0
            out[par[starts]] = c[starts]
            crd[k] = out
        elif f is LevelFormat.DELTA:
            par, nparents, pos[k], crd[k] = _delta(lv, par, nparents, c, starts, check)
            new = starts
        elif f is LevelFormat.STRUCTURED:
            par, nparents, crd[k] = _structured(k, lv, e, par, nparents, c, starts, check)
            new = starts
        else:  # pragma: no cover - every LevelFormat is handled above
            raise ValueError(f"level {k}: unknown level format {f}")
    if nparents == n and new.all():  # every position holds an entry, in order
        out_values = np.array(values, copy=True)
    else:
        if check is not None:
            check(nparents)
        out_values = np.zeros(nparents, dtype=values.dtype)
        np.put(out_values, par, values)  # much faster than fancy assignment into fresh pages
    pos = [None if p is None else p.astype(idx_t, copy=False) for p in pos]
    crd = [c if c is None or levels[k].format is LevelFormat.DELTA else c.astype(idx_t, copy=False)
           for k, c in enumerate(crd)]
    return pos, crd, out_values


def _fixed_stride(par: np.ndarray, nparents: int, c: np.ndarray, starts: np.ndarray,
                  check: Callable[[int], None] | None = None) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """A loose_compressed level under dense levels only (ELLPACK): every parent gets the same number of
    slots ``K`` (the most children of any parent), ``lo_p = p * K`` and ``hi_p = lo_p + children``.
    Unused slots are padding: coordinate 0, value 0 (a kernel may read all ``K`` slots of a row)."""
    sp = par[starts]
    cnt = np.bincount(sp, minlength=nparents).astype(np.int64) if nparents else np.zeros(0, np.int64)
    stride = int(cnt.max()) if len(cnt) else 0
    if check is not None:
        check(nparents * stride)
    first = np.concatenate(([0], np.cumsum(cnt)))[:-1]       # the first child of each parent, packed
    rank = np.arange(len(sp), dtype=np.int64) - first[sp]     # the child's rank within its parent
    slot = sp * stride + rank
    pairs = np.empty(2 * nparents, dtype=np.int64)
    pairs[0::2] = np.arange(nparents, dtype=np.int64) * stride
    pairs[1::2] = pairs[0::2] + cnt
    crd = np.zeros(nparents * stride, dtype=np.int64)
    crd[slot] = c[starts]
    seg = slot[np.cumsum(starts) - 1] if len(starts) else slot
    return seg, nparents * stride, pairs, crd


def _delta(lv: Level, par: np.ndarray, nparents: int, c: np.ndarray, starts: np.ndarray,
           check: Callable[[int], None] | None = None) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """A delta level: gaps to the previous stored coordinate of the parent (minus one), with zero
    padding entries inserted where a gap exceeds ``2**bits - 1`` (bit-packed: ``pack_gaps``)."""
    bits = lv.bits
    assert bits is not None  # a delta level always has a width
    sp, sc = par[starts], c[starts]
    prev = np.empty_like(sc)
    if len(sc):
        prev[0] = -1
        prev[1:] = sc[:-1]
        prev[_changes(sp)] = -1
    gap = sc - prev - 1
    npad = gap >> bits
    width = npad + 1
    real = np.cumsum(width) - 1
    total = int(real[-1]) + 1 if len(real) else 0
    if check is not None:
        check(total)
    gaps = np.full(total, (1 << bits) - 1, dtype=delta_crd_dtype(bits))
    gaps[real] = gap - (npad << bits)
    p = _counts(sp, nparents, weights=width)
    return real[np.cumsum(starts) - 1], total, p, pack_gaps(gaps, bits)


def _structured(k: int, lv: Level, e: int, par: np.ndarray, nparents: int, c: np.ndarray,
                starts: np.ndarray, check: Callable[[int], None] | None = None) -> tuple[np.ndarray, int, np.ndarray]:
    """A structured n:m level: exactly n slots per group of m coordinates, empty slots padded with the
    smallest free in-group coordinates (so coordinates stay increasing in every group)."""
    n, m = lv.structure  # type: ignore[misc]
    groups = structured_groups(lv, e)
    sp, sc = par[starts], c[starts]
    grp, within = sp * groups + sc // m, sc % m
    ngroups = nparents * groups
    if check is not None:
        check(ngroups * n)
    cnt = np.bincount(grp, minlength=ngroups)
    if len(cnt) and int(cnt.max()) > n:
        g = int(np.argmax(cnt > n))
        raise ValueError(f"level {k} ({lv.render()}): group {g % groups} of parent position {g // groups} "
                         f"holds {int(cnt[g])} entries, more than n={n} of every m={m}")
    occ = np.zeros((ngroups, m), dtype=bool)
    occ[grp, within] = True
    free = ~occ
    sel = occ | (free & (np.cumsum(free, axis=1) <= (n - cnt)[:, None]))
    slot = np.cumsum(sel, axis=1) - 1
    real = grp * n + slot[grp, within]
    crd = np.nonzero(sel)[1].astype(np.int64)
    return real[np.cumsum(starts) - 1], ngroups * n, crd
