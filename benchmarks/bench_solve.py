"""Solve speed: ust-mlir's compiled solvers vs scipy.sparse.linalg, time to the same relative residual.

Matrices: pyamg's examples (airfoil, bar, knot, local_disc_galerkin_diffusion, recirc_flow, unit_cube)
and generated Poisson problems (2-D 1000x1000 grid, 3-D 100^3; ``--quick``: 300x300 and 40^3).
For each: CG / BiCGSTAB / GMRES(30) against scipy's ``cg`` / ``bicgstab`` / ``gmres`` with the same
tolerance (relative residual 1e-8) and the same preconditioner (none, Jacobi, ILU(0): scipy gets our
ILU(0) factors through ``spsolve_triangular``), and substitution on ``tril(A)`` against
``spsolve_triangular`` (1 and 8 right-hand sides). The Poisson problems run unpreconditioned CG (and
BiCGSTAB in 3-D) only: the rest takes minutes in scipy. Times exclude planning (compile,
factorization), printed separately; the ratio is scipy / ours, measured in the same run (best of a
few repeats within a time budget).

Run: ``.venv/bin/python benchmarks/bench_solve.py [--quick] [--only NAME ...]`` (full: about 3 minutes
on an idle machine, mostly scipy on the 2-D Poisson problem).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Our kernels run on one thread; so does scipy's BLAS here (threaded BLAS on a busy machine made
# scipy's vector updates ~10x slower, which would flatter the ratios). Override from the environment.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import frontend  # noqa: E402

TOL = 1e-8
SCIPY = {"cg": sla.cg, "bicgstab": sla.bicgstab, "gmres": sla.gmres}


def best(fn: Callable[[], Any], budget: float = 1.0, most: int = 20) -> tuple[float, Any]:
    """Best wall time of ``fn`` over repeats that fit in ``budget`` seconds (at least one)."""
    t0 = time.perf_counter()
    out = fn()
    times = [time.perf_counter() - t0]
    while sum(times) < budget and len(times) < most:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def matrices(quick: bool) -> list[tuple[str, sp.csr_matrix]]:
    import pyamg

    out = []
    for name in ("airfoil", "bar", "knot", "local_disc_galerkin_diffusion", "recirc_flow", "unit_cube"):
        try:
            a = pyamg.gallery.load_example(name)["A"].tocsr()
        except Exception as err:  # noqa: BLE001 - a missing example is reported, not fatal
            print(f"{name}: not loadable ({err})")
            continue
        a.sort_indices()
        out.append((name, a))
    g2, g3 = (300, 40) if quick else (1000, 100)
    out.append((f"poisson2d_{g2}^2", pyamg.gallery.poisson((g2, g2), format="csr")))
    out.append((f"poisson3d_{g3}^3", pyamg.gallery.poisson((g3, g3, g3), format="csr")))
    return out


def scipy_preconditioner(kind: str | None, s: frontend.Solve, a: sp.csr_matrix) -> Any:
    """The same preconditioner as ``s`` for scipy (None, Jacobi diagonal, our ILU(0) factors)."""
    if kind is None:
        return None
    n = a.shape[0]
    if kind == "jacobi":
        return sp.diags(1.0 / a.diagonal()).tocsr()
    lu, dptr, udiag = s._pc_args  # the factors planned by Solve
    full = sp.csr_matrix((lu, s._csr.crd, s._csr.pos), shape=a.shape)
    lower = (sp.tril(full, -1) + sp.eye(n)).tocsr()
    upper = sp.triu(full).tocsr()

    def apply(r: np.ndarray) -> np.ndarray:
        y = sla.spsolve_triangular(lower, r, lower=True, unit_diagonal=True)
        return sla.spsolve_triangular(upper, y, lower=False)
    return sla.LinearOperator(a.shape, matvec=apply, dtype=a.dtype)


def run_iterative(name: str, a: sp.csr_matrix, method: str, pc: str | None, b: np.ndarray) -> None:
    maxiter = 20000
    t0 = time.perf_counter()
    s = frontend.Solve(a, method=method, preconditioner=pc, tol=TOL, maxiter=maxiter, on_failure="warn").plan()
    plan_s = time.perf_counter() - t0
    ours, x = best(lambda: s.execute(b))
    res = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
    m = scipy_preconditioner(pc, s, a)
    kwargs = {"restart": 30} if method == "gmres" else {}
    ref, (xs, info) = best(lambda: SCIPY[method](a, b, rtol=TOL, atol=0.0, maxiter=maxiter, M=m, **kwargs),
                           budget=2.0, most=5)
    sres = np.linalg.norm(b - a @ xs) / np.linalg.norm(b)
    print(f"{name:32s} {method:8s} {pc or 'none':7s} {s.info.iterations:6d} it  ours {ours * 1e3:9.2f} ms "
          f"(plan {plan_s * 1e3:6.0f} ms, res {res:.1e})  scipy {ref * 1e3:9.2f} ms (res {sres:.1e}"
          f"{', not converged' if info else ''})  x{ref / ours:6.1f}", flush=True)


def run_triangular(name: str, a: sp.csr_matrix, nrhs: int) -> None:
    low = sp.tril(a).tocsr()
    rng = np.random.default_rng(1)
    b = rng.standard_normal((a.shape[0], nrhs)) if nrhs > 1 else rng.standard_normal(a.shape[0])
    s = frontend.Solve(low).plan()
    s.execute(b)  # compiles the kernel for this number of right-hand sides
    ours, x = best(lambda: s.execute(b))
    ref, xs = best(lambda: sla.spsolve_triangular(low, b, lower=True), budget=2.0, most=10)
    err = np.abs(x - xs).max() / np.abs(xs).max()
    print(f"{name:32s} {'trsv':8s} rhs={nrhs:<3d}        ours {ours * 1e3:9.3f} ms (diff {err:.1e})  "
          f"scipy {ref * 1e3:9.3f} ms  x{ref / ours:6.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller Poisson problems")
    ap.add_argument("--only", nargs="*", default=None, help="run only matrices whose name contains one of these")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for name, a in matrices(args.quick):
        if args.only and not any(k in name for k in args.only):
            continue
        n = a.shape[0]
        print(f"--- {name}: n={n}, nnz={a.nnz}", flush=True)
        b = np.random.default_rng(0).standard_normal(n)
        big = n > 50_000
        sym = abs(a - a.T).max() <= 1e-10 * abs(a).max()
        methods = ["cg", "bicgstab", "gmres"] if sym else ["bicgstab", "gmres"]
        if big:  # unpreconditioned GMRES(30) on these takes minutes in scipy; 2-D BiCGSTAB too
            methods = ["cg"] if name.startswith("poisson2d") else ["cg", "bicgstab"]
        for method in methods:
            pcs: list[str | None] = [None] if big else [None, "jacobi", "ilu0"]
            for pc in pcs:
                run_iterative(name, a, method, pc, b)
        for nrhs in (1, 8):
            run_triangular(name, a, nrhs)


if __name__ == "__main__":
    main()
