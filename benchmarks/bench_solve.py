"""Solve speed: ust-mlir's compiled solvers vs scipy.sparse.linalg, time to the same relative residual.

Matrices: pyamg's examples (airfoil, bar, knot, local_disc_galerkin_diffusion, recirc_flow, unit_cube)
and generated Poisson problems (2-D 1000x1000 grid, 3-D 100^3; ``--quick``: 300x300 and 40^3).
For each: CG / BiCGSTAB / GMRES(30) against scipy's ``cg`` / ``bicgstab`` / ``gmres`` with the same
tolerance (relative residual 1e-8) and the same preconditioner (none, Jacobi, ILU(0): scipy gets our
ILU(0) factors through ``spsolve_triangular``), and substitution on ``tril(A)`` against
``spsolve_triangular`` (1 and 8 right-hand sides). The Poisson problems run unpreconditioned CG (and
BiCGSTAB and GMRES(30) in 3-D) only: the rest takes minutes in scipy. Times exclude planning (compile,
factorization), printed separately; the ratio is scipy / ours. Ours runs once per ``--threads`` setting
(default ``auto 1``: ``threads=None``, which picks every core above a size threshold, and one thread), each
line saying the thread count it got; all contenders of a line are timed in the same run, interleaved, best of
a few rounds within a time budget.

``%bw`` is the memory-bandwidth bound of one iteration over its measured time: the bytes an iteration must
stream (the matrix once per SpMV: values, column indices, row pointers; the vectors each fused sweep reads
or writes, see ``vector_passes``) divided by the streaming read bandwidth measured at the start
(``torch.sum`` over 800 MB on every core). 100% would be a kernel that only streams; it is printed for
iterations streaming at least 64 MB (smaller ones run largely from cache).

Run: ``.venv/bin/python benchmarks/bench_solve.py [--quick] [--only NAME ...] [--threads auto 1 2]`` (full:
about 5 minutes on an idle machine, mostly scipy on the 2-D Poisson problem).
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

# scipy's BLAS on one thread (threaded BLAS on a busy machine made scipy's vector updates ~10x slower,
# which would flatter the ratios); override from the environment. OMP_NUM_THREADS is left alone: our
# kernels fix their OpenMP team size themselves, and torch's bandwidth probe should use every core.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import frontend  # noqa: E402

TOL = 1e-8
CACHED = 64 << 20  # an iteration streaming fewer bytes runs largely from cache: no %bw printed
SCIPY = {"cg": sla.cg, "bicgstab": sla.bicgstab, "gmres": sla.gmres}


def best(fn: Callable[[], Any], budget: float = 1.0, most: int = 20) -> tuple[float, Any]:
    """Best wall time of ``fn`` over repeats that fit in ``budget`` seconds (at least one)."""
    times, outs = interleaved([fn], budget, most)
    return times[0], outs[0]


def interleaved(fns: list[Callable[[], Any]], budget: float = 2.0, most: int = 10, least: int = 1
                ) -> tuple[list[float], list[Any]]:
    """Best wall time of each of ``fns``, timed in rounds (each round runs every fn once) until the rounds
    fill ``budget`` seconds, at least ``least`` and at most ``most`` rounds; also each fn's first result."""
    times: list[list[float]] = [[] for _ in fns]
    outs: list[Any] = [None] * len(fns)
    spent = 0.0
    while len(times[0]) < least or (spent < budget and len(times[0]) < most):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            times[k].append(dt)
            spent += dt
            if outs[k] is None:
                outs[k] = out
    return [min(t) for t in times], outs


def read_bandwidth() -> float:
    """Streaming read bandwidth in bytes/s: best ``torch.sum`` over 800 MB of float64 on every core."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    data = torch.ones(100_000_000, dtype=torch.float64)
    seconds, _ = best(lambda: float(data.sum()), budget=2.0, most=10)
    return data.numel() * data.element_size() / seconds


def vector_passes(method: str, pc: str | None, restart: int = 30) -> tuple[int, float]:
    """(SpMVs, vector reads + writes) of one iteration of our fused loops (ILU(0) counted as one more
    matrix pass and four vector passes per application)."""
    applications = {"cg": 1, "bicgstab": 2, "gmres": 1}[method]
    spmvs, passes = {"cg": (1, 11.0), "bicgstab": (2, 19.0), "gmres": (1, 7 + 5 * (restart + 1) / 2)}[method]
    if pc == "jacobi":
        passes += 3 * applications + (2 if method == "cg" else 0)  # dinv * r -> z (+ dot(r, z) for CG)
    elif pc == "ilu0":
        spmvs += applications
        passes += 4 * applications + (2 if method == "cg" else 0)
    return spmvs, passes


def iteration_bytes(a: sp.csr_matrix, method: str, pc: str | None) -> float:
    """Bytes one iteration streams at least (int32 indices, the matrix's value type)."""
    spmvs, passes = vector_passes(method, pc)
    n, item = a.shape[0], a.dtype.itemsize
    return spmvs * (a.nnz * (item + 4) + (n + 1) * 4) + passes * n * item


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


def run_iterative(name: str, a: sp.csr_matrix, method: str, pc: str | None, b: np.ndarray,
                  thread_settings: list[int | None], bandwidth: float) -> None:
    maxiter = 20000
    solvers, plans = [], []
    for threads in thread_settings:
        t0 = time.perf_counter()
        solvers.append(frontend.Solve(a, method=method, preconditioner=pc, tol=TOL, maxiter=maxiter,
                                      on_failure="warn", threads=threads).plan())
        plans.append(time.perf_counter() - t0)
    m = scipy_preconditioner(pc, solvers[0], a)
    kwargs = {"restart": 30} if method == "gmres" else {}
    runs = [lambda s=s: s.execute(b) for s in solvers]
    runs.append(lambda: SCIPY[method](a, b, rtol=TOL, atol=0.0, maxiter=maxiter, M=m, **kwargs))
    times, outs = interleaved(runs, budget=3.0, most=5, least=2 if a.shape[0] > 50_000 else 3)
    ref, (xs, info) = times[-1], outs[-1]
    sres = np.linalg.norm(b - a @ xs) / np.linalg.norm(b)
    streamed = iteration_bytes(a, method, pc)
    cols = []
    for s, ours, x, plan_s in zip(solvers, times, outs, plans):
        res = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
        its = max(s.info.iterations, 1)
        bw = f"{100 * streamed / bandwidth * its / ours:3.0f}%bw" if streamed >= CACHED else "    -"
        cols.append(f"t={s.info.threads} {ours * 1e3:9.2f} ms x{ref / ours:5.1f} {bw} "
                    f"(plan {plan_s * 1e3:5.0f} ms, res {res:.0e})")
    print(f"{name:32s} {method:8s} {pc or 'none':7s} {solvers[0].info.iterations:6d} it  " + "  ".join(cols)
          + f"  scipy {ref * 1e3:9.2f} ms (res {sres:.0e}{', not converged' if info else ''})", flush=True)


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
    ap.add_argument("--threads", nargs="*", default=["auto", "1"],
                    help="thread settings for our solvers: 'auto' (threads=None) or a count")
    ap.add_argument("--no-triangular", action="store_true", help="skip the substitution rows")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    settings = [None if t == "auto" else int(t) for t in args.threads]
    bandwidth = read_bandwidth()
    print(f"streaming read bandwidth (torch.sum, 800 MB, {os.cpu_count()} threads): {bandwidth / 1e9:.1f} GB/s",
          flush=True)
    for name, a in matrices(args.quick):
        if args.only and not any(k in name for k in args.only):
            continue
        n = a.shape[0]
        print(f"--- {name}: n={n}, nnz={a.nnz}", flush=True)
        b = np.random.default_rng(0).standard_normal(n)
        big = n > 50_000
        sym = abs(a - a.T).max() <= 1e-10 * abs(a).max()
        methods = ["cg", "bicgstab", "gmres"] if sym else ["bicgstab", "gmres"]
        if big:  # unpreconditioned GMRES(30) and BiCGSTAB on the 2-D problem take minutes in scipy
            methods = ["cg"] if name.startswith("poisson2d") else ["cg", "bicgstab", "gmres"]
        for method in methods:
            pcs: list[str | None] = [None] if big else [None, "jacobi", "ilu0"]
            for pc in pcs:
                run_iterative(name, a, method, pc, b, settings, bandwidth)
        for nrhs in () if args.no_triangular else (1, 8):
            run_triangular(name, a, nrhs)


if __name__ == "__main__":
    main()
