"""How a CPU contraction runs, chosen from cheap statistics of its stored operand.

The frontend measures :class:`OperandStats` from the stored operand's buffers at plan time and calls
:func:`choose_schedule`; the :class:`Schedule` it gets says the inner-loop width of the kernel
(``Contraction.lanes``: part of the compiled code, hence of cache keys) and how many chunks of rows the
frontend runs on its thread pool, split by stored entries or by rows. The thresholds below come from
measurements written down in ``docs/performance.md``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from frontend.format import delta_packed
from mlir_bridge.signature import DTYPES

from .emitter.kernel import row_parallel, walked_index

if TYPE_CHECKING:
    from .contraction import Contraction

#: Vector lanes over dense columns (SpMM: 8 f64 = one AVX-512 register; the output row's chunks stay in
#: registers).
WIDE_LANES = 8
#: Partial sums of reductions over long rows (hide the add latency; 8 and 16 were slower: remainders).
MID_LANES = 4
#: Partial sums of unpacked delta rows (DELTA(8)), whose loop takes ``rules.DELTA_SPAN`` = 16 entries a step;
#: bit-packed rows keep :data:`MID_LANES` (docs/performance.md, "Tuning constants").
DELTA_LANES = 8
#: Reductions over stored entries run a scalar loop below this mean row length, :data:`MID_LANES` partial sums
#: from it on (docs/performance.md, "Reductions over rows").
LONG_ROW = 12
#: Plus-times CSR rows shorter than :data:`LONG_ROW` take the gathered walk on stencil-like matrices: x over
#: :data:`X_CACHE_BYTES`, columns on average :data:`STENCIL_COLUMNS` or more from the diagonal but within
#: :data:`STENCIL_BANDWIDTH` of the columns (docs/performance.md, "Gathered CSR rows on stencil-like matrices").
X_CACHE_BYTES = 1 << 20
STENCIL_COLUMNS = 64
STENCIL_BANDWIDTH = 0.01
#: Plus-times CSR rows also take the gathered walk when at least this share of their entries lie in runs of
#: :data:`MID_LANES` consecutive columns, loaded with one vector load each (docs/performance.md, "Runs of
#: consecutive columns").
RUN_SHARE = 0.7
#: ... and long rows (mean >= :data:`LONG_ROW`, spread ``row_cv`` <= :data:`GATHER_ROW_CV`) whose x exceeds
#: :data:`X_CACHE_BYTES` (docs/performance.md, "Long rows with x out of cache").
GATHER_ROW_CV = 1.0
#: ``threads=None`` (auto) uses every core from this much work on (:func:`_work`: stored entries times their
#: vector operations, plus the rows), one thread below it (docs/performance.md, "Threads").
AUTO_MIN_WORK = 1 << 17
#: From this much work on, auto threads split the rows into :data:`CHUNKS_PER_THREAD` chunks per thread, claimed
#: dynamically (docs/performance.md, "Threads: dynamic chunks").
DYNAMIC_MIN_WORK = 1 << 20
CHUNKS_PER_THREAD = 4
#: The fixed-stride walk (every one of an ELLPACK row's K slots, no position loads, K compiled in) from this
#: fill (entries / slots) on: below it the padding slots it multiplies cost more than the loads it saves.
STRIDE_FILL = 0.75
#: ... and up to this many slots per row (K is part of the compiled code: one kernel per K; short rows unroll
#: fully; at K = 33 it gained nothing over the bounded walk: benchmarks/bench_ell.py).
STRIDE_MAX = 16
#: ... and with at most this many dense columns (SpMV: 0.86-0.88x of CSR's time at K = 5 and 9; SpMM with 16
#: columns measured no gain, 0.92-1.10x: the walk's loads are hidden behind the columns' FMAs).
STRIDE_MAX_COLUMNS = 1
#: SpMM's dense operand is copied into a buffer aligned to :data:`REALIGN_BYTES` when it is not and its rows are
#: read often: from a score (entries per dense row x 64 / row bytes) of :data:`REALIGN_FAR` above
#: :data:`REALIGN_SMALL` bytes on spread columns, of :data:`REALIGN_NEAR` below (docs/performance.md, "SpMM's
#: dense operand: realigned to 64 bytes").
REALIGN_BYTES = 64
REALIGN_SMALL = 1 << 20
REALIGN_FAR = 2.0
REALIGN_NEAR = 48.0
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
    stride: int = 0         # K when the row level is loose_compressed with exactly K slots per row (ELLPACK)
    fill: float = 1.0       # entries / slots of that level (1.0: no padding slots)
    runs: float = 0.0       # share of sampled entries in runs: aligned groups of MID_LANES consecutive columns


@dataclass(frozen=True)
class Schedule:
    """The chosen variant: inner-loop ``lanes`` (compiled code), ``threads`` chunks split by ``"nnz"``
    or ``"rows"`` (how the frontend runs it) and the ``reason`` in one line (``Matmul.info``)."""

    lanes: int
    threads: int
    split: str
    reason: str
    stride: int = 0         # Contraction.stride: walk all K slots per row (0: bounded walk)
    chunks: int = 0         # row chunks the threads claim dynamically (0: one per thread)
    gather: bool = False    # Contraction.gather: the gathered walk over the rows' entries
    realign: bool = False   # copy the dense operands into REALIGN_BYTES-aligned buffers where they are not

    def code_key(self) -> tuple:
        """The part that changes compiled code (cache keys): ``(lanes, stride, gather)``."""
        return (self.lanes, self.stride, self.gather)


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
    return "nnz" if any(lv.format.value in _POSITIONED for lv in _under_rows(c.inputs[w].fmt)) else "rows"


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
        if _unpacked_delta(c.inputs[w].fmt):
            why = f"unpacked delta rows avg {stats.row_mean:.1f} >= {LONG_ROW}: {DELTA_LANES} partial sums"
            return DELTA_LANES, why
        return MID_LANES, f"rows avg {stats.row_mean:.1f} >= {LONG_ROW}: {MID_LANES} partial sums"
    return 1, f"rows avg {stats.row_mean:.1f} < {LONG_ROW}: scalar"


def _under_rows(fmt: Any) -> list[Any]:
    """The level under the row level of ``fmt`` (none for row-major operands or rank 1)."""
    return list(fmt.levels[1:2]) if fmt is not None else []


def _unpacked_delta(fmt: Any) -> bool:
    """Whether the level under the rows of ``fmt`` is a delta level of whole-byte gaps."""
    return any(lv.format.value == "delta" and not delta_packed(lv.bits) for lv in _under_rows(fmt))


def _gather(c: Contraction, w: int, stats: OperandStats | None) -> tuple[bool, str]:
    """``(True, why)`` for the gathered walk: plus-times over CSR-like levels (dense, compressed) whose entries
    mostly lie in runs (:data:`RUN_SHARE`), long rows with x out of cache, or scalar-length rows with a
    stencil-like spread of columns and x out of cache (:data:`STENCIL_COLUMNS`)."""
    fmt = c.inputs[w].fmt
    if (stats is None or fmt is None or c.semiring is not None or c.prolog is not None or _free_extent(c, w) > 1
            or [lv.format.value for lv in fmt.levels] != ["dense", "compressed"]
            or c.inputs[w].elem not in _ITEM_BYTES):
        return False, ""
    if stats.runs >= RUN_SHARE and stats.row_mean >= MID_LANES:
        return True, f"{stats.runs:.0%} of entries in runs of {MID_LANES} columns: gathered, runs loaded whole; "
    x_bytes = stats.cols * _ITEM_BYTES[c.inputs[w].elem]
    if stats.row_mean >= LONG_ROW:
        if x_bytes > X_CACHE_BYTES and stats.row_cv <= GATHER_ROW_CV:
            return True, f"x {x_bytes >> 20} MiB out of cache, rows avg {stats.row_mean:.1f} >= {LONG_ROW}: gathered; "
        return False, ""
    if not stats.bandwidth == stats.bandwidth:
        return False, ""
    distance = stats.bandwidth * stats.cols
    if x_bytes > X_CACHE_BYTES and distance >= STENCIL_COLUMNS and stats.bandwidth <= STENCIL_BANDWIDTH:
        return True, f"x {x_bytes >> 20} MiB, columns {distance:.0f} from the diagonal (stencil-like): gathered; "
    return False, ""


_ITEM_BYTES = {"f64": 8, "f32": 4}


def _realign(c: Contraction, w: int, stats: OperandStats | None) -> tuple[bool, str]:
    """``(True, why)`` when SpMM's dense operands should be read from :data:`REALIGN_BYTES`-aligned buffers."""
    free = _free_extent(c, w)
    if stats is None or free < WIDE_LANES or stats.nnz * free < AUTO_MIN_WORK or stats.runs >= RUN_SHARE:
        return False, ""
    dense = [t for i, t in enumerate(c.inputs) if i != w and t.elem in DTYPES]
    if not dense:
        return False, ""
    size = sum(int(np.prod(t.shape)) * DTYPES[t.elem].itemsize for t in dense)
    row_bytes = free * DTYPES[dense[0].elem].itemsize
    score = stats.nnz / max(stats.cols, 1) * min(1.0, REALIGN_BYTES / row_bytes)
    far = size > REALIGN_SMALL
    if score < (REALIGN_FAR if far else REALIGN_NEAR) or (far and stats.bandwidth <= STENCIL_BANDWIDTH):
        return False, ""
    return True, f"; dense operand read from {REALIGN_BYTES}-byte-aligned memory (score {score:.0f})"


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
    work = _work(c, w, stats)
    if work < AUTO_MIN_WORK:
        return 1, f"work {work} < {AUTO_MIN_WORK}: 1 thread"
    n = max(1, min(cores, stats.rows))
    return n, f"work {work} >= {AUTO_MIN_WORK}: {n} threads"


def _work(c: Contraction, w: int, stats: OperandStats) -> int:
    """Stored entries times the vector operations each one costs over the dense columns it multiplies
    (``ceil(columns / WIDE_LANES)`` from :data:`WIDE_LANES` columns on, where the columns are vectorized;
    else one per column), plus the output's rows: SpMM x16 on pyamg's bar (23k entries) took 36 us on one
    thread, 0.77 ns per vector operation, near SpMV's 0.55 ns per entry, where counting every column
    (374k units) put it on 2 threads and made it 1.4x slower (52 us)."""
    free = _free_extent(c, w)
    per_entry = -(-free // WIDE_LANES) if free >= WIDE_LANES else free
    return stats.nnz * per_entry + stats.rows


def _chunks(c: Contraction, w: int, stats: OperandStats | None, n: int, threads: int | str | None) -> int:
    """Row chunks for ``n`` auto threads: :data:`CHUNKS_PER_THREAD` per thread from :data:`DYNAMIC_MIN_WORK`
    on (claimed dynamically), else one per thread (0); forced ``threads=n`` keeps exactly n chunks."""
    if n <= 1 or stats is None or (threads is not None and threads != "auto"):
        return 0
    if _work(c, w, stats) < DYNAMIC_MIN_WORK:
        return 0
    return max(n, min(n * CHUNKS_PER_THREAD, stats.rows))


def _stride(c: Contraction, w: int, stats: OperandStats | None) -> tuple[int, str]:
    """``(K, why)`` for the fixed-stride walk, or ``(0, "")``: the walked operand's level under its dense row
    levels is ``loose_compressed`` with exactly K slots per row (measured), near-full short rows, a reduction
    (SpMV-like), plus-times with no prolog on it (semirings keep the bounded walk)."""
    fmt = c.inputs[w].fmt
    if fmt is None or stats is None or not stats.stride:
        return 0, ""
    k = next((i for i, lv in enumerate(fmt.levels) if lv.format.value != "dense"), len(fmt.levels))
    if k < 1 or k >= len(fmt.levels) or fmt.levels[k].format.value != "loose_compressed":
        return 0, ""
    if c.semiring is not None or (c.prolog is not None and w == 0):
        return 0, ""
    if stats.fill < STRIDE_FILL or stats.stride > STRIDE_MAX or _free_extent(c, w) > STRIDE_MAX_COLUMNS:
        return 0, ""
    return stats.stride, f"fixed stride {stats.stride}, fill {stats.fill:.2f}: K slots, one position load; "


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
    chunks = _chunks(c, w, stats, n, threads)
    tail = f" by {split}" if n > 1 else ""
    if chunks:
        tail += f", {chunks} chunks claimed dynamically"
    stride, why_stride = _stride(c, w, stats)
    gather, why_gather = _gather(c, w, stats)
    if gather:
        lanes, why_lanes = MID_LANES, f"{MID_LANES} lanes"
    realign, why_realign = _realign(c, w, stats)
    return Schedule(lanes, n, split, f"{why_stride}{why_gather}{why_lanes}; {why_threads}{tail}{why_realign}",
                    stride, chunks, gather, realign)
