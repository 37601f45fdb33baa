"""Solve a 2-D Poisson problem -Δu = f on the unit square (u = 0 on the boundary) and plot u.

The 5-point Laplacian is a sparse matrix in the DELTA(8) format here, to show that ``frontend.solve``
takes any format (it converts once, then runs CG in one compiled MLIR function).

Run: ``python examples/solve_poisson.py [out.png]`` (default: a PNG in a temporary folder).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import frontend  # noqa: E402
from frontend import NamedFormats, Tensor  # noqa: E402


def laplacian(m: int) -> sp.csr_matrix:
    """The 5-point Laplacian on an m x m interior grid with spacing h = 1/(m+1), times h^2."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    eye = sp.eye(m)
    return sp.csr_matrix(sp.kron(eye, t) + sp.kron(t, eye))


def main(out: Path) -> None:
    m = 120
    h = 1.0 / (m + 1)
    xs = np.linspace(h, 1 - h, m)
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    f = np.exp(-80 * ((gx - 0.3) ** 2 + (gy - 0.6) ** 2)) - np.exp(-80 * ((gx - 0.7) ** 2 + (gy - 0.3) ** 2))
    a = Tensor.from_package(laplacian(m)).convert(NamedFormats.DELTA(8))
    solver = frontend.Solve(a, tol=1e-10, preconditioner="ic0")
    u = solver.execute(h * h * f.ravel()).to_dense().reshape(m, m)
    info = solver.info
    print(f"{info.method} ({info.reason}), preconditioner {info.preconditioner}: "
          f"{info.iterations} iterations, relative residual {info.residual:.2e}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    im = ax.imshow(u.T, origin="lower", extent=(0, 1, 0, 1), cmap="RdBu_r")
    fig.colorbar(im, ax=ax, label="u")
    ax.set_title(f"-Δu = f, {m}x{m} grid, {info.method.upper()} + IC(0)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "poisson.png"
    main(target)
