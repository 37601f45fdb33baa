"""DIA-I and DIA-J SpMV/SpMM (plain arithmetic) as row-range loops that write each output row once.

The generic walk (:mod:`.walker`) runs diagonal by diagonal inside tiles of rows, re-reading and re-writing
the tile's output rows once per diagonal, and cannot split DIA-J (whose range level runs over columns) into
row ranges. Here the rows ``[row_begin, row_end)`` split in three: the interior, where every stored diagonal
stays inside the matrix, is walked ``LANES x UNROLL`` rows at a time with every diagonal accumulated into
registers and the output stored once (no clamps, contiguous loads: the values of diagonal ``d`` at row ``i``
are ``val[d * rows + i]`` for DIA-I, ``val[d * cols + i + offset_d]`` for DIA-J); the rows before and after
it (where some diagonal leaves the matrix) are zeroed and walked diagonal by diagonal over the rows where
each diagonal is inside. Both layouts therefore take row ranges, run in chunks on every core.

Bounds-safe like the generic walk: the diagonal range is clamped to the offsets' length and each offset
into ``[1 - rows, cols - 1]``, so that every access follows from the row range and the matrix's shape.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from frontend.format import NamedFormats, TensorFormat

from ..scalar_fn import kind
from .arith import Arith, memref_type
from .builder import Builder, Value
from .operand import WalkedOperand

#: Lanes of the interior's vector loads when the schedule names none.
LANES = 8
#: Vectors of rows per interior iteration (independent accumulators; the offsets are read once per group).
UNROLL = 4
#: Rows per block of the whole-matrix variant (its ``scf.parallel`` iterations).
BLOCK_ROWS = 1 << 16
#: Most accumulators an SpMM keeps in registers (chunks of ``lanes`` output columns, over its group of rows).
ROW_REGISTERS = 16
#: Rows of an SpMM walked together (each diagonal's offset read once for them) when their chunks fit.
SPMM_ROWS = 4


def plain_product(c: Any) -> bool:
    """Whether ``c`` is a stored operand times a dense row-major one into a dense result, plain arithmetic (no
    semiring, prolog, epilog, alpha or initial value), integer or floating values of the output's type."""
    if c.semiring is not None or c.prolog is not None or c.epilog is not None or c.alpha or c.init != "zero":
        return False
    if c.output.encoded or len(c.inputs) != 2:
        return False
    a, x = c.inputs
    elem = c.output.elem
    return a.encoded and not x.encoded and a.elem == elem and x.elem == elem and kind(elem) in ("float", "int")


def applies(c: Any) -> bool:
    """Whether ``c`` is ``A @ x`` / ``A @ X`` (:func:`plain_product`) of a DIA-I or DIA-J operand."""
    return c.is_spmv_or_spmm and plain_product(c) and layout(c.inputs[0].fmt) is not None


def layout(fmt: TensorFormat | None) -> tuple[bool, int | None] | None:
    """``(by_rows, stored)`` of DIA-I (``by_rows``) or DIA-J, ``stored`` the range level's stored slots per
    diagonal when it keeps only the first ones (scipy's narrow ``dia_array`` data), else None; None for
    other formats."""
    if fmt is None or len(fmt.levels) != 2 or fmt.levels[1].format.value != "range":
        return None
    stored = fmt.levels[1].stored
    plain = fmt if stored is None else TensorFormat(
        fmt.dimensions, [fmt.levels[0], dataclasses.replace(fmt.levels[1], stored=None)])
    if plain == NamedFormats.DIAI:
        return True, stored
    if plain == NamedFormats.DIAJ:
        return False, stored
    return None


def emit(c: Any, rows: bool) -> str:
    """MLIR text of ``c`` (:func:`applies`), with the arguments of ``emitter.emit_contraction(c, rows)``."""
    a, xs = c.inputs
    m, n = (int(s) for s in a.shape)
    elem = c.output.elem
    b = Builder()
    walked = WalkedOperand(a.fmt, (m, n), a.elem, a.pos_width, a.crd_width)
    params, levels, val = walked.params("in0")
    x = Value("%in1", memref_type(tuple(xs.shape), elem))
    params.append(x)
    out_t = memref_type(tuple(c.output.shape), elem)
    if rows:
        out = Value("%out", out_t)
        lo, hi = Value("%row_begin", "index"), Value("%row_end", "index")
        params += [out, lo, hi]
    else:
        out = b.op(f"memref.alloc() : {out_t}", out_t, "out")
    by_rows, stored = layout(a.fmt)  # type: ignore[misc]
    lanes = c.lanes or LANES
    k = _Kernel(b, Arith(b, elem), levels[0].pos, levels[0].crd, val, x, out, (m, n), by_rows, stored,
                int(xs.shape[1]) if len(xs.shape) == 2 else 0, lanes)
    if rows:
        k.body(lo, hi)
    else:  # blocks of rows, parallel where the pipeline maps scf.parallel to threads
        step = b.index(BLOCK_ROWS)
        b.parallel_step(b.index(0), b.index(m), step, lambda t: k.body(t, b.min(b.add(t, step), b.index(m))))
    b.emit("return" if rows else f"return {out} : {out_t}")
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    head = f"func.func @{c.name}({sig}){'' if rows else ' -> ' + out_t} attributes {{llvm.emit_c_interface}} {{"
    return "\n".join([head] + b.text() + ["}"]) + "\n"


class _Kernel:
    """The loops of one DIA product (see the module docstring)."""

    def __init__(self, b: Builder, ar: Arith, pos: Any, crd: Any, val: Value, x: Value, out: Value,
                 shape: tuple[int, int], by_rows: bool, stored: int | None, cols: int, lanes: int) -> None:
        self.b, self.ar, self.pos, self.crd, self.val, self.x, self.out = b, ar, pos, crd, val, x, out
        self.m, self.n = shape
        self.by_rows, self.cols, self.lanes = by_rows, cols, max(1, lanes)
        self.elem = ar.elem
        #: value slots per diagonal, and the rows / columns below which stored values lie
        self.ext = (self.m if by_rows else self.n) if stored is None else stored
        self.row_end = min(self.m, self.ext) if by_rows else self.m
        self.col_end = self.n if by_rows else min(self.n, self.ext)

    # ----- diagonals -------------------------------------------------------------------------------------
    def _minui(self, p: Value, q: Value) -> Value:
        return self.b.op(f"arith.minui {p}, {q} : index", "index", "i")

    def diagonals(self) -> tuple[Value, Value]:
        """``[d0, d1)``: the stored diagonals, clamped to the offsets' length."""
        b = self.b
        d0, d1 = b.load_index(self.pos, b.index(0)), b.load_index(self.pos, b.index(1))
        dim = b.op(f"memref.dim {self.crd}, {b.index(0)} : {self.crd.type}", "index", "i")
        d1 = self._minui(d1, dim)
        return self._minui(d0, d1), d1

    def offset(self, d: Value) -> Value:
        """Diagonal ``d``'s offset ``j - i`` clamped into ``[1 - rows, cols - 1]`` (one unsigned min)."""
        b = self.b
        low = b.index(1 - self.m)
        raw = b.sub(b.load_index(self.crd, d), low)
        return b.add(self._minui(raw, b.index(max(self.m + self.n - 2, 0))), low)

    def base(self, d: Value, off: Value) -> Value:
        """Where diagonal ``d``'s value of row 0 would be: ``d * ext + off`` (DIA-J) or ``d * ext`` (DIA-I), ``ext``
        its value slots (rows, columns, or the stored slots of a narrow layout)."""
        b = self.b
        at = b.mul(d, b.index(self.ext))
        return at if self.by_rows else b.add(at, off)

    # ----- the row range ---------------------------------------------------------------------------------
    def body(self, lo: Value, hi: Value) -> None:
        b = self.b
        d0, d1 = self.diagonals()
        zero = b.index(0)

        def bounds(d: Value, carry: list[Value]) -> list[Value]:
            off = self.offset(d)
            return [b.min(carry[0], off), b.max(carry[1], off)]
        omin, omax = b.for_(d0, d1, b.index(1), [zero, zero], bounds)
        ia = b.min(b.max(lo, b.sub(zero, omin)), hi)
        ib = b.max(b.min(b.min(hi, b.index(self.row_end)), b.sub(b.index(self.col_end), omax)), ia)
        self.edge(lo, ia, d0, d1)
        if self.cols:
            self.interior_spmm(ia, ib, d0, d1)
        else:
            self.interior_spmv(ia, ib, d0, d1)
        self.edge(ib, hi, d0, d1)

    # ----- interior: every diagonal inside, registers across diagonals -------------------------------------
    def interior_spmv(self, ia: Value, ib: Value, d0: Value, d1: Value) -> None:
        b, v = self.b, self.lanes
        group = v * UNROLL if v > 1 else 1
        span = b.sub(ib, ia)
        full = b.add(ia, b.sub(span, b.op(f"arith.remui {span}, {b.index(group)} : index", "index", "i")))
        if group > 1:
            b.loop(ia, full, b.index(group), lambda i: self.rows_at(i, d0, d1, v, UNROLL))
        b.loop(full, ib, b.index(1), lambda i: self.rows_at(i, d0, d1, 1, 1))

    def rows_at(self, i: Value, d0: Value, d1: Value, v: int, unroll: int) -> None:
        """Output rows ``i .. i + v * unroll`` of an SpMV: every diagonal accumulated, one store per vector."""
        b, ar = self.b, self.ar
        zero = ar.identity()
        accs = [b.splat(zero, v) if v > 1 else zero for _ in range(unroll)]

        def step(d: Value, carry: list[Value]) -> list[Value]:
            off = self.offset(d)
            base, xi = b.add(self.base(d, off), i), b.add(i, off)
            res = []
            for u, acc in enumerate(carry):
                w = self._load(self.val, b.add(base, b.index(u * v)), v)
                xv = self._load(self.x, b.add(xi, b.index(u * v)), v)
                res.append(ar.add(acc, ar.mul(w, xv)))
            return res
        accs = b.for_(d0, d1, b.index(1), accs, step)
        for u, acc in enumerate(accs):
            self._store(acc, self.out, b.add(i, b.index(u * v)), v)

    def interior_spmm(self, ia: Value, ib: Value, d0: Value, d1: Value) -> None:
        """The interior rows of an SpMM, ``rows`` at a time where their column chunks fit the registers (each
        diagonal's offset read once per group of rows), then one at a time."""
        b = self.b
        groups = self._column_groups()
        rows = max(1, min(SPMM_ROWS, ROW_REGISTERS // len(groups[0]))) if len(groups) == 1 else 1
        full = ia
        if rows > 1:
            span = b.sub(ib, ia)
            full = b.add(ia, b.sub(span, b.op(f"arith.remui {span}, {b.index(rows)} : index", "index", "i")))
            b.loop(ia, full, b.index(rows), lambda i: self.spmm_rows(i, d0, d1, rows, groups[0]))
        def row(i: Value) -> None:
            for g in groups:
                self.spmm_rows(i, d0, d1, 1, g)
        b.loop(full, ib, b.index(1), row)

    def spmm_rows(self, i: Value, d0: Value, d1: Value, rows: int, group: list[tuple[int, int]]) -> None:
        """Output rows ``i .. i + rows`` of an SpMM, columns ``group`` (chunks): every diagonal accumulated in
        registers, one store per chunk."""
        b, ar = self.b, self.ar
        accs = [b.splat(ar.identity(), w) if w > 1 else ar.identity() for _ in range(rows) for _, w in group]

        def step(d: Value, carry: list[Value]) -> list[Value]:
            off = self.offset(d)
            base, r0 = b.add(self.base(d, off), i), b.add(i, off)
            res = list(carry)
            for r in range(rows):
                av = b.vload(self.val, b.add(base, b.index(r)).name, 1)
                for g, (j, w) in enumerate(group):
                    xv = self._load(self.x, b.add(r0, b.index(r)), w, b.index(j))
                    at = r * len(group) + g
                    res[at] = ar.add(res[at], ar.mul(b.splat(av, w) if w > 1 else av, xv))
            return res
        accs = b.for_(d0, d1, b.index(1), accs, step)
        for r in range(rows):
            for g, (j, w) in enumerate(group):
                self._store(accs[r * len(group) + g], self.out, b.add(i, b.index(r)), w, b.index(j))

    def _column_groups(self) -> list[list[tuple[int, int]]]:
        v = self.lanes if self.ar.vectorizable else 1
        full = self.cols - self.cols % v if v > 1 else 0
        chunks = [(j, v) for j in range(0, full, v)] + [(j, 1) for j in range(full, self.cols)]
        return [chunks[k:k + ROW_REGISTERS] for k in range(0, len(chunks), ROW_REGISTERS)]

    # ----- edges: rows where some diagonal leaves the matrix -----------------------------------------------
    def edge(self, s0: Value, s1: Value, d0: Value, d1: Value) -> None:
        """Rows ``[s0, s1)``: zeroed, then each diagonal added over the rows where it is inside (SpMV: ``lanes``
        rows a vector; SpMM: a row's column chunks)."""
        b = self.b
        zero = self.ar.identity()
        chunks = [c for g in self._column_groups() for c in g] if self.cols else []
        if self.cols:
            def zero_row(i: Value) -> None:
                for j, w in chunks:
                    self._store(b.splat(zero, w) if w > 1 else zero, self.out, i, w, b.index(j))
            b.loop(s0, s1, b.index(1), zero_row)
        else:
            b.loop(s0, s1, b.index(1), lambda i: self._store(zero, self.out, i, 1))

        def diagonal(d: Value) -> None:
            off = self.offset(d)
            r0 = b.max(s0, b.sub(b.index(0), off))
            r1 = b.max(b.min(b.min(s1, b.index(self.row_end)), b.sub(b.index(self.col_end), off)), r0)
            base = self.base(d, off)
            if self.cols:
                b.loop(r0, r1, b.index(1), lambda i: self.add_row(b.add(base, i), i, b.add(i, off), chunks))
                return
            v = self.lanes if self.ar.vectorizable else 1
            full = r0
            if v > 1:
                span = b.sub(r1, r0)
                full = b.add(r0, b.sub(span, b.op(f"arith.remui {span}, {b.index(v)} : index", "index", "i")))
                b.loop(r0, full, b.index(v), lambda i: self.add_rows(b.add(base, i), i, b.add(i, off), v))
            b.loop(full, r1, b.index(1), lambda i: self.add_rows(b.add(base, i), i, b.add(i, off), 1))
        b.loop(d0, d1, b.index(1), diagonal)

    def add_rows(self, at: Value, i: Value, r: Value, w: int) -> None:
        """``out[i : i + w] += val[at : at + w] * x[r : r + w]`` (an SpMV's edge rows)."""
        ar = self.ar
        y = self._load(self.out, i, w)
        self._store(ar.add(y, ar.mul(self._load(self.val, at, w), self._load(self.x, r, w))), self.out, i, w)

    def add_row(self, at: Value, i: Value, r: Value, chunks: list[tuple[int, int]]) -> None:
        """``out[i, :] += val[at] * x[r, :]`` by column chunks (an SpMM's edge rows)."""
        b, ar = self.b, self.ar
        a = self._load(self.val, at, 1)
        for j, w in chunks:
            y = self._load(self.out, i, w, b.index(j))
            prod = ar.mul(b.splat(a, w) if w > 1 else a, self._load(self.x, r, w, b.index(j)))
            self._store(ar.add(y, prod), self.out, i, w, b.index(j))

    # ----- loads and stores ------------------------------------------------------------------------------
    def _load(self, mem: Value, at: Value, w: int, col: Value | None = None) -> Value:
        return self.b.vload(mem, at.name if col is None else f"{at}, {col}", w)

    def _store(self, v: Value, mem: Value, at: Value, w: int, col: Value | None = None) -> None:
        self.b.vstore(v, mem, at.name if col is None else f"{at}, {col}")
