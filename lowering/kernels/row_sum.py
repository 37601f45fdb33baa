"""Hand-written row sums of a matrix with (dense, compressed) levels (CSR rows, CSC columns), a row-range
kernel: ``out[r] = sum(val[pos[r]:pos[r + 1]])``, one sequential pass over each row's stored values.

- ``@rowsum(pos, val, out, row_begin, row_end)`` writes ``out[r]`` for the rows ``[row_begin, row_end)``; an
  empty row gives 0. It reads no coordinates and allocates nothing (``sum(A, axis=1)`` is SpMV with ones
  without the ones).
"""
from __future__ import annotations

_ADD = {"float": "arith.addf", "int": "arith.addi"}


def build(elem: str, kind: str, ap: str) -> str:
    """The module (``@rowsum``) for values of MLIR type ``elem`` (``kind`` ``"float"`` or ``"int"``) and
    positions of type ``ap``."""
    if kind not in _ADD:
        raise ValueError(f"row sum kernel: no sum of {kind} values")
    zero = "0.0" if kind == "float" else "0"
    return f"""\
func.func @rowsum(%pos: memref<?x{ap}>, %val: memref<?x{elem}>, %out: memref<?x{elem}>, %row_begin: index,
                  %row_end: index) attributes {{llvm.emit_c_interface}} {{
  %c1 = arith.constant 1 : index
  %zero = arith.constant {zero} : {elem}
  scf.for %r = %row_begin to %row_end step %c1 {{
    %r1 = arith.addi %r, %c1 : index
    %lo_p = memref.load %pos[%r] : memref<?x{ap}>
    %hi_p = memref.load %pos[%r1] : memref<?x{ap}>
    %lo = arith.index_cast %lo_p : {ap} to index
    %hi = arith.index_cast %hi_p : {ap} to index
    %s = scf.for %k = %lo to %hi step %c1 iter_args(%acc = %zero) -> ({elem}) {{
      %v = memref.load %val[%k] : memref<?x{elem}>
      %a = {_ADD[kind]} %acc, %v : {elem}
      scf.yield %a : {elem}
    }}
    memref.store %s, %out[%r] : memref<?x{elem}>
  }}
  return
}}
"""
