"""Iterative solves walking DIA storage (``layout=``) against scipy.sparse.linalg and the CSR layout."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import frontend
from frontend.solvers._layout import DIA_MIN_ROWS, choose_layout, dia_operands
from frontend.solvers._operands import csr_operands
from frontend.tensor._tensor import Tensor

pyamg = pytest.importorskip("pyamg")


def banded_spd(n: int, offsets: tuple[int, ...], seed: int = 0, holes: float = 0.0) -> sp.csr_matrix:
    """A symmetric diagonally dominant matrix on ``0`` and ``+-offsets``; ``holes`` drops that share of entries."""
    rng = np.random.default_rng(seed)
    m = sp.lil_matrix((n, n))
    for k in offsets:
        for i in range(max(0, n - k)):
            if rng.random() >= holes:
                v = -rng.uniform(0.1, 1.0)
                m[i, i + k] = v
                m[i + k, i] = v
    m = m.tocsr()
    d = np.asarray(abs(m).sum(axis=1)).ravel() + rng.uniform(0.5, 1.5, n)
    return sp.csr_matrix(m + sp.diags(d))


def banded_general(n: int, offsets: tuple[int, ...], seed: int = 0) -> sp.csr_matrix:
    """A non-symmetric diagonally dominant matrix on the diagonal and ``offsets`` (either sign)."""
    rng = np.random.default_rng(seed)
    parts = [sp.diags(rng.uniform(-1.0, 1.0, n - abs(k)), k, shape=(n, n)) for k in offsets if abs(k) < n]
    m = sp.csr_matrix(sum(parts, sp.csr_matrix((n, n))))
    d = np.asarray(abs(m).sum(axis=1)).ravel() + 1.0
    return sp.csr_matrix(m + sp.diags(d))


def scipy_solve(method: str, a: sp.csr_matrix, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if method == "cg":
        return sla.cg(a64, b64, rtol=1e-12, atol=0.0, maxiter=10 * a.shape[0])[0]
    return sla.spsolve(sp.csc_matrix(a64), b64)


def relres(a: sp.csr_matrix, x: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(np.linalg.norm(b64 - a64 @ x.astype(np.float64)) / np.linalg.norm(b64))


CASES = {  # name -> (matrix, methods)
    "poisson2d 12^2": (lambda: sp.csr_matrix(pyamg.gallery.poisson((12, 12))), ("cg", "bicgstab", "gmres")),
    "poisson3d 5^3": (lambda: sp.csr_matrix(pyamg.gallery.poisson((5, 5, 5))), ("cg",)),
    "band with holes": (lambda: banded_spd(150, (1, 2, 7, 40), seed=1, holes=0.3), ("cg", "gmres")),
    "band wider than rows": (lambda: banded_spd(9, (3, 8), seed=2), ("cg", "bicgstab")),
    "one-sided band": (lambda: banded_general(60, (0, 1, 5, 61), seed=3), ("bicgstab", "gmres")),
    "lower band": (lambda: banded_general(40, (0, -1, -3), seed=4) + sp.eye(40, k=2) * 0.1, ("bicgstab",)),
    "diagonal only": (lambda: sp.csr_matrix(sp.diags(np.linspace(1.0, 3.0, 17))), ("cg",)),
    "1x1": (lambda: sp.csr_matrix(np.array([[2.5]])), ("cg", "bicgstab", "gmres")),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", list(CASES))
def test_dia_layout_matches_scipy(case, dtype, threads):
    build, methods = CASES[case]
    a = sp.csr_matrix(build(), dtype=dtype)
    n = a.shape[0]
    b = np.random.default_rng(5).uniform(0.5, 1.5, n).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-10
    for method in methods if threads == 1 else methods[:1]:  # parallel sweeps: one method is enough (and fast)
        ref = scipy_solve(method, a, b)
        s = frontend.Solve(a, method=method, tol=tol, layout="dia", threads=threads)
        x = s.execute(b)
        assert s.info.format == "DIA" and "layout='dia'" in s.info.reason
        assert x.dtype == dtype and x.shape == (n,)
        assert relres(a, x, b) <= 10 * tol, (method, relres(a, x, b))
        assert np.allclose(x, ref, rtol=0, atol=(1e-3 if dtype == np.float32 else 1e-7) * np.abs(ref).max())
        c = frontend.Solve(a, method=method, tol=tol, layout="csr", threads=threads)
        xc = c.execute(b)
        assert c.info.format == "CSR"
        assert np.allclose(x, xc, rtol=0, atol=(1e-3 if dtype == np.float32 else 1e-7) * np.abs(ref).max())
        assert abs(s.info.iterations - c.info.iterations) <= max(2, c.info.iterations // 20)


@pytest.mark.parametrize("layout", ["csr", "dia"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobi_cg_and_several_rhs(dtype, layout):  # CG with Jacobi fuses z = dinv r into its two passes
    a = sp.csr_matrix(banded_spd(80, (1, 9), seed=6) @ sp.diags(np.linspace(1, 20, 80)), dtype=dtype)
    a = sp.csr_matrix((a + a.T) / 2, dtype=dtype)
    rhs = np.random.default_rng(7).standard_normal((80, 3)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-10
    s = frontend.Solve(a, method="cg", preconditioner="jacobi", tol=tol, layout=layout)
    x = s.execute(rhs)
    assert s.info.format == layout.upper() and x.shape == (80, 3)
    for j in range(3):
        assert relres(a, x[:, j], rhs[:, j]) <= 10 * tol
        ref = scipy_solve("cg", a, rhs[:, j])
        assert np.allclose(x[:, j], ref, atol=(1e-3 if dtype == np.float32 else 1e-7) * np.abs(ref).max())


def test_dia_layout_x0_and_tensor_input():
    a = banded_spd(50, (1, 4), seed=8)
    b = np.linspace(-1.0, 1.0, 50)
    ref = scipy_solve("cg", a, b)
    x0 = ref + 0.01
    s = frontend.Solve(Tensor.from_package(a), method="cg", layout="dia")
    x = s.execute(b, x0=x0)
    assert isinstance(x, Tensor) and np.allclose(x.to_dense(), ref, atol=1e-7)
    assert s.info.iterations > 0


def test_auto_layout_picks_dia_on_large_stencils_only():
    big = sp.csr_matrix(pyamg.gallery.poisson((256, 256)))  # 65536 rows, 5 diagonals
    assert big.shape[0] >= DIA_MIN_ROWS
    s = frontend.Solve(big, method="cg", maxiter=30, on_failure="warn")
    assert s.info.format == "DIA" and "5 diagonals" in s.info.reason
    b = np.random.default_rng(9).standard_normal(big.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = s.execute(b)
        xc = frontend.Solve(big, method="cg", maxiter=30, on_failure="warn", layout="csr").execute(b)
        xs = sla.cg(big, b, rtol=1e-8, atol=0.0, maxiter=30)[0]
    assert np.allclose(x, xs, atol=1e-9 * np.abs(xs).max()) and np.allclose(x, xc, atol=1e-9 * np.abs(xs).max())
    assert frontend.Solve(big, method="cg", preconditioner="ilu0").info.format == "CSR"  # ILU walks CSR
    small = sp.csr_matrix(pyamg.gallery.poisson((20, 20)))
    assert frontend.Solve(small, method="cg").info.format == "CSR"
    # Scattered entries: every diagonal different, DIA would move far more bytes than CSR.
    rng = np.random.default_rng(10)
    r = sp.random(DIA_MIN_ROWS, DIA_MIN_ROWS, density=4 / DIA_MIN_ROWS, random_state=rng, format="csr")
    spd = sp.csr_matrix(r + r.T + sp.eye(DIA_MIN_ROWS) * 10)
    layout, why = choose_layout("auto", csr_operands(Tensor.from_package(spd), np.dtype(np.float64)), None)
    assert layout == "csr" and "diagonals" in why


def test_dia_operands_layout():
    a = sp.csr_matrix(np.array([[4.0, 1.0, 0.0], [0.0, 5.0, 2.0], [3.0, 0.0, 6.0]]))
    d = dia_operands(csr_operands(Tensor.from_package(a), np.dtype(np.float64)))
    assert d.off.tolist() == [-2, 0, 1]
    assert d.val.reshape(3, 3).tolist() == [[0.0, 0.0, 3.0], [4.0, 5.0, 6.0], [1.0, 2.0, 0.0]]


def test_layout_errors():
    a = banded_spd(10, (1,), seed=11)
    with pytest.raises(ValueError, match="layout must be one of"):
        frontend.Solve(a, layout="ell")
    with pytest.raises(ValueError, match="preconditioner None or 'jacobi'"):
        frontend.Solve(a, method="cg", preconditioner="ilu0", layout="dia").plan()
    rows, cols = [0, 59, 1, 40, 2, 30, 5, 50, 10, 20], [59, 0, 40, 1, 30, 2, 50, 5, 20, 10]
    scattered = sp.csr_matrix(sp.eye(60) * 4 + sp.csr_matrix(([1.0] * 10, (rows, cols)), shape=(60, 60)))
    with pytest.raises(ValueError, match="use layout='csr'"):  # 11 diagonals x 60 rows for 70 entries
        frontend.Solve(scattered, method="cg", layout="dia").plan()
    with pytest.raises(ValueError, match="at least one stored entry"):
        frontend.Solve(sp.csr_matrix((4, 4)), method="cg", layout="dia").plan()
    # layout concerns the iterative kernels only: substitution keeps its own walk
    t = sp.csr_matrix(np.tril(np.ones((3, 3))))
    assert frontend.Solve(t, layout="dia").info.method == "triangular"
