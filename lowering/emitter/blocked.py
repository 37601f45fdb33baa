"""BSR SpMV/SpMM (plain arithmetic) over block rows, each block's rows as vectors, results stored once per row.

The frontend hands a BSR((m, n)) operand over as its higher-rank view ``(I, J, r, c) -> (I : dense, J :
compressed, r : dense, c : dense)`` (``frontend.ops._blocks``): SpMV is ``y[I, r] = A[I, J, r, c] x[J, c]``,
SpMM ``Y[I, r, j] = A[I, J, r, c] X[J, c, j]``. The generic walk reduces one block row's ``n`` entries at a
time and adds that into the output element per block; here a block row keeps its ``m`` output rows in
registers across all its blocks: for SpMV an ``n``-lane accumulator per row (``acc_r += A[p, r, :] * x[J, :]``,
one reduction per row at the end), for SpMM ``m`` rows of column chunks (``acc_r += A[p, r, c] * X[J, c, :]``).
Row ranges are block-row ranges; bounds-safe like the generic walk (positions clamped to the coordinates'
length, block columns to their extent).
"""
from __future__ import annotations

from typing import Any

from frontend.format import TensorFormat

from .arith import Arith, memref_type
from .builder import Builder, Value
from .diagonal import plain_product
from .operand import WalkedOperand

#: The stored view of a BSR operand (structural equality ignores the dimension names).
BLOCK_VIEW = TensorFormat.parse("(a, b, c, d) -> (a : dense, b : compressed, c : dense, d : dense)")
#: Largest block row (lanes of one accumulator) and block column (accumulators) handled here.
MAX_BLOCK = 16
#: Most accumulators a block row keeps in registers (an SpMM's column chunks times the block's rows).
REGISTERS = 16
#: Lanes of an SpMM's column chunks.
LANES = 8


def applies(c: Any) -> bool:
    """Whether ``c`` is SpMV/SpMM of BSR's block view (:data:`BLOCK_VIEW`), plain arithmetic
    (:func:`.diagonal.plain_product`), blocks of at most :data:`MAX_BLOCK` rows and columns."""
    if not plain_product(c) or c.inputs[0].fmt != BLOCK_VIEW:
        return False
    sa, sx = c.subscripts
    if len(set(sa)) != 4:
        return False
    big_i, big_j, r, k = sa
    rest = c.output_subscripts[2:]
    if sx != big_j + k + rest or c.output_subscripts != big_i + r + rest or len(rest) > 1 or (rest and rest in sa):
        return False
    m, n = (int(s) for s in c.inputs[0].shape[2:])
    return 1 <= m <= MAX_BLOCK and 1 <= n <= MAX_BLOCK


def emit(c: Any, rows: bool) -> str:
    """MLIR text of ``c`` (:func:`applies`), with the arguments of ``emitter.emit_contraction(c, rows)``."""
    a, xs = c.inputs
    elem = c.output.elem
    b = Builder()
    walked = WalkedOperand(a.fmt, tuple(int(s) for s in a.shape), a.elem, a.pos_width, a.crd_width)
    params, levels, val = walked.params("in0")
    x = Value("%in1", memref_type(tuple(xs.shape), elem))
    params.append(x)
    out_t = memref_type(tuple(c.output.shape), elem)
    pos, crd = levels[1].pos, levels[1].crd
    assert pos is not None and crd is not None  # a compressed level keeps both
    k = _Kernel(b, Arith(b, elem), pos, crd, val, x, tuple(int(s) for s in a.shape),
                int(xs.shape[2]) if len(xs.shape) == 3 else 0)
    if rows:
        out = Value("%out", out_t)
        lo, hi = Value("%row_begin", "index"), Value("%row_end", "index")
        params += [out, lo, hi]
        k.out = out
        b.loop(lo, hi, b.index(1), k.block_row)
    else:
        k.out = out = b.op(f"memref.alloc() : {out_t}", out_t, "out")
        b.parallel(b.index(0), b.index(int(a.shape[0])), k.block_row)
    b.emit("return" if rows else f"return {out} : {out_t}")
    sig = ", ".join(f"{p.name}: {p.type}" for p in params)
    head = f"func.func @{c.name}({sig}){'' if rows else ' -> ' + out_t} attributes {{llvm.emit_c_interface}} {{"
    return "\n".join([head] + b.text() + ["}"]) + "\n"


class _Kernel:
    """The loops of one BSR product (see the module docstring)."""

    def __init__(self, b: Builder, ar: Arith, pos: Value, crd: Value, val: Value, x: Value,
                 shape: tuple[int, ...], cols: int) -> None:
        self.b, self.ar, self.pos, self.crd, self.val, self.x = b, ar, pos, crd, val, x
        self.out: Value = x
        self.block_cols = shape[1]
        self.m, self.n = shape[2], shape[3]
        self.cols = cols

    def blocks(self, i: Value) -> tuple[Value, Value]:
        """Block row ``i``'s entries ``[lo, hi)``, clamped to the coordinates' length."""
        b = self.b
        lo, hi = b.load_index(self.pos, i.name), b.load_index(self.pos, b.add(i, b.index(1)).name)
        dim = b.op(f"memref.dim {self.crd}, {b.index(0)} : {self.crd.type}", "index", "i")
        hi = b.op(f"arith.minui {hi}, {dim} : index", "index", "i")
        return b.op(f"arith.minui {lo}, {hi} : index", "index", "i"), hi

    def column(self, p: Value) -> Value:
        """Entry ``p``'s block column, clamped below the block columns."""
        b = self.b
        raw = b.load_index(self.crd, p.name)
        return b.op(f"arith.minui {raw}, {b.index(max(self.block_cols - 1, 0))} : index", "index", "i")

    def block_row(self, i: Value) -> None:
        b, ar, m, n = self.b, self.ar, self.m, self.n
        zero = ar.identity()
        if self.block_cols == 0:  # no block columns: no entries to read, the rows are zero
            for r in range(m):
                for j in range(max(self.cols, 1)):
                    b.vstore(zero, self.out, f"{i}, {b.index(r)}" + (f", {b.index(j)}" if self.cols else ""))
            return
        lo, hi = self.blocks(i)
        if not self.cols:
            accs = [b.splat(zero, n) if n > 1 else zero for _ in range(m)]

            def entry(p: Value, carry: list[Value]) -> list[Value]:
                xv = b.vload(self.x, f"{self.column(p)}, {b.index(0)}", n)
                base = b.mul(p, b.index(m * n))
                return [ar.add(acc, ar.mul(b.vload(self.val, b.add(base, b.index(r * n)).name, n), xv))
                        for r, acc in enumerate(carry)]
            accs = b.for_(lo, hi, b.index(1), accs, entry)
            for r, acc in enumerate(accs):
                b.vstore(ar.reduce(acc) if n > 1 else acc, self.out, f"{i}, {b.index(r)}")
            return
        for group in self._column_groups():
            accs = [b.splat(zero, w) if w > 1 else zero for _ in range(m) for _, w in group]

            def entry_mm(p: Value, carry: list[Value], group: list[tuple[int, int]] = group) -> list[Value]:
                col = self.column(p)
                base = b.mul(p, b.index(m * n))
                res = list(carry)
                for cc in range(n):
                    xs = [b.vload(self.x, f"{col}, {b.index(cc)}, {b.index(j)}", w) for j, w in group]
                    for r in range(m):
                        av = b.vload(self.val, b.add(base, b.index(r * n + cc)).name, 1)
                        for g, ((_, w), xv) in enumerate(zip(group, xs)):
                            at = r * len(group) + g
                            res[at] = ar.add(res[at], ar.mul(b.splat(av, w) if w > 1 else av, xv))
                return res
            accs = b.for_(lo, hi, b.index(1), accs, entry_mm)
            for r in range(m):
                for g, (j, _) in enumerate(group):
                    b.vstore(accs[r * len(group) + g], self.out, f"{i}, {b.index(r)}, {b.index(j)}")

    def _column_groups(self) -> list[list[tuple[int, int]]]:
        """An SpMM's output columns as ``(start, lanes)`` chunks, in groups of at most ``REGISTERS // m``."""
        v = LANES if self.ar.vectorizable else 1
        full = self.cols - self.cols % v if v > 1 else 0
        chunks = [(j, v) for j in range(0, full, v)] + [(j, 1) for j in range(full, self.cols)]
        per = max(1, REGISTERS // self.m)
        return [chunks[k:k + per] for k in range(0, len(chunks), per)]
