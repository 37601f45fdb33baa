"""ELL's fixed-stride kernels against the bounded ELL walk and CSR on the same matrix.

The fixed-stride variant (``lowering.schedule`` chooses it from the measured fill; ``Contraction.stride``) walks
all K slots of every row with no position loads and K compiled in. Single-threaded planned ``Matmul``s,
interleaved rounds, minimum of the repeats; ratio = time / CSR's time.

    PYTHONPATH=. python benchmarks/bench_ell.py --rounds 7
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import frontend.ops as F
import lowering.schedule as schedule
from frontend.tensor import Tensor


def poisson2d(m: int) -> sp.csr_matrix:
    """The 5-point Laplacian on an m x m grid."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return (sp.kron(sp.eye(m), t) + sp.kron(t, sp.eye(m))).tocsr()


def banded(n: int, half: int, seed: int = 0) -> sp.csr_matrix:
    """``2 half + 1`` random diagonals."""
    rng = np.random.default_rng(seed)
    offs = list(range(-half, half + 1))
    return sp.diags([rng.random(n - abs(k)) + 0.1 for k in offs], offs, shape=(n, n)).tocsr()


LANES = 8


def across_rows_module(elem: str, layout: str, k: int) -> str:
    """SpMV over ELL vectorized across rows (8 rows per vector, one slot at a time): ``layout="slot"`` reads
    slot-major buffers (slot ``s`` of row ``r`` at ``s * n + r``: contiguous vector loads), ``"row"`` the
    row-major buffers ELL stores (at ``r * K + s``: stride-K gathers), ``"block"`` the row-major buffers as
    one contiguous ``8 * K`` load each for values and columns, split into the ``K`` slot vectors by
    ``vector.shuffle`` (the slot loop unrolled). Padding slots hold value 0 and a valid column. A
    measurement of the alternatives, not a kernel the project runs."""
    L, K, build_layout = LANES, k, layout  # noqa: N806 - the names of the MLIR text
    vt, it, mt = f"vector<{L}x{elem}>", f"vector<{L}xi64>", f"vector<{L}xi1>"
    if build_layout == "block":
        return _block_module(elem, k)
    if build_layout == "slot":   # crd/val [K, n]: slot s of row r at s*n + r
        body = f"""
      %b = arith.muli %s, %n : index
      %o = arith.addi %b, %r : index
      %c = vector.load %crd[%o] : memref<?xi64>, {it}
      %v = vector.load %val[%o] : memref<?x{elem}>, {vt}
      %xv = vector.gather %x[%c0][%c], %all, %zv : memref<?x{elem}>, {it}, {mt}, {vt} into {vt}
"""
    else:                  # row-major: slot s of row r at r*K + s; lanes r..r+7 at stride K
        body = f"""
      %b = arith.muli %r, %cK : index
      %o = arith.addi %b, %s : index
      %c = vector.gather %crd[%o][%lane], %all, %zi : memref<?xi64>, {it}, {mt}, {it} into {it}
      %v = vector.gather %val[%o][%lane], %all, %zv : memref<?x{elem}>, {it}, {mt}, {vt} into {vt}
      %xv = vector.gather %x[%c0][%c], %all, %zv : memref<?x{elem}>, {it}, {mt}, {vt} into {vt}
"""
    return f"""{_head(elem, K)}
  %n = memref.dim %y, %c0 : memref<?x{elem}>
  %zi = arith.constant dense<0> : {it}
  %lane0 = arith.constant dense<[0,1,2,3,4,5,6,7]> : {it}
  %lanek = arith.constant dense<{K}> : {it}
  %lane = arith.muli %lane0, %lanek : {it}
  scf.for %r = %r0 to %rv step %cL {{
    %acc = scf.for %s = %c0 to %cK step %c1 iter_args(%a = %zv) -> ({vt}) {{
{body}
      %f = vector.fma %v, %xv, %a : {vt}
      scf.yield %f : {vt}
    }}
    vector.store %acc, %y[%r] : memref<?x{elem}>, {vt}
  }}
{_scalar_rest(elem, build_layout == "slot")}  return
}}
"""


def _block_module(elem: str, k: int) -> str:
    """:func:`across_rows_module`'s ``"block"`` layout: the rows a vector covers are ``8 * K`` contiguous
    entries; one load each for values and columns, then per slot a shuffle of lanes ``l * K + s``."""
    L, W = LANES, LANES * k  # noqa: N806
    vt, it, bt, bi = f"vector<{L}x{elem}>", f"vector<{L}xi64>", f"vector<{W}x{elem}>", f"vector<{W}xi64>"
    lines, acc = [], "%zv"
    for s in range(k):
        lanes = ", ".join(str(lane * k + s) for lane in range(L))
        lines += [f"      %v{s} = vector.shuffle %bv, %bv [{lanes}] : {bt}, {bt}",
                  f"      %i{s} = vector.shuffle %bc, %bc [{lanes}] : {bi}, {bi}",
                  f"      %x{s} = vector.gather %x[%c0][%i{s}], %all, %zv : memref<?x{elem}>, {it}, "
                  f"vector<{L}xi1>, {vt} into {vt}",
                  f"      %a{s} = vector.fma %v{s}, %x{s}, {acc} : {vt}"]
        acc = f"%a{s}"
    body = "\n".join(lines)
    return f"""{_head(elem, k)}
  scf.for %r = %r0 to %rv step %cL {{
    %b = arith.muli %r, %cK : index
    %bv = vector.load %val[%b] : memref<?x{elem}>, {bt}
    %bc = vector.load %crd[%b] : memref<?xi64>, {bi}
{body}
    vector.store {acc}, %y[%r] : memref<?x{elem}>, {vt}
  }}
{_scalar_rest(elem, False)}  return
}}
"""


def _head(elem: str, k: int) -> str:
    """``@ell``'s signature and the constants both layouts use; ``%rv``: the end of the full vectors."""
    return f"""
func.func @ell(%crd: memref<?xi64>, %val: memref<?x{elem}>, %x: memref<?x{elem}>, %y: memref<?x{elem}>,
               %r0: index, %r1: index) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cL = arith.constant {LANES} : index
  %cK = arith.constant {k} : index
  %all = arith.constant dense<true> : vector<{LANES}xi1>
  %zv = arith.constant dense<0.0> : vector<{LANES}x{elem}>
  %span = arith.subi %r1, %r0 : index
  %full = arith.divui %span, %cL : index
  %fl = arith.muli %full, %cL : index
  %rv = arith.addi %r0, %fl : index"""


def _scalar_rest(elem: str, slot_major: bool) -> str:
    """The rows ``[%rv, %r1)`` left after the full vectors, one at a time (``%n`` rows, ``%cK`` slots)."""
    at = "arith.muli %s, %n : index" if slot_major else "arith.muli %r, %cK : index"
    return f"""  %z = arith.constant 0.0 : {elem}
  scf.for %r = %rv to %r1 step %c1 {{
    %acc = scf.for %s = %c0 to %cK step %c1 iter_args(%a = %z) -> ({elem}) {{
      %o = {at}
      %o2 = arith.addi %o, {"%r" if slot_major else "%s"} : index
      %ci = memref.load %crd[%o2] : memref<?xi64>
      %c = arith.index_cast %ci : i64 to index
      %v = memref.load %val[%o2] : memref<?x{elem}>
      %xv = memref.load %x[%c] : memref<?x{elem}>
      %m = arith.mulf %v, %xv : {elem}
      %t = arith.addf %a, %m : {elem}
      scf.yield %t : {elem}
    }}
    memref.store %acc, %y[%r] : memref<?x{elem}>
  }}
"""


def ell_buffers(a: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-major ``(n, K)`` columns and values of ``a`` with padding slots given value 0 and a valid column."""
    n = a.shape[0]
    lens = np.diff(a.indptr)
    slot = np.arange(a.nnz) - np.repeat(a.indptr[:-1], lens)
    rows = np.repeat(np.arange(n), lens)
    crd = np.repeat(np.arange(n, dtype=np.int64)[:, None] % a.shape[1], k, axis=1)
    val = np.zeros((n, k), a.dtype)
    crd[rows, slot], val[rows, slot] = a.indices, a.data
    return crd, val


def across_rows(a: sp.csr_matrix, x: np.ndarray) -> dict[str, Callable[[], Any]]:
    """The three across-rows SpMV variants (slot-major, row-major gathers, row-major blocks) on ``a``, as
    calls."""
    from frontend.ops._elementwise_kernels import row_kernel_for

    k = int(np.diff(a.indptr).max())
    n = a.shape[0]
    elem = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32"}[a.dtype]
    crd, val = ell_buffers(a, k)
    out: dict[str, Callable[[], Any]] = {}
    for layout in ("slot", "row", "block"):
        fn = row_kernel_for(("bench_ell_rows", layout, elem, k),
                            lambda layout=layout: across_rows_module(elem, layout, k)).function("ell")
        c = np.ascontiguousarray(crd.T).reshape(-1) if layout == "slot" else crd.reshape(-1)
        v = np.ascontiguousarray(val.T).reshape(-1) if layout == "slot" else val.reshape(-1)
        y = np.empty(n, a.dtype)
        fn(c, v, x, y, 0, n)
        np.testing.assert_allclose(y, a @ x, rtol=1e-4)
        out[f"rows {layout}"] = lambda fn=fn, c=c, v=v, y=y: fn(c, v, x, y, 0, n)
    return out


def plans(a: sp.csr_matrix, x: np.ndarray) -> dict[str, Any]:
    """Planned single-threaded Matmuls: CSR, ELL (fixed stride as chosen) and ELL forced to the bounded walk."""
    out = {"CSR": F.Matmul(Tensor.from_package(a), x, threads=1),
           "ELL stride": F.Matmul(Tensor.from_package(a).convert("ELL"), x, threads=1)}
    saved = schedule.STRIDE_FILL
    schedule.STRIDE_FILL = 2.0  # never: the bounded walk (fresh buffers, so a fresh schedule)
    try:
        out["ELL bounded"] = F.Matmul(Tensor.from_package(a).convert("ELL"), x, threads=1)
        for m in out.values():
            m.plan()
    finally:
        schedule.STRIDE_FILL = saved
    return out


def best(fns: dict[str, Callable[[], Any]], rounds: int, inner: int) -> dict[str, float]:
    for fn in fns.values():
        fn()
    t = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            t[k] = min(t[k], (time.perf_counter() - t0) / inner)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--inner", type=int, default=20)
    ap.add_argument("--across-rows", action="store_true",
                    help="SpMV only: also time ELL vectorized across rows (slot-major loads, row-major "
                         "gathers, row-major blocks split by shuffles)")
    args = ap.parse_args()
    if args.across_rows:
        across_rows_table(args)
        return
    mats = {"poisson 2-D 300^2": poisson2d(300), "banded 9 diag 90k": banded(90000, 4),
            "banded 33 diag 30k": banded(30000, 16)}
    print("| matrix | op | CSR ms | ELL stride / CSR | ELL bounded / CSR | stride chosen |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for name, a in mats.items():
        for op, cols in (("SpMV", None), ("SpMM 16", 16)):
            x = rng.random(a.shape[1] if cols is None else (a.shape[1], cols))
            ps = plans(a, x)
            ref = a @ x
            for m in ps.values():
                r = m.execute()
                got = r.to_dense() if isinstance(r, Tensor) else np.asarray(r)
                np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
            t = best({k: m.execute for k, m in ps.items()}, args.rounds, args.inner)
            print(f"| {name} | {op} | {t['CSR'] * 1e3:.3f} | {t['ELL stride'] / t['CSR']:.2f} | "
                  f"{t['ELL bounded'] / t['CSR']:.2f} | {ps['ELL stride'].info.reason.split(':')[0]} |")


def across_rows_table(args: argparse.Namespace) -> None:
    """SpMV, f64 and f32: CSR, the fixed-stride ELL kernel and the two across-rows variants (time / CSR's)."""
    mats = {"poisson 2-D 300^2": poisson2d(300), "banded 9 diag 90k": banded(90000, 4),
            "banded 33 diag 30k": banded(30000, 16)}
    print("| matrix | dtype | CSR ms | ELL stride / CSR | rows slot-major / CSR | rows row-major gathers / CSR "
          "| rows row-major blocks / CSR |")
    print("|---|---|---|---|---|---|---|")
    for name, a64 in mats.items():
        for dt in (np.float64, np.float32):
            a = a64.astype(dt)
            x = np.random.default_rng(1).random(a.shape[1]).astype(dt)
            ps = plans(a, x)
            fns = {"CSR": ps["CSR"].execute, "ELL stride": ps["ELL stride"].execute, **across_rows(a, x)}
            t = best(fns, args.rounds, args.inner)
            print(f"| {name} | {np.dtype(dt).name} | {t['CSR'] * 1e3:.3f} | {t['ELL stride'] / t['CSR']:.2f} | "
                  f"{t['rows slot'] / t['CSR']:.2f} | {t['rows row'] / t['CSR']:.2f} | "
                  f"{t['rows block'] / t['CSR']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
