"""A hand-written SpGEMM kernel for CSR x CSR -> CSR (plus-times), registered by ``lowering.builtins``.

MLIR's sparsifier compiles SpGEMM as one pass that inserts every entry through a growing buffer with a
function call per entry and quick-sorts each row's workspace (about 7x scipy's time here). This kernel is
Gustavson's row-by-row algorithm in two passes, so the output is allocated once at its exact size:

- count: the number of columns of each result row, marking reached columns with the row's number in a
  marker array (no clearing between rows);
- fill: each row is accumulated in a dense workspace; a column's first product is stored and marked in a
  bitmap (one bit per column) and a summary bitmap (one bit per bitmap word), later ones are added; the
  row's lowest and highest columns are tracked. The row is then written in column order by walking the
  set bits of the summary words between those columns and of the words they point to (``math.cttz``),
  clearing the words on the way: no sorting, and per row only the summary words of its column range plus
  the touched words are visited.

The module holds three functions (sparse-assembler argument order; ``<name>`` is the contraction's):

- ``@<name>(a_pos, a_crd, a_val, b_pos, b_crd, b_val) -> (c_pos, c_crd, c_val)``: the whole product
  (count, then exactly-sized buffers, then fill);
- ``@<name>_count(a..., b..., c_pos, row_begin, row_end)``: writes ``c_pos[i + 1]`` = the number of
  entries of row ``i`` for the rows in ``[row_begin, row_end)``;
- ``@<name>_fill(a..., b..., c_pos, c_crd, c_val, row_begin, row_end)``: writes rows ``[row_begin,
  row_end)`` at their offsets ``c_pos[i]`` (``c_pos`` holds the prefix sums of the counts).

The row-range pair lets the caller run both passes in row chunks on several threads (see
:func:`row_operand`). CSC x CSC -> CSC is the same kernel on the transposed problem (operands swapped).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from frontend.format import INDEX_WIDTH_TYPES

from ..mlir_text import NARROW_INTS, MlirText, type_max
from ..scalar_fn import arith_ops
from .registry import op_name

#: Entries of ``a`` ahead of the current one whose row of ``b`` is prefetched (the row's position twice as far
#: ahead) (docs/performance.md, "SpGEMM: look-ahead prefetch of B's rows").
PREFETCH_AHEAD = 16
#: ... when ``b``'s columns and values take this many bytes or more (in-cache pyamg products ran 3-5% slower
#: with the prefetches).
PREFETCH_MIN_BYTES = 1 << 20
#: The i64 constants every function of the kernel uses (name -> value).
_I64 = {"z64": 0, "o64": 1}


def _type_bytes(ty: str) -> int:
    """Bytes of an element type (``i32``: 4, ``f64``: 8, ``complex<f64>``: 16; ``index``: 8)."""
    digits = "".join(ch for ch in ty if ch.isdigit())
    return max(1, int(digits) // 8) * (2 if ty.startswith("complex") else 1) if digits else 8


class _Text(MlirText):
    """The body lines of one of the kernel's functions (one level inside its ``func.func``)."""

    def __init__(self) -> None:
        super().__init__(depth=1)

    def load_index(self, buf: str, idx: str, ty: str) -> str:
        return self.index_cast(self.load(buf, idx, f"memref<?x{ty}>"), ty, "index")

    def store_index(self, value: str, buf: str, idx: str, ty: str) -> None:
        self.store(self.index_cast(value, "index", ty), buf, idx, f"memref<?x{ty}>")

    def row_range(self, pos: str, r: str, ty: str, crd: str, crd_ty: str) -> tuple[str, str, str]:
        """Entries ``pos[r] .. pos[r + 1]`` of row ``r`` of a compressed level whose coordinates are ``crd``,
        clamped into ``[0, len(crd)]`` with ``lo <= hi`` (bounds-safe whatever the positions hold), and ``r + 1``.
        Narrow positions are clamped in their own type and zero-extended (docs/performance.md, "the union and
        intersection bounded per chunk": the clamp of the sign-extended index cost 15-20% there)."""
        r1 = self.assign(f"arith.addi {r}, %c1 : index")
        entries = self.assign(f"memref.dim {crd}, %c0 : memref<?x{crd_ty}>")
        if ty not in NARROW_INTS:
            lo, hi = self.load_index(pos, r, ty), self.load_index(pos, r1, ty)
            hi = self.assign(f"arith.minui {hi}, {entries} : index")
            return self.assign(f"arith.minui {lo}, {hi} : index"), hi, r1
        top = self.assign(f"arith.minui {entries}, {self.assign(f'arith.constant {type_max(ty)} : index')} : index")
        top = self.index_cast(top, "index", ty)
        mtype = f"memref<?x{ty}>"
        hi = self.assign(f"arith.minui {self.load(pos, r1, mtype)}, {top} : {ty}")
        lo = self.assign(f"arith.minui {self.load(pos, r, mtype)}, {hi} : {ty}")
        return self.cast("arith.index_castui", lo, ty, "index"), self.cast("arith.index_castui", hi, ty, "index"), r1

    def coordinate(self, crd: str, p: str, ty: str, top: tuple[str, int]) -> str:
        """``crd[p]`` as an index clamped to ``top`` (its constant's name and value; unsigned minimum: negative
        coordinates too), narrow coordinates in their own type, then zero-extended."""
        name, value = top
        if ty in NARROW_INTS and value <= type_max(ty):
            low = self.assign(f"arith.minui {self.load(crd, p, f'memref<?x{ty}>')}, "
                              f"{self.assign(f'arith.constant {value} : {ty}')} : {ty}")
            return self.cast("arith.index_castui", low, ty, "index")
        return self.assign(f"arith.minui {self.load_index(crd, p, ty)}, {name} : index")

    def bit_of(self, x: str) -> tuple[str, str]:
        """Bit ``x`` of a bitmap of i64 words: (its word's index, the i64 mask of it in that word)."""
        w = self.assign(f"arith.shrui {x}, %c6 : index")
        b = self.index_cast(self.assign(f"arith.andi {x}, %c63 : index"), "index", "i64")
        return w, self.assign(f"arith.shli %o64, {b} : i64")

    def set_bit(self, buf: str, x: str) -> str:
        """``buf[x / 64] |= 1 << (x % 64)``; returns the word's index."""
        w, one = self.bit_of(x)
        word = self.assign(f"memref.load {buf}[{w}] : memref<?xi64>")
        self.emit(f"memref.store {self.assign(f'arith.ori {word}, {one} : i64')}, {buf}[{w}] : memref<?xi64>")
        return w

    def fill(self, buf: str, size: str, value: str, ty: str) -> None:
        self.emit(f"scf.for %z = %c0 to {size} step %c1 {{")
        self.emit(f"  memref.store {value}, {buf}[%z] : memref<?x{ty}>")
        self.emit("}")

    def over_set_bits(self, word0: str, o0: str, body: Callable[[str, str], str]) -> str:
        """``scf.while`` over the set bits of the i64 ``word0``, lowest first, threading an index from
        ``o0``: ``body(bit, o) -> o'`` (``bit``: the bit's position as an index); returns the final index."""
        res, x, o, x1, o1 = (self.fresh(s) for s in ("ws", "wx", "wo", "wx", "wo"))
        self.emit(f"{res}:2 = scf.while ({x} = {word0}, {o} = {o0}) : (i64, index) -> (i64, index) {{")
        with self.nested():
            more = self.cmpi("ne", x, "%z64", "i64")
            self.emit(f"scf.condition({more}) {x}, {o} : i64, index")
        self.emit("} do {")
        self.emit(f"^bb0({x1}: i64, {o1}: index):")
        with self.nested():
            bit = self.index_cast(self.assign(f"math.cttz {x1} : i64"), "i64", "index")
            rest = self.assign(f"arith.andi {x1}, {self.assign(f'arith.subi {x1}, %o64 : i64')} : i64")
            self.emit_yield([rest, body(bit, o1)], ["i64", "index"])
        self.emit("}")
        return f"{res}#1"


def applies(c: Any) -> bool:
    """A plain matmul ("ik,kj->ij") whose result has the left operand's format; no scaling, semiring,
    prolog or epilog."""
    return (op_name(c) == "matmul" and c.semiring is None and not c.alpha and c.init == "zero"
            and c.prolog is None and c.epilog is None and c.output.sparse and c.output.fmt is not None
            and c.output.fmt.structure_key() == c.inputs[0].fmt.structure_key())


def row_operand(c: Any) -> int:
    """The input whose rows (outer level) the result's rows are made from: 0 for CSR, 1 for CSC."""
    return 0 if c.output.fmt.is_identity else 1


def build(c: Any) -> str:
    """The MLIR module text of the SpGEMM for CSR x CSR -> CSR contraction ``c`` (module docstring)."""
    return _Kernel(c, transposed=False).module()


def build_csc(c: Any) -> str:
    """CSC x CSC -> CSC: the CSR kernel on the transposed problem C^T = B^T A^T (same buffers)."""
    return _Kernel(c, transposed=True).module()


class _Kernel:
    """Types, shapes and the three functions of one SpGEMM (the module docstring)."""

    def __init__(self, c: Any, transposed: bool) -> None:
        a, b, out = c.inputs[0], c.inputs[1], c.output
        m, n = out.shape
        if transposed:
            a, b, m, n = b, a, n, m
        self.name, self.transposed, self.m, self.n = c.name, transposed, m, n
        # the inner extent (a's columns, b's rows, in either orientation): a's coordinates are clamped below it,
        # b's below n
        self.k = int(c.inputs[0].shape[1])
        self.ktop, self.ntop = ("%ktop", max(self.k - 1, 0)), ("%ntop", max(self.n - 1, 0))
        self.elem = out.elem
        ops = arith_ops(self.elem)
        self.mul, self.add = ops["mul"], ops["add"]
        self.ap, self.ac = INDEX_WIDTH_TYPES[a.pos_width], INDEX_WIDTH_TYPES[a.crd_width]
        self.bp, self.bc = INDEX_WIDTH_TYPES[b.pos_width], INDEX_WIDTH_TYPES[b.crd_width]
        self.cp, self.cc = INDEX_WIDTH_TYPES[out.pos_width], INDEX_WIDTH_TYPES[out.crd_width]
        self.words = max(1, -(-n // 64))
        self.groups = max(1, -(-self.words // 64))
        self.mark = "i32" if m < 2**31 - 1 else "i64"  # the marker array's type (row numbers, -1 = none)

    def module(self) -> str:
        return "\n".join([self._whole(), self._count(), self._fill()])

    # ----- functions -----------------------------------------------------------------------------------
    def _operands(self, values: bool = True) -> str:
        e = self.elem
        first = f"%a_pos: memref<?x{self.ap}>, %a_crd: memref<?x{self.ac}>, %a_val: memref<?x{e}>"
        second = f"%b_pos: memref<?x{self.bp}>, %b_crd: memref<?x{self.bc}>, %b_val: memref<?x{e}>"
        return f"{second}, {first}" if self.transposed else f"{first}, {second}"

    def _function(self, name: str, params: str, results: str, t: _Text) -> str:
        arrow = f" -> ({results})" if results else ""
        head = f"func.func @{name}({params}){arrow} attributes {{llvm.emit_c_interface}} {{"
        return "\n".join([head] + self._constants() + t.lines + ["}"]) + "\n"

    def _constants(self) -> list[str]:
        values = {"c0": 0, "c1": 1, "c6": 6, "c12": 12, "c63": 63, "m": self.m, "m1": self.m + 1, "n": self.n,
                  "ktop": max(self.k - 1, 0), "ntop": max(self.n - 1, 0),
                  "words": self.words, "groups": self.groups, f"pf{PREFETCH_AHEAD}": PREFETCH_AHEAD,
                  f"pf{2 * PREFETCH_AHEAD}": 2 * PREFETCH_AHEAD}
        lines = [f"  %{k} = arith.constant {v} : index" for k, v in values.items()]
        lines += [f"  %{k} = arith.constant {v} : i64" for k, v in _I64.items()]
        return lines

    def _whole(self) -> str:
        """``@<name>``: count all rows, allocate the exact result, fill all rows."""
        t = _Text()
        cp, cc, e = self.cp, self.cc, self.elem
        t.emit(f"%cpos = memref.alloc(%m1) : memref<?x{cp}>")
        self._count_rows(t, "%c0", "%m", "%cpos")
        t.store_index("%c0", "%cpos", "%c0", cp)
        # prefix sums of the counts: the rows' offsets
        t.emit("%nnz = scf.for %i = %c0 to %m step %c1 iter_args(%s = %c0) -> (index) {")
        with t.nested():
            i1 = t.assign("arith.addi %i, %c1 : index")
            s1 = t.assign(f"arith.addi %s, {t.load_index('%cpos', i1, cp)} : index")
            t.store_index(s1, "%cpos", i1, cp)
            t.emit(f"scf.yield {s1} : index")
        t.emit("}")
        t.emit(f"%ccrd = memref.alloc(%nnz) : memref<?x{cc}>")
        t.emit(f"%cval = memref.alloc(%nnz) : memref<?x{e}>")
        self._fill_rows(t, "%c0", "%m", "%cpos", "%ccrd", "%cval")
        t.emit(f"return %cpos, %ccrd, %cval : memref<?x{cp}>, memref<?x{cc}>, memref<?x{e}>")
        return self._function(self.name, self._operands(),
                              f"memref<?x{cp}>, memref<?x{cc}>, memref<?x{e}>", t)

    def _count(self) -> str:
        t = _Text()
        self._count_rows(t, "%row_begin", "%row_end", "%c_pos")
        t.emit("return")
        params = f"{self._operands()}, %c_pos: memref<?x{self.cp}>, %row_begin: index, %row_end: index"
        return self._function(f"{self.name}_count", params, "", t)

    def _fill(self) -> str:
        t = _Text()
        self._fill_rows(t, "%row_begin", "%row_end", "%c_pos", "%c_crd", "%c_val")
        t.emit("return")
        params = (f"{self._operands()}, %c_pos: memref<?x{self.cp}>, %c_crd: memref<?x{self.cc}>, "
                  f"%c_val: memref<?x{self.elem}>, %row_begin: index, %row_end: index")
        return self._function(f"{self.name}_fill", params, "", t)

    # ----- prefetching ------------------------------------------------------------------------------------
    def _a_end(self, t: _Text, hi: str) -> tuple[str, str]:
        """The last stored entry of ``a`` in rows ``[.., hi)`` (the prefetches' clamp), as an index, and the i1
        that says whether to prefetch: ``b`` stores :data:`PREFETCH_MIN_BYTES` or more."""
        end = t.load_index("%a_pos", hi, self.ap)
        entries = t.assign("memref.dim %b_crd, %c0 : memref<?x" + self.bc + ">")
        per = _type_bytes(self.bc) + _type_bytes(self.elem)
        least = t.assign(f"arith.constant {max(1, PREFETCH_MIN_BYTES // per)} : index")
        a_last = t.assign(f"arith.subi {t.assign('memref.dim %a_crd, %c0 : memref<?x' + self.ac + '>')}, %c1 : index")
        last = t.assign(f"arith.minui {t.assign(f'arith.subi {end}, %c1 : index')}, {a_last} : index")
        return last, t.cmpi("uge", entries, least, "index")

    def _prefetch(self, t: _Text, p: str, clamp: tuple[str, str], values: bool) -> None:
        """Prefetch ahead of ``a``'s entry ``p`` (``clamp``: from :meth:`_a_end`): the position of the row of ``b`` that
        entry ``p + 2 D`` reaches and the first columns (and ``values``) of the row entry ``p + D`` reaches
        (``D`` = :data:`PREFETCH_AHEAD`). Those rows are scattered over ``b`` where ``a``'s columns are; the
        inner loop's unpredictable trip count otherwise serializes their cache misses."""
        if not PREFETCH_AHEAD:
            return
        last, use = clamp
        t.emit(f"scf.if {use} {{")
        with t.nested():
            self._prefetch_ahead(t, p, last, values)
        t.emit("}")

    def _prefetch_ahead(self, t: _Text, p: str, last: str, values: bool) -> None:
        for ahead, what in ((2 * PREFETCH_AHEAD, "pos"), (PREFETCH_AHEAD, "row")):
            q = t.assign(f"arith.minui {t.assign(f'arith.addi {p}, %pf{ahead} : index')}, {last} : index")
            k = t.coordinate("%a_crd", q, self.ac, self.ktop)
            if what == "pos":
                t.emit(f"memref.prefetch %b_pos[{k}], read, locality<3>, data : memref<?x{self.bp}>")
                continue
            start = t.load_index("%b_pos", k, self.bp)
            t.emit(f"memref.prefetch %b_crd[{start}], read, locality<3>, data : memref<?x{self.bc}>")
            if values:
                t.emit(f"memref.prefetch %b_val[{start}], read, locality<3>, data : memref<?x{self.elem}>")

    # ----- passes ----------------------------------------------------------------------------------------
    def _count_rows(self, t: _Text, lo: str, hi: str, cpos: str) -> None:
        """``cpos[i + 1]`` = the number of columns row ``i`` reaches, for ``i`` in ``[lo, hi)``."""
        mk, ap, ac, bp, bc = self.mark, self.ap, self.ac, self.bp, self.bc
        mark = t.assign(f"memref.alloc(%n) : memref<?x{mk}>", "mark")
        none = t.assign(f"arith.constant -1 : {mk}")
        t.fill(mark, "%n", none, mk)
        clamp = self._a_end(t, hi)
        i = t.fresh("i")
        t.emit(f"scf.for {i} = {lo} to {hi} step %c1 {{")
        with t.nested():
            im = t.index_cast(i, "index", mk)
            alo, ahi, i1 = t.row_range("%a_pos", i, ap, "%a_crd", ac)
            p, u0 = t.fresh("p"), t.fresh("u")
            total = t.fresh("rc")
            t.emit(f"{total} = scf.for {p} = {alo} to {ahi} step %c1 iter_args({u0} = %c0) -> (index) {{")
            with t.nested():
                self._prefetch(t, p, clamp, values=False)
                blo, bhi, _ = t.row_range("%b_pos", t.coordinate("%a_crd", p, ac, self.ktop), bp, "%b_crd", bc)
                q, u1 = t.fresh("q"), t.fresh("u")
                inner = t.fresh("rc")
                t.emit(f"{inner} = scf.for {q} = {blo} to {bhi} step %c1 iter_args({u1} = {u0}) -> (index) {{")
                with t.nested():
                    j = t.coordinate("%b_crd", q, bc, self.ntop)
                    seen = t.assign(f"memref.load {mark}[{j}] : memref<?x{mk}>")
                    new = t.assign(f"arith.select {t.cmpi('ne', seen, im, mk)}, %c1, %c0 : index")
                    t.emit(f"memref.store {im}, {mark}[{j}] : memref<?x{mk}>")
                    t.emit(f"scf.yield {t.assign(f'arith.addi {u1}, {new} : index')} : index")
                t.emit("}")
                t.emit(f"scf.yield {inner} : index")
            t.emit("}")
            t.store_index(total, cpos, i1, self.cp)
        t.emit("}")
        t.emit(f"memref.dealloc {mark} : memref<?x{mk}>")

    def _fill_rows(self, t: _Text, lo: str, hi: str, cpos: str, crd: str, val: str) -> None:
        """Rows ``[lo, hi)`` of the result, each at its offset ``cpos[i]`` of ``crd`` and ``val``."""
        e, ap, ac, bp, bc, cp, cc = self.elem, self.ap, self.ac, self.bp, self.bc, self.cp, self.cc
        # bits: one bit per column reached by the current row; summary: one bit per nonzero word of bits;
        # work: the row's values (valid where the bit is set)
        t.emit("%bits = memref.alloc(%words) : memref<?xi64>")
        t.emit("%summary = memref.alloc(%groups) : memref<?xi64>")
        t.fill("%bits", "%words", "%z64", "i64")
        t.fill("%summary", "%groups", "%z64", "i64")
        t.emit("%wn = arith.shli %words, %c6 : index")
        t.emit(f"%work = memref.alloc(%wn) : memref<?x{e}>")
        clamp = self._a_end(t, hi)
        i = t.fresh("i")
        t.emit(f"scf.for {i} = {lo} to {hi} step %c1 {{")
        with t.nested():
            alo, ahi, _ = t.row_range("%a_pos", i, ap, "%a_crd", ac)
            # accumulate the row: work[j] += a[i, k] * b[k, j]; mark j; track the lowest and highest j
            p, lo0, hi0 = t.fresh("p"), t.fresh("jl"), t.fresh("jh")
            span = t.fresh("span")
            t.emit(f"{span}:2 = scf.for {p} = {alo} to {ahi} step %c1 iter_args({lo0} = %n, {hi0} = %c0) "
                   "-> (index, index) {")
            with t.nested():
                self._prefetch(t, p, clamp, values=True)
                k = t.coordinate("%a_crd", p, ac, self.ktop)
                av = t.assign(f"memref.load %a_val[{p}] : memref<?x{e}>")
                blo, bhi, _ = t.row_range("%b_pos", k, bp, "%b_crd", bc)
                q, lo1, hi1 = t.fresh("q"), t.fresh("jl"), t.fresh("jh")
                inner = t.fresh("span")
                t.emit(f"{inner}:2 = scf.for {q} = {blo} to {bhi} step %c1 iter_args({lo1} = {lo0}, "
                       f"{hi1} = {hi0}) -> (index, index) {{")
                with t.nested():
                    j = t.coordinate("%b_crd", q, bc, self.ntop)
                    bv = t.assign(f"memref.load %b_val[{q}] : memref<?x{e}>")
                    prod = t.assign(f"{self.mul} {av}, {bv} : {e}")
                    w, one = t.bit_of(j)
                    word = t.assign(f"memref.load %bits[{w}] : memref<?xi64>")
                    fresh = t.assign(f"arith.cmpi eq, {t.assign(f'arith.andi {word}, {one} : i64')}, %z64 : i64")
                    t.emit(f"scf.if {fresh} {{")  # a new column: its first product, its bit, its word's bit
                    with t.nested():
                        t.emit(f"memref.store {prod}, %work[{j}] : memref<?x{e}>")
                        t.emit(f"memref.store {t.assign(f'arith.ori {word}, {one} : i64')}, %bits[{w}] : "
                               "memref<?xi64>")
                        t.set_bit("%summary", w)
                    t.emit("} else {")
                    with t.nested():
                        old = t.assign(f"memref.load %work[{j}] : memref<?x{e}>")
                        t.emit(f"memref.store {t.assign(f'{self.add} {old}, {prod} : {e}')}, %work[{j}] : "
                               f"memref<?x{e}>")
                    t.emit("}")
                    t.emit_yield([t.assign(f"arith.minui {lo1}, {j} : index"),
                                  t.assign(f"arith.maxui {hi1}, {j} : index")], ["index", "index"])
                t.emit("}")
                t.emit_yield([f"{inner}#0", f"{inner}#1"], ["index", "index"])
            t.emit("}")
            # write the row in column order: the set bits of the summary words between its lowest and
            # highest column, then of the words they point to; clear the words on the way
            start = t.load_index(cpos, i, cp)
            g0 = t.assign(f"arith.shrui {span}#0, %c12 : index")
            g1 = t.assign(f"arith.addi {t.assign(f'arith.shrui {span}#1, %c12 : index')}, %c1 : index")
            g, o0 = t.fresh("g"), t.fresh("off")
            done = t.fresh("end")
            t.emit(f"{done} = scf.for {g} = {g0} to {g1} step %c1 iter_args({o0} = {start}) -> (index) {{")
            with t.nested():
                sw0 = t.assign(f"memref.load %summary[{g}] : memref<?xi64>")

                def word_columns(tzi: str, o1: str) -> str:  # the set bits of bits[64 g + tzi]
                    wi = t.assign(f"arith.addi {t.assign(f'arith.shli {g}, %c6 : index')}, {tzi} : index")
                    jbase = t.assign(f"arith.shli {wi}, %c6 : index")

                    def column(bzi: str, oo1: str) -> str:
                        col = t.assign(f"arith.addi {jbase}, {bzi} : index")
                        t.store_index(col, crd, oo1, cc)
                        v = t.assign(f"memref.load %work[{col}] : memref<?x{e}>")
                        t.emit(f"memref.store {v}, {val}[{oo1}] : memref<?x{e}>")
                        return t.assign(f"arith.addi {oo1}, %c1 : index")

                    bw0 = t.assign(f"memref.load %bits[{wi}] : memref<?xi64>")
                    out = t.over_set_bits(bw0, o1, column)
                    t.emit(f"memref.store %z64, %bits[{wi}] : memref<?xi64>")
                    return out

                o1 = t.over_set_bits(sw0, o0, word_columns)
                t.emit(f"memref.store %z64, %summary[{g}] : memref<?xi64>")
                t.emit(f"scf.yield {o1} : index")
            t.emit("}")
        t.emit("}")
        t.emit("memref.dealloc %bits : memref<?xi64>")
        t.emit("memref.dealloc %summary : memref<?xi64>")
        t.emit(f"memref.dealloc %work : memref<?x{e}>")
