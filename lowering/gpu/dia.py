"""DIA-I SpMV / SpMM for the GPU: one thread per row, walking the stored diagonals.

The emitter walks DIA-I diagonal by diagonal inside row tiles (`range_tile` rows; good for CPU caches, one
GPU thread per tile). Here the row loop is outermost and parallel (``scf.parallel`` -> one thread
per row after ``gpu-loops``), each thread loops over the diagonals: ``y[i] += val[d * rows + i] *
x[i + off[d]]`` for ``0 <= i + off[d] < cols``. Rows are owned by their thread: no atomics. The
arguments are those of the emitter's module (``pos0, crd0, values, b, c``), so callers cannot tell
the two apart. Plain memref + scf code: it also compiles and runs on the CPU (how it is tested).
"""
from __future__ import annotations

from frontend.format import NamedFormats

from ..contraction import Contraction
from ..scalar_fn import arith_ops


def applies(c: Contraction) -> bool:
    """Whether ``c`` is SpMV/SpMM of a DIA-I operand with a dense row-major one, plain arithmetic."""
    if not c.is_spmv_or_spmm or c.semiring is not None or c.alpha:
        return False
    if c.prolog is not None or c.epilog is not None or c.init != "c" or c.output.sparse:
        return False
    a, b = c.inputs
    return a.fmt is not None and a.fmt == NamedFormats.DIAI and not b.encoded


def dia_rows_module(c: Contraction) -> str:
    """The module text of ``c`` (see :func:`applies`)."""
    a, b = c.inputs
    rows, cols = (int(s) for s in a.shape)
    elem = c.output.elem
    ops = arith_ops(elem)
    ip, ic = f"i{a.pos_width or 64}", f"i{a.crd_width or 64}"  # width 0 (index) is 64-bit
    spmm = len(b.shape) == 2
    btype = f"memref<{cols}x{int(b.shape[1])}x{elem}>" if spmm else f"memref<{cols}x{elem}>"
    otype = f"memref<{rows}x{int(b.shape[1])}x{elem}>" if spmm else f"memref<{rows}x{elem}>"
    ncols_b = int(b.shape[1]) if spmm else 1

    def product(at_b: str, acc: str) -> list[str]:
        return [f"%xv = memref.load %b[{at_b}] : {btype}",
                f"%m = {ops['mul']} %v, %xv : {elem}",
                f"%s = {ops['add']} {acc}, %m : {elem}"]

    # diagonal d at row i: its column %j = i + offset[d] (%in: inside the matrix) and its value %v
    column = [f"%o0 = memref.load %crd[%d] : memref<?x{ic}>",
              f"%o = arith.index_cast %o0 : {ic} to index",
              "%j = arith.addi %i, %o : index",
              "%ge = arith.cmpi sge, %j, %c0 : index",
              "%lt = arith.cmpi slt, %j, %cols : index",
              "%in = arith.andi %ge, %lt : i1"]
    entry = ["%dr = arith.muli %d, %rows : index",
             "%k = arith.addi %dr, %i : index",
             f"%v = memref.load %val[%k] : memref<?x{elem}>"]

    if spmm:  # per row: for each diagonal, for each column k of b
        body = [
            "scf.for %d = %lo to %hi step %c1 {",
            *("  " + ln for ln in column),
            "  scf.if %in {",
            *("    " + ln for ln in entry),
            "    scf.for %n = %c0 to %ncols step %c1 {",
            f"      %acc = memref.load %c[%i, %n] : {otype}",
            *("      " + ln for ln in product("%j, %n", "%acc")),
            f"      memref.store %s, %c[%i, %n] : {otype}",
            "    }",
            "  }",
            "}",
        ]
    else:  # per row: a register accumulator over the diagonals
        body = [
            f"%init = memref.load %c[%i] : {otype}",
            f"%sum = scf.for %d = %lo to %hi step %c1 iter_args(%acc = %init) -> ({elem}) {{",
            *("  " + ln for ln in column),
            f"  %r = scf.if %in -> ({elem}) {{",
            *("    " + ln for ln in entry),
            *("    " + ln for ln in product("%j", "%acc")),
            f"    scf.yield %s : {elem}",
            "  } else {",
            f"    scf.yield %acc : {elem}",
            "  }",
            f"  scf.yield %r : {elem}",
            "}",
            f"memref.store %sum, %c[%i] : {otype}",
        ]
    lines = [
        f"func.func @{c.name}(%pos: memref<?x{ip}>, %crd: memref<?x{ic}>, %val: memref<?x{elem}>, %b: {btype}, "
        f"%c: {otype}) -> {otype} attributes {{llvm.emit_c_interface}} {{",
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        f"  %rows = arith.constant {rows} : index",
        f"  %cols = arith.constant {cols} : index",
        f"  %ncols = arith.constant {ncols_b} : index",
        "  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {",
        f"    %p0 = memref.load %pos[%c0] : memref<?x{ip}>",
        f"    %p1 = memref.load %pos[%c1] : memref<?x{ip}>",
        f"    %lo = arith.index_cast %p0 : {ip} to index",
        f"    %hi = arith.index_cast %p1 : {ip} to index",
        *("    " + ln for ln in body),
        "    scf.reduce",
        "  }",
        f"  return %c : {otype}",
        "}",
    ]
    return "\n".join(lines) + "\n"
