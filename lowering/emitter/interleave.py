"""Rows of a delta level walked together: independent gap-decode chains that overlap (CPU only).

A DELTA row's coordinates are a running sum of its gaps, so one row's walk is a chain of dependent
adds feeding the ``x`` loads: the core waits on it. ``walk_rows`` walks :data:`ROWS` rows at once (a
``dense`` level over the output's rows above an unpacked ``delta`` level, reduced per row): their common
length :data:`UNROLL_PER_ROW` entries of each row per iteration (:data:`PARTS_PER_ROW` partial sums each,
one prefetch per row), then each row's rest through the ordinary delta rule (:func:`.rules.delta_span`);
rows left over when the count is not a multiple of :data:`ROWS` go through the ordinary walk. Off by
default (:data:`ROWS` = 1; :func:`set_rows` turns it on): measured slower than one row at a time on 8192^2
f32 DELTA(8) SpMV at 50% (docs/performance.md, "DELTA against dense GEMV").
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from frontend.format import delta_packed

from . import rules as _rules
from .builder import Carry, Value
from .rules import clamp_coordinate, delta_coord, delta_prefetcher, delta_span, entry_range, rule_for

#: Rows decoded together (independent running coordinates); below 2 (the default) off: it measured slower
#: through LLVM (docs/performance.md, "Tuning constants").
ROWS = 1
#: Entries of each row per iteration of the common loop (each with its own partial sum).
UNROLL_PER_ROW = 8
#: Partial sums per row (the entries of an iteration take them in turn).
PARTS_PER_ROW = 4



def set_rows(rows: int) -> None:
    """Walk ``rows`` rows of a delta SpMV together from now on (1: one at a time, the default); plan caches
    see the change (:func:`.rules.generation`)."""
    global ROWS
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ValueError(f"rows must be a positive int, got {rows!r}")
    ROWS = rows
    _rules.touch()


Entry = Callable[[int, Value, Value, Carry, int], Carry]


def applies(ctx: Any, carry_level: int, skip_zeros: Value | None) -> bool:
    """Whether the walk in ``ctx`` is a per-row reduction over an unpacked delta level under one dense
    level of plain rows (CSR-like DELTA SpMV, CPU: ``ctx.values`` set for prefetching), with the
    built-in rules and no padding skipped, gathers or batch levels."""
    if ROWS < 2 or len(ctx.fmt.levels) != 2 or carry_level != 1 or skip_zeros is not None or ctx.values is None:
        return False
    if ctx.num_batch or ctx.unroll_level != 1 or ctx.gather_level is not None or ctx.reduction is None:
        return False
    top, low = ctx.level(0), ctx.level(1)
    if top.format.value != "dense" or rule_for("dense") is not _rules.dense or ctx.offsets[0] != 0:
        return False
    if low.format.value != "delta" or rule_for("delta") is not _rules.delta or delta_packed(low.bits):
        return False
    return all(r.kind == "plain" and not r.guard for r in ctx.plan[0] + ctx.plan[1])


def walk_rows(ctx: Any, visitor: Any, entry: Entry, walk_rest: Callable[[], object]) -> None:
    """Emit the grouped walk over the rows of ``ctx.rows`` (all rows when None): groups of :data:`ROWS`
    rows (an ``scf.parallel`` when level 0 is the walk's parallel level), then the rows left over through
    ``walk_rest()`` (the ordinary walk, run with ``ctx.rows`` set to them). ``entry(k, pos, coord, carry,
    lanes)``: the walker's handler of one stored entry (resolves level ``k`` and calls the visitor)."""
    b = ctx.b
    lo, hi = ctx.rows if ctx.rows is not None else (b.index(0), b.index(ctx.extents[0]))
    n = b.max(b.sub(hi, lo), b.index(0))
    mid = b.add(lo, b.sub(n, b.op(f"arith.remui {n}, {b.index(ROWS)} : index", "index", "i")))

    def group(i: Value) -> None:
        _group(ctx, visitor, entry, i)

    if ctx.parallel_level == 0:
        b.parallel_step(lo, mid, b.index(ROWS), group)
    else:
        b.loop(lo, mid, b.index(ROWS), group)
    saved = ctx.rows, ctx.parallel_level
    ctx.rows, ctx.parallel_level = (mid, hi), None
    walk_rest()
    ctx.rows, ctx.parallel_level = saved


def _group(ctx: Any, visitor: Any, entry: Entry, first: Value) -> None:
    """Rows ``first .. first + ROWS``: their common length interleaved, then each row's rest."""
    b, pos = ctx.b, ctx.args[1].pos
    rows = [b.add(first, b.index(r)) for r in range(ROWS)]
    bounds = [b.load_index(pos, ctx.at(b.add(first, b.index(r)))) for r in range(ROWS + 1)]
    clamped = [entry_range(ctx, 1, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]  # bounds-safe rows
    starts, ends = [lo for lo, _ in clamped], [hi for _, hi in clamped]
    dims = []
    for row in rows:
        _at_row(ctx, row)
        dims.append(dict(ctx.dims))
    accs0 = [visitor.begin(d) for d in dims]  # one accumulator each (ctx.reduction: a per-row reduction)
    common = b.sub(ends[0], starts[0])
    for r in range(1, ROWS):
        common = b.min(common, b.sub(ends[r], starts[r]))
    common = b.max(common, b.index(0))
    u, na = UNROLL_PER_ROW, min(PARTS_PER_ROW, UNROLL_PER_ROW)
    main = b.sub(common, b.op(f"arith.remui {common}, {b.index(u)} : index", "index", "i"))
    identity, combine = ctx.reduction
    fetch = delta_prefetcher(ctx, 1, 1)
    init = [b.index(_rules.DELTA_START)] * ROWS
    for r in range(ROWS):
        init += [accs0[r][0]] + [identity() for _ in range(na - 1)]

    def step(t: Value, c: Carry) -> Carry:
        runs, accs = list(c[:ROWS]), list(c[ROWS:])
        at = [b.add(starts[r], t) for r in range(ROWS)]
        if fetch is not None:
            for p in at:
                fetch(p)
        for k in range(u):
            for r in range(ROWS):
                p = b.add(at[r], b.index(k))
                runs[r] = delta_coord(ctx, 1, runs[r], p)
                if r % 2:
                    runs[r] = _opaque(b, runs[r])
                _at_row(ctx, rows[r])
                a = r * na + k % na
                accs[a] = entry(1, p, clamp_coordinate(ctx, 1, runs[r]), [accs[a]], 1)[0]
        return runs + accs

    res = b.for_(b.index(0), main, b.index(u), init, step)
    for r in range(ROWS):
        parts = res[ROWS + r * na: ROWS + (r + 1) * na]
        acc = parts[0]
        for part in parts[1:]:
            acc = combine(acc, part)
        row = rows[r]

        def inner(p: Value, coord: Value, c: Carry, lanes: int, row: Value = row) -> Carry:
            _at_row(ctx, row)
            return entry(1, p, coord, c, lanes)

        out = delta_span(ctx, 1, b.add(starts[r], main), ends[r], res[r], [acc], inner)
        visitor.end(dims[r], out[1:])


def _opaque(b: Any, v: Value) -> Value:
    """``v`` through an empty inline-asm register constraint: no instruction, but LLVM's SLP vectorizer
    cannot pair the rows' isomorphic coordinate chains into 2-lane integer vectors (which it did: 8192^2
    f32 DELTA(8), one thread, 18.0 ms against 13.4 for one row at a time)."""
    wide = b.op(f"arith.index_cast {v} : index to i64", "i64", "i")
    held = b.op(f'llvm.inline_asm "", "=r,0" {wide} : (i64) -> i64', "i64", "i")
    return b.op(f"arith.index_cast {held} : i64 to index", "index", "i")


def _at_row(ctx: Any, row: Value) -> None:
    """Make ``row`` the current coordinate of level 0 (what the visitor sees in ``ctx.dims``)."""
    ctx.lvl[0] = row
    ctx.resolve(0)
