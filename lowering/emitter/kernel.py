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

from .arith import Arith, vtype
from .builder import Builder, Carry, Value
from .operand import WalkedOperand
from .padding import skips_padding
from .resolution import known_after, resolution_plan
from .walker import NO_CARRY, VECTOR_LANES, row_mode, walk


def memref_type(shape: tuple[int, ...], elem: str) -> str:
    return f"memref<{''.join(f'{int(s)}x' for s in shape)}{elem}>"


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


def _letter_sizes(c: Any) -> dict[str, int]:
    """Extent of every subscript letter of ``c``; ValueError when operands disagree on one."""
    size: dict[str, int] = {}
    for s, t in zip(c.subscripts + (c.output_subscripts,), c.inputs + (c.output,)):
        for ch, n in zip(s, t.shape):
            if size.setdefault(ch, int(n)) != int(n):
                raise ValueError(f"letter {ch!r} has extents {size[ch]} and {n}")
    return size


def _carry_level(c: Any, w: int, known: list[set[int]]) -> int:
    """Walker level before whose loop the accumulator starts: the first one after which every output letter
    is known (``known[k]``: dims known before level k), or NO_CARRY when free letters loop per entry."""
    wsub = c.subscripts[w]
    if any(ch not in wsub for ch in c.loop_letters):
        return NO_CARRY
    need = {wsub.index(ch) for ch in c.output_subscripts}
    for k, dims in enumerate(known):
        if need <= dims:
            return k
    return NO_CARRY


class _Visitor:
    """Emits the product of a stored entry with the dense operands and its reduction."""

    def __init__(self, b: Builder, c: Any, w: int, ins: list[Value | None], val: Value, out: Value,
                 alpha: Value | None, ar: Arith) -> None:
        self.b, self.c, self.w, self.ins, self.val, self.out, self.alpha, self.ar = b, c, w, ins, val, out, alpha, ar
        self.wsub = c.subscripts[w]
        self.free = [ch for ch in c.loop_letters if ch not in self.wsub]
        self.size = _letter_sizes(c)

    # ----- walker protocol ------------------------------------------------------------------------
    def carry_level(self, known: list[set[int]]) -> int:
        return _carry_level(self.c, self.w, known)

    def begin(self, dims: dict[int, Value]) -> Carry:
        return [self.ar.identity()]

    def end(self, dims: dict[int, Value], carry: Carry) -> None:
        acc = carry[0]
        if self.alpha is not None:
            acc = self.ar.scale(acc, self.alpha)
        self._accumulate(self._letters(dims), {}, acc, 1)

    def reduction(self) -> Any:
        return (self.ar.identity, self.ar.add)

    def gatherable(self, dims: set[int]) -> bool:
        if self.free or not self.ar.vectorizable or self.c.prolog is not None:
            return False
        gathered = {self.wsub[d] for d in dims}
        subs = [s for k, s in enumerate(self.c.subscripts) if k != self.w] + [self.c.output_subscripts]
        return all(ch not in s[:-1] for s in subs for ch in gathered) and not (
            gathered & set(self.c.output_subscripts))

    def reduce_lanes(self, v: Value) -> Value:
        return self.ar.reduce(v)

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
        ls = {ch: (strides[d] if lanes > 1 else 0) for d, ch in enumerate(self.wsub)}
        if not self.free:
            prod = self._product(letters, ls, pos, lanes)
            if carry:
                return [self.ar.add(carry[0], prod)]
            self._accumulate(letters, ls, self._scaled(prod), lanes)
            return carry
        self._free_loops(0, letters, pos)
        return carry

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
        if (last and self.ar.vectorizable and self.c.prolog is None and self._unit_access(ls_probe)
                and self.size[ch] >= VECTOR_LANES):
            vl = VECTOR_LANES
            mid = b.index(self.size[ch] - self.size[ch] % vl)
            b.loop(b.index(0), mid, b.index(vl), lambda iv: step(iv, vl))
            b.loop(mid, hi, b.index(1), lambda iv: step(iv, 1))
        else:
            b.loop(b.index(0), hi, b.index(1), lambda iv: step(iv, 1))

    def _load(self, ref: Value, sub: str, letters: dict[str, Value], ls: Mapping[str, int | None],
              lanes: int) -> Value:
        b, elem = self.b, self.ar.elem
        idx = ", ".join(letters[ch].name for ch in sub)
        if sub and letters[sub[-1]].type.startswith("vector<"):  # gather along the last axis
            vec, vt = letters[sub[-1]], vtype(elem, lanes)
            base = ", ".join([letters[ch].name for ch in sub[:-1]] + [b.index(0).name])
            mask = b.const("dense<true>", f"vector<{lanes}xi1>")
            zero = b.const("dense<0.0>" if self.ar.kind == "float" else "dense<0>", vt)
            return b.op(f"vector.gather {ref}[{base}] [{vec}], {mask}, {zero} : {ref.type}, {vec.type}, "
                        f"vector<{lanes}xi1>, {vt} into {vt}", vt)
        if lanes > 1 and sub and ls.get(sub[-1], 0) == 1:
            return b.op(f"vector.load {ref}[{idx}] : {ref.type}, {vtype(elem, lanes)}", vtype(elem, lanes))
        v = b.op(f"memref.load {ref}[{idx}] : {ref.type}", elem)
        if lanes > 1:
            v = b.op(f"vector.broadcast {v} : {elem} to {vtype(elem, lanes)}", vtype(elem, lanes))
        return v

    def _product(self, letters: dict[str, Value], ls: Mapping[str, int | None], pos: str, lanes: int) -> Value:
        b, c, elem = self.b, self.c, self.ar.elem
        walked_lanes = lanes if lanes > 1 and any(ls.get(ch, 0) != 0 for ch in self.wsub) else 1
        prod = None
        for k in range(len(c.inputs)):
            if k == self.w:
                t = vtype(elem, walked_lanes)
                v = b.op(f"{'vector' if walked_lanes > 1 else 'memref'}.load {self.val}[{pos}] : "
                         f"{self.val.type}{', ' + t if walked_lanes > 1 else ''}", t)
                if walked_lanes == 1 and lanes > 1:
                    v = b.op(f"vector.broadcast {v} : {elem} to {vtype(elem, lanes)}", vtype(elem, lanes))
            else:
                # ins[k] is None only for the walked operand (k == self.w)
                v = self._load(self.ins[k], c.subscripts[k], letters, ls, lanes)  # type: ignore[arg-type]
            if k == 0 and c.prolog is not None:
                v = self.ar.apply(c.prolog, v)
            prod = v if prod is None else self.ar.mul(prod, v)
        return prod  # type: ignore[return-value]  # set: a contraction has at least one input

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


def row_parallel(c: Any) -> bool:
    """Whether ``c`` has a row-range variant (``emit_contraction(c, rows=True)``): one stored operand, a
    dense output of rank >= 1 whose first letter is the stored operand's outermost dense/batch level
    (CSR, BSR's demapped view, DELTA, batched) or the range level of a row-tiled diagonal format
    (DIA-I), so that disjoint row ranges write disjoint output rows."""
    try:
        w = walked_index(c)
    except ValueError:
        return False
    if not c.output_subscripts or any(t.elem != c.output.elem for t in c.inputs):
        return False
    wsub = c.subscripts[w]
    row = c.output_subscripts[0]
    if row not in wsub:
        return False
    t = c.inputs[w]
    walked = WalkedOperand(t.fmt, tuple(t.shape), t.elem, t.pos_width, t.crd_width)
    _letter_sizes(c)  # the extent check (ValueError) emit_contraction's visitor makes
    try:
        carry = _carry_level(c, w, known_after(resolution_plan(t.fmt, walked.shape)))
    except ValueError:
        return False
    return row_mode(walked, carry, wsub.index(row)) is not None


def emit_contraction(c: Any, rows: bool = False) -> str:
    """MLIR module text for ``c`` (see the module docstring).

    ``rows=True`` (needs :func:`row_parallel`): the row-range variant ``@<name>(..., %out, %row_begin:
    index, %row_end: index)`` that computes only output rows ``[row_begin, row_end)`` into the caller's
    ``%out`` (initialization, walk and epilog alike) and returns nothing; disjoint ranges may run in
    parallel threads."""
    w = walked_index(c)
    if rows and not row_parallel(c):
        raise ValueError("this contraction has no row-range variant (see emitter.row_parallel)")
    elem = c.output.elem
    for t in c.inputs:
        if t.elem != elem:
            raise TypeError(f"all operands must have the output's element type {elem}, got {t.elem}")
    b = Builder()
    ar = Arith(b, elem, c.semiring)
    params: list[Value] = []
    ins: list[Value | None] = []
    walked = WalkedOperand(c.inputs[w].fmt, tuple(c.inputs[w].shape), elem,
                           c.inputs[w].pos_width, c.inputs[w].crd_width)
    walked_params, level_args, val = walked.params(f"in{w}")
    for k, t in enumerate(c.inputs):
        if k == w:
            params += walked_params
            ins.append(None)
        else:
            v = Value(f"%in{k}", memref_type(tuple(t.shape), elem))
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

    def init(idx: list[Value]) -> None:
        at = ", ".join(i.name for i in idx)
        if cin is None:
            v = ar.identity()
        else:
            v = b.op(f"memref.load {cin}[{at}] : {out_t}", elem)
            if beta is not None:
                v = ar.scale(v, beta)
        b.emit(f"memref.store {v}, {out}[{at}] : {out_t}")

    _for_each(b, shape, init, rng)
    walk(b, walked, level_args, _Visitor(b, c, w, ins, val, out, alpha, ar),
         rng, c.subscripts[w].index(c.output_subscripts[0]) if rng else 0, val if skips_padding(c, w) else None)
    if c.epilog is not None:
        def epi(idx: list[Value]) -> None:
            at = ", ".join(i.name for i in idx)
            v = b.op(f"memref.load {out}[{at}] : {out_t}", elem)
            b.emit(f"memref.store {ar.apply(c.epilog, v)}, {out}[{at}] : {out_t}")
        _for_each(b, shape, epi, rng)
    b.emit("return" if rows else f"return {out} : {out_t}")
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    head = f"func.func @{c.name}({sig}){'' if rows else ' -> ' + out_t} attributes {{llvm.emit_c_interface}} {{"
    return "\n".join([head] + b.text() + ["}"]) + "\n"
