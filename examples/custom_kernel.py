"""Worked example: a hand-written DIA SpMV kernel, registered for DIA-I matrices.

``lowering.register_kernel`` tells dispatch to use our builder for ``y = A @ x`` when ``A`` is stored as
DIA-I (``(i, j) -> (j - i : compressed, i : range)``) and ``x`` is a dense vector; every other case
keeps the generated code. The builder returns MLIR text: one loop over the stored diagonals, and inside
it one contiguous loop over the rows where the diagonal lies inside the matrix.

Run: ``python examples/custom_kernel.py``
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import lowering
from frontend import Matmul, NamedFormats, Tensor

KERNEL = """
func.func @$name(%pos: memref<?x$pos_t>, %crd: memref<?x$crd_t>, %val: memref<?x$elem>,
                 %x: memref<${n}x$elem>) -> memref<${m}x$elem> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.constant $m : index
  %n = arith.constant $n : index
  %zero = arith.constant 0.0 : $elem
  %y = memref.alloc() : memref<${m}x$elem>
  scf.for %r = %c0 to %m step %c1 {
    memref.store %zero, %y[%r] : memref<${m}x$elem>
  }
  %ndiag_raw = memref.load %pos[%c1] : memref<?x$pos_t>
  %ndiag = arith.index_cast %ndiag_raw : $pos_t to index
  scf.for %k = %c0 to %ndiag step %c1 {
    %d_raw = memref.load %crd[%k] : memref<?x$crd_t>
    %d = arith.index_cast %d_raw : $crd_t to index        // diagonal offset j - i
    %neg = arith.subi %c0, %d : index
    %lo = arith.maxsi %neg, %c0 : index                    // rows where 0 <= i + d < n
    %n_d = arith.subi %n, %d : index
    %hi = arith.minsi %m, %n_d : index
    %base = arith.muli %k, %m : index                      // diagonal k owns m value slots
    scf.for %i = %lo to %hi step %c1 {
      %p = arith.addi %base, %i : index
      %a = memref.load %val[%p] : memref<?x$elem>
      %j = arith.addi %i, %d : index
      %xj = memref.load %x[%j] : memref<${n}x$elem>
      %yi = memref.load %y[%i] : memref<${m}x$elem>
      %t = arith.mulf %a, %xj : $elem
      %s = arith.addf %yi, %t : $elem
      memref.store %s, %y[%i] : memref<${m}x$elem>
    }
  }
  return %y : memref<${m}x$elem>
}
"""


def dia_spmv(c) -> str:
    """The builder: MLIR text for contraction ``c`` (a plain ``y = A @ x`` with A DIA-I)."""
    import string

    a = c.inputs[0]
    m, n = a.shape
    widths = {0: "index", 32: "i32", 64: "i64"}
    return string.Template(KERNEL).substitute(name=c.name, elem=c.output.elem, m=m, n=n,
                                              pos_t=widths[a.pos_width], crd_t=widths[a.crd_width])


def plain_float(c) -> bool:
    """Only plain products (no alpha, beta, c, semiring, prolog/epilog) of floats."""
    return (not c.alpha and c.init == "zero" and c.semiring is None and c.prolog is None
            and c.epilog is None and c.output.elem in ("f32", "f64"))


def register() -> lowering.kernels.KernelEntry:
    """Register the kernel (idempotent)."""
    for e in lowering.registered_kernels():
        if e.name == "dia-spmv":
            return e
    return lowering.register_kernel("matvec", (NamedFormats.DIAI, "dense"), dia_spmv, name="dia-spmv",
                                    when=plain_float)


def main() -> None:
    register()
    n = 2000
    A = sp.diags([np.full(n - 3, 0.5), np.full(n, 4.0), np.full(n - 1, -1.0)], [-3, 0, 1], format="csr")
    x = np.random.default_rng(0).standard_normal(n)
    t = Tensor.from_package(A).convert(NamedFormats.DIAI)
    mm = Matmul(t, x).plan()
    y = mm.execute().to_dense()
    print(f"path: {mm.path}")                                      # kernel:dia-spmv
    print(f"max |y - scipy| = {np.abs(y - A @ x).max():.2e}")
    mm2 = Matmul(t, x, alpha=2.0)                                  # alpha: falls back to the emitter
    print(f"with alpha: path {mm2.path}")
    lowering.unregister_kernel("dia-spmv")
    print(f"after unregister_kernel: path {Matmul(t, x).path}")    # emitter-rows


if __name__ == "__main__":
    main()
