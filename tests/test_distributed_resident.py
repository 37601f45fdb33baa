"""frontend.distributed with the Krylov loop on the workers (one long-running task per partition, halos and
dot products exchanged worker to worker) and planned products: iterates against the one-process solvers,
pipelined CG, a worker killed in the middle of a worker-side loop, power iteration against SciPy (the quick start
of docs/distributed.md runs as a script in tests/test_doc_examples.py). One 2-worker LocalCluster (processes)
for the module."""
import warnings
from pathlib import Path

import hypothesis  # noqa: F401 - imported before Dask's threads start (see tests/test_distributed.py)
import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import distributed as fd
from ops_util import kill_worker, poisson2d, restore_workers

pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    c = fd.start_local(2, threads_per_worker=1, processes=True)
    yield c
    c.close()


def _convection(k, c=0.6):
    """2-D convection-diffusion (upwind): nonsymmetric, diagonally dominant."""
    t = sp.diags_array([-1.0 - c, 2.0 + c, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    s = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(sp.eye_array(k), t) + sp.kron(s, sp.eye_array(k)))


def _one_process(a, b, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F.solve(a, b, on_failure="warn", **kw)


SPD = poisson2d(9) + sp.diags_array(np.linspace(0, 3, 81))
CASES = [("cg", "jacobi", SPD, 2), ("cg", None, poisson2d(9), 3), ("bicgstab", None, _convection(9), 2),
         ("bicgstab", "jacobi", _convection(9), 3), ("gmres", None, _convection(9), 3),
         ("gmres", "jacobi", _convection(9), 2)]


@pytest.mark.parametrize("method,pre,a,parts", CASES, ids=[f"{m}-{p}-{n}" for m, p, _, n in CASES])
def test_worker_loop_iterates_match_one_process(client, method, pre, a, parts):
    b = np.linspace(1, 2, a.shape[0])
    d = fd.from_package(a, partitions=parts, client=client)
    for its in (3, 8):  # the same iterate after a few iterations (to rounding), not only the converged answer
        ref = _one_process(a, b, method=method, preconditioner=pre, maxiter=its, tol=1e-14, restart=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fd.solve(d, b, method=method, preconditioner=pre, maxiter=its, tol=1e-14, restart=5,
                           on_failure="warn")
        assert d.solve_info["loop"] == "workers" and d.solve_info["iterations"] == its
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-11 * np.abs(ref).max())
    x0 = np.cos(np.arange(a.shape[0], dtype=float))
    ref = _one_process(a, b, method=method, preconditioner=pre, maxiter=4, tol=1e-14, restart=5, x0=x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fd.solve(d, b, method=method, preconditioner=pre, maxiter=4, tol=1e-14, restart=5, x0=x0,
                       on_failure="warn")
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-11 * np.abs(ref).max())
    x = F.solve(d, b, method=method, preconditioner=pre, tol=1e-10, restart=5)
    np.testing.assert_allclose(x, sp.linalg.spsolve(a.tocsc(), b), rtol=1e-7)
    assert d.solve_info["residual"] <= 1e-10 and d.solve_info["restarts"] == 0
    hist = d.solve_info["history"]
    assert hist[0][0] == 0 and d.solve_info["iterations"] - 1 <= hist[-1][0] <= d.solve_info["iterations"]
    assert all(r >= 0 for _, r in hist) and hist[0][1] == pytest.approx(np.linalg.norm(b))


def _poisson3d(k):
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    i = sp.eye_array(k)
    return sp.csr_array(sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t))


def _advection():
    """pyamg's 2-D upwind advection (nonsymmetric), with a little diffusion so every method converges."""
    gallery = pytest.importorskip("pyamg.gallery")
    a, _ = gallery.advection_2d((10, 10), theta=0.6)
    return sp.csr_array(a + 0.1 * poisson2d(9))


MATRICES = {"poisson2d": poisson2d(9), "poisson3d": _poisson3d(4), "pyamg-advection": None}
GRID = [(name, method, parts) for name in MATRICES for method in ("cg", "bicgstab", "gmres") for parts in (2, 4, 8)
        if not (method == "cg" and name == "pyamg-advection")]


@pytest.mark.parametrize("name,method,parts", GRID, ids=[f"{m}-{n}-{p}" for n, m, p in GRID])
def test_iterates_match_one_process_on_2_4_8_partitions(client, name, method, parts):
    a = MATRICES[name] if MATRICES[name] is not None else _advection()
    assert name != "pyamg-advection" or abs(a - a.T).max() > 0.1  # really nonsymmetric
    b = np.cos(np.arange(a.shape[0]) / 3.0) + 1
    d = fd.from_package(a, partitions=parts, client=client)
    for its in (2, 7):
        ref = _one_process(a, b, method=method, maxiter=its, tol=1e-14, restart=4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fd.solve(d, b, method=method, maxiter=its, tol=1e-14, restart=4, on_failure="warn")
        assert d.solve_info["iterations"] == its and d.solve_info["workers"] == 2
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-11 * np.abs(ref).max())
    x = fd.solve(d, b, method=method, tol=1e-10, restart=20)
    np.testing.assert_allclose(a @ x, b, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("parts", [2, 4, 8])
def test_pipelined_cg_reaches_the_tolerance_on_2_4_8_partitions(client, parts):
    a = _poisson3d(5)
    b = np.sin(np.arange(125.0))
    d = fd.from_package(a, partitions=parts, client=client)
    x = fd.solve(d, b, method="pipelined_cg", tol=1e-10)
    assert np.linalg.norm(a @ x - b) / np.linalg.norm(b) <= 1e-10 * (1 + 1e-6)
    np.testing.assert_allclose(x, sp.linalg.spsolve(a.tocsc(), b), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("parts,pre", [(2, "jacobi"), (3, None)])
def test_pipelined_cg(client, parts, pre):
    a = poisson2d(12) + sp.diags_array(np.linspace(0, 2, 144))
    b = np.cos(np.arange(144.0))
    d = fd.from_package(a, partitions=parts, client=client)
    x = F.solve(d, b, method="pipelined_cg", preconditioner=pre, tol=1e-10)
    assert np.linalg.norm(a @ x - b) / np.linalg.norm(b) <= 1e-10 * (1 + 1e-6)
    pipelined = d.solve_info
    F.solve(d, b, method="cg", preconditioner=pre, tol=1e-10)
    assert abs(pipelined["iterations"] - d.solve_info["iterations"]) <= 3  # the same Krylov method
    # one step (one reduction) an iteration, like CG, plus the start-up and the final residual check
    assert pipelined["steps"] <= pipelined["iterations"] + 8
    ref = _one_process(a, b, method="cg", preconditioner=pre, maxiter=6, tol=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        six = fd.solve(d, b, method="pipelined_cg", preconditioner=pre, maxiter=6, tol=1e-14, on_failure="warn")
    np.testing.assert_allclose(six, ref, rtol=1e-8, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(fd.solve(d, b, method="pipelined_cg", preconditioner=pre, tol=1e-10, loop="client"),
                               x, rtol=1e-9)


def test_client_loop_and_multiple_rhs(client):
    a = _convection(8)
    rhs = np.stack([np.ones(64), np.arange(64.0)], axis=1)
    d = fd.from_package(a, partitions=2, client=client)
    seen = []
    x = fd.solve(d, rhs, method="gmres", tol=1e-10, restart=5, checkpoint=2,
                 progress=lambda it, r: seen.append((it, r)))
    np.testing.assert_allclose(a @ x, rhs, rtol=1e-8, atol=1e-8)
    assert any(it >= 2 for it, _ in seen) and all(r > 0 for _, r in seen)  # the ranks' reports reached the client
    y = fd.solve(d, rhs[:, 1], method="bicgstab", tol=1e-10, loop="client")  # fewer client-driven steps
    assert d.solve_info["loop"] == "client"
    np.testing.assert_allclose(x[:, 1], y, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="loop must be"):
        fd.solve(d, rhs, loop="driver")
    with pytest.raises(ValueError, match="checkpoint must be"):
        fd.solve(d, rhs, checkpoint=-1)
    with pytest.raises(TypeError, match="progress must be a callable"):
        fd.solve(d, rhs, progress=3)


def test_worker_killed_in_the_worker_side_loop(client):
    n = 1000  # 1-D Poisson: CG needs about n iterations, seconds of worker-side loop
    a = sp.csr_array(sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(n, n)))
    b = np.sin(np.arange(n) / 7.0)
    d = fd.from_package(a, partitions=2, client=client)
    victim = d.workers()[1]
    killed = []

    def progress(it, residual):  # called on the client as the ranks report: kill once, mid-loop, when the
        if not killed and it >= 20:  # checkpoint of iteration 10 is complete (every rank put it before going on)
            killed.append(it)
            kill_worker(client, victim)
    x = fd.solve(d, b, method="cg", tol=1e-9, maxiter=20 * n, checkpoint=10, progress=progress)
    info = d.solve_info
    assert killed and info["restarts"] == 1, info
    assert info["restarted_from"][0] >= 10 and info["restarted_from"][0] % 10 == 0  # a checkpoint, not x0
    assert info["iterations"] > info["restarted_from"][0]
    np.testing.assert_allclose(a @ x, b, rtol=1e-7, atol=1e-7)
    assert victim not in d.workers()
    restore_workers(client, 2)


@pytest.mark.parametrize("parts", [2, 3])
def test_planned_product_power_iteration(client, parts):
    a = poisson2d(10) + sp.diags_array(np.linspace(0, 1, 100))
    d = fd.from_package(a, partitions=parts, client=client)
    x0 = np.linspace(1, 2, 100)
    with d.plan_matmul(x0) as plan:
        x = ref = x0
        for _ in range(40):
            x = plan(x)
            x /= np.linalg.norm(x)
            ref = a @ ref
            ref /= np.linalg.norm(ref)
        np.testing.assert_allclose(x, ref, rtol=1e-12)
        assert plan.calls == 40
        out = np.empty(100)
        assert plan(x0, out=out) is out
        np.testing.assert_allclose(out, a @ x0, rtol=1e-12)
        with pytest.raises(ValueError, match="shape"):
            plan(np.ones(99))
    block = np.arange(300.0).reshape(100, 3) / 7
    spmm = d.plan_matmul(block, alpha=2.0)
    np.testing.assert_allclose(spmm(block), 2 * (a @ block), rtol=1e-12)
    f32 = fd.from_package(sp.csr_array(a, dtype=np.float32), partitions=parts, client=client)
    y = f32.plan_matmul(x0.astype(np.float32))(x0.astype(np.float32))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, a @ x0, rtol=1e-5)
    with pytest.raises(ValueError, match="100 rows"):
        d.plan_matmul(np.ones(7))
    with pytest.raises(ValueError, match="not beta"):
        d.plan_matmul(x0, beta=1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_planned_product_optimized_blocks(client, dtype):
    n = 600
    band = sp.diags_array([np.ones(n - 2), -np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)], offsets=[-2, -1, 0, 1],
                          format="csr", dtype=dtype)
    d = fd.from_package(band, partitions=3, client=client)
    x = np.linspace(1, 2, n).astype(dtype)
    with d.plan_matmul(x, optimize=True) as plan, d.plan_matmul(x) as default:
        assert plan.storages() == ["DIAI"] * 3 and default.storages() == ["CSR"] * 3
        for _ in range(3):
            np.testing.assert_allclose(plan(x), band @ x, rtol=1e-5 if dtype == np.float32 else 1e-13)
            x = (band @ x) / np.abs(band @ x).max()
    scattered = sp.random_array((n, n), density=0.01, format="csr", random_state=1, dtype=dtype)
    with fd.from_package(scattered, partitions=2, client=client).plan_matmul(x, optimize=True) as plan:
        assert "DIAI" not in plan.storages()
        np.testing.assert_allclose(plan(x), scattered @ x, rtol=1e-5 if dtype == np.float32 else 1e-13)


def _inline_limit(limit):
    """On a worker: the stored entries up to which a planned block multiplies on the event loop."""
    from frontend.distributed import _planned
    _planned.INLINE_NSE = limit


@pytest.mark.parametrize("on_loop", [True, False], ids=["event-loop", "actor-thread"])
def test_planned_product_operand_layouts(client, on_loop):
    """The operand's rows travel as a slice (blocks whose columns are a contiguous range) or gathered
    (scattered columns), from C- or Fortran-ordered operands of the plan's dtype or another, complex too;
    blocks multiplied as the call arrives or in the worker's actor thread."""
    from frontend.distributed._worker import INLINE_NSE
    rng = np.random.default_rng(3)
    scattered = sp.csr_array(sp.random_array((70, 50), density=0.08, random_state=rng)
                             + 1j * sp.random_array((70, 50), density=0.05, random_state=rng))
    cases = [(poisson2d(7), np.float64), (scattered, np.complex128), (sp.csr_array(np.ones((1, 1))), np.float64)]
    if not on_loop:
        client.run(_inline_limit, 0)
    try:
        for a, dtype in cases:
            d = fd.from_package(a, partitions=min(3, a.shape[0]), client=client)
            x = (rng.random((a.shape[1], 3)) + (1j * rng.random((a.shape[1], 3)) if dtype == np.complex128 else 0))
            with d.plan_matmul(x) as spmm, d.plan_matmul(x[:, 0]) as spmv:
                np.testing.assert_allclose(spmm(x), a @ x, rtol=1e-13)
                np.testing.assert_allclose(spmm(np.asfortranarray(x)), a @ x, rtol=1e-13)
                np.testing.assert_allclose(spmv(x[:, 1]), a @ x[:, 1], rtol=1e-13)
                ints = np.arange(a.shape[1]) % 5  # converted to the plan's dtype
                np.testing.assert_allclose(spmv(ints), a @ ints.astype(dtype), rtol=1e-13)
    finally:
        client.run(_inline_limit, INLINE_NSE)


def test_planned_product_survives_a_lost_worker(client):
    a = poisson2d(8)
    d = fd.from_package(a, partitions=2, client=client)
    x = np.linspace(0, 1, 64)
    plan = d.plan_matmul(x)
    np.testing.assert_allclose(plan(x), a @ x, rtol=1e-12)
    kill_worker(client, d.workers()[0])
    np.testing.assert_allclose(plan(x), a @ x, rtol=1e-12)
    restore_workers(client, 2)


def test_quick_start_with_worker_processes_prints_no_errors(tmp_path):
    """The quick start of docs/distributed.md as a guarded script (worker processes, closed at exit): it runs,
    and neither the solve nor Dask's shutdown prints a traceback or an error."""
    import os
    import re
    import subprocess
    import sys
    block = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "distributed.md").read_text(), re.S).group(1)
    script = tmp_path / "quick_start.py"
    script.write_text("def main():\n" + "".join(f"    {line}\n" for line in block.splitlines())
                      + "\n\nif __name__ == '__main__':\n    main()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "True", "(1000,)"]
    bad = [line for line in proc.stderr.splitlines() if re.search(r"Traceback|Error|ERROR|cannot schedule", line)]
    assert not bad, proc.stderr[-3000:]
