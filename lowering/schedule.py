"""How a CPU contraction runs, chosen from cheap statistics of its stored operand.

The frontend measures :class:`OperandStats` from the stored operand's buffers at plan time and calls
:func:`choose_schedule`; the :class:`Schedule` it gets says the inner-loop width of the kernel
(``Contraction.lanes``: part of the compiled code, hence of cache keys) and how many chunks of rows the
frontend runs on its thread pool, split by stored entries or by rows. The thresholds below come from
measurements written down in ``docs/performance.md``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .emitter.kernel import row_parallel, walked_index

if TYPE_CHECKING:
    from .contraction import Contraction

#: Vector lanes over dense columns (SpMM: 8 f64 = one AVX-512 register; the output row's chunks stay in
#: registers).
WIDE_LANES = 8
#: Partial sums of reductions over long rows (hide the add latency; 8 and 16 were slower: remainders).
MID_LANES = 4
#: Reductions over stored entries run a scalar loop below this mean row length (the unrolled loop's
#: remainder and final combine cost more than they save), :data:`MID_LANES` partial sums from it on.
LONG_ROW = 16
#: ``threads=None`` (auto) uses every core from this much work on (stored entries times the dense
#: columns each one multiplies, plus the output's rows); below it one thread: handing a chunk to another
#: thread cost ~35 us, one thread does ~0.55 ns per unit of work, so a second thread pays from ~2 x 35 us.
AUTO_MIN_WORK = 1 << 17
#: Level formats below the row level whose position buffer lets the frontend balance chunks by entries.
_POSITIONED = {"compressed", "loose_compressed", "delta"}


@dataclass(frozen=True)
class OperandStats:
    """Row statistics of the stored (walked) operand, measured by the frontend from its buffers."""

    rows: int               # outer (row) extent of the walked operand (for batched: batch * rows)
    cols: int
    nnz: int                # stored entries (padding included)
    row_max: int            # longest row (entries)
    row_mean: float
    row_cv: float           # std / mean of row lengths (0 when rows == 0 or mean == 0)
    bandwidth: float        # mean |col - row| over entries / max(cols, 1) (0 = diagonal, ~0.33 uniform random)


@dataclass(frozen=True)
class Schedule:
    """The chosen variant: inner-loop ``lanes`` (compiled code), ``threads`` chunks split by ``"nnz"``
    or ``"rows"`` (how the frontend runs it) and the ``reason`` in one line (``Matmul.info``)."""

    lanes: int
    threads: int
    split: str
    reason: str

    def code_key(self) -> tuple:
        """The part that changes compiled code (cache keys): ``(lanes,)``."""
        return (self.lanes,)


def _free_extent(c: Contraction, w: int) -> int:
    """Product of the extents of the letters the stored operand does not bind (dense columns of SpMM)."""
    bound = set(c.subscripts[w])
    size = 1
    seen: set[str] = set()
    for s, t in zip(c.subscripts + (c.output_subscripts,), c.inputs + (c.output,)):
        for ch, n in zip(s, t.shape):
            if ch not in bound and ch not in seen:
                seen.add(ch)
                size *= int(n)
    return size


def _split(c: Contraction, w: int) -> str:
    """``"nnz"`` when the level under the walked operand's row level has positions, else ``"rows"``."""
    fmt = c.inputs[w].fmt
    levels = fmt.levels[1:2] if fmt is not None else []
    return "nnz" if any(lv.format.value in _POSITIONED for lv in levels) else "rows"


def _lanes(c: Contraction, w: int, stats: OperandStats | None) -> tuple[int, str]:
    free = _free_extent(c, w)
    if free > 1:
        if free >= WIDE_LANES:
            return WIDE_LANES, f"{free} dense columns: {WIDE_LANES}-lane vectors"
        return 1, f"{free} dense columns < {WIDE_LANES}: scalar"
    if _split(c, w) == "rows":  # no positions under the rows (DIA's range walk): vectors run along the rows
        return WIDE_LANES, f"walk over rows without positions: {WIDE_LANES} lanes along the rows"
    if stats is None:
        return 1, "no stats: scalar"
    if stats.row_mean >= LONG_ROW:
        return MID_LANES, f"rows avg {stats.row_mean:.1f} >= {LONG_ROW}: {MID_LANES} partial sums"
    return 1, f"rows avg {stats.row_mean:.1f} < {LONG_ROW}: scalar"


def _threads(c: Contraction, w: int, stats: OperandStats | None, cores: int,
             threads: int | str | None) -> tuple[int, str]:
    if threads == 1:
        return 1, "threads=1"
    if not row_parallel(c):
        return 1, "not row-parallel: 1 thread"
    if threads is not None and threads != "auto":
        n = int(threads)
        if stats is not None:
            n = max(1, min(n, stats.rows))
        return n, f"threads={threads}: {n} threads"
    if cores <= 1:
        return 1, "1 core"
    if stats is None:
        return 1, "no stats: 1 thread"
    work = stats.nnz * _free_extent(c, w) + stats.rows
    if work < AUTO_MIN_WORK:
        return 1, f"work {work} < {AUTO_MIN_WORK}: 1 thread"
    n = max(1, min(cores, stats.rows))
    return n, f"work {work} >= {AUTO_MIN_WORK}: {n} threads"


def choose_schedule(c: Contraction, stats: OperandStats | None, cores: int,
                    threads: int | str | None) -> Schedule:
    """The schedule of ``c`` on ``cores`` cores. ``threads``: the user's option (None or ``"auto"`` =
    auto, 1 = off, n = exactly n chunks); ``stats``: the stored operand's (None: unknown)."""
    try:
        w = walked_index(c)
    except ValueError:
        return Schedule(WIDE_LANES, 1, "rows", "no single stored operand: default vector width, 1 thread")
    lanes, why_lanes = _lanes(c, w, stats)
    n, why_threads = _threads(c, w, stats, cores, threads)
    split = _split(c, w)
    tail = f" by {split}" if n > 1 else ""
    return Schedule(lanes, n, split, f"{why_lanes}; {why_threads}{tail}")
