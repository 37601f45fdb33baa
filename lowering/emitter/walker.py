"""The generic level walker: nested loops over a stored operand's entries, from its format alone.

``walk(b, operand, args, visitor)`` emits, level by level, the rule of each level's format
(:mod:`.rules`), maps level coordinates back to dimension coordinates (:mod:`.plan`: plain, block
``q * size + r``, diagonal) and hands every stored entry to the visitor, which emits the operation.

The visitor (see :class:`Visitor`) chooses where loop-carried accumulators start (``carry_level``), may
accept a vectorized innermost loop (``vectorizable``) and names the dimensions whose iterations write
disjoint outputs (``parallel_dims``: an outer dense level over one of them becomes ``scf.parallel``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from . import interleave as _interleave, rules as _rules
from .builder import Builder, Carry, Value
from .operand import LevelArgs, WalkedOperand
from .padding import nonzero
from .resolution import Resolve, diagonal_parts, known_after, last_level_strides, resolution_plan
from .rules import CONTIGUOUS, gatherable_level, rule_for

#: Lanes of a vectorized innermost loop (a remainder loop handles the rest).
VECTOR_LANES = 8
#: Independent accumulators of an unrolled innermost reduction loop (hides add latency).
UNROLL = 16
#: Bytes of output rows per tile of a diagonal format's range level: the tile's output and input windows stay
#: in L2 (docs/performance.md, "DIA-I row tiles").
RANGE_TILE_BYTES = 1 << 20
#: Fewest rows per tile (wide output rows).
RANGE_TILE_MIN = 1024
#: ``carry_level`` meaning "no loop-carried accumulator" (any value >= the number of levels).
NO_CARRY = 1 << 30


def range_tile(row_bytes: int) -> int:
    """Rows per tile for output rows of ``row_bytes`` (0: unknown, the tile of one f64 per row): a power of
    two, :data:`RANGE_TILE_BYTES` of output at most, :data:`RANGE_TILE_MIN` at least."""
    rows = RANGE_TILE_BYTES // (row_bytes or 8)
    return max(RANGE_TILE_MIN, 1 << max(rows, 1).bit_length() - 1)


def loop_widths(lanes: int | None) -> tuple[int, int]:
    """(vector lanes, unrolled partial sums) of a walk whose inner-loop width is ``lanes``
    (``Contraction.lanes``; None: :data:`VECTOR_LANES`, :data:`UNROLL`); 1 means plain scalar loops."""
    if lanes is None:
        return VECTOR_LANES, UNROLL
    return lanes, lanes


class Visitor(Protocol):
    def carry_level(self, known: list[set[int]]) -> int:
        """Level before whose loop accumulators start (``known[k]``: dims known before level k)."""
    def begin(self, dims: dict[int, Value]) -> Carry: ...
    def end(self, dims: dict[int, Value], carry: Carry) -> None: ...
    def body(self, dims: dict[int, Value], at: str, carry: Carry, lanes: int,
             strides: Mapping[int, int | None]) -> Carry:
        """One stored entry: dimension coordinates, index text of its value (``ctx.at``)."""
    def vectorizable(self, strides: Mapping[int, int | None]) -> bool: ...
    def parallel_dims(self) -> set[int]: ...

    def reduction(self) -> tuple[Callable[[], Value], Callable[[Value, Value], Value]] | None:
        """(identity, combine) when the one accumulator may be split into partial sums, else None."""

    def gatherable(self, dims: set[int]) -> bool:
        """Whether entries may come ``lanes`` at a time with ``dims`` as index vectors (gathers),
        accumulating into a vector that ``reduce_lanes`` sums at the end."""

    def reduce_lanes(self, v: Value) -> Value:
        """The scalar reduction of a vector accumulator."""

    def row_bytes(self, dim: int) -> int:
        """Bytes of output per coordinate of the walked operand's dimension ``dim`` (0: it does not index
        the output)."""


class WalkContext:
    """What rules see: the builder, buffers and extents of each level, and loop emission."""

    def __init__(self, b: Builder, operand: WalkedOperand, args: list[LevelArgs], lanes: int | None = None,
                 stride: int = 0) -> None:
        self.b = b
        #: slots per parent of a fixed-stride loose_compressed level walked in full (0: bounded walk)
        self.stride = stride
        self.vector_lanes, self.unroll = loop_widths(lanes)
        self.operand = operand
        self.fmt = operand.fmt
        self.args = args
        self.extents = list(operand.fmt.level_extents(operand.shape))
        self.offsets = list(operand.fmt.diagonal_offset(operand.shape))
        self.num_batch = operand.num_batch
        self.batch: list[Value] = []
        self.plan = resolution_plan(operand.fmt, operand.shape)
        self.vector_level: int | None = None
        self.parallel_level: int | None = None
        self.unroll_level: int | None = None
        self.gather_level: int | None = None
        self.reduce_lanes: Any = None
        self.reduction: Any = None
        self.tile: tuple[Value, Value] | None = None
        #: ``[begin, end)`` of the outermost row coordinate this call walks (row-range kernels), or None
        self.rows: tuple[Value, Value] | None = None
        self.lvl: dict[int, Value] = {}
        self.dims: dict[int, Value] = {}
        #: the operand's values buffer where rules may prefetch ahead of an unrolled walk (None: never)
        self.values: Value | None = None
        #: the operand's values buffer, bounding the entries of a bit-packed delta level (None: not known)
        self.value_buffer: Value | None = None

    def level(self, k: int) -> Any:
        return self.fmt.levels[k]

    def at(self, p: Value) -> str:
        """Index text of position ``p`` in a level buffer (batch index first under batch levels)."""
        return ", ".join([v.name for v in self.batch] + [p.name])

    def loop(self, k: int, lo: Value, hi: Value, carry: Carry,
             body: Callable[[Value, Carry, int], Carry], own: int = 0,
             prefetch: Callable[[Value], None] | None = None, per_step: int = 0) -> Carry:
        """A loop over ``lo..hi`` for level ``k``: parallel, strip-mined into vectors, unrolled into
        partial sums, or plain. ``carry[:own]`` are the rule's own sequential values (e.g. a running
        coordinate), the rest the visitor's accumulators. ``prefetch(iv)``: emitted once per iteration of
        the unrolled main loop (not in plain or remainder loops). ``per_step``: at least this many iterations
        per unrolled step (the partial sums take them in turn; fewer prefetches per entry)."""
        b = self.b
        if k in (self.gather_level, self.unroll_level, self.vector_level):
            span = _static_span(b, lo, hi)
            if span is not None and span < max(self.vector_lanes, self.unroll):  # a block's columns: LLVM unrolls
                return b.for_(lo, hi, b.index(1), carry, lambda iv, c: body(iv, c, 1))
        if k == self.gather_level and len(carry) == own + 1:
            return self._gathered(lo, hi, carry, body, own)
        if k == self.unroll_level and len(carry) == own + 1:
            return self._unrolled(lo, hi, carry, body, own, prefetch, per_step)
        if k == self.vector_level and not carry:
            lanes = self.vector_lanes
            vl = b.index(lanes)
            n = b.max(b.sub(hi, lo), b.index(0))
            tail = b.op(f"arith.remui {n}, {vl} : index", "index", "i")
            mid = b.add(lo, b.sub(n, tail))
            b.for_(lo, mid, vl, [], lambda iv, c: body(iv, c, lanes))
            return b.for_(mid, hi, b.index(1), [], lambda iv, c: body(iv, c, 1))
        if k == self.parallel_level and not carry:
            b.parallel(lo, hi, lambda iv: body(iv, [], 1))
            return []
        return b.for_(lo, hi, b.index(1), carry, lambda iv, c: body(iv, c, 1))

    def _unrolled(self, lo: Value, hi: Value, carry: Carry, body: Callable[[Value, Carry, int], Carry],
                  own: int, prefetch: Callable[[Value], None] | None = None, per_step: int = 0) -> Carry:
        b = self.b
        identity, combine = self.reduction
        parts = self.unroll
        unroll = max(parts, per_step)
        n = b.max(b.sub(hi, lo), b.index(0))
        mid = b.add(lo, b.sub(n, b.op(f"arith.remui {n}, {b.index(unroll)} : index", "index", "i")))
        init = list(carry) + [identity() for _ in range(parts - 1)]

        def step(iv: Value, c: Carry) -> Carry:
            if prefetch is not None:
                prefetch(iv)
            state, accs = c[:own], c[own:]
            new = list(accs)
            for u in range(unroll):
                out = body(b.add(iv, b.index(u)), state + [new[u % parts]], 1)
                state = out[:own]
                new[u % parts] = out[own]
            return state + new

        res = b.for_(lo, mid, b.index(unroll), init, step)
        acc = res[own]
        for part in res[own + 1:]:
            acc = combine(acc, part)
        return b.for_(mid, hi, b.index(1), res[:own] + [acc], lambda iv, c: body(iv, c, 1))

    def _gathered(self, lo: Value, hi: Value, carry: Carry, body: Callable[[Value, Carry, int], Carry],
                  own: int) -> Carry:
        """Main loop ``vector_lanes`` entries at a time into a vector accumulator, then a scalar tail."""
        b = self.b
        identity, combine = self.reduction
        vl = self.vector_lanes
        n = b.max(b.sub(hi, lo), b.index(0))
        mid = b.add(lo, b.sub(n, b.op(f"arith.remui {n}, {b.index(vl)} : index", "index", "i")))
        acc = carry[own]
        vacc = b.splat(identity(), vl)
        res = b.for_(lo, mid, b.index(vl), list(carry[:own]) + [vacc], lambda iv, c: body(iv, c, vl))
        acc = combine(acc, self.reduce_lanes(res[own]))
        return b.for_(mid, hi, b.index(1), res[:own] + [acc], lambda iv, c: body(iv, c, 1))

    def range_bounds(self, k: int) -> tuple[Value, Value]:
        """``[lo, hi)`` of range level ``k``: where the diagonal's other dimension stays in bounds."""
        b = self.b
        fmt, shape = self.fmt, self.operand.shape
        x = list(fmt.dimensions).index(self.level(k).expr)
        for dk in range(k - 1, -1, -1):
            e = self.level(dk).expr
            if getattr(e, "op", None) in ("+", "-"):
                op, a, bb = diagonal_parts(fmt, e)
                if x in (a, bb):
                    break
        else:
            return b.index(0), b.index(self.extents[k])
        c = self.lvl[dk]
        y = bb if x == a else a
        ey = b.index(shape[y])
        if op == "+":                       # y = c - x in [0, ey): x in [c - ey + 1, c + 1)
            lo = b.add(b.sub(c, ey), b.index(1))
            hi = b.add(c, b.index(1))
        elif x == a:                        # y = x - c: x in [c, ey + c)
            lo, hi = c, b.add(ey, c)
        else:                               # y = x + c: x in [-c, ey - c)
            lo, hi = b.sub(b.index(0), c), b.sub(ey, c)
        lo, hi = b.max(lo, b.index(0)), b.min(hi, b.index(self.extents[k]))
        if self.tile is not None and k == len(self.fmt.levels) - 1:
            lo, hi = b.max(lo, self.tile[0]), b.min(hi, self.tile[1])
        return lo, hi

    def resolve(self, k: int) -> list[Value]:
        """Emit the dimension coordinates level ``k`` determines; returns guard conditions."""
        b = self.b
        guards = []
        for r in self.plan[k]:
            self.dims[r.dim] = v = self._value(r)
            if r.guard:
                guards.append(b.in_range(v, 0, self.operand.shape[r.dim]))
        return guards

    def _value(self, r: Resolve) -> Value:
        b = self.b
        if r.kind == "plain":
            return self.lvl[r.a]
        if r.kind == "block":
            return b.add(b.mul(self.lvl[r.a], b.index(r.size)), self.lvl[r.b])
        x, c = self.dims[r.other], self.lvl[r.a]
        xs = x if r.sign == 1 else b.sub(b.index(0), x)
        return b.add(xs, c) if r.csign == 1 else b.sub(xs, c)


def _static_span(b: Builder, lo: Value, hi: Value) -> int | None:
    """``hi - lo`` when both are constants, else None."""
    a, z = b.constant_key(lo.name, "index"), b.constant_key(hi.name, "index")
    return None if a is None or z is None else int(z) - int(a)


def row_mode(operand: WalkedOperand, carry_level: int, row_dim: int) -> str | None:
    """How a walk can be restricted to a range of dimension ``row_dim``'s coordinates: ``"outer"``
    (level 0 is a dense/batch level over exactly that dimension), ``"tiled"`` (the last level is a
    range level over it and the walk is tiled by it: DIA-I), or None (not row-restrictable)."""
    fmt = operand.fmt
    n = len(fmt.levels)
    if not n:
        return None
    dims = fmt.dimensions
    lv0 = fmt.levels[0]
    if (lv0.format.value in ("dense", "batch") and rule_for(lv0.format.value) is _rules.dense
            and not hasattr(lv0.expr, "op") and dims.index(lv0.expr) == row_dim
            and fmt.diagonal_offset(operand.shape)[0] == 0):
        return "outer"
    last = fmt.levels[-1]
    if (n >= 2 and last.format.value == "range" and rule_for("range") is _rules.range_ and carry_level >= n
            and not operand.num_batch and dims.index(last.expr) == row_dim):
        return "tiled"
    return None


def walk(b: Builder, operand: WalkedOperand, args: list[LevelArgs], visitor: Visitor,
         rows: tuple[Value, Value] | None = None, row_dim: int = 0, lanes: int | None = None,
         skip_zeros: Value | None = None, stride: int = 0, values: Value | None = None,
         fill: Callable[[tuple[Value, Value] | None], None] | None = None, gather: bool = False,
         value_buffer: Value | None = None) -> None:
    """Emit the loop nest over ``operand``'s stored entries, calling ``visitor`` (see module doc).

    ``rows``: walk only the entries whose dimension ``row_dim`` lies in ``[rows[0], rows[1])`` (needs
    :func:`row_mode`; ValueError otherwise). ``lanes``: the inner loops' width (:func:`loop_widths`).
    ``skip_zeros``: the operand's values; slots storing zero are skipped (padding, :mod:`.padding`), entries
    come one at a time (the caller passes ``lanes=1``). ``stride``: ``K > 0`` walks every one of the ``K``
    slots per parent of a fixed-stride ``loose_compressed`` level (:func:`.rules.loose_compressed`).
    ``values``: the operand's values buffer, for rules that prefetch ahead (``WalkContext.values``; CPU only).
    ``fill(rows)``: emits the output's initialization over output rows ``rows`` (None: all); called once
    before the walk, or, when the walk is tiled by the output rows (DIA-I's range level, ``rows`` given),
    once per tile at its start, so that the tile's output rows are written while they sit in cache.
    ``gather``: a reduction over an innermost ``compressed`` level is walked with gathers (as if the level's
    format were in :data:`.rules.GATHER`). ``value_buffer``: the operand's values buffer (bounds the entries of a
    bit-packed delta level, :func:`.rules.stored_entries`)."""
    ctx = WalkContext(b, operand, args, lanes, stride)
    ctx.values = values
    ctx.value_buffer = value_buffer
    n = len(ctx.fmt.levels)
    known = known_after(ctx.plan)
    carry_level = visitor.carry_level(known)
    if carry_level >= n:
        carry_level = NO_CARRY
    if rows is not None:
        mode = row_mode(operand, carry_level, row_dim)
        if mode is None:
            raise ValueError(f"format {operand.fmt} cannot be walked by ranges of dimension {row_dim}")
        if mode == "outer":
            ctx.rows = rows
    strides = last_level_strides(ctx.plan, len(ctx.fmt.dimensions))
    if (n and carry_level >= n and ctx.vector_lanes > 1 and ctx.level(n - 1).format.value in CONTIGUOUS
            and skip_zeros is None
            and not any(r.guard for r in ctx.plan[-1]) and visitor.vectorizable(strides)):
        ctx.vector_level = n - 1
    if n and ctx.level(0).format.value in ("dense", "batch") and carry_level >= 1:
        if {r.dim for r in ctx.plan[0]} & visitor.parallel_dims():
            ctx.parallel_level = 0
    if n and carry_level < n and ctx.vector_level is None:
        ctx.reduction = visitor.reduction()
        if ctx.reduction is not None and ctx.unroll > 1:
            ctx.unroll_level = n - 1
            last_step = ctx.plan[-1]
            last_format = ctx.level(n - 1).format.value
            if ((gatherable_level(ctx.level(n - 1)) or (gather and last_format == "compressed")) and skip_zeros is None
                    and all(r.kind == "plain" and not r.guard for r in last_step)
                    and visitor.gatherable({r.dim for r in last_step})):
                ctx.gather_level = n - 1
                ctx.reduce_lanes = visitor.reduce_lanes
    zero_strides = {d: 0 for d in range(len(ctx.fmt.dimensions))}

    def level(k: int, parent: Value, carry: Carry) -> Carry:
        if k == carry_level:
            carry = visitor.begin(dict(ctx.dims))
        if k == n:
            out = visitor.body(dict(ctx.dims), ctx.at(parent), carry, 1, zero_strides)
        else:
            out = rule_for(ctx.level(k).format.value)(ctx, k, parent, carry, lambda p, c, cr, lanes:
                                                      entry(k, p, c, cr, lanes))
        if k == carry_level:
            visitor.end(dict(ctx.dims), out)
            return []
        return out

    def entry(k: int, pos: Value, coord: Value, carry: Carry, lanes: int) -> Carry:
        ctx.lvl[k] = coord
        guards = ctx.resolve(k)
        if k + 1 == ctx.num_batch and k + 1 < n:  # below the batch levels: per-batch buffers
            ctx.batch, pos = [ctx.lvl[j] for j in range(ctx.num_batch)], b.index(0)
        if k + 1 == n:
            if skip_zeros is not None:
                guards.append(nonzero(b, skip_zeros, ctx.at(pos)))

            def inner(c: Carry) -> Carry:
                return visitor.body(dict(ctx.dims), ctx.at(pos), c, lanes, strides)
        else:
            def inner(c: Carry) -> Carry:
                return level(k + 1, pos, c)
        if not guards:
            return inner(carry)
        cond = guards[0]
        for g in guards[1:]:
            cond = b.op(f"arith.andi {cond}, {g} : i1", "i1", "b")
        return b.if_(cond, carry, inner)

    tiled = n >= 2 and ctx.level(n - 1).format.value == "range" and carry_level == NO_CARRY and not ctx.num_batch
    per_tile = tiled and rows is not None and ctx.rows is None  # row_mode "tiled": tiles are output rows
    if fill is not None and not per_tile:
        fill(rows)
    if tiled:
        _tiled(ctx, n - 1, visitor, lambda: level(0, b.index(0), []), rows if ctx.rows is None else None,
               fill if per_tile else None)
    elif _interleave.applies(ctx, carry_level, skip_zeros):
        _interleave.walk_rows(ctx, visitor, entry, lambda: level(0, b.index(0), []))
    else:
        level(0, b.index(0), [])


def _tiled(ctx: WalkContext, k: int, visitor: Visitor, walk_all: Callable[[], Carry],
           rows: tuple[Value, Value] | None = None,
           fill: Callable[[tuple[Value, Value] | None], None] | None = None) -> None:
    """Walk everything once per tile of range level ``k``'s coordinates (outermost, parallel when the
    range dimension indexes the output); only the coordinates in ``rows`` when given; ``fill(tile)`` first
    in each tile when given (the tile's output rows, initialized while in cache)."""
    b = ctx.b
    lo, hi = rows if rows is not None else (b.index(0), b.index(ctx.extents[k]))
    x = list(ctx.fmt.dimensions).index(ctx.level(k).expr)

    step = range_tile(visitor.row_bytes(x))

    def tile(t: Value) -> None:
        ctx.tile = (t, b.min(b.add(t, b.index(step)), hi))
        if fill is not None:
            fill(ctx.tile)
        walk_all()

    if x in visitor.parallel_dims() and ctx.parallel_level is None:
        b.parallel_step(lo, hi, b.index(step), tile)
    else:
        b.loop(lo, hi, b.index(step), tile)
    ctx.tile = None
