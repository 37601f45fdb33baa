"""Reading one element: the stored value at given dimension coordinates, or ``None``.

Descends the levels from the root keeping the candidate positions whose coordinates match (more than
one only under nonunique levels); a segment is scanned only for the parents on the path.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import LevelFormat, num_batch_levels

from ._layout import structured_groups, to_host, unpack_gaps
from ._protocol import StoredTensor
from ._read import Positions, delta_coordinates, ranges, segment_bounds


def _check_index(t: StoredTensor, index: Sequence[int]) -> list[int]:
    idx = [index] if isinstance(index, (int, np.integer)) else list(index)
    if len(idx) != t.ndim:
        raise ValueError(f"get_value needs {t.ndim} coordinates, got {len(idx)}")
    out = []
    for d, (x, size) in enumerate(zip(idx, t.shape)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"coordinate {d} must be an int, got {x!r}")
        if not 0 <= int(x) < size:
            raise IndexError(f"coordinate {int(x)} out of range for dimension {d} of extent {size}")
        out.append(int(x))
    return out


def get_value(t: StoredTensor, index: Sequence[int]) -> Any:
    """The value stored at ``index`` (a Python scalar; padding zeros count as stored) or ``None``."""
    fmt = t.tensor_format
    lvl = [int(c) for c in fmt.dim2lvl(_check_index(t, index))]
    ext, off = t.levels, fmt.diagonal_offset(t.shape)
    val = to_host(t.val)
    if fmt.is_dense:
        return val[tuple(c - o for c, o in zip(lvl, off))].item()
    nb = num_batch_levels(fmt)
    b = tuple(lvl[:nb])
    cands = np.zeros(1, dtype=np.int64)
    for k in range(nb, fmt.num_levels):
        lv, c, e, o, f = fmt.levels[k], lvl[k], int(ext[k]), int(off[k]), fmt.levels[k].format
        crd = None if t._crd[k] is None else to_host(t._crd[k])[b]
        if crd is not None and f is LevelFormat.DELTA:
            crd = unpack_gaps(crd, lv.bits)  # type: ignore[arg-type]
        if lv.is_dense_like or f is LevelFormat.RANGE:
            cands = cands * e + (c - o)
        elif f is LevelFormat.SINGLETON:
            cands = cands[crd[cands] == c]  # type: ignore[index]
        elif f is LevelFormat.STRUCTURED:
            n, m = lv.structure  # type: ignore[misc]
            per = structured_groups(lv, e) * n
            slots = (cands[:, None] * per + (c // m) * n + np.arange(n)).ravel()
            cands = slots[crd[slots] == c % m]  # type: ignore[index]
        else:
            lo, hi = segment_bounds(lv, to_host(t._pos[k])[b], Positions(len(cands), cands))
            idx = ranges(lo, hi - lo)
            raw = crd[idx]  # type: ignore[index]
            coords = delta_coordinates(raw, hi - lo) if f is LevelFormat.DELTA else raw
            cands = idx[coords == c]
        if len(cands) == 0:
            return None
    stored = val[b].reshape(-1)[cands]
    return stored.sum().item() if len(stored) > 1 else stored[0].item()
