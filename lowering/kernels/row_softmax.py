"""A hand-written softmax over the stored entries of each row of a (dense, compressed) matrix, as one kernel.

MLIR's sparsifier compiles one ``linalg.generic`` at a time, and softmax needs three passes over a row
(its maximum, the exponentials and their sum, the scaling), so through the sparsifier it is four kernels
with three intermediate results (:mod:`lowering.sparsifier.elementwise`). This kernel does the three
passes per row while the row is in cache, and writes only the result's values: the result keeps the
input's pattern, so it shares the input's index buffers.

    @main(%pos: memref<?xP>, %val: memref<?xE>, %out: memref<?xE>, %row_begin: index, %row_end: index)

writes ``out[k]`` for the entries ``k`` of rows ``[row_begin, row_end)`` (each row's range clamped into
``[0, min(len(val), len(out))]`` with ``lo <= hi``: bounds-safe whatever the positions hold; a row-range
kernel: the frontend runs row chunks on its thread pool). ``logarithm``: ``v - max - log(sum)`` (log-softmax) instead of
``exp(v - max) / sum``. An empty row writes nothing.

Each pass runs a vector of :func:`lanes` values at a time over the first ``len - len % lanes`` entries of a
row (512 bits: 16 f32, 8 f64), then one by one over the rest. ``exp`` is inlined (:func:`exp_lines`), not a
call to libm's ``exp`` per value (which does not vectorize): ``2^n * p(r)`` with ``n = round(x / ln 2)``,
``r = x - n ln 2`` (two-part ``ln 2``, FMAs) and a polynomial ``p`` (Cephes' minimax for f32, Taylor to
degree 13 for f64), within about 2 ulp of libm. Its argument is ``v - max <= 0``: below ``ln`` of the
smallest normal number it gives 0 (libm: a subnormal), ``-inf`` gives 0 and NaN stays NaN.
"""
from __future__ import annotations

_NEG_INF = {"f32": "0xFF800000", "f64": "0xFFF0000000000000"}
_BITS = {"f32": 32, "f64": 64}
# per type: (lowest argument with a normal result, log2(e), ln2 high part, ln2 low part, exponent bias,
# mantissa bits, polynomial coefficients of p(r) - 1 - r from the highest degree down to r^2)
_EXP = {
    "f32": ("-87.33654", "1.44269504088896341", "0.693359375", "-2.12194440e-4", 127, 23,
            ["1.9875691500e-4", "1.3981999507e-3", "8.3334519073e-3", "4.1665795894e-2", "1.6666665459e-1",
             "5.0000001201e-1"]),
    "f64": ("-708.3964185322641", "1.4426950408889634", "0.693145751953125", "1.4286068203094173e-6", 1023,
            52, [f"{1 / _f:.17e}" for _f in (6227020800.0, 479001600.0, 39916800.0, 3628800.0, 362880.0,
                                             40320.0, 5040.0, 720.0, 120.0, 24.0, 6.0, 2.0)]),
}


def lanes(elem: str) -> int:
    """Values per vector step for MLIR element type ``elem`` (512 bits)."""
    return 512 // _BITS[elem]


def _const(value: str, t: str, elem: str) -> str:
    """An ``arith.constant`` of ``value`` with type ``t`` (a scalar ``elem`` or a vector of it)."""
    return f"arith.constant dense<{value}> : {t}" if t.startswith("vector") else f"arith.constant {value} : {elem}"


def exp_lines(x: str, res: str, t: str, elem: str, p: str, indent: str) -> str:
    """MLIR lines computing ``%res = exp(%x)`` for ``%x <= 0`` (or NaN) of type ``t`` (``elem`` or a vector of
    it), SSA names prefixed ``%p``."""
    lo, log2e, ln2_hi, ln2_lo, bias, mant, coeffs = _EXP[elem]
    bits = _BITS[elem]
    it = t.replace(elem, f"i{bits}")
    bt = t.replace(elem, "i1")
    lines = [
        f"%{p}lo = {_const(lo, t, elem)}", f"%{p}zero = {_const('0.0', t, elem)}",
        f"%{p}half = {_const('0.5', t, elem)}", f"%{p}one = {_const('1.0', t, elem)}",
        f"%{p}l2e = {_const(log2e, t, elem)}", f"%{p}c1 = {_const(ln2_hi, t, elem)}",
        f"%{p}c2 = {_const(ln2_lo, t, elem)}",
        f"%{p}xa = arith.maximumf %{x}, %{p}lo : {t}",   # NaN propagates
        f"%{p}xc = arith.minimumf %{p}xa, %{p}zero : {t}",
        f"%{p}nf = math.fma %{p}xc, %{p}l2e, %{p}half : {t}",
        f"%{p}n = math.floor %{p}nf : {t}",
        f"%{p}r1 = arith.mulf %{p}n, %{p}c1 : {t}",
        f"%{p}r2 = arith.subf %{p}xc, %{p}r1 : {t}",
        f"%{p}r3 = arith.mulf %{p}n, %{p}c2 : {t}",
        f"%{p}r = arith.subf %{p}r2, %{p}r3 : {t}",
    ]
    acc = f"%{p}k0"
    lines.append(f"{acc} = {_const(coeffs[0], t, elem)}")
    for i, c in enumerate(coeffs[1:], 1):
        lines.append(f"%{p}k{i}c = {_const(c, t, elem)}")
        lines.append(f"%{p}k{i} = math.fma {acc}, %{p}r, %{p}k{i}c : {t}")
        acc = f"%{p}k{i}"
    lines += [
        f"%{p}rr = arith.mulf %{p}r, %{p}r : {t}",
        f"%{p}q = math.fma {acc}, %{p}rr, %{p}r : {t}",
        f"%{p}pv = arith.addf %{p}q, %{p}one : {t}",
        f"%{p}ni = arith.fptosi %{p}n : {t} to {it}",
        f"%{p}bias = {_const(str(bias), it, f'i{bits}')}",
        f"%{p}sh = {_const(str(mant), it, f'i{bits}')}",
        f"%{p}eb = arith.addi %{p}ni, %{p}bias : {it}",
        f"%{p}ex = arith.shli %{p}eb, %{p}sh : {it}",
        f"%{p}two = arith.bitcast %{p}ex : {it} to {t}",
        f"%{p}big = arith.mulf %{p}pv, %{p}two : {t}",
        f"%{p}tiny = arith.cmpf olt, %{x}, %{p}lo : {t}",
        f"%{res} = arith.select %{p}tiny, %{p}zero, %{p}big : {bt}, {t}",
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


def build(elem: str, pos_type: str, logarithm: bool) -> str:
    """The module for values of MLIR type ``elem`` (``f32``/``f64``) and positions of type ``pos_type``."""
    if elem not in _NEG_INF:
        raise ValueError(f"row softmax takes f32 or f64 values, got {elem}")
    if pos_type not in ("i32", "i64"):
        raise ValueError(f"row softmax takes i32 or i64 positions, got {pos_type}")
    e, p, w = elem, pos_type, lanes(elem)
    v = f"vector<{w}x{e}>"
    store_v = "" if logarithm else f"        vector.store %x, %out[%k] : memref<?x{e}>, {v}\n"
    store_s = "" if logarithm else f"      memref.store %x, %out[%k] : memref<?x{e}>\n"
    if logarithm:
        finish = f"""\
    %l = math.log %s : {e}
    %shift = arith.addf %m, %l : {e}
    %vshift = vector.broadcast %shift : {e} to {v}
    scf.for %k = %lo to %vend step %cw {{
      %x = vector.load %val[%k] : memref<?x{e}>, {v}
      %y = arith.subf %x, %vshift : {v}
      vector.store %y, %out[%k] : memref<?x{e}>, {v}
    }}
    scf.for %k = %vend to %hi step %c1 {{
      %x = memref.load %val[%k] : memref<?x{e}>
      %y = arith.subf %x, %shift : {e}
      memref.store %y, %out[%k] : memref<?x{e}>
    }}
"""
    else:
        finish = f"""\
    %inv = arith.divf %one, %s : {e}
    %vinv = vector.broadcast %inv : {e} to {v}
    scf.for %k = %lo to %vend step %cw {{
      %x = vector.load %out[%k] : memref<?x{e}>, {v}
      %y = arith.mulf %x, %vinv : {v}
      vector.store %y, %out[%k] : memref<?x{e}>, {v}
    }}
    scf.for %k = %vend to %hi step %c1 {{
      %x = memref.load %out[%k] : memref<?x{e}>
      %y = arith.mulf %x, %inv : {e}
      memref.store %y, %out[%k] : memref<?x{e}>
    }}
"""
    return f"""\
func.func @main(%pos: memref<?x{p}>, %val: memref<?x{e}>, %out: memref<?x{e}>, %row_begin: index,
                %row_end: index) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant {w} : index
  %nval = memref.dim %val, %c0 : memref<?x{e}>
  %nout = memref.dim %out, %c0 : memref<?x{e}>
  %n = arith.minui %nval, %nout : index
  %ninf = arith.constant {_NEG_INF[e]} : {e}
  %zero = arith.constant 0.0 : {e}
  %one = arith.constant 1.0 : {e}
  %vninf = arith.constant dense<{_NEG_INF[e]}> : {v}
  %vzero = arith.constant dense<0.0> : {v}
  scf.for %r = %row_begin to %row_end step %c1 {{
    %r1 = arith.addi %r, %c1 : index
    %lo_p = memref.load %pos[%r] : memref<?x{p}>
    %hi_p = memref.load %pos[%r1] : memref<?x{p}>
    %lo_u = arith.index_cast %lo_p : {p} to index
    %hi_u = arith.index_cast %hi_p : {p} to index
    %hi = arith.minui %hi_u, %n : index
    %lo = arith.minui %lo_u, %hi : index
    %len = arith.subi %hi, %lo : index
    %rest = arith.remui %len, %cw : index
    %vend = arith.subi %hi, %rest : index
    %long = arith.cmpi uge, %len, %cw : index
    %m0 = scf.if %long -> ({e}) {{
      %vm = scf.for %k = %lo to %vend step %cw iter_args(%acc = %vninf) -> ({v}) {{
        %x = vector.load %val[%k] : memref<?x{e}>, {v}
        %next = arith.maximumf %acc, %x : {v}
        scf.yield %next : {v}
      }}
      %red = vector.reduction <maximumf>, %vm : {v} into {e}
      scf.yield %red : {e}
    }} else {{
      scf.yield %ninf : {e}
    }}
    %m = scf.for %k = %vend to %hi step %c1 iter_args(%acc = %m0) -> ({e}) {{
      %x = memref.load %val[%k] : memref<?x{e}>
      %next = arith.maximumf %acc, %x : {e}
      scf.yield %next : {e}
    }}
    %s0 = scf.if %long -> ({e}) {{
      %vm = vector.broadcast %m : {e} to {v}
      %vs = scf.for %k = %lo to %vend step %cw iter_args(%acc = %vzero) -> ({v}) {{
        %xv = vector.load %val[%k] : memref<?x{e}>, {v}
        %d = arith.subf %xv, %vm : {v}
{exp_lines("d", "x", v, e, "ve", "        ")}{store_v}        %next = arith.addf %acc, %x : {v}
        scf.yield %next : {v}
      }}
      %red = vector.reduction <add>, %vs : {v} into {e}
      scf.yield %red : {e}
    }} else {{
      scf.yield %zero : {e}
    }}
    %s = scf.for %k = %vend to %hi step %c1 iter_args(%acc = %s0) -> ({e}) {{
      %xv = memref.load %val[%k] : memref<?x{e}>
      %d = arith.subf %xv, %m : {e}
{exp_lines("d", "x", e, e, "se", "      ")}{store_s}      %next = arith.addf %acc, %x : {e}
      scf.yield %next : {e}
    }}
{finish}  }}
  return
}}
"""
