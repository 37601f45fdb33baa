"""A hand-written softmax over the stored entries of each row of a (dense, compressed) matrix, as one kernel.

MLIR's sparsifier compiles one ``linalg.generic`` at a time, and softmax needs three passes over a row
(its maximum, the exponentials and their sum, the scaling), so through the sparsifier it is four kernels
with three intermediate results (:mod:`lowering.sparsifier.elementwise`). This kernel does the three
passes per row while the row is in cache, and writes only the result's values: the result keeps the
input's pattern, so it shares the input's index buffers.

    @main(%pos: memref<?xP>, %val: memref<?xE>, %out: memref<?xE>, %row_begin: index, %row_end: index)

writes ``out[k]`` for the entries ``k`` of rows ``[row_begin, row_end)`` (a row-range kernel: the frontend
runs row chunks on its thread pool). ``logarithm``: ``v - max - log(sum)`` (log-softmax) instead of
``exp(v - max) / sum``. An empty row writes nothing.
"""
from __future__ import annotations

_TEMPLATE = """\
func.func @main(%pos: memref<?x{p}>, %val: memref<?x{e}>, %out: memref<?x{e}>, %row_begin: index,
                %row_end: index) attributes {{llvm.emit_c_interface}} {{
  %c1 = arith.constant 1 : index
  %ninf = arith.constant {ninf} : {e}
  %zero = arith.constant 0.0 : {e}
  scf.for %r = %row_begin to %row_end step %c1 {{
    %r1 = arith.addi %r, %c1 : index
    %lo_p = memref.load %pos[%r] : memref<?x{p}>
    %hi_p = memref.load %pos[%r1] : memref<?x{p}>
    %lo = arith.index_cast %lo_p : {p} to index
    %hi = arith.index_cast %hi_p : {p} to index
    %m = scf.for %k = %lo to %hi step %c1 iter_args(%acc = %ninf) -> ({e}) {{
      %v = memref.load %val[%k] : memref<?x{e}>
      %next = arith.maximumf %acc, %v : {e}
      scf.yield %next : {e}
    }}
    %s = scf.for %k = %lo to %hi step %c1 iter_args(%acc = %zero) -> ({e}) {{
      %v = memref.load %val[%k] : memref<?x{e}>
      %d = arith.subf %v, %m : {e}
      %x = math.exp %d : {e}
{store_exp}      %next = arith.addf %acc, %x : {e}
      scf.yield %next : {e}
    }}
{scale}  }}
  return
}}
"""

_SOFTMAX_STORE = "      memref.store %x, %out[%k] : memref<?x{e}>\n"
_SOFTMAX_SCALE = """\
    %inv = arith.divf %one, %s : {e}
    scf.for %k = %lo to %hi step %c1 {{
      %x = memref.load %out[%k] : memref<?x{e}>
      %y = arith.mulf %x, %inv : {e}
      memref.store %y, %out[%k] : memref<?x{e}>
    }}
"""
_LOG_SCALE = """\
    %l = math.log %s : {e}
    %shift = arith.addf %m, %l : {e}
    scf.for %k = %lo to %hi step %c1 {{
      %v = memref.load %val[%k] : memref<?x{e}>
      %y = arith.subf %v, %shift : {e}
      memref.store %y, %out[%k] : memref<?x{e}>
    }}
"""
_NEG_INF = {"f32": "0xFF800000", "f64": "0xFFF0000000000000"}


def build(elem: str, pos_type: str, logarithm: bool) -> str:
    """The module for values of MLIR type ``elem`` (``f32``/``f64``) and positions of type ``pos_type``."""
    if elem not in _NEG_INF:
        raise ValueError(f"row softmax takes f32 or f64 values, got {elem}")
    if pos_type not in ("i32", "i64"):
        raise ValueError(f"row softmax takes i32 or i64 positions, got {pos_type}")
    store = "" if logarithm else _SOFTMAX_STORE.format(e=elem)
    scale = (_LOG_SCALE if logarithm else _SOFTMAX_SCALE).format(e=elem)
    text = _TEMPLATE.format(p=pos_type, e=elem, ninf=_NEG_INF[elem], store_exp=store, scale=scale)
    if not logarithm:
        text = text.replace("  %zero = ", f"  %one = arith.constant 1.0 : {elem}\n  %zero = ", 1)
    return text
