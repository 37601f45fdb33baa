"""Hand-written row sums of a matrix with (dense, compressed) levels (CSR rows, CSC columns), a row-range
kernel: ``out[r] = sum(val[pos[r]:pos[r + 1]])``, one pass over each row's stored values.

- ``@rowsum(pos, val, out, row_begin, row_end)`` writes ``out[r]`` for the rows ``[row_begin, row_end)``; an
  empty row gives 0. It reads no coordinates and allocates nothing (``sum(A, axis=1)`` is SpMV with ones
  without the ones). i32 values are summed into i64 (NumPy's accumulator for int32), each vector widened.
  Bounds-safe: each row's range is clamped into ``[0, len(val)]`` with ``lo <= hi`` (unsigned minimum:
  negative positions too), whatever the positions hold.
- A row of at least :func:`lanes` entries is summed a vector of ``lanes`` values at a time (1024 bits: 32
  f32/i32, 16 f64/i64, i.e. four independent AVX2 accumulators), the vector reduced once (reassociated, as
  the pipeline's ``reassociate-fp-reductions``). A plain scalar loop is one dependent ``addf`` chain per row:
  2-2.5x slower than scipy's SIMD ``add.reduceat`` on long f32 rows.
- The rest of a row (all of a row shorter than ``lanes``) is one masked vector load (lanes past the row's end
  are not read) and one reassociated reduction: no loop whose trip count changes from row to row. A scalar
  rest loop mispredicted its exit on rows of varying length: the suite's uniform 10-per-row matrix took
  10.0 ms against 5.0 ms for the masked rest (one thread, CPU time), power-law rows 15.5 against 10.7 ms.
"""
from __future__ import annotations

_ADD = {"float": "arith.addf", "int": "arith.addi"}
_BITS = {"f32": 32, "f64": 64, "i32": 32, "i64": 64}


def lanes(elem: str) -> int:
    """Values summed per vector step for MLIR element type ``elem`` (1024 bits)."""
    return 1024 // _BITS[elem]


def build(elem: str, kind: str, ap: str, acc: str | None = None) -> str:
    """The module (``@rowsum``) for values of MLIR type ``elem`` (``kind`` ``"float"`` or ``"int"``) and
    positions of type ``ap``; ``acc``: a wider integer type the sums are accumulated and written in (``i64``
    for ``i32`` values, as NumPy sums int32), each loaded vector sign-extended to it."""
    acc = acc or elem
    if kind not in _ADD or elem not in _BITS or acc not in _BITS or (acc != elem and kind != "int"):
        raise ValueError(f"row sum kernel: no sum of {kind} {elem} values into {acc}")
    zero = "0.0" if kind == "float" else "0"
    w = lanes(elem)
    vec = f"vector<{w}x{acc}>"
    lvec = f"vector<{w}x{elem}>"
    mvec = f"vector<{w}xi1>"
    fm = " fastmath<reassoc>" if kind == "float" else ""
    add = _ADD[kind]
    same = acc == elem
    widen = "" if same else f"\n        %vw = arith.extsi %v : {lvec} to {vec}"
    twiden = "" if same else f"\n    %tvw = arith.extsi %tv : {lvec} to {vec}"
    vuse, tuse = ("%v", "%tv") if same else ("%vw", "%tvw")
    return f"""\
func.func @rowsum(%pos: memref<?x{ap}>, %val: memref<?x{elem}>, %out: memref<?x{acc}>, %row_begin: index,
                  %row_end: index) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant {w} : index
  %nval = memref.dim %val, %c0 : memref<?x{elem}>
  %zero = arith.constant {zero} : {acc}
  %vzero = arith.constant dense<{zero}> : {vec}
  %lzero = arith.constant dense<{zero}> : {lvec}
  scf.for %r = %row_begin to %row_end step %c1 {{
    %r1 = arith.addi %r, %c1 : index
    %lo_p = memref.load %pos[%r] : memref<?x{ap}>
    %hi_p = memref.load %pos[%r1] : memref<?x{ap}>
    %lo_u = arith.index_cast %lo_p : {ap} to index
    %hi_u = arith.index_cast %hi_p : {ap} to index
    %hi = arith.minui %hi_u, %nval : index
    %lo = arith.minui %lo_u, %hi : index
    %len = arith.subi %hi, %lo : index
    %long = arith.cmpi uge, %len, %cw : index
    %head:2 = scf.if %long -> ({acc}, index) {{
      %rest = arith.remui %len, %cw : index
      %vend = arith.subi %hi, %rest : index
      %vacc = scf.for %k = %lo to %vend step %cw iter_args(%acc = %vzero) -> ({vec}) {{
        %v = vector.load %val[%k] : memref<?x{elem}>, {lvec}{widen}
        %a = {add} %acc, {vuse} : {vec}
        scf.yield %a : {vec}
      }}
      %vs = vector.reduction <add>, %vacc : {vec} into {acc}
      scf.yield %vs, %vend : {acc}, index
    }} else {{
      scf.yield %zero, %lo : {acc}, index
    }}
    %tlen = arith.subi %hi, %head#1 : index
    %mask = vector.create_mask %tlen : {mvec}
    %tv = vector.maskedload %val[%head#1], %mask, %lzero : memref<?x{elem}>, {mvec}, {lvec} into {lvec}{twiden}
    %s = vector.reduction <add>, {tuse}, %head#0{fm} : {vec} into {acc}
    memref.store %s, %out[%r] : memref<?x{acc}>
  }}
  return
}}
"""
