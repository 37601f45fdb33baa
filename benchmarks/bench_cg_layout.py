"""CG with the matrix walked as CSR or as DIA (``Solve(layout=...)``) against scipy's ``cg``, interleaved.

Matrices: ``2d`` (Poisson 1000^2), ``3d`` (Poisson 100^3), ``band`` (11 diagonals, 1M rows, diagonally
dominant). Each round times ``Solve(a, method="cg", maxiter=200, layout="csr")``, the same with
``layout="dia"`` and ``scipy.sparse.linalg.cg(a, b, maxiter=200)``, in turn; the minimum wall time of the rounds
is printed per contender, with CSR / DIA.

Run: ``.venv/bin/python benchmarks/bench_cg_layout.py {2d,3d,band} [rounds]`` (default 5 rounds).
"""
from __future__ import annotations

import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import frontend as F


def poisson(n: int, dims: int) -> sp.csr_array:
    one = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(n)
    if dims == 2:
        return (sp.kron(one, eye) + sp.kron(eye, one)).tocsr()
    return (sp.kron(sp.kron(one, eye), eye) + sp.kron(sp.kron(eye, one), eye) + sp.kron(sp.kron(eye, eye), one)).tocsr()


def banded(n: int = 1_000_000, half: int = 5) -> sp.csr_array:
    offsets = list(range(-half, half + 1))
    diags = [np.full(n - abs(k), -1.0 if k else 2.0 * half + 1.0) for k in offsets]
    return sp.diags_array(diags, offsets=offsets).tocsr()


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else "2d"
    rounds = int(argv[1]) if len(argv) > 1 else 5
    a = {"2d": lambda: poisson(1000, 2), "3d": lambda: poisson(100, 3), "band": banded}[kind]()
    b = np.ones(a.shape[0])
    solvers = {layout: F.Solve(a, method="cg", maxiter=200, layout=layout, on_failure="warn").plan()
               for layout in ("csr", "dia")}
    best = {"csr": np.inf, "dia": np.inf, "scipy": np.inf}
    for _ in range(rounds):
        for name in best:
            start = time.perf_counter()
            if name == "scipy":
                spla.cg(a, b, maxiter=200)
            else:
                solvers[name].execute(b)
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{kind}: CSR {best['csr']:.2f} s, DIA {best['dia']:.2f} s, CSR / DIA {best['csr'] / best['dia']:.2f}, "
          f"scipy {best['scipy']:.2f} s ({rounds} rounds, minimum)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
