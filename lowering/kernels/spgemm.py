"""A hand-written SpGEMM kernel for CSR x CSR -> CSR (plus-times), registered by ``lowering.builtins``.

MLIR's sparsifier compiles SpGEMM as one pass that inserts every entry through a growing buffer with a
function call per entry and quick-sorts each row's workspace (about 7x scipy's time here). This kernel:

Gustavson's row-by-row algorithm in one pass over the products. Each row is accumulated in a dense
workspace; the columns it reaches are marked in a bitmap (one bit per column) and a summary bitmap (one
bit per nonzero bitmap word). The row is then written in column order by walking the set bits of the
summary words and of the words they point to (``math.cttz``), clearing them on the way: no sorting, and
per row only ``n / 4096`` summary words plus the touched words are visited. The output buffers are
allocated once with an upper bound of the entries (the B rows each A entry reaches, at most m*n) and
shrunk to the exact size at the end (``memref.realloc``), so the caller owns exactly-sized buffers.

Signature (sparse-assembler order): ``(a_pos, a_crd, a_val, b_pos, b_crd, b_val) -> (c_pos, c_crd,
c_val)``. CSC x CSC -> CSC is the same kernel on the transposed problem (operands swapped).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from frontend.format import INDEX_WIDTH_TYPES

from ..mlir_text import MlirText
from ..scalar_fn import arith_ops
from .registry import op_name


class _Text(MlirText):
    """The kernel's body lines (one level inside its ``func.func``)."""

    def __init__(self) -> None:
        super().__init__(depth=1)

    def load_index(self, buf: str, idx: str, ty: str) -> str:
        return self.index_cast(self.load(buf, idx, f"memref<?x{ty}>"), ty, "index")

    def store_index(self, value: str, buf: str, idx: str, ty: str) -> None:
        self.store(self.index_cast(value, "index", ty), buf, idx, f"memref<?x{ty}>")

    def row_range(self, pos: str, r: str, ty: str) -> tuple[str, str, str]:
        """Entries ``pos[r] .. pos[r + 1]`` of row ``r`` of a compressed level, and ``r + 1``."""
        r1 = self.assign(f"arith.addi {r}, %c1 : index")
        return self.load_index(pos, r, ty), self.load_index(pos, r1, ty), r1

    def bit_of(self, x: str) -> tuple[str, str]:
        """Bit ``x`` of a bitmap of i64 words: (its word's index, the i64 mask of it in that word)."""
        w = self.assign(f"arith.shrui {x}, %c6 : index")
        b = self.index_cast(self.assign(f"arith.andi {x}, %c63 : index"), "index", "i64")
        return w, self.assign(f"arith.shli %o64, {b} : i64")

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


def build(c: Any) -> str:
    """The MLIR module text of the SpGEMM for CSR x CSR -> CSR contraction ``c`` (module docstring)."""
    return _build(c, transposed=False)


def build_csc(c: Any) -> str:
    """CSC x CSC -> CSC: the CSR kernel on the transposed problem C^T = B^T A^T (same buffers)."""
    return _build(c, transposed=True)


def _build(c: Any, transposed: bool) -> str:
    a, b, out = c.inputs[0], c.inputs[1], c.output
    m, n = out.shape
    if transposed:
        a, b, m, n = b, a, n, m
    elem = out.elem
    ops = arith_ops(elem)
    mul, add = ops["mul"], ops["add"]
    ap, ac = INDEX_WIDTH_TYPES[a.pos_width], INDEX_WIDTH_TYPES[a.crd_width]
    bp, bc = INDEX_WIDTH_TYPES[b.pos_width], INDEX_WIDTH_TYPES[b.crd_width]
    cp, cc = INDEX_WIDTH_TYPES[out.pos_width], INDEX_WIDTH_TYPES[out.crd_width]
    words = max(1, -(-n // 64))
    groups = max(1, -(-words // 64))
    t = _Text()
    for name, value in (("c0", 0), ("c1", 1), ("c6", 6), ("c63", 63), ("m", m), ("m1", m + 1),
                        ("mn", m * n), ("words", words), ("groups", groups)):
        t.emit(f"%{name} = arith.constant {value} : index")
    t.emit("%z64 = arith.constant 0 : i64")
    t.emit("%o64 = arith.constant 1 : i64")
    annz = t.load_index("%a_pos", "%m", ap)
    t.emit(f"%annz = arith.addi {annz}, %c0 : index")
    # bits: one bit per column reached by the current row; summary: one bit per nonzero word of bits
    t.emit("%bits = memref.alloc(%words) : memref<?xi64>")
    t.emit("%summary = memref.alloc(%groups) : memref<?xi64>")
    t.emit("scf.for %z = %c0 to %words step %c1 {")
    t.emit("  memref.store %z64, %bits[%z] : memref<?xi64>")
    t.emit("}")
    t.emit("scf.for %z = %c0 to %groups step %c1 {")
    t.emit("  memref.store %z64, %summary[%z] : memref<?xi64>")
    t.emit("}")
    t.emit("%wn = arith.shli %words, %c6 : index")
    t.emit(f"%work = memref.alloc(%wn) : memref<?x{elem}>")
    t.emit(f"%cpos = memref.alloc(%m1) : memref<?x{cp}>")
    t.store_index("%c0", "%cpos", "%c0", cp)
    # capacity: an upper bound of the result's entries (sum of the B rows each A entry reaches)
    t.emit("%cap = scf.for %p = %c0 to %annz step %c1 iter_args(%u0 = %c0) -> (index) {")
    t.depth += 1
    blo, bhi, _ = t.row_range("%b_pos", t.load_index("%a_crd", "%p", ac), bp)
    span = t.assign(f"arith.subi {bhi}, {blo} : index")
    t.emit(f"%u1 = arith.addi %u0, {span} : index")
    t.emit("scf.yield %u1 : index")
    t.depth -= 1
    t.emit("}")
    t.emit("%capn = arith.minui %cap, %mn : index")
    t.emit(f"%ccrd0 = memref.alloc(%capn) : memref<?x{cc}>")
    t.emit(f"%cval0 = memref.alloc(%capn) : memref<?x{elem}>")
    t.emit("%nnz = scf.for %i = %c0 to %m step %c1 iter_args(%start = %c0) -> (index) {")
    t.depth += 1
    lo, hi, i1 = t.row_range("%a_pos", "%i", ap)
    # accumulate the row: work[j] (+)= a[i, k] * b[k, j], marking each new column's bit
    t.emit(f"scf.for %p = {lo} to {hi} step %c1 {{")
    t.depth += 1
    k = t.load_index("%a_crd", "%p", ac)
    av = t.assign(f"memref.load %a_val[%p] : memref<?x{elem}>")
    blo, bhi, _ = t.row_range("%b_pos", k, bp)
    t.emit(f"scf.for %q = {blo} to {bhi} step %c1 {{")
    t.depth += 1
    j = t.load_index("%b_crd", "%q", bc)
    bv = t.assign(f"memref.load %b_val[%q] : memref<?x{elem}>")
    prod = t.assign(f"{mul} {av}, {bv} : {elem}")
    w, one = t.bit_of(j)
    word = t.assign(f"memref.load %bits[{w}] : memref<?xi64>")
    has = t.assign(f"arith.andi {word}, {one} : i64")
    new = t.assign(f"arith.cmpi eq, {has}, %z64 : i64")
    t.emit(f"scf.if {new} {{")
    t.depth += 1
    t.emit(f"memref.store {prod}, %work[{j}] : memref<?x{elem}>")
    nw = t.assign(f"arith.ori {word}, {one} : i64")
    t.emit(f"memref.store {nw}, %bits[{w}] : memref<?xi64>")
    g, gone = t.bit_of(w)
    gw = t.assign(f"memref.load %summary[{g}] : memref<?xi64>")
    ngw = t.assign(f"arith.ori {gw}, {gone} : i64")
    t.emit(f"memref.store {ngw}, %summary[{g}] : memref<?xi64>")
    t.depth -= 1
    t.emit("} else {")
    t.depth += 1
    old = t.assign(f"memref.load %work[{j}] : memref<?x{elem}>")
    acc = t.assign(f"{add} {old}, {prod} : {elem}")
    t.emit(f"memref.store {acc}, %work[{j}] : memref<?x{elem}>")
    t.depth -= 1
    t.emit("}")
    t.depth -= 1
    t.emit("}")
    t.depth -= 1
    t.emit("}")
    # emit the row in column order: set bits of the summary words, then of the words they point to
    t.emit("%end = scf.for %g = %c0 to %groups step %c1 iter_args(%o0 = %start) -> (index) {")
    t.depth += 1
    sw0 = t.assign("memref.load %summary[%g] : memref<?xi64>")

    def word_columns(tzi: str, o1: str) -> str:  # the set bits of bits[64 g + tzi]: columns 64 (64 g + tzi) + bzi
        wi = t.assign(f"arith.addi {t.assign('arith.shli %g, %c6 : index')}, {tzi} : index")
        jbase = t.assign(f"arith.shli {wi}, %c6 : index")

        def column(bzi: str, oo1: str) -> str:
            col = t.assign(f"arith.addi {jbase}, {bzi} : index")
            t.store_index(col, "%ccrd0", oo1, cc)
            val = t.assign(f"memref.load %work[{col}] : memref<?x{elem}>")
            t.emit(f"memref.store {val}, %cval0[{oo1}] : memref<?x{elem}>")
            return t.assign(f"arith.addi {oo1}, %c1 : index")

        bw0 = t.assign(f"memref.load %bits[{wi}] : memref<?xi64>")
        out = t.over_set_bits(bw0, o1, column)
        t.emit(f"memref.store %z64, %bits[{wi}] : memref<?xi64>")
        return out

    gw = t.over_set_bits(sw0, "%o0", word_columns)
    t.emit("memref.store %z64, %summary[%g] : memref<?xi64>")
    t.emit(f"scf.yield {gw} : index")
    t.depth -= 1
    t.emit("}")
    t.store_index("%end", "%cpos", i1, cp)
    t.emit("scf.yield %end : index")
    t.depth -= 1
    t.emit("}")
    # shrink the buffers to the exact size (the caller owns exactly-sized buffers)
    t.emit(f"%ccrd = memref.realloc %ccrd0(%nnz) : memref<?x{cc}> to memref<?x{cc}>")
    t.emit(f"%cval = memref.realloc %cval0(%nnz) : memref<?x{elem}> to memref<?x{elem}>")
    t.emit("memref.dealloc %bits : memref<?xi64>")
    t.emit("memref.dealloc %summary : memref<?xi64>")
    t.emit(f"memref.dealloc %work : memref<?x{elem}>")
    t.emit(f"return %cpos, %ccrd, %cval : memref<?x{cp}>, memref<?x{cc}>, memref<?x{elem}>")
    first = f"%a_pos: memref<?x{ap}>, %a_crd: memref<?x{ac}>, %a_val: memref<?x{elem}>"
    second = f"%b_pos: memref<?x{bp}>, %b_crd: memref<?x{bc}>, %b_val: memref<?x{elem}>"
    params = f"{second}, {first}" if transposed else f"{first}, {second}"
    head = (f"func.func @{c.name}({params}) -> (memref<?x{cp}>, memref<?x{cc}>, memref<?x{elem}>) "
            "attributes {llvm.emit_c_interface} {")
    return "\n".join([head] + t.lines + ["}"]) + "\n"

