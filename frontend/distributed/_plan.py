"""Planning on the client (NumPy only): row blocks balanced by stored entries, and which vector entries each
block needs from which other block (the halo), computed once per partitioning."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frontend.ops._stats import balanced_bounds


def row_bounds(indptr: np.ndarray, partitions: int) -> tuple[int, ...]:
    """``partitions + 1`` row boundaries of near-equal stored entries, every block at least one row."""
    rows = len(indptr) - 1
    if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
        raise ValueError(f"partitions must be a positive int, got {partitions!r}")
    if partitions > rows:
        raise ValueError(f"partitions={partitions} exceeds the matrix's {rows} rows (each partition holds at "
                         "least one row)")
    b = np.array(balanced_bounds(np.asarray(indptr, dtype=np.int64), int(partitions)), dtype=np.int64)
    for k in range(1, partitions):           # at least one row per block: push forward, then back
        b[k] = max(b[k], b[k - 1] + 1)
    for k in range(partitions - 1, 0, -1):
        b[k] = min(b[k], b[k + 1] - 1)
    return tuple(int(v) for v in b)


@dataclass(frozen=True)
class Halo:
    """What block ``p`` of a square system needs: its local columns' values come from its own rows
    (``own_src`` local rows -> ``own_pos`` local columns) and from other blocks (``recv``: block q, the
    positions the values fill); ``send[q]`` are ``p``'s local rows block q needs, in q's order."""

    own_src: np.ndarray
    own_pos: np.ndarray
    recv: tuple[tuple[int, np.ndarray], ...]
    send: dict[int, np.ndarray]

    @property
    def received(self) -> int:
        """Vector entries this block receives per exchange."""
        return sum(len(pos) for _, pos in self.recv)


def halo_plan(bounds: tuple[int, ...], cols: list[np.ndarray]) -> list[Halo]:
    """The halo of every block: ``cols[p]`` are block p's (sorted, global) local columns."""
    starts = np.asarray(bounds[:-1])
    n = len(cols)
    recv: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n)]
    send: list[dict[int, np.ndarray]] = [{} for _ in range(n)]
    own: list[tuple[np.ndarray, np.ndarray]] = []
    for p, c in enumerate(cols):
        owner = np.searchsorted(starts, c, side="right") - 1
        own_pos = np.flatnonzero(owner == p)
        own.append((c[own_pos] - bounds[p], own_pos))
        for q in np.unique(owner):
            if q == p:
                continue
            pos = np.flatnonzero(owner == q)
            recv[p].append((int(q), pos))
            send[int(q)][p] = c[pos] - bounds[int(q)]
    return [Halo(own[p][0], own[p][1], tuple(recv[p]), send[p]) for p in range(n)]
