"""Reading storage: every stored entry of a level sequence as level coordinates plus its value position.

One generic, vectorized walk over the levels (no loop over entries): a level turns the positions of
its parent level into its own positions and coordinates.  Batch levels are handled by the caller
(one walk per batch); see :mod:`frontend.tensor` for the layout.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from frontend.format import Level, LevelFormat

from ._layout import structured_groups, unpack_gaps

_SEGMENTED = (LevelFormat.COMPRESSED, LevelFormat.LOOSE_COMPRESSED, LevelFormat.DELTA)


@dataclass
class Positions:
    """Positions reached at one level, in storage order: ``index`` (or all of ``0..count-1`` when
    ``index`` is None, which avoids materializing the common full walk)."""

    count: int
    index: np.ndarray | None = None

    def array(self) -> np.ndarray:
        return np.arange(self.count, dtype=np.int64) if self.index is None else self.index

    def __len__(self) -> int:
        return self.count if self.index is None else len(self.index)


def ranges(lo: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[k], lo[k] + lengths[k])`` for every k, vectorized."""
    lengths = lengths.astype(np.int64, copy=False)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(lo.astype(np.int64) - starts, lengths)


def segment_bounds(level: Level, pos: np.ndarray, parents: Positions) -> tuple[np.ndarray, np.ndarray]:
    """``[lo, hi)`` child ranges of the given parents at a compressed, loose or delta level."""
    if level.format is LevelFormat.LOOSE_COMPRESSED:
        lo, hi = pos[0::2], pos[1::2]
    else:
        lo, hi = pos[:-1], pos[1:]
    if parents.index is not None:
        lo, hi = lo[parents.index], hi[parents.index]
    else:
        lo, hi = lo[:parents.count], hi[:parents.count]
    return lo.astype(np.int64, copy=False), hi.astype(np.int64, copy=False)


def delta_coordinates(gaps: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Coordinates of delta-encoded segments: per segment, ``c[0] = g[0]``, ``c[t] = c[t-1] + g[t] + 1``."""
    if len(gaps) == 0:
        return np.zeros(0, dtype=np.int64)
    s = np.cumsum(gaps.astype(np.int64) + 1)
    starts = np.cumsum(lengths) - lengths
    before = np.where(starts > 0, s[np.maximum(starts - 1, 0)], 0)
    return s - np.repeat(before, lengths) - 1


def walk_levels(levels: Sequence[Level], extents: Sequence[int], offsets: Sequence[int],
                pos: Sequence[np.ndarray | None], crd: Sequence[np.ndarray | None]
                ) -> tuple[list[np.ndarray], Positions]:
    """Level coordinates (int64, one array per level) of every entry and the entries' value positions."""
    cur = Positions(1)
    coords: list[np.ndarray] = []
    for k, lv in enumerate(levels):
        if len(cur) == 0:  # no parents, no entries below (and no temporaries the size of a level's extent)
            return [c[:0] for c in coords] + [np.zeros(0, np.int64) for _ in levels[k:]], Positions(0)
        e, off, f = int(extents[k]), int(offsets[k]), lv.format
        if lv.is_dense_like or f is LevelFormat.RANGE:
            coords = [np.repeat(c, e) for c in coords]
            n = len(cur)
            coords.append(np.tile(np.arange(off, off + e, dtype=np.int64), n))
            cur = (Positions(n * e) if cur.index is None else
                   Positions(n * e, (cur.index[:, None] * e + np.arange(e, dtype=np.int64)).ravel()))
        elif f in _SEGMENTED:
            p = pos[k]
            lo, hi = segment_bounds(lv, p, cur)  # type: ignore[arg-type]
            lengths = hi - lo
            coords = [np.repeat(c, lengths) for c in coords]
            contiguous = (cur.index is None and f is not LevelFormat.LOOSE_COMPRESSED
                          and (len(lo) == 0 or int(lo[0]) == 0))
            ck = unpack_gaps(crd[k], lv.bits) if f is LevelFormat.DELTA else crd[k]  # type: ignore[arg-type]
            if contiguous:
                nxt = Positions(int(hi[-1]) if len(hi) else 0)
                raw = ck[:nxt.count]  # type: ignore[index]
            else:
                idx = ranges(lo, lengths)
                nxt = Positions(len(idx), idx)
                raw = ck[idx]  # type: ignore[index]
            c = delta_coordinates(raw, lengths) if f is LevelFormat.DELTA else raw.astype(np.int64, copy=False)
            coords.append(c)
            cur = nxt
        elif f is LevelFormat.SINGLETON:
            c = crd[k][:cur.count] if cur.index is None else crd[k][cur.index]  # type: ignore[index]
            coords.append(c.astype(np.int64, copy=False))
        elif f is LevelFormat.STRUCTURED:
            n_, m = lv.structure  # type: ignore[misc]
            per = structured_groups(lv, e) * n_
            coords = [np.repeat(c, per) for c in coords]
            slots = np.arange(per, dtype=np.int64)
            idx = (cur.array()[:, None] * per + slots).ravel()
            group = np.tile(slots // n_ * m, len(cur))
            coords.append(group + crd[k][idx].astype(np.int64))  # type: ignore[index]
            cur = Positions(len(idx), idx)
        else:  # pragma: no cover - every LevelFormat is handled above
            raise ValueError(f"level {k}: unknown level format {f}")
    return coords, cur
