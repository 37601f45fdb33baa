"""Vectorized checks that package buffers say what their format claims (order, uniqueness, lengths).

They work on NumPy or CuPy arrays (``xp`` is the array module) and raise ``ValueError`` naming the
problem; the cost is O(nnz) without Python loops over entries.
"""
from __future__ import annotations

from typing import Any, Sequence


def lex_strictly_increasing(coords: Sequence[Any], xp: Any) -> bool:
    """Whether the coordinate tuples ``zip(*coords)`` are sorted lexicographically with no repeats."""
    n = int(coords[0].shape[0]) if coords else 0
    if n < 2:
        return True
    greater = xp.zeros(n - 1, dtype=bool)
    equal = xp.ones(n - 1, dtype=bool)
    for c in coords:
        a, b = c[:-1], c[1:]
        greater |= equal & (b > a)
        equal &= b == a
    return bool(greater.all())


def check_sorted_segments(pos: Any, crd: Any, extent: int, xp: Any, what: str) -> None:
    """``pos`` starts at 0, never decreases, ends at ``len(crd)``; each segment of ``crd`` is strictly
    increasing and inside ``[0, extent)``."""
    if pos.shape[0] < 1 or int(pos[0]) != 0:
        raise ValueError(f"{what}: positions must start at 0")
    nnz = int(pos[-1])
    if nnz != crd.shape[0]:
        raise ValueError(f"{what}: positions end at {nnz} but there are {crd.shape[0]} coordinates")
    if pos.shape[0] > 1 and bool((pos[1:] < pos[:-1]).any()):
        raise ValueError(f"{what}: positions decrease")
    if nnz == 0:
        return
    if bool((crd < 0).any()) or bool((crd >= extent).any()):
        raise ValueError(f"{what}: coordinates outside [0, {extent})")
    step_ok = crd[1:] > crd[:-1]
    starts = pos[1:-1]
    starts = starts[(starts > 0) & (starts < nnz)]
    step_ok[starts - 1] = True  # a new segment may start lower
    if not bool(step_ok.all()):
        raise ValueError(f"{what}: coordinates unsorted or repeated within a segment; sort them and sum "
                         "duplicates first")
