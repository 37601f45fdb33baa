"""A contraction (``lowering.contraction.Contraction``) with one stored operand, as walking loops.

``emit_contraction(c)`` returns MLIR text of ``func.func @<name>`` with the same arguments and result as
the sparsifier path after ``sparse-assembler{direct-out=true}``: per input its buffers
(:mod:`.operand` order) or its dense array, then ``c``, ``alpha`` (``memref<1xT>``), ``beta``; returns a
fresh dense output. Every stored entry of the walked operand is multiplied with the dense operands over
the letters it does not bind, and reduced into the output; with a semiring or a prolog, the stored zeros
of formats that pad are skipped (:mod:`.padding`). Covers the matmul family (dot, SpMV, SpMM, vector x
matrix, batched) and any einsum with one stored operand and a dense output.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlir_bridge.signature import DTYPES

from . import blocked as _blocked, diagonal as _diagonal
from .arith import Arith, memref_type, vtype
from .builder import Builder, Carry, Value, element_type
from .operand import WalkedOperand
from .padding import skips_padding
from .resolution import known_after, resolution_plan
from .rules import dense as dense_rule, rule_for
from .walker import NO_CARRY, loop_widths, row_mode, walk

#: Most accumulators (vectors or scalars) an output row tile keeps in registers (AVX-512 has 32 vector
#: registers; the dense operand's chunks and the broadcast entry need some of the rest).
TILE_REGISTERS = 16


def walked_index(c: Any) -> int:
    """Index of the one stored operand of ``c`` (ValueError naming the problem otherwise)."""
    stored = [k for k, t in enumerate(c.inputs) if t.encoded]
    if len(stored) != 1:
        raise ValueError(f"the emitter walks exactly one stored operand (the others dense, row-major); "
                         f"got {len(stored)} stored operands: convert all but one to dense")
    if c.output.encoded:
        raise ValueError("the emitter writes dense (row-major) outputs only")
    w = stored[0]
    sub = c.subscripts[w]
    if len(set(sub)) != len(sub):
        raise ValueError(f"repeated subscript in {sub!r} on the stored operand")
    return w


class _Visitor:
    """Emits the product of a stored entry with the dense operands and its reduction."""

    def __init__(self, b: Builder, c: Any, w: int, ins: list[Value | None], val: Value, out: Value,
                 alpha: Value | None, ar: Arith) -> None:
        self.b, self.c, self.w, self.ins, self.val, self.out, self.alpha, self.ar = b, c, w, ins, val, out, alpha, ar
        self.lanes = loop_widths(c.lanes)[0]
        #: ``(init, finish)`` when each output element is written exactly once, by :meth:`end`:
        #: ``init(idx, lanes)`` its initial value(s), ``finish(v)`` the epilog on a scalar (see
        #: :func:`_writes_each_output_once`)
        self.fused: tuple[Callable[[list[Value], int], Value], Callable[[Value], Value]] | None = None
        self.wsub = c.subscripts[w]
        self.free = [ch for ch in c.loop_letters if ch not in self.wsub]
        self.size: dict[str, int] = {}
        for s, t in zip(c.subscripts + (c.output_subscripts,), c.inputs + (c.output,)):
            for ch, n in zip(s, t.shape):
                if self.size.setdefault(ch, int(n)) != int(n):
                    raise ValueError(f"letter {ch!r} has extents {self.size[ch]} and {n}")
        self.tile = self._row_tile()

    def _row_tile(self) -> tuple[str, list[tuple[int, int]]] | None:
        """SpMM-like (one free letter, last in the output and unit-stride in the dense operands, at most
        :data:`TILE_REGISTERS` accumulators): ``(letter, [(start, lanes), ...])``, the output row's
        chunks kept in registers across the row's entries and stored once."""
        c = self.c
        if len(self.free) != 1 or c.prolog is not None or c.output_subscripts[-1] != self.free[0]:
            return None
        ch = self.free[0]
        probe = {x: 0 for x in self.wsub}
        probe[ch] = 1
        if not self._unit_access(probe):
            return None
        size = self.size[ch]
        vl = self.lanes if self.ar.vectorizable else 1
        chunks = [(j, vl) for j in range(0, size - size % vl, vl)] if vl > 1 else []
        chunks += [(j, 1) for j in range(len(chunks) * vl, size)]
        return (ch, chunks) if 0 < len(chunks) <= TILE_REGISTERS else None

    # ----- walker protocol ------------------------------------------------------------------------
    def carry_level(self, known: list[set[int]]) -> int:
        if self.free and self.tile is None:
            return NO_CARRY
        need = {self.wsub.index(ch) for ch in self.c.output_subscripts if ch in self.wsub}
        for k, dims in enumerate(known):
            if need <= dims:
                if k == len(known) - 1:  # known only after the last level: nothing to carry a row tile over
                    self.tile = None
                    return NO_CARRY
                return k
        return NO_CARRY

    def begin(self, dims: dict[int, Value]) -> Carry:
        if self.tile is not None:
            return [self.b.splat(self.ar.identity(), n) if n > 1 else self.ar.identity() for _, n in self.tile[1]]
        return [self.ar.identity()]

    def end(self, dims: dict[int, Value], carry: Carry) -> None:
        if self.tile is not None:
            self._end_tile(dims, carry)
            return
        acc = carry[0]
        if self.alpha is not None:
            acc = self.ar.scale(acc, self.alpha)
        letters = self._letters(dims)
        if self.fused is None:
            self._accumulate(letters, {}, acc, 1)
            return
        init, finish = self.fused
        idx = [letters[ch] for ch in self.c.output_subscripts]
        v = acc if self.c.init == "zero" else self.ar.add(init(idx, 1), acc)
        at = ", ".join(i.name for i in idx)
        self.b.emit(f"memref.store {finish(v)}, {self.out}[{at}] : {self.out.type}")

    def _end_tile(self, dims: dict[int, Value], carry: Carry) -> None:
        """Store (or add) the row tile's accumulators into the output row, once."""
        b, ch = self.b, self.tile[0]  # type: ignore[index]
        base = self._letters(dims)
        for acc, (j, n) in zip(carry, self.tile[1]):  # type: ignore[index]
            if self.alpha is not None:
                acc = self.ar.scale(acc, self.alpha)
            letters = dict(base, **{ch: b.index(j)})
            idx = [letters[x] for x in self.c.output_subscripts]
            at = ", ".join(i.name for i in idx)
            t = acc.type
            if self.fused is None:
                self._accumulate(letters, {ch: 1}, acc, n)
                continue
            init, finish = self.fused
            v = acc if self.c.init == "zero" else self.ar.add(init(idx, n), acc)
            if n == 1:
                b.emit(f"memref.store {finish(v)}, {self.out}[{at}] : {self.out.type}")
            else:
                b.emit(f"vector.store {v}, {self.out}[{at}] : {self.out.type}, {t}")

    def reduction(self) -> Any:
        return None if self.tile is not None else (self.ar.identity, self.ar.add)

    def gatherable(self, dims: set[int]) -> bool:
        if self.free or not self.ar.vectorizable or self.c.prolog is not None:
            return False
        gathered = {self.wsub[d] for d in dims}
        subs = [s for k, s in enumerate(self.c.subscripts) if k != self.w] + [self.c.output_subscripts]
        return all(ch not in s[:-1] for s in subs for ch in gathered) and not (
            gathered & set(self.c.output_subscripts))

    def reduce_lanes(self, v: Value) -> Value:
        return self.ar.reduce(v)

    def row_bytes(self, dim: int) -> int:
        ch, c = self.wsub[dim], self.c
        if ch not in c.output_subscripts:
            return 0
        n = 1
        for s, extent in zip(c.output_subscripts, c.output.shape):
            if s != ch:
                n *= int(extent)
        dtype = DTYPES.get(c.output.elem)
        return n * (dtype.itemsize if dtype is not None else 1)  # i1 (bool): one byte

    def parallel_dims(self) -> set[int]:
        return {d for d, ch in enumerate(self.wsub) if ch in self.c.output_subscripts}

    def vectorizable(self, strides: Mapping[int, int | None]) -> bool:
        if self.free or not self.ar.vectorizable or self.c.prolog is not None:
            return False
        ls = {ch: strides[d] for d, ch in enumerate(self.wsub)}
        return self._unit_access(ls)

    def body(self, dims: dict[int, Value], pos: str, carry: Carry, lanes: int,
             strides: Mapping[int, int | None]) -> Carry:
        letters = self._letters(dims)
        if self.tile is not None:
            return self._tile_body(letters, pos, carry)
        ls = {ch: (strides[d] if lanes > 1 else 0) for d, ch in enumerate(self.wsub)}
        if not self.free:
            prod = self._product(letters, ls, pos, lanes)
            if carry:
                return [self.ar.add(carry[0], prod)]
            self._accumulate(letters, ls, self._scaled(prod), lanes)
            return carry
        self._free_loops(0, letters, pos)
        return carry

    def _tile_body(self, letters: dict[str, Value], pos: str, carry: Carry) -> Carry:
        """One stored entry times the dense operands' row chunks, added to the row tile's accumulators."""
        ch, chunks = self.tile  # type: ignore[misc]
        out = []
        for acc, (j, n) in zip(carry, chunks):
            inner = dict(letters, **{ch: self.b.index(j)})
            ls = {x: 0 for x in inner}
            ls[ch] = 1 if n > 1 else 0
            out.append(self.ar.add(acc, self._product(inner, ls, pos, n)))
        return out

    # ----- helpers ----------------------------------------------------------------------------------
    def _letters(self, dims: dict[int, Value]) -> dict[str, Value]:
        return {ch: dims[d] for d, ch in enumerate(self.wsub) if d in dims}

    def _unit_access(self, ls: Mapping[str, int | None]) -> bool:
        """Every dense access is invariant or unit-stride in its last index, the output unit-stride."""
        c = self.c
        subs = [s for k, s in enumerate(c.subscripts) if k != self.w] + [c.output_subscripts]
        for s in subs:
            st = [ls.get(ch, 0) for ch in s]
            if any(x not in (0, 1) for x in st) or any(st[:-1]):
                return False
        out = [ls.get(ch, 0) for ch in c.output_subscripts]
        return bool(out) and out[-1] == 1

    def _free_loops(self, depth: int, letters: dict[str, Value], pos: str) -> None:
        b = self.b
        ch = self.free[depth]
        last = depth == len(self.free) - 1
        hi = b.index(self.size[ch])

        def step(iv: Value, lanes: int) -> None:
            inner = dict(letters, **{ch: iv})
            if not last:
                self._free_loops(depth + 1, inner, pos)
                return
            ls = {x: 0 for x in inner}
            ls[ch] = 1 if lanes > 1 else 0
            prod = self._product(inner, ls, pos, lanes)
            self._accumulate(inner, ls, self._scaled(prod), lanes)

        ls_probe = {x: 0 for x in letters}
        ls_probe[ch] = 1
        if (last and self.lanes > 1 and self.ar.vectorizable and self.c.prolog is None
                and self._unit_access(ls_probe) and self.size[ch] >= self.lanes):
            vl = self.lanes
            mid = b.index(self.size[ch] - self.size[ch] % vl)
            b.loop(b.index(0), mid, b.index(vl), lambda iv: step(iv, vl))
            b.loop(mid, hi, b.index(1), lambda iv: step(iv, 1))
        else:
            b.loop(b.index(0), hi, b.index(1), lambda iv: step(iv, 1))

    def _load(self, ref: Value, sub: str, letters: dict[str, Value], ls: Mapping[str, int | None],
              lanes: int) -> Value:
        b, elem = self.b, self.ar.elem
        se = element_type(ref.type)  # the stored type: a half type widened to elem after the load
        idx = ", ".join(letters[ch].name for ch in sub)
        if sub and letters[sub[-1]].type.startswith("vector<"):  # gather along the last axis
            vec, vt = letters[sub[-1]], vtype(se, lanes)
            base = ", ".join([letters[ch].name for ch in sub[:-1]] + [b.index(0).name])
            mask = b.const("dense<true>", f"vector<{lanes}xi1>")
            zero = b.const("dense<0.0>" if self.ar.kind == "float" else "dense<0>", vt)
            gather = (f"vector.gather {ref}[{base}] [{vec}], {mask}, {zero} : {ref.type}, "
                      f"{vec.type}, vector<{lanes}xi1>, {vt} into {vt}")
            return self._widen(self._run_or_gather(ref, sub, letters, vec, vt, gather), se, lanes)
        if lanes > 1 and sub and ls.get(sub[-1], 0) == 1:
            return self._widen(b.op(f"vector.load {ref}[{idx}] : {ref.type}, {vtype(se, lanes)}",
                                    vtype(se, lanes)), se, lanes)
        v = self._widen(b.op(f"memref.load {ref}[{idx}] : {ref.type}", se), se, 1)
        if lanes > 1:
            v = b.op(f"vector.broadcast {v} : {elem} to {vtype(elem, lanes)}", vtype(elem, lanes))
        return v

    def _run_or_gather(self, ref: Value, sub: str, letters: dict[str, Value], vec: Value, vt: str,
                       gather: str) -> Value:
        """The gathered load ``gather`` of ``ref`` at the coordinate vector ``vec``, or one contiguous
        ``vector.load`` where the coordinates are a run (``vec == first + [0, 1, ..., lanes - 1]``, checked
        exactly per group: 4x4-block rows, dense stretches of a row). A run's last coordinate is a stored one,
        so the contiguous load stays in bounds."""
        b = self.b
        lanes = int(vt[len("vector<"):vt.index("x")])
        first = b.extract(vec, 0)
        iota = b.const(f"dense<[{', '.join(str(k) for k in range(lanes))}]>", vec.type)
        expected = b.vadd(b.splat(first, lanes), iota)
        same = b.op(f"arith.cmpi eq, {vec}, {expected} : {vec.type}", f"vector<{lanes}xi1>", "b")
        run = b.op(f"vector.reduction <and>, {same} : vector<{lanes}xi1> into i1", "i1", "b")
        at = first if first.type == "index" else b.op(f"arith.index_cast {first} : {first.type} to index", "index", "i")
        idx = ", ".join([letters[ch].name for ch in sub[:-1]] + [at.name])
        res = b.fresh("r")
        b.emit(f"{res} = scf.if {run} -> ({vt}) {{")
        with b.nested():
            v = b.op(f"vector.load {ref}[{idx}] : {ref.type}, {vt}", vt)
            b.emit(f"scf.yield {v} : {vt}")
        b.emit("} else {")
        with b.nested():
            g = b.op(gather, vt)
            b.emit(f"scf.yield {g} : {vt}")
        b.emit("}")
        return Value(res, vt)

    def _product(self, letters: dict[str, Value], ls: Mapping[str, int | None], pos: str, lanes: int) -> Value:
        b, c, elem = self.b, self.c, self.ar.elem
        walked_lanes = lanes if lanes > 1 and any(ls.get(ch, 0) != 0 for ch in self.wsub) else 1
        prod = None
        for k in range(len(c.inputs)):
            if k == self.w:
                se = element_type(self.val.type)
                t = vtype(se, walked_lanes)
                v = b.op(f"{'vector' if walked_lanes > 1 else 'memref'}.load {self.val}[{pos}] : "
                         f"{self.val.type}{', ' + t if walked_lanes > 1 else ''}", t)
                v = self._widen(v, se, walked_lanes)
                if walked_lanes == 1 and lanes > 1:
                    v = b.op(f"vector.broadcast {v} : {elem} to {vtype(elem, lanes)}", vtype(elem, lanes))
            else:
                v = self._load(self.ins[k], c.subscripts[k], letters, ls, lanes)  # type: ignore[arg-type]
            if k == 0 and c.prolog is not None:
                v = self.ar.apply(c.prolog, v)
            prod = v if prod is None else self.ar.mul(prod, v)
        return prod  # type: ignore[return-value]

    def _widen(self, v: Value, stored: str, lanes: int) -> Value:
        """``v`` (``lanes`` values of the stored type) in the compute type: ``arith.extf`` from a half type."""
        elem = self.ar.elem
        if stored == elem:
            return v
        t = vtype(elem, lanes)
        return self.b.op(f"arith.extf {v} : {v.type} to {t}", t)

    def _scaled(self, prod: Value) -> Value:
        return prod if self.alpha is None else self.ar.scale(prod, self.alpha)

    def _accumulate(self, letters: dict[str, Value], ls: Mapping[str, int | None], x: Value, lanes: int) -> None:
        b, sub = self.b, self.c.output_subscripts
        idx = ", ".join(letters[ch].name for ch in sub)
        if lanes > 1:
            t = x.type
            o = b.op(f"vector.load {self.out}[{idx}] : {self.out.type}, {t}", t)
            b.emit(f"vector.store {self.ar.add(o, x)}, {self.out}[{idx}] : {self.out.type}, {t}")
            return
        o = b.op(f"memref.load {self.out}[{idx}] : {self.out.type}", self.ar.elem)
        b.emit(f"memref.store {self.ar.add(o, x)}, {self.out}[{idx}] : {self.out.type}")


def _for_each(b: Builder, shape: tuple[int, ...], fn: Callable[[list[Value]], None],
              rows: tuple[Value, Value] | None = None) -> None:
    """Nested loops over every index of ``shape`` (the first dimension only over ``rows`` when given)."""
    def rec(d: int, idx: list[Value]) -> None:
        if d == len(shape):
            fn(idx)
            return
        lo, hi = rows if d == 0 and rows is not None else (b.index(0), b.index(shape[d]))
        b.loop(lo, hi, b.index(1), lambda iv: rec(d + 1, idx + [iv]))
    rec(0, [])


#: Stored element types loaded and widened (``arith.extf``) to an f32 computation: torch's CPU half kernels
#: accumulate in float32 too, and no float32 copy of the operands is needed.
HALF_ELEMS = ("f16", "bf16")


def loads_as(stored: str, c: Any) -> bool:
    """Whether an operand stored as ``stored`` is read by ``c``'s kernel: the output's type, or a half type
    widened to an f32 output under plain arithmetic (no semiring, prolog or epilog)."""
    out = c.output.elem
    return stored == out or (stored in HALF_ELEMS and out == "f32" and c.semiring is None
                             and c.prolog is None and c.epilog is None)


def _writes_each_output_once(c: Any, w: int, walked: WalkedOperand, visitor: _Visitor) -> bool:
    """Whether the walk reduces into a loop-carried accumulator under plain dense/batch levels that are
    exactly the output's dimensions (CSR, DELTA, batched SpMV): then every output element is written once,
    at the end of its reduction, and the initial value and epilog are fused into that store."""
    fmt = walked.fmt
    plan = resolution_plan(fmt, walked.shape)
    known = known_after(plan)
    carry = visitor.carry_level(known)
    if carry >= len(fmt.levels) or carry == 0:
        return False
    offsets = fmt.diagonal_offset(walked.shape)
    for k in range(carry):
        value = fmt.levels[k].format.value
        if (value not in ("dense", "batch") or rule_for(value) is not dense_rule or offsets[k] != 0
                or any(r.kind != "plain" or r.guard for r in plan[k])):
            return False
    wsub = c.subscripts[w]
    if any(ch not in wsub for ch in c.output_subscripts) and (visitor.tile is None or c.epilog is not None):
        return False
    return known[carry] == {wsub.index(ch) for ch in c.output_subscripts if ch in wsub}


def row_parallel(c: Any) -> bool:
    """Whether ``c`` has a row-range variant (``emit_contraction(c, rows=True)``): one stored operand, a
    dense output of rank >= 1 whose first letter is the stored operand's outermost dense/batch level
    (CSR, BSR's demapped view, DELTA, batched) or the range level of a row-tiled diagonal format
    (DIA-I), so that disjoint row ranges write disjoint output rows."""
    if _diagonal.applies(c):
        return True
    try:
        w = walked_index(c)
    except ValueError:
        return False
    if not c.output_subscripts or not all(loads_as(t.elem, c) for t in c.inputs):
        return False
    wsub = c.subscripts[w]
    row = c.output_subscripts[0]
    if row not in wsub:
        return False
    t = c.inputs[w]
    walked = WalkedOperand(t.fmt, tuple(t.shape), t.elem, t.pos_width, t.crd_width)
    visitor = _Visitor(None, c, w, [], None, None, None, Arith(None, c.output.elem, c.semiring))  # type: ignore[arg-type]
    try:
        carry = visitor.carry_level(known_after(resolution_plan(t.fmt, walked.shape)))
    except ValueError:
        return False
    return row_mode(walked, carry, wsub.index(row)) is not None


def emit_contraction(c: Any, rows: bool = False, fuse_init: bool = True, prefetch: bool = True) -> str:
    """MLIR module text for ``c`` (see the module docstring).

    ``fuse_init``: where every output element is written once (:func:`_writes_each_output_once`), write
    its initial value, reduction and epilog in that one store; False keeps a separate initialization loop
    (the GPU path turns that copy of ``c`` into writing ``c`` in place). ``prefetch``: let level rules
    prefetch ahead of unrolled walks (delta levels do; the GPU path passes False).

    ``rows=True`` (needs :func:`row_parallel`): the row-range variant ``@<name>(..., %out, %row_begin:
    index, %row_end: index)`` that computes only output rows ``[row_begin, row_end)`` into the caller's
    ``%out`` (initialization, walk and epilog alike) and returns nothing; disjoint ranges may run in
    parallel threads."""
    if fuse_init and _diagonal.applies(c):  # DIA SpMV/SpMM: rows written once, row ranges for both layouts
        return _diagonal.emit(c, rows)
    if fuse_init and _blocked.applies(c):  # BSR SpMV/SpMM: a block row's output rows kept in registers
        return _blocked.emit(c, rows)
    w = walked_index(c)
    if rows and not row_parallel(c):
        raise ValueError("this contraction has no row-range variant (see emitter.row_parallel)")
    elem = c.output.elem
    for t in c.inputs:
        if not loads_as(t.elem, c):
            raise TypeError(f"all operands must have the output's element type {elem} (or be f16/bf16 with "
                            f"an f32 output and plain arithmetic), got {t.elem}")
    b = Builder()
    ar = Arith(b, elem, c.semiring)
    params: list[Value] = []
    ins: list[Value | None] = []
    walked = WalkedOperand(c.inputs[w].fmt, tuple(c.inputs[w].shape), c.inputs[w].elem,
                           c.inputs[w].pos_width, c.inputs[w].crd_width)
    level_args = val = None
    for k, t in enumerate(c.inputs):
        if k == w:
            p, level_args, val = walked.params(f"in{k}")
            params += p
            ins.append(None)
        else:
            v = Value(f"%in{k}", memref_type(tuple(t.shape), t.elem))
            params.append(v)
            ins.append(v)
    out_t = memref_type(tuple(c.output.shape), elem)
    cin = alpha_ref = beta_ref = None
    if c.init != "zero":
        cin = Value("%c", out_t)
        params.append(cin)
    one_t = f"memref<1x{elem}>"
    if c.alpha:
        alpha_ref = Value("%alpha", one_t)
        params.append(alpha_ref)
    if c.init == "beta_c":
        beta_ref = Value("%beta", one_t)
        params.append(beta_ref)

    rng = None
    if rows:
        out = Value("%out", out_t)
        rng = (Value("%row_begin", "index"), Value("%row_end", "index"))
        params += [out, *rng]
    else:
        out = b.op(f"memref.alloc() : {out_t}", out_t, "out")
    alpha = beta = None
    if alpha_ref is not None:
        alpha = b.op(f"memref.load {alpha_ref}[{b.index(0)}] : {one_t}", elem)
    if beta_ref is not None:
        beta = b.op(f"memref.load {beta_ref}[{b.index(0)}] : {one_t}", elem)
    shape = tuple(int(s) for s in c.output.shape)

    def initial(idx: list[Value], lanes: int = 1) -> Value:
        """The initial value of output elements ``idx`` (``lanes`` of them along the last axis)."""
        if cin is None:
            return ar.identity()
        at, t = ", ".join(i.name for i in idx), vtype(elem, lanes)
        v = b.op(f"memref.load {cin}[{at}] : {out_t}" if lanes == 1 else
                 f"vector.load {cin}[{at}] : {out_t}, {t}", t)
        return v if beta is None else ar.scale(v, beta)

    def init(idx: list[Value]) -> None:
        v = initial(idx)
        if cin is not None and c.semiring is not None:  # c folded with the identity, as where an element is
            v = ar.add(v, ar.identity())                   # written once (or-and: c or 0 is 0/1 even with no product)
        b.emit(f"memref.store {v}, {out}[{', '.join(i.name for i in idx)}] : {out_t}")

    visitor = _Visitor(b, c, w, ins, val, out, alpha, ar)  # type: ignore[arg-type]
    fused = fuse_init and _writes_each_output_once(c, w, walked, visitor)
    fill = None
    if fused:
        visitor.fused = (initial, lambda v: v if c.epilog is None else ar.apply(c.epilog, v))
    else:
        def fill(rows_: tuple[Value, Value] | None) -> None:
            _for_each(b, shape, init, rows_)
    skip = val if skips_padding(c, w) else None  # a semiring or prolog must not see padding zeros
    walk(b, walked, level_args, visitor,  # type: ignore[arg-type]
         rng, c.subscripts[w].index(c.output_subscripts[0]) if rng else 0, 1 if skip is not None else c.lanes, skip,
         0 if skip is not None else c.stride, val if prefetch else None, fill, c.gather, value_buffer=val)
    if c.epilog is not None and not fused:
        def epi(idx: list[Value]) -> None:
            at = ", ".join(i.name for i in idx)
            v = b.op(f"memref.load {out}[{at}] : {out_t}", elem)
            b.emit(f"memref.store {ar.apply(c.epilog, v)}, {out}[{at}] : {out_t}")
        _for_each(b, shape, epi, rng)
    b.emit("return" if rows else f"return {out} : {out_t}")
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    head = f"func.func @{c.name}({sig}){'' if rows else ' -> ' + out_t} attributes {{llvm.emit_c_interface}} {{"
    return "\n".join([head] + b.text() + ["}"]) + "\n"
