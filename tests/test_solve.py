"""frontend.solve / Solve against scipy.sparse.linalg on pyamg matrices and generated systems."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import frontend
from frontend import NamedFormats as NF, Tensor
from frontend.solvers._solve import ConvergenceError, ConvergenceWarning

pyamg = pytest.importorskip("pyamg")

FORMATS = {"CSR": NF.CSR, "CSC": NF.CSC, "COO": NF.COO, "BSR": NF.BSR((2, 2)), "DIA": NF.DIAI,
           "DELTA": NF.DELTA(8)}
TOL = {np.float32: 1e-5, np.float64: 1e-10}


def as_format(a: sp.spmatrix, name: str) -> Tensor:
    return Tensor.from_package(sp.csr_matrix(a)).convert(FORMATS[name])


def triangular(n: int, lower: bool, dtype, seed: int = 0, empty_rows: int = 0, diag: bool = True) -> sp.csr_matrix:
    """A random well-conditioned triangle; the first ``empty_rows`` rows (and the last) hold nothing."""
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=0.2, random_state=seed, format="lil")
    a = (sp.tril(a, -1) if lower else sp.triu(a, 1)).tolil()
    for r in list(range(empty_rows)) + ([n - 1] if empty_rows else []):
        a.rows[r], a.data[r] = [], []
    a = a.tocsr()
    if diag:
        a = a + sp.diags(rng.uniform(1.0, 2.0, n))
    return sp.csr_matrix(a, dtype=dtype)


def rel_err(x, ref) -> float:
    x = x.to_dense() if isinstance(x, Tensor) else np.asarray(x)
    return float(np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300))


def example(name: str) -> sp.csr_matrix:
    a = pyamg.gallery.load_example(name)["A"].tocsr()
    a.sort_indices()
    return a


# ----- triangular ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_triangular_formats(fmt, lower, dtype):
    n = 24
    a = triangular(n, lower, dtype, seed=3)
    b = np.random.default_rng(1).standard_normal(n).astype(dtype)
    ref = sla.spsolve_triangular(a.astype(np.float64), b.astype(np.float64), lower=lower)
    s = frontend.Solve(as_format(a, fmt))
    x = s.execute(b)
    assert isinstance(x, Tensor)
    assert s.info.method == "triangular" and "triangular" in s.info.reason
    assert rel_err(x, ref) < TOL[dtype] * 10


@pytest.mark.parametrize("fmt", ["CSR", "CSC", "COO", "BSR"])
@pytest.mark.parametrize("lower", [True, False])
def test_triangular_unit_diagonal_empty_rows_multiple_rhs(fmt, lower):
    n = 20
    strict = triangular(n, lower, np.float64, seed=5, empty_rows=3, diag=False)
    b = np.random.default_rng(2).standard_normal((n, 3))
    full = (strict + sp.eye(n)).tocsr()
    ref = sla.spsolve_triangular(full, b, lower=lower)
    x = frontend.solve(as_format(strict, fmt), b, lower=lower, upper=not lower, unit_diagonal=True)
    assert x.shape == (n, 3)
    assert rel_err(x, ref) < 1e-12
    # more than one block of right-hand sides (8 per kernel call)
    b11 = np.random.default_rng(3).standard_normal((n, 11))
    x11 = frontend.solve(strict, b11, lower=lower, upper=not lower, unit_diagonal=True)
    assert rel_err(x11, sla.spsolve_triangular(full, b11, lower=lower)) < 1e-12


def test_triangle_of_a_full_matrix():
    a = example("knot")
    b = np.ones(a.shape[0])
    for lower in (True, False):
        tri = sp.tril(a) if lower else sp.triu(a)
        x = frontend.solve(a, b, lower=lower, upper=not lower)
        assert rel_err(x, sla.spsolve_triangular(tri.tocsr(), b, lower=lower)) < 1e-12


# ----- iterative -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["airfoil", "bar", "knot", "local_disc_galerkin_diffusion", "unit_cube"])
def test_pyamg_spd_auto_cg(name):
    a = example(name)
    b = np.random.default_rng(0).standard_normal(a.shape[0])
    s = frontend.Solve(a, tol=1e-10, preconditioner="ic0")
    x = s.execute(b)
    assert s.info.method == "cg" and s.info.converged and s.info.residual <= 1e-10
    assert type(x) is np.ndarray
    assert rel_err(x, sla.spsolve(a.tocsc(), b)) < 1e-6


@pytest.mark.parametrize("method", ["cg", "bicgstab", "gmres"])
@pytest.mark.parametrize("pc", [None, "jacobi", "ilu0"])
def test_methods_preconditioners_poisson(method, pc):
    a = pyamg.gallery.poisson((12, 12), format="csr")
    b = np.random.default_rng(4).standard_normal(a.shape[0])
    s = frontend.Solve(a, method=method, preconditioner=pc, tol=1e-10)
    x = s.execute(b)
    assert s.info.method == method and s.info.preconditioner == pc
    assert s.info.iterations > 0 and s.info.residual <= 1e-10
    assert np.linalg.norm(a @ x - b) / np.linalg.norm(b) <= 1.01e-10
    assert rel_err(x, sla.spsolve(a.tocsc(), b)) < 1e-7


@pytest.mark.parametrize("method", ["bicgstab", "gmres"])
def test_nonsymmetric_recirc_flow(method):
    a = example("recirc_flow")
    b = np.random.default_rng(6).standard_normal(a.shape[0])
    x = frontend.solve(a, b, method=method, preconditioner="ilu0", tol=1e-10)
    assert rel_err(x, sla.spsolve(a.tocsc(), b)) < 1e-6


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_iterative_formats_multiple_rhs(fmt):
    a = example("airfoil")
    b = np.random.default_rng(7).standard_normal((a.shape[0], 2))
    x = frontend.solve(as_format(a, fmt), b, preconditioner="jacobi")
    assert isinstance(x, Tensor) and x.shape == b.shape
    assert rel_err(x, sla.spsolve(a.tocsc(), b)) < 1e-6


@pytest.mark.parametrize("method", ["cg", "bicgstab", "gmres"])
def test_float32(method):
    a = sp.csr_matrix(pyamg.gallery.poisson((10, 10), format="csr"), dtype=np.float32)
    b = np.random.default_rng(8).standard_normal(a.shape[0]).astype(np.float32)
    x = frontend.solve(a, b, method=method, tol=1e-5)
    assert x.dtype == np.float32
    assert rel_err(x, sla.spsolve(a.astype(np.float64).tocsc(), b.astype(np.float64))) < 1e-3


def test_auto_choice_and_plan_reuse():
    n = 30
    spd = pyamg.gallery.poisson((n,), format="csr")
    nonsym = (spd + sp.diags(np.full(n - 1, 0.3), 1)).tocsr()
    neg = (-spd).tocsr()
    assert frontend.Solve(spd).plan().info.method == "cg"
    assert frontend.Solve(nonsym).plan().info.method == "bicgstab"
    assert frontend.Solve(neg).plan().info.method == "bicgstab"
    assert frontend.Solve(sp.tril(nonsym).tocsr()).plan().info.method == "triangular"
    s = frontend.Solve(nonsym).plan()
    for seed in range(3):
        b = np.random.default_rng(seed).standard_normal(n)
        assert rel_err(s.execute(b), sla.spsolve(nonsym.tocsc(), b)) < 1e-7


def test_x0_zero_rhs_packages_and_tiny_systems():
    torch = pytest.importorskip("torch")
    a = pyamg.gallery.poisson((8, 8), format="csr")
    b = np.random.default_rng(9).standard_normal(a.shape[0])
    ref = sla.spsolve(a.tocsc(), b)
    s = frontend.Solve(a)
    x = s.execute(b, x0=ref)  # already solved
    assert s.info.iterations == 0 and rel_err(x, ref) < 1e-12
    assert not np.any(frontend.solve(a, np.zeros(a.shape[0])))
    xt = frontend.solve(torch.from_numpy(a.toarray()), torch.from_numpy(b))
    assert isinstance(xt, torch.Tensor) and rel_err(xt.numpy(), ref) < 1e-7
    one = sp.csr_matrix(np.array([[4.0]]))
    assert frontend.solve(one, np.array([2.0]))[0] == 0.5
    assert frontend.solve(frontend.Tensor.from_package(sp.csr_matrix((0, 0))), np.zeros(0)).shape == (0,)


def test_noncanonical_scipy_input():
    a = pyamg.gallery.poisson((5, 5), format="coo")
    perm = np.random.default_rng(0).permutation(a.nnz)
    shuffled = sp.coo_matrix((a.data[perm], (a.row[perm], a.col[perm])), shape=a.shape)
    b = np.arange(a.shape[0], dtype=np.float64)
    assert rel_err(frontend.solve(shuffled, b), sla.spsolve(a.tocsc(), b)) < 1e-7


# ----- failures and bad input -------------------------------------------------------------------------------
def test_non_convergence_raises_or_warns():
    a = pyamg.gallery.poisson((20, 20), format="csr")
    b = np.ones(a.shape[0])
    with pytest.raises(ConvergenceError, match="did not converge"):
        frontend.solve(a, b, maxiter=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = frontend.Solve(a, maxiter=3, on_failure="warn")
        s.execute(b)
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert not s.info.converged and s.info.iterations == 3
    with pytest.raises(ConvergenceError, match="float32"):
        frontend.solve(a.astype(np.float32), b.astype(np.float32), tol=1e-12, maxiter=50)


@pytest.mark.parametrize("case, error, match", [
    ("nonsquare", ValueError, "square"),
    ("singular", ValueError, "zero on the diagonal"),
    ("short_b", ValueError, "shape"),
    ("nan_b", ValueError, "NaN or Inf"),
    ("inf_b", ValueError, "NaN or Inf"),
    ("nan_a", ValueError, "NaN or Inf"),
    ("x0_shape", ValueError, "x0"),
    ("method", ValueError, "method"),
    ("precond", ValueError, "preconditioner"),
    ("both_triangles", ValueError, "contradict"),
    ("ic0_nonsym", ValueError, "symmetric"),
    ("not_triangular", ValueError, "triangular"),
    ("tol", ValueError, "tol"),
    ("complex_b", TypeError, "complex"),
    ("on_failure", ValueError, "on_failure"),
    ("ic0_indefinite", ValueError, "negative pivot"),
])
def test_bad_input(case, error, match):
    n = 6
    a = pyamg.gallery.poisson((n,), format="csr")
    b = np.ones(n)
    nonsym = (a + sp.diags(np.full(n - 1, 0.5), 1)).tocsr()
    singular = sp.csr_matrix(sp.tril(a).toarray() * (1 - np.eye(n)) + np.diag([1, 1, 0, 1, 1, 1.0]))
    bad_a = a.copy()
    bad_a.data[0] = np.nan
    calls = {
        "nonsquare": lambda: frontend.solve(sp.random(3, 4, density=0.5, format="csr"), np.ones(3)),
        "singular": lambda: frontend.solve(singular, b),
        "short_b": lambda: frontend.solve(a, np.ones(n + 1)),
        "nan_b": lambda: frontend.solve(a, np.where(np.arange(n) == 2, np.nan, 1.0)),
        "inf_b": lambda: frontend.solve(a, np.full(n, np.inf)),
        "nan_a": lambda: frontend.solve(bad_a, b),
        "x0_shape": lambda: frontend.solve(a, b, x0=np.ones(n + 2)),
        "method": lambda: frontend.solve(a, b, method="lu"),
        "precond": lambda: frontend.solve(a, b, preconditioner="amg"),
        "both_triangles": lambda: frontend.solve(a, b, lower=True, upper=True),
        "ic0_nonsym": lambda: frontend.solve(nonsym, b, preconditioner="ic0"),
        "not_triangular": lambda: frontend.solve(a, b, method="triangular"),
        "tol": lambda: frontend.solve(a, b, tol=-1.0),
        "complex_b": lambda: frontend.solve(a, b + 1j),
        "on_failure": lambda: frontend.solve(a, b, on_failure="ignore"),
        "ic0_indefinite": lambda: frontend.solve(sp.csr_matrix(a.toarray() - 3.5 * np.eye(n)), b, method="cg",
                                                 preconditioner="ic0"),
    }
    with pytest.raises(error, match=match):
        calls[case]()


def test_example_solve_poisson(tmp_path):
    import runpy
    import sys as _sys

    script = __import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "solve_poisson.py"
    out = tmp_path / "poisson.png"
    argv = _sys.argv
    _sys.argv = [str(script), str(out)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        _sys.argv = argv
    assert out.stat().st_size > 1000


def test_substitution_overflow_is_reported():
    n = 60
    a = sp.csr_matrix(np.eye(n) * 1e-30 + np.diag(np.full(n - 1, 1e30), -1), dtype=np.float32)
    with pytest.raises(ConvergenceError, match="overflowed"):
        frontend.solve(a, np.ones(n, dtype=np.float32))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        s = frontend.Solve(a, on_failure="warn")
        s.execute(np.ones(n, dtype=np.float32))
    assert not s.info.converged


def test_kernels_with_64bit_indices_and_restart():
    from lowering.solve import KrylovSpec, TriangularSpec, compile_solver, krylov_module, triangular_module

    a = pyamg.gallery.poisson((6, 6), format="csr")
    n = a.shape[0]
    pos, crd = a.indptr.astype(np.int64), a.indices.astype(np.int64)
    b = np.random.default_rng(11).standard_normal(n)
    spec = KrylovSpec("gmres", "f64", 64, "none", restart=5)
    fn = compile_solver(krylov_module(spec)).function(spec.name)
    x = np.zeros(n)
    it, res = fn(pos, crd, a.data, b, x, 1e-10, 1000)
    assert it > 5 and res <= 1e-10
    assert rel_err(x, sla.spsolve(a.tocsc(), b)) < 1e-8
    low = sp.tril(a).tocsr()
    tspec = TriangularSpec("rows", True, False, "f32", 64, nrhs=2)
    tfn = compile_solver(triangular_module(tspec)).function(tspec.name)
    b2 = np.random.default_rng(12).standard_normal((n, 2)).astype(np.float32)
    x2 = np.empty_like(b2)
    tfn(low.indptr.astype(np.int64), low.indices.astype(np.int64), low.data.astype(np.float32),
        (1 / low.diagonal()).astype(np.float32), b2, x2)
    assert rel_err(x2, sla.spsolve_triangular(low, b2.astype(np.float64))) < 1e-5


# ----- threads ---------------------------------------------------------------------------------------------
def arrow(n: int, dtype=np.float64) -> sp.csr_matrix:
    """SPD with one full row and column (row 0 holds half the entries: splits must balance nonzeros)."""
    a = sp.lil_matrix((n, n))
    a[0, :] = 1.0
    a[:, 0] = 1.0
    a.setdiag(np.full(n, float(n)))
    return sp.csr_matrix(a, dtype=dtype)


def nonsymmetric(n: int) -> sp.csr_matrix:
    """Diagonally dominant, nonsymmetric, with a few long rows."""
    rng = np.random.default_rng(7)
    a = sp.random(n, n, density=4 / n, random_state=7, format="lil")
    a[n // 3, :] = rng.uniform(-0.01, 0.01, n)
    a = a.tocsr() + sp.diags(np.full(n, 4.0)) + sp.diags(np.full(n - 1, -1.0), 1)
    a.sort_indices()
    return sp.csr_matrix(a)


THREAD_SYSTEMS = {"poisson": lambda: pyamg.gallery.poisson((17, 19), format="csr"), "arrow": lambda: arrow(301),
                  "bar": lambda: example("bar"), "nonsymmetric": lambda: nonsymmetric(257)}


@pytest.mark.parametrize("method,system,pc", [("cg", "poisson", None), ("cg", "arrow", "jacobi"),
                                              ("cg", "bar", "ic0"), ("bicgstab", "nonsymmetric", None),
                                              ("bicgstab", "poisson", "jacobi"), ("gmres", "nonsymmetric", "ilu0"),
                                              ("gmres", "arrow", None)])
@pytest.mark.parametrize("threads", [2, 3])
def test_threads_agree_with_one_thread_and_scipy(method, system, pc, threads):
    a = THREAD_SYSTEMS[system]()
    n = a.shape[0]
    b = np.random.default_rng(5).standard_normal((n, 3))
    ref = sla.spsolve(a.tocsc(), b)
    runs = {}
    for t in (1, threads):
        s = frontend.Solve(a, method=method, preconditioner=pc, tol=1e-11, threads=t)
        runs[t] = s.execute(b)
        assert s.info.threads == t and s.info.converged and s.info.residual <= 1e-11
        assert rel_err(runs[t], ref) < 1e-7
    assert rel_err(runs[threads], runs[1]) < 1e-7
    again = frontend.Solve(a, method=method, preconditioner=pc, tol=1e-11, threads=threads).execute(b)
    assert np.array_equal(again, runs[threads])  # deterministic for a fixed thread count


@pytest.mark.parametrize("method", ["cg", "bicgstab", "gmres"])
def test_threads_float32(method):
    a = pyamg.gallery.poisson((23, 21), format="csr") if method == "cg" else nonsymmetric(300)
    a = sp.csr_matrix(a, dtype=np.float32)
    b = np.random.default_rng(6).standard_normal(a.shape[0]).astype(np.float32)
    ref = sla.spsolve(a.astype(np.float64).tocsc(), b.astype(np.float64))
    for t in (1, 2):
        s = frontend.Solve(a, method=method, tol=1e-5, threads=t)
        x = s.execute(b)
        assert x.dtype == np.float32 and s.info.threads == t and s.info.converged
        assert rel_err(x, ref) < 1e-3


@pytest.mark.parametrize("method", ["cg", "bicgstab", "gmres"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_threads_more_than_rows(method, n):
    off = np.full(n - 1, 0.5)
    a = sp.csr_matrix(np.diag(np.arange(1.0, n + 1)) + np.diag(off, 1) + np.diag(off, -1))
    b = np.arange(1.0, n + 1)
    x = frontend.solve(a, b, method=method, threads=8, tol=1e-12)
    assert rel_err(x, np.linalg.solve(a.toarray(), b)) < 1e-9
    assert frontend.solve(a, np.zeros(n), method=method, threads=8).tolist() == [0.0] * n


def test_threads_empty_rows_with_unit_diagonal_substitution():
    strict = triangular(40, True, np.float64, seed=9, empty_rows=5, diag=False)
    b = np.random.default_rng(9).standard_normal(40)
    x = frontend.solve(strict, b, lower=True, unit_diagonal=True, threads=2)
    assert rel_err(x, sla.spsolve_triangular((strict + sp.eye(40)).tocsr(), b, lower=True)) < 1e-12


def test_threads_auto_and_validation():
    from frontend.solvers._threads import AUTO_MIN_WORK, cpu_count
    from lowering.solve import openmp_available

    small = frontend.Solve(example("airfoil"), method="cg")
    assert small.info.threads == 1
    g = int(np.sqrt(AUTO_MIN_WORK / 6)) + 2  # 2-D Poisson: about 6 (entries + row) per row
    big = frontend.Solve(pyamg.gallery.poisson((g, g), format="csr"), method="cg")
    assert big.info.threads == (cpu_count() if openmp_available() else 1)
    assert frontend.Solve(pyamg.gallery.poisson((g, g), format="csr"), method="cg", threads=1).info.threads == 1
    assert frontend.Solve(np.tril(np.ones((3, 3))), threads=4).info.threads == 1  # substitution
    for bad, err in ((0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)):
        with pytest.raises(err, match="threads"):
            frontend.Solve(example("airfoil"), threads=bad)


CHILD = """
import sys, numpy as np, pyamg
import frontend
from mlir_bridge import cache_info
a = pyamg.gallery.poisson((9, 8), format="csr")
s = frontend.Solve(a, method="cg", threads=2, tol=1e-10)
x = s.execute(np.ones(72))
info = cache_info()
print(info.disk_hits, info.misses, s.info.converged, float(np.abs(a @ x - 1).max()))
"""


def test_threaded_module_loads_from_disk_cache_in_a_fresh_process(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["UST_MLIR_CACHE_DIR"] = str(tmp_path)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    outs = [subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300)
            for _ in range(2)]
    for out in outs:
        assert out.returncode == 0, out.stderr[-2000:]
    first, second = (o.stdout.split() for o in outs)
    assert first[1] != "0" and second[0] != "0" and second[1] == "0"  # built once, then loaded from disk
    assert first[2] == second[2] == "True" and float(second[3]) < 1e-8


def test_planned_substitution_repeated_calls():
    """A planned triangular solve called again and again (its prepared one-vector call reused) solves each new
    right-hand side: fresh vectors, one changed in place, a strided one, an (n, 1) column, several columns,
    then a float32 right-hand side of a float32 plan; each against scipy's spsolve_triangular."""
    rng = np.random.default_rng(7)
    d = np.tril(rng.standard_normal((9, 9)) * (rng.random((9, 9)) < 0.5)) + 4 * np.eye(9)
    low = sp.csr_array(d)
    solver = frontend.Solve(low, lower=True).plan()
    b = rng.standard_normal(9)
    for _ in range(3):
        np.testing.assert_allclose(solver.execute(b), sla.spsolve_triangular(low, b, lower=True), rtol=1e-12)
        b *= -2.5
    wide = rng.standard_normal((9, 3))
    np.testing.assert_allclose(solver.execute(wide[:, 1]), np.linalg.solve(d, wide[:, 1]), rtol=1e-12)
    np.testing.assert_allclose(solver.execute(wide[:, :1]), np.linalg.solve(d, wide[:, :1]), rtol=1e-12)
    np.testing.assert_allclose(solver.execute(wide), np.linalg.solve(d, wide), rtol=1e-12)
    np.testing.assert_allclose(solver.execute(b), np.linalg.solve(d, b), rtol=1e-12)
    s32 = frontend.Solve(sp.csr_array(d.astype(np.float32)), lower=True)
    for _ in range(2):
        got = s32.execute(b.astype(np.float32))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, np.linalg.solve(d, b), rtol=1e-4)
