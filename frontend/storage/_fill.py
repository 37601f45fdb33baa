"""How many value slots a padded target stores, counted before anything is allocated, and the limit on them.

Formats that pad (DELTA's gap entries, DIA's and skew-DIA's diagonal fill, BSR's and BSC's block fill, ELL's
row padding, n:m's empty slots) may store far more slots than the entries they hold: a DELTA(8) row whose
first entry lies at column 200000 stores ~780 padding entries, DIA of a scattered ``n x n`` matrix up to
``(2n - 1) n`` slots.  Every builder counts the slots before it allocates them (the level builder from the
sorted level coordinates, the conversion kernels in their counting pass, DIA from the diagonals present) and
calls :func:`slot_check`, which refuses them past :func:`fill_limit` or past what the index type addresses.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from frontend.format import LevelFormat as F, TensorFormat, stores_padding

#: Default ``max_fill``: at most 16 value slots per stored entry (BSR((4, 4)) of scattered entries still fits;
#: DELTA(8) of a 2-D Poisson matrix, ~390 slots per entry, does not) ...
MAX_FILL = 16.0
#: ... or 2**20 slots more than the entries (8 MiB of float64), so that small matrices convert to any format.
FILL_SLACK = 1 << 20
#: The default ``max_fill`` of a DELTA target: no more padding entries than stored entries (a DELTA(8) slot
#: with its gap is 9 bytes of float64; twice the entries already move more bytes than CSR's 12 per entry).
DELTA_MAX_FILL = 2.0


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
    """ValueError when ``slots`` value slots for ``nnz`` stored entries exceed :func:`fill_limit` (a DELTA
    target under the default ``max_fill``: :data:`DELTA_MAX_FILL`)."""
    bits = _delta_bits(fmt)
    if bits is not None and max_fill == MAX_FILL:
        max_fill = DELTA_MAX_FILL
    limit = fill_limit(nnz, max_fill)
    if limit is None or max_fill is None or slots <= limit:
        return
    ratio = f"{slots / nnz:.1f}x" if nnz else "no entries"
    why = "" if bits is None else (
        f"; {slots - nnz} of them padding entries: a delta row's first gap counts from column 0 and every gap "
        f"over {(1 << bits) - 1} takes a padding entry, so more padding than entries moves more bytes than CSR")
    wider = "" if bits is None or bits >= 32 else ", a wider DELTA(bits)"
    raise ValueError(
        f"converting to {_named(fmt)} would store {slots} value slots "
        f"(padding included) for {nnz} stored entries ({ratio}), over the limit of {limit} slots "
        f"= max({float(max_fill):g} x entries, entries + {FILL_SLACK}){why}; pass a larger max_fill, or "
        f"max_fill=None for no limit, or choose a format that stores no padding (CSR, CSC, COO, DCSR){wider}")


def _delta_bits(fmt: TensorFormat) -> int | None:
    """The bit width of ``fmt``'s delta level, None when it has none."""
    return next((lv.bits for lv in fmt.levels if lv.format is F.DELTA), None)


def _named(fmt: TensorFormat) -> str:
    """``fmt``'s name and levels, e.g. ``DELTA8 (i, j) -> (i : dense, j : delta(8))``."""
    return f"{fmt.name} {fmt}" if getattr(fmt, "name", None) else str(fmt)


def slot_check(fmt: TensorFormat, nnz: int, max_fill: float | None, index: Any = None
               ) -> Callable[[int], None] | None:
    """What a builder calls with the number of value slots it is about to allocate for ``nnz`` entries in
    ``fmt``: :func:`check_fill`, and a ValueError when positions of the integer type ``index`` cannot address
    them; None when ``fmt`` never pads."""
    if not may_pad(fmt):
        return None

    def check(slots: int) -> None:
        check_fill(fmt, slots, nnz, max_fill)
        if index is not None and slots > np.iinfo(index).max:
            raise ValueError(f"converting to {_named(fmt)} would store {slots} value slots (padding included), "
                             f"more than {np.dtype(index)} positions address; use index_type=np.int64")
    return check
