"""A hand-written SpGEMM kernel for CSR x CSR -> CSR (plus-times), registered with the kernel registry.

MLIR's sparsifier compiles SpGEMM as one pass that inserts every entry through a growing buffer with a
function call per entry and quick-sorts each row's workspace (about 7x scipy's time here). This kernel:

Gustavson's row-by-row algorithm in one pass over the products: each row is accumulated in a dense
workspace (a marker array says which columns the row reached and remembers them in a list), then
written in column order, either by sorting the row's column list (``sparse_tensor.sort``: insertion sort
up to 128 entries, the list being a concatenation of sorted runs, else hybrid quick sort) or, for rows
that fill more than 1/16 of the columns, by scanning the marker array. The output buffers are allocated
once with an upper bound of the entries (the B rows each A entry reaches, at most m*n) and shrunk to the
exact size at the end (``memref.realloc``), so the caller owns exactly-sized buffers. Signature (sparse-assembler order):
``(a_pos, a_crd, a_val, b_pos, b_crd, b_val) -> (c_pos, c_crd, c_val)``. CSC x CSC -> CSC is the same
kernel on the transposed problem (the caller swaps operands).
"""
from __future__ import annotations

from typing import Any

from .scalar_fn import kind

_WIDTH = {32: "i32", 64: "i64", 16: "i16", 8: "i8", 0: "index"}


class _Text:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0
        self.depth = 1

    def name(self, stem: str = "v") -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def op(self, text: str, stem: str = "v") -> str:
        name = self.name(stem)
        self.emit(f"{name} = {text}")
        return name

    def load_index(self, buf: str, idx: str, ty: str) -> str:
        v = self.op(f"memref.load {buf}[{idx}] : memref<?x{ty}>")
        return v if ty == "index" else self.op(f"arith.index_cast {v} : {ty} to index")

    def store_index(self, value: str, buf: str, idx: str, ty: str) -> None:
        v = value if ty == "index" else self.op(f"arith.index_cast {value} : index to {ty}")
        self.emit(f"memref.store {v}, {buf}[{idx}] : memref<?x{ty}>")


def _ops(elem: str) -> tuple[str, str, str]:
    k = kind(elem)
    if k == "complex":
        return "complex.mul", "complex.add", ""
    if k == "float":
        return "arith.mulf", "arith.addf", ""
    return "arith.muli", "arith.addi", ""


def applies(c: Any) -> bool:
    """A plain matmul ("ik,kj->ij") whose result has the left operand's format; no scaling, semiring,
    prolog or epilog."""
    from .kernels import op_name

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
    mul, add, _ = _ops(elem)
    ap, ac = _WIDTH[a.pos_width], _WIDTH[a.crd_width]
    bp, bc = _WIDTH[b.pos_width], _WIDTH[b.crd_width]
    cp, cc = _WIDTH[out.pos_width], _WIDTH[out.crd_width]
    zero = "complex.constant [0.0, 0.0]" if kind(elem) == "complex" else (
        "arith.constant 0.0" if kind(elem) == "float" else "arith.constant 0")
    t = _Text()
    t.emit("%c0 = arith.constant 0 : index")
    t.emit("%c1 = arith.constant 1 : index")
    t.emit("%c16 = arith.constant 16 : index")
    t.emit("%c128 = arith.constant 128 : index")
    t.emit(f"%m = arith.constant {m} : index")
    t.emit(f"%n = arith.constant {n} : index")
    t.emit(f"%m1 = arith.constant {m + 1} : index")
    t.emit(f"%mn = arith.constant {m * n} : index")
    annz = t.load_index("%a_pos", "%m", ap)
    t.emit(f"%annz = arith.addi {annz}, %c0 : index")
    t.emit("%mask = memref.alloc(%n) : memref<?xindex>")
    t.emit("scf.for %z = %c0 to %n step %c1 {")
    t.emit("  memref.store %c0, %mask[%z] : memref<?xindex>")
    t.emit("}")
    t.emit(f"%cpos = memref.alloc(%m1) : memref<?x{cp}>")
    t.store_index("%c0", "%cpos", "%c0", cp)
    # capacity: an upper bound of the result's entries (sum of the B rows each A entry reaches)
    t.emit("%cap = scf.for %p = %c0 to %annz step %c1 iter_args(%u0 = %c0) -> (index) {")
    t.depth += 1
    k = t.load_index("%a_crd", "%p", ac)
    k1 = t.op(f"arith.addi {k}, %c1 : index")
    blo = t.load_index("%b_pos", k, bp)
    bhi = t.load_index("%b_pos", k1, bp)
    span = t.op(f"arith.subi {bhi}, {blo} : index")
    t.emit(f"%u1 = arith.addi %u0, {span} : index")
    t.emit("scf.yield %u1 : index")
    t.depth -= 1
    t.emit("}")
    t.emit("%capn = arith.minui %cap, %mn : index")
    t.emit(f"%ccrd0 = memref.alloc(%capn) : memref<?x{cc}>")
    t.emit(f"%cval0 = memref.alloc(%capn) : memref<?x{elem}>")
    t.emit(f"%work = memref.alloc(%n) : memref<?x{elem}>")
    t.emit("%cols = memref.alloc(%n) : memref<?xindex>")
    t.emit(f"%zero = {zero} : {elem}")
    t.emit("%nnz = scf.for %i = %c0 to %m step %c1 iter_args(%start = %c0) -> (index) {")
    t.depth += 1
    mark = t.op("arith.addi %i, %c1 : index")
    start = "%start"
    lo = t.load_index("%a_pos", "%i", ap)
    hi = t.load_index("%a_pos", mark, ap)
    t.emit(f"%rc = scf.for %p = {lo} to {hi} step %c1 iter_args(%r0 = %c0) -> (index) {{")
    t.depth += 1
    k = t.load_index("%a_crd", "%p", ac)
    av = t.op(f"memref.load %a_val[%p] : memref<?x{elem}>")
    k1 = t.op(f"arith.addi {k}, %c1 : index")
    blo = t.load_index("%b_pos", k, bp)
    bhi = t.load_index("%b_pos", k1, bp)
    t.emit(f"%rq = scf.for %q = {blo} to {bhi} step %c1 iter_args(%r1 = %r0) -> (index) {{")
    t.depth += 1
    j = t.load_index("%b_crd", "%q", bc)
    bv = t.op(f"memref.load %b_val[%q] : memref<?x{elem}>")
    prod = t.op(f"{mul} {av}, {bv} : {elem}")
    seen = t.op(f"memref.load %mask[{j}] : memref<?xindex>")
    new = t.op(f"arith.cmpi ne, {seen}, {mark} : index")
    t.emit(f"%r2 = scf.if {new} -> (index) {{")
    t.emit(f"  memref.store {mark}, %mask[{j}] : memref<?xindex>")
    t.emit(f"  memref.store {prod}, %work[{j}] : memref<?x{elem}>")
    t.emit(f"  memref.store {j}, %cols[%r1] : memref<?xindex>")
    t.emit("  %inc2 = arith.addi %r1, %c1 : index")
    t.emit("  scf.yield %inc2 : index")
    t.emit("} else {")
    t.emit(f"  %old = memref.load %work[{j}] : memref<?x{elem}>")
    t.emit(f"  %sum = {add} %old, {prod} : {elem}")
    t.emit(f"  memref.store %sum, %work[{j}] : memref<?x{elem}>")
    t.emit("  scf.yield %r1 : index")
    t.emit("}")
    t.emit("scf.yield %r2 : index")
    t.depth -= 1
    t.emit("}")
    t.emit("scf.yield %rq : index")
    t.depth -= 1
    t.emit("}")
    # order the row: sort the column list, or scan the marker array when the row is dense enough
    wide = t.op("arith.muli %rc, %c16 : index")
    scan = t.op("arith.cmpi ugt, " + wide + ", %n : index")
    t.emit(f"scf.if {scan} {{")
    t.depth += 1
    # branch-free compaction: always write the candidate, advance only on a hit
    t.emit("%fill = scf.for %s = %c0 to %n step %c1 iter_args(%f0 = %c0) -> (index) {")
    t.emit("  %sm = memref.load %mask[%s] : memref<?xindex>")
    t.emit(f"  %hit = arith.cmpi eq, %sm, {mark} : index")
    t.emit("  memref.store %s, %cols[%f0] : memref<?xindex>")
    t.emit("  %step = arith.select %hit, %c1, %c0 : index")
    t.emit("  %f1 = arith.addi %f0, %step : index")
    t.emit("  scf.yield %f1 : index")
    t.emit("}")
    t.depth -= 1
    t.emit("} else {")
    # short rows (concatenated sorted runs of B's rows): insertion sort beats quick sort by far
    t.emit("  %short = arith.cmpi ule, %rc, %c128 : index")
    t.emit("  scf.if %short {")
    t.emit("    sparse_tensor.sort insertion_sort_stable %rc, %cols {perm_map = affine_map<(d0) -> (d0)>, "
           "ny = 0 : index} : memref<?xindex>")
    t.emit("  } else {")
    t.emit("    sparse_tensor.sort hybrid_quick_sort %rc, %cols {perm_map = affine_map<(d0) -> (d0)>, "
           "ny = 0 : index} : memref<?xindex>")
    t.emit("  }")
    t.emit("}")
    t.emit("scf.for %w = %c0 to %rc step %c1 {")
    t.depth += 1
    col = t.op("memref.load %cols[%w] : memref<?xindex>")
    dst = t.op(f"arith.addi {start}, %w : index")
    t.store_index(col, "%ccrd0", dst, cc)
    val = t.op(f"memref.load %work[{col}] : memref<?x{elem}>")
    t.emit(f"memref.store {val}, %cval0[{dst}] : memref<?x{elem}>")
    t.depth -= 1
    t.emit("}")
    end = t.op(f"arith.addi {start}, %rc : index")
    t.store_index(end, "%cpos", mark, cp)
    t.emit(f"scf.yield {end} : index")
    t.depth -= 1
    t.emit("}")
    # shrink the buffers to the exact size (the caller owns exactly-sized buffers)
    t.emit(f"%ccrd = memref.realloc %ccrd0(%nnz) : memref<?x{cc}> to memref<?x{cc}>")
    t.emit(f"%cval = memref.realloc %cval0(%nnz) : memref<?x{elem}> to memref<?x{elem}>")
    t.emit("memref.dealloc %mask : memref<?xindex>")
    t.emit("memref.dealloc %cols : memref<?xindex>")
    t.emit(f"memref.dealloc %work : memref<?x{elem}>")
    t.emit(f"return %cpos, %ccrd, %cval : memref<?x{cp}>, memref<?x{cc}>, memref<?x{elem}>")
    first = f"%a_pos: memref<?x{ap}>, %a_crd: memref<?x{ac}>, %a_val: memref<?x{elem}>"
    second = f"%b_pos: memref<?x{bp}>, %b_crd: memref<?x{bc}>, %b_val: memref<?x{elem}>"
    params = f"{second}, {first}" if transposed else f"{first}, {second}"
    head = (f"func.func @{c.name}({params}) -> (memref<?x{cp}>, memref<?x{cc}>, memref<?x{elem}>) "
            "attributes {llvm.emit_c_interface} {")
    return "\n".join([head] + t.lines + ["}"]) + "\n"


def register() -> None:
    """Register the kernels for CSR x CSR and CSC x CSC (any index widths, float/complex/int values)."""
    from .kernels import register_kernel

    from frontend.named_formats import NamedFormats  # lowering must not import frontend at import time

    register_kernel("matmul", (NamedFormats.CSR, NamedFormats.CSR), build, name="spgemm-csr", when=applies)
    register_kernel("matmul", (NamedFormats.CSC, NamedFormats.CSC), build_csc, name="spgemm-csc", when=applies)
