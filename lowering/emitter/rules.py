"""Level-walking rules: how one level's stored entries are enumerated, one rule per level format.

A rule is ``rule(ctx, k, parent, carry, inner) -> carry``: emit the loop (or no loop) over the entries
of level ``k`` under the parent position ``parent`` and call ``inner(pos, coord, carry, lanes)`` for
each, where ``pos`` is the entry's position (index into the next level's buffers or the values) and
``coord`` its level coordinate. Buffers are read at ``ctx.at(p)`` (which adds the batch index under
batch levels). The built-in rules are bounds-safe: position ranges read from a buffer are clamped into the
level's stored entries (:func:`entry_range`) and coordinates read from one into the level's range
(:func:`clamp_coordinate`), so a kernel never reads or writes out of bounds whatever the index buffers hold
(they may be written in place after validation); a registered rule should do the same. A rule in
``GATHER`` also accepts ``lanes > 1`` from ``ctx.loop``: then ``pos`` is the first of ``lanes`` consecutive
positions and ``coord`` a ``vector<lanes x index>``. Loops go through
``ctx.loop`` so the walker can make them parallel or vectorized. ``register_level_rule`` adds or replaces a
rule (see docs/extending.md).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from frontend.format import delta_packed

from ..mlir_text import NARROW_INTS, type_max
from .builder import Carry, Value, element_type

Inner = Callable[[Value, Value, Carry, int], Carry]

#: Coordinate before a delta level's first entry, and what each stored gap adds beyond itself:
#: ``coord[0] = DELTA_START + gap[0] + DELTA_STEP``, ``coord[k] = coord[k-1] + gap[k] + DELTA_STEP``
#: (as frontend.storage._assemble stores them: ``c[0] = g[0]``, ``c[t] = c[t-1] + g[t] + 1``).
DELTA_START = -1
DELTA_STEP = 1
#: Gathered walks (compressed and delta levels) compute coordinates in i32 below this level extent (else in
#: ``index``): one dword-indexed gather instead of two qword ones, and a one-instruction unsigned clamp
#: (AVX2 has no unsigned 64-bit minimum) (docs/performance.md, "Tuning constants").
I32_EXTENT = 1 << 31
#: Entries ahead of the current one that an unrolled delta walk prefetches (values and gaps), once per unrolled
#: iteration, into L2 (:data:`DELTA_LOCALITY`) (docs/performance.md, "Tuning constants").
DELTA_PREFETCH = 2048
#: ``memref.prefetch`` locality of the delta walks (1: x86 ``prefetcht2``, into L2; into L1 the prefetched lines
#: pushed out x's) (docs/performance.md, "Tuning constants").
DELTA_LOCALITY = 1
#: Gaps a bit-packed delta walk takes from one load (whole bytes: ``max(1, DELTA_WORD_GAPS * bits // 8)``)
#: (docs/performance.md, "Tuning constants").
DELTA_WORD_GAPS = 4
#: Entries of an unpacked delta walk per iteration of its unrolled loop (one prefetch each; the loop's partial
#: sums take them in turn) (docs/performance.md, "Tuning constants").
DELTA_SPAN = 16


def delta_word_bytes(bits: int) -> int:
    """Bytes of packed gaps loaded at once by a ``bits``-bit walk (:data:`DELTA_WORD_GAPS`)."""
    return max(1, DELTA_WORD_GAPS * bits // 8)


def stored_entries(ctx: Any, k: int) -> Value:
    """How many entries level ``k`` stores (positions ``0 ..`` this, exclusive): its coordinate buffer's length
    (a bit-packed delta level: the gaps its bytes hold, and no more than the values for the last level)."""
    b, crd = ctx.b, ctx.args[k].crd
    n = b.op(f"memref.dim {crd}, {b.index(ctx.num_batch)} : {crd.type}", "index", "n")
    level = ctx.level(k)
    if level.format.value == "delta" and delta_packed(level.bits):
        n = b.op(f"arith.divui {b.mul(n, b.index(8))}, {b.index(level.bits)} : index", "index", "n")
        vals = getattr(ctx, "value_buffer", None)
        if vals is not None and k == len(ctx.fmt.levels) - 1:
            nv = b.op(f"memref.dim {vals}, {b.index(ctx.num_batch)} : {vals.type}", "index", "n")
            n = b.op(f"arith.minui {n}, {nv} : index", "index", "n")
    return n


def entry_range(ctx: Any, k: int, lo: Value, hi: Value) -> tuple[Value, Value]:
    """``[lo, hi)`` read from level ``k``'s positions, clamped into its stored entries with ``lo <= hi``
    (unsigned minimum: negative positions too), so the walk stays in bounds whatever the positions hold."""
    b = ctx.b
    hi = b.op(f"arith.minui {hi}, {stored_entries(ctx, k)} : index", "index", "i")
    return b.op(f"arith.minui {lo}, {hi} : index", "index", "i"), hi


def clamp_coordinate(ctx: Any, k: int, c: Value, mask: bool = True) -> Value:
    """Coordinate ``c`` of level ``k`` (an index, or a vector of them) clamped into the level's range
    ``[offset, offset + extent)`` (unsigned minimum of ``c - offset`` and ``extent - 1``: below the offset
    too; for an extent of a power of two from 0, and ``mask``, masked with ``extent - 1``), so it addresses dense
    operands and the output in bounds whatever the coordinates hold."""
    b = ctx.b
    top, off = max(int(ctx.extents[k]) - 1, 0), int(ctx.offsets[k])
    if mask and off == 0 and top & (top + 1) == 0:  # a power-of-two extent: one instruction instead of two
        low_bits = b.index(top) if c.type == "index" else b.const(f"dense<{top}>", c.type)
        return b.op(f"arith.andi {c}, {low_bits} : {c.type}", c.type, "i")
    if c.type == "index":
        rel = b.sub(c, b.index(off))
        return b.add(b.op(f"arith.minui {rel}, {b.index(top)} : index", "index", "i"), b.index(off))
    rel = c if off == 0 else b.op(f"arith.subi {c}, {b.const(f'dense<{off}>', c.type)} : {c.type}", c.type, "i")
    low = b.op(f"arith.minui {rel}, {b.const(f'dense<{top}>', c.type)} : {c.type}", c.type, "i")
    return low if off == 0 else b.vadd(low, b.const(f"dense<{off}>", c.type))


class LevelRule(Protocol):
    def __call__(self, ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry: ...


def dense(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """Every coordinate of the extent (level 0: only ``ctx.rows`` when set); child position
    ``parent * extent + i``."""
    b = ctx.b
    ext = b.index(ctx.extents[k])
    base = b.mul(parent, ext)
    off = b.index(ctx.offsets[k])
    lo, hi = ctx.rows if k == 0 and getattr(ctx, "rows", None) is not None else (b.index(0), ext)
    return ctx.loop(k, lo, hi, carry,
                    lambda iv, c, lanes: inner(b.add(base, iv), b.add(iv, off), c, lanes))


def position_range(ctx: Any, k: int, lo_at: Value, hi_at: Value) -> tuple[Value, Value]:
    """:func:`entry_range` of ``[pos[lo_at], pos[hi_at])`` clamped in the positions' own type (unsigned minimum
    against the stored entries, capped at the type's largest value) and zero-extended: a clamp of the
    sign-extended ``index`` kept LLVM from the narrow loop bounds it derives otherwise (docs/performance.md, "the
    union and intersection bounded per chunk"); ``index``/i64 positions take :func:`entry_range`."""
    b, pos = ctx.b, ctx.args[k].pos
    pt = element_type(pos.type)
    if pt not in NARROW_INTS:
        return entry_range(ctx, k, b.load_index(pos, ctx.at(lo_at)), b.load_index(pos, ctx.at(hi_at)))
    n = b.op(f"arith.minui {stored_entries(ctx, k)}, {b.index(type_max(pt))} : index", "index", "n")
    n = b.op(f"arith.index_cast {n} : index to {pt}", pt, "n")
    hi = b.op(f"memref.load {pos}[{ctx.at(hi_at)}] : {pos.type}", pt, "l")
    lo = b.op(f"memref.load {pos}[{ctx.at(lo_at)}] : {pos.type}", pt, "l")
    hi = b.op(f"arith.minui {hi}, {n} : {pt}", pt, "i")
    lo = b.op(f"arith.minui {lo}, {hi} : {pt}", pt, "i")
    return (b.op(f"arith.index_castui {lo} : {pt} to index", "index", "i"),
            b.op(f"arith.index_castui {hi} : {pt} to index", "index", "i"))


def compressed(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """Entries ``pos[parent] .. pos[parent + 1]`` with coordinates ``crd[p]``."""
    lo, hi = position_range(ctx, k, parent, ctx.b.add(parent, ctx.b.index(1)))
    return ctx.loop(k, lo, hi, carry, lambda p, c, lanes: inner(p, _coordinates(ctx, k, p, lanes), c, lanes))


def _coordinates(ctx: Any, k: int, p: Value, lanes: int) -> Value:
    """``crd[p]``, or ``crd[p : p + lanes]`` as a vector when the walker gathers (clamped): of i32 where the
    coordinates are at most 32 bits wide and the level's range fits (:data:`I32_EXTENT`), else of index."""
    b, crd = ctx.b, ctx.args[k].crd
    elem = element_type(crd.type)
    if lanes == 1:  # 8- and 16-bit coordinates keep the minimum: LLVM turns their masks into vector extracts
        return clamp_coordinate(ctx, k, b.load_index(crd, ctx.at(p)), mask=elem not in ("i8", "i16"))
    if elem in NARROW_INTS and 0 <= int(ctx.offsets[k]) and \
            int(ctx.offsets[k]) + int(ctx.extents[k]) < I32_EXTENT:
        vt = f"vector<{lanes}xi32>"
        raw = b.assign(f"vector.load {crd}[{ctx.at(p)}] : {crd.type}, vector<{lanes}x{elem}>", "l")
        if elem != "i32":  # sign-extended, as the scalar path's index_cast
            raw = b.cast("arith.extsi", raw, f"vector<{lanes}x{elem}>", vt, "l")
        return clamp_coordinate(ctx, k, Value(raw, vt))
    return clamp_coordinate(ctx, k, b.vload_index(crd, ctx.at(p), lanes))


def loose_compressed(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """Entries ``pos[2 parent] .. pos[2 parent + 1]``. With a fixed stride ``K`` (``ctx.stride``, a level under
    dense levels only: ELLPACK's layout, ``lo = parent * K``) a loop over the ``K`` slots with a trip count known
    at compile time (unrolled fully for short rows), one position load (``hi``) and a guard per slot: padding
    slots are skipped whatever values they hold (values computed over the whole buffer need not keep 0 there)."""
    b, args = ctx.b, ctx.args[k]
    if ctx.stride and k != ctx.gather_level and all(ctx.level(j).format.value == "dense" for j in range(k)):
        base = b.mul(parent, b.index(ctx.stride))
        two = b.mul(parent, b.index(2))
        count = b.sub(b.load_index(args.pos, ctx.at(b.add(two, b.index(1)))), base)

        def slot(s: Value, c: Carry, lanes: int) -> Carry:
            p = b.add(base, s)
            used = b.op(f"arith.cmpi ult, {s}, {count} : index", "i1", "b")
            return b.if_(used, c, lambda cc: inner(p, _coordinates(ctx, k, p, lanes), cc, lanes))
        return ctx.loop(k, b.index(0), b.index(ctx.stride), carry, slot)
    two = b.mul(parent, b.index(2))
    lo = b.load_index(args.pos, ctx.at(two))
    hi = b.load_index(args.pos, ctx.at(b.add(two, b.index(1))))
    lo, hi = entry_range(ctx, k, lo, hi)
    return ctx.loop(k, lo, hi, carry, lambda p, c, lanes: inner(p, _coordinates(ctx, k, p, lanes), c, lanes))


def singleton(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """One entry at the parent's own position."""
    return inner(parent, clamp_coordinate(ctx, k, ctx.b.load_index(ctx.args[k].crd, ctx.at(parent))), carry, 1)


def structured(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """``n`` entries per group of ``m`` coordinates; ``crd`` holds the offset inside the group."""
    b, args = ctx.b, ctx.args[k]
    n, m = ctx.level(k).structure
    groups = -(-ctx.extents[k] // m)
    base = b.mul(parent, b.index(groups * n))

    def entry(t: Value, c: Carry, lanes: int) -> Carry:
        p = b.add(base, t)
        group = b.op(f"arith.divui {t}, {b.index(n)} : index", "index", "i")
        coord = b.add(b.mul(group, b.index(m)), b.load_index(args.crd, ctx.at(p)))
        return inner(p, clamp_coordinate(ctx, k, coord), c, 1)

    return ctx.loop(k, b.index(0), b.index(groups * n), carry, entry)


def range_(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """The coordinates valid for the diagonal level before it; ``extent`` value slots per parent."""
    b = ctx.b
    ext = ctx.extents[k]
    lo, hi = ctx.range_bounds(k)
    base = b.mul(parent, b.index(ext))
    return ctx.loop(k, lo, hi, carry, lambda iv, c, lanes: inner(b.add(base, iv), iv, c, lanes))


def delta(ctx: Any, k: int, parent: Value, carry: Carry, inner: Inner) -> Carry:
    """Entries ``pos[parent] .. pos[parent + 1]``; coordinates are a running sum of the stored gaps
    (bit-packed below 8 bits, ``frontend.format.delta_packed``: decoded with a shift and a mask; such
    levels are never gathered, see :func:`gatherable_level`)."""
    b, args = ctx.b, ctx.args[k]
    lo = b.load_index(args.pos, ctx.at(parent))
    hi = b.load_index(args.pos, ctx.at(b.add(parent, b.index(1))))
    lo, hi = entry_range(ctx, k, lo, hi)
    return delta_span(ctx, k, lo, hi, b.index(DELTA_START), carry, inner)[1:]


def delta_gap(ctx: Any, k: int, p: Value) -> Value:
    """The stored gap of entry ``p`` of delta level ``k``: one element, or ``bits`` bits of byte
    ``p * bits / 8`` when packed."""
    b, args = ctx.b, ctx.args[k]
    bits = ctx.level(k).bits
    if not delta_packed(bits):
        return b.load_index(args.crd, ctx.at(p), unsigned=True)
    bit = b.mul(p, b.index(bits))
    byte = b.load_index(args.crd, ctx.at(_shr(b, bit, b.index(3))), unsigned=True)
    return _field(b, _shr(b, byte, b.op(f"arith.andi {bit}, {b.index(7)} : index", "index", "i")), bits)


def delta_coord(ctx: Any, k: int, run: Value, p: Value) -> Value:
    """Coordinate of entry ``p`` of delta level ``k`` after the running coordinate ``run``."""
    # (run + gap) + step: x86 folds it into one lea (measured faster than run + (gap + step))
    return ctx.b.add(ctx.b.add(run, delta_gap(ctx, k, p)), ctx.b.index(DELTA_STEP))


def delta_span(ctx: Any, k: int, lo: Value, hi: Value, run: Value, carry: Carry, inner: Inner) -> Carry:
    """Entries ``lo .. hi`` of delta level ``k`` (one parent's, or the rest of it) after the running
    coordinate ``run`` (:data:`DELTA_START` before a parent's first entry); returns the last coordinate
    followed by the visitor's carry."""
    b, args = ctx.b, ctx.args[k]

    def entry(p: Value, c: Carry, lanes: int) -> Carry:
        run, rest = c[0], c[1:]
        if lanes > 1:  # lanes consecutive entries: prefix sum of the steps, in i32 where the extent fits
            # (one dword-indexed gather of 16 lanes instead of two qword ones, half the shuffle work)
            it = "i32" if ctx.extents[k] < I32_EXTENT else "index"
            vt = f"vector<{lanes}x{it}>"
            gaps = (b.vload_int(args.crd, ctx.at(p), lanes, it) if it != "index"
                    else b.vload_index(args.crd, ctx.at(p), lanes, unsigned=True))
            steps = b.vadd(gaps, b.const(f"dense<{DELTA_STEP}>", vt))
            start = run if it == "index" else Value(b.index_cast(run.name, "index", it, "i"), it)
            sums = b.prefix_sum(steps, lanes)
            coords = b.vadd(b.splat(start, lanes), sums)
            # the next run from the sums alone: the loop-carried chain is one scalar add per `lanes` entries
            total = b.extract(sums, lanes - 1)
            if it != "index":
                total = Value(b.index_cast(total.name, it, "index", "i"), "index")
            return [b.add(run, total)] + inner(p, clamp_coordinate(ctx, k, coords), rest, lanes)
        coord = delta_coord(ctx, k, run, p)
        return [coord] + inner(p, clamp_coordinate(ctx, k, coord), rest, 1)

    init = [run] + list(carry)
    if delta_packed(ctx.level(k).bits):
        return _packed_walk(ctx, k, lo, hi, init, entry, inner)
    return ctx.loop(k, lo, hi, init, entry, own=1, prefetch=delta_prefetcher(ctx, k, 1), per_step=DELTA_SPAN)


def delta_prefetcher(ctx: Any, k: int, per: int, unit: int = 1) -> Callable[[Value], None] | None:
    """``f(iv)`` prefetching the values and gaps :data:`DELTA_PREFETCH` entries after iteration ``iv`` of a
    delta level's loop (``per`` entries and ``unit`` gap-buffer elements per iteration index: one and one
    unpacked, a word of packed gaps otherwise); None without ``ctx.values`` (GPU kernels) or below the last
    level (the values are not this level's)."""
    vals = getattr(ctx, "values", None)
    if vals is None or k != len(ctx.fmt.levels) - 1:
        return None
    b, crd = ctx.b, ctx.args[k].crd

    def fetch(iv: Value) -> None:
        at = b.add(b.mul(iv, b.index(per)) if per > 1 else iv, b.index(DELTA_PREFETCH))
        g = b.add(b.mul(iv, b.index(unit)) if unit > 1 else iv, b.index(DELTA_PREFETCH * unit // per))
        b.emit(f"memref.prefetch {vals}[{ctx.at(at)}], read, locality<{DELTA_LOCALITY}>, data : {vals.type}")
        b.emit(f"memref.prefetch {crd}[{ctx.at(g)}], read, locality<{DELTA_LOCALITY}>, data : {crd.type}")
    return fetch


def _shr(b: Any, x: Value, by: Value) -> Value:
    return b.op(f"arith.shrui {x}, {by} : index", "index", "i")


def _field(b: Any, x: Value, bits: int) -> Value:
    return b.op(f"arith.andi {x}, {b.index((1 << bits) - 1)} : index", "index", "i")


def _packed_walk(ctx: Any, k: int, lo: Value, hi: Value, init: Carry,
                 entry: Callable[[Value, Carry, int], Carry], inner: Inner) -> Carry:
    """Entries ``lo..hi`` of a bit-packed delta level (``8 // bits`` gaps a byte): the entries before the
    first whole word (:func:`delta_word_bytes` bytes) and after the last one one at a time (``entry``), the whole
    words in between through ``ctx.loop`` (unrolled into partial sums like any walk), each word loaded once
    (little-endian: gap ``t`` of the word in bits ``t * bits``..) and its gaps taken with constant shifts.
    ``init``/the result: the running coordinate, then the visitor's carry."""
    b, args = ctx.b, ctx.args[k]
    bits = ctx.level(k).bits
    nbytes = delta_word_bytes(bits)
    per = 8 * nbytes // bits
    step = b.index(per)
    one = b.index(1)
    head_end = b.min(hi, b.mul(b.op(f"arith.ceildivui {lo}, {step} : index", "index", "i"), step))
    first = b.op(f"arith.divui {head_end}, {step} : index", "index", "i")
    last = b.max(b.op(f"arith.divui {hi}, {step} : index", "index", "i"), first)
    c = b.for_(lo, head_end, one, init, lambda p, cc: entry(p, cc, 1))
    wt = f"i{8 * nbytes}"

    def load_word(q: Value) -> Value:
        if nbytes == 1:
            return b.load_index(args.crd, ctx.at(q), unsigned=True)
        at = ctx.at(b.mul(q, b.index(nbytes)))
        raw = b.op(f"vector.load {args.crd}[{at}] : {args.crd.type}, vector<{nbytes}xi8>", f"vector<{nbytes}xi8>", "l")
        vec = b.op(f"vector.bitcast {raw} : vector<{nbytes}xi8> to vector<1x{wt}>", f"vector<1x{wt}>", "l")
        word = b.op(f"vector.extract {vec}[0] : {wt} from vector<1x{wt}>", wt, "l")
        wide = b.op(f"arith.extui {word} : {wt} to i64", "i64", "l")
        return b.op(f"arith.index_cast {wide} : i64 to index", "index", "i")

    def word_entries(q: Value, cc: Carry, lanes: int) -> Carry:
        w = load_word(q)
        base = b.mul(q, step)
        for u in range(per):
            g = _field(b, _shr(b, w, b.index(u * bits)) if u else w, bits)
            coord = b.add(b.add(cc[0], g), b.index(DELTA_STEP))
            cc = [coord] + inner(b.add(base, b.index(u)), clamp_coordinate(ctx, k, coord), cc[1:], 1)
        return cc

    c = ctx.loop(k, first, last, c, word_entries, own=1, prefetch=delta_prefetcher(ctx, k, per, nbytes))
    return b.for_(b.max(b.mul(last, step), head_end), hi, one, c, lambda p, cc: entry(p, cc, 1))


_RULES: dict[str, LevelRule] = {
    "dense": dense, "batch": dense, "compressed": compressed, "loose_compressed": loose_compressed,
    "singleton": singleton, "structured": structured, "range": range_, "delta": delta,
}
#: Level formats whose loops are unit-stride in the coordinate (candidates for vectorization).
CONTIGUOUS = {"dense", "batch", "range"}
#: Level formats whose rules accept ``lanes > 1`` for consecutive positions with arbitrary coordinates
#: (an index vector): the walker then vectorizes reductions over them with gathers. The ``compressed``
#: and ``delta`` rules support it, but it is off by default: on the CPUs measured (AVX-512 gathers) an
#: 8-way unrolled scalar loop was faster (benchmarks/bench_emitter.py); enable it with
#: ``register_level_rule(name, rule_for(name), gather=True, replace=True)``.
GATHER: set[str] = set()


def gatherable_level(level: Any) -> bool:
    """Whether the walker may hand level ``level`` ``lanes > 1`` consecutive positions (its format is in
    :data:`GATHER`, and it is not a bit-packed delta level, whose gaps are decoded one at a time)."""
    value = level.format.value
    return value in GATHER and not (value == "delta" and delta_packed(level.bits))


def register_level_rule(level_format: str, rule: LevelRule, *, contiguous: bool = False,
                        gather: bool = False, replace: bool = False) -> None:
    """Walk levels of format ``level_format`` (a ``LevelFormat`` value, e.g. ``"range"``) with ``rule``.

    ``contiguous``: the rule's loop visits consecutive coordinates with consecutive positions (the
    walker may then vectorize it); ``gather``: the rule accepts ``lanes > 1`` with an index vector of
    coordinates (reductions over it are vectorized with gathers). Replacing a built-in rule needs ``replace=True``.
    """
    name = getattr(level_format, "value", level_format)
    if not isinstance(name, str) or not name:
        raise TypeError(f"level_format must be a LevelFormat or its name, got {level_format!r}")
    if not callable(rule):
        raise TypeError(f"rule must be callable (ctx, k, parent, carry, inner) -> carry, got {rule!r}")
    if name in _RULES and not replace:
        raise ValueError(f"a level rule for {name!r} exists; pass replace=True to override it")
    global _generation
    _RULES[name] = rule
    _generation += 1
    (CONTIGUOUS.add if contiguous else CONTIGUOUS.discard)(name)
    (GATHER.add if gather else GATHER.discard)(name)


def rule_for(level_format: str) -> LevelRule:
    try:
        return _RULES[level_format]
    except KeyError:
        raise ValueError(f"no level-walking rule for level format {level_format!r}; "
                         f"known: {sorted(_RULES)}") from None


_generation = 0


def touch() -> None:
    """Mark compiled walks stale (a walking setting changed): :func:`generation` moves on."""
    global _generation
    _generation += 1


def generation() -> int:
    """Changes whenever a rule is registered (plan caches include it in their keys)."""
    return _generation
