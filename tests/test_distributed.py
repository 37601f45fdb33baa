"""frontend.distributed on a 2-worker LocalCluster (processes, one thread each; started once for the module):
partitioning, SpMV/SpMM/SpGEMM/SDDMM and solves against SciPy, worker loss, bad input."""
import time

import hypothesis  # noqa: F401 - imported before Dask's threads start (see the fixture's docstring)
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import frontend as F
from frontend import NamedFormats as N, Tensor, distributed as fd
from ops_util import kill_worker, poisson2d, restore_workers

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """One 2-worker LocalCluster for the module, closed at its end (no processes left). The hypothesis
    import above: pytest's plugin otherwise imports it (rewriting its modules with ``ast``) while Dask's
    threads may still be importing too, and CPython 3.11's AST conversion is not thread-safe ("AST
    constructor recursion depth mismatch")."""
    c = fd.start_local(2, threads_per_worker=1)
    yield c
    c.close()


def _matrix(m, n, density=0.25, seed=0, dtype=np.float64, empty_rows=()):
    a = sp.random_array((m, n), density=density, format="csr", random_state=seed, dtype=dtype)
    a = sp.lil_array(a)
    for r in empty_rows:
        a[r, :] = 0
    return sp.csr_array(a)


A = _matrix(40, 30, empty_rows=range(5, 12))


def test_partitions_metadata_and_gather(client):
    d = fd.from_package(A, partitions=2, client=client)
    assert (d.shape, d.nse, d.dtype, d.partitions, d.tensor_format) == ((40, 30), A.nnz, np.float64, 2, N.CSR)
    assert d.bounds[0] == 0 and d.bounds[-1] == 40
    per = [int(A.indptr[d.bounds[p + 1]] - A.indptr[d.bounds[p]]) for p in range(2)]
    assert abs(per[0] - per[1]) <= 2 * np.diff(A.indptr).max()  # balanced by stored entries
    text = repr(d)
    assert "DistributedTensor(shape=(40, 30)" in text and "partition 1: rows" in text and "CSR" in text
    back = d.to_package()
    assert isinstance(back, sp.csr_array) and (back != A).nnz == 0
    dense = fd.from_package(A.toarray(), partitions=2, client=client)
    assert isinstance(dense.to_package(), np.ndarray) and np.array_equal(dense.to_package(), A.toarray())
    t = Tensor.from_package(A).convert(tensor_format=N.DELTA(8))
    dt = fd.from_package(t, partitions=3, client=client)
    assert dt.tensor_format == N.DELTA(8) and isinstance(dt.to_package(), Tensor)
    assert np.array_equal(dt.to_package().to_dense(), A.toarray())


@pytest.mark.parametrize("fmt", [N.CSR, N.BSR((2, 2)), N.DELTA(8), N.DIAI], ids=["CSR", "BSR", "DELTA8", "DIAI"])
def test_spmv_spmm_formats(client, fmt):
    d = fd.from_package(A, partitions=2, client=client).convert(fmt)
    assert d.tensor_format == fmt
    x, b = np.linspace(-1, 1, 30), np.arange(90.0).reshape(30, 3)
    np.testing.assert_allclose(F.matmul(d, x), A @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.matmul(d, b), A @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.to_package().toarray(), A.toarray())
    if fmt == N.CSR:
        c = np.ones((40, 3))
        got = F.matmul(d, b, c, alpha=2.0, beta=0.5)
        assert got is c
        np.testing.assert_allclose(c, 2 * (A @ b) + 0.5, rtol=1e-12)


def test_shapes_dtypes_semiring(client):
    one = fd.from_package(sp.csr_array(np.array([[3.0]])), partitions=1, client=client)
    assert F.matmul(one, np.array([2.0])).tolist() == [6.0]
    a32 = _matrix(9, 4, density=0.5, seed=3, dtype=np.float32)
    d32 = fd.from_package(a32, partitions=2, client=client)
    y = F.matmul(d32, np.ones(4, dtype=np.float32))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, a32 @ np.ones(4, dtype=np.float32), rtol=1e-6)
    empty = fd.from_package(sp.csr_array((6, 5)), partitions=2, client=client)
    assert empty.nse == 0 and np.array_equal(F.matmul(empty, np.ones(5)), np.zeros(6))
    d = fd.from_package(A, partitions=2, client=client)
    b = np.arange(60.0).reshape(30, 2)
    ref = np.full((40, 2), np.inf)
    for i, j in zip(*A.nonzero()):
        ref[i] = np.minimum(ref[i], A[i, j] + b[j])
    np.testing.assert_allclose(F.matmul(d, b, semiring="min-plus"), ref)


def test_dask_array_operand(client):
    import dask.array as da
    d = fd.from_package(A, partitions=2, client=client)
    x = da.from_array(np.linspace(0, 1, 30), chunks=10)
    y = F.matmul(d, x)
    assert isinstance(y, da.Array)
    np.testing.assert_allclose(y.compute(), A @ np.linspace(0, 1, 30), rtol=1e-12)


def test_spgemm_gathered(client):
    s = _matrix(30, 17, density=0.2, seed=5)
    d = fd.from_package(A, partitions=2, client=client).convert(N.DELTA(8))
    p = F.matmul(d, s)
    assert isinstance(p, fd.DistributedTensor) and p.shape == (40, 17)
    np.testing.assert_allclose(p.to_package().toarray(), (A @ s).toarray(), rtol=1e-12)
    q = F.matmul(d, fd.from_package(s, partitions=2, client=client))
    np.testing.assert_allclose(q.to_scipy().toarray(), (A @ s).toarray(), rtol=1e-12)


def test_einsum_sddmm_and_reductions(client):
    d = fd.from_package(A, partitions=2, client=client)
    u, v = np.arange(80.0).reshape(40, 2), np.arange(60.0).reshape(2, 30) / 7
    s = F.einsum("ij,ik,kj->ij", d, u, v)
    assert isinstance(s, fd.DistributedTensor)
    np.testing.assert_allclose(s.to_package().toarray(), A.multiply(u @ v).toarray(), rtol=1e-12)
    x = np.linspace(1, 2, 30)
    np.testing.assert_allclose(F.einsum("ij,j->i", d, x), A @ x, rtol=1e-12)
    w = np.linspace(1, 2, 40)
    np.testing.assert_allclose(F.einsum("ij,i->j", d, w), A.T @ w, rtol=1e-12)


@pytest.mark.parametrize("method,pre", [("cg", "jacobi"), ("gmres", None), ("bicgstab", "jacobi")])
def test_solves_to_tolerance(client, method, pre):
    a = poisson2d(10)
    d = fd.from_package(a, partitions=2, client=client)
    b = np.linspace(1, 2, 100)
    x = F.solve(d, b, method=method, preconditioner=pre, tol=1e-9)
    np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-6)
    assert np.linalg.norm(a @ x - b) / np.linalg.norm(b) <= 1e-9 * (1 + 1e-6)
    info = d.solve_info
    assert info["method"] == method and info["iterations"] > 0
    # only the halo moves: the 10 entries next to the cut each way (at most 3 vectors exported to the client and
    # one combination sent on per step), never the 100-entry vector
    assert 0 < info["halo_bytes"] <= info["steps"] * 4 * 2 * 10 * 8 < info["steps"] * 2 * 100 * 8


def test_from_file_and_partitions(client, tmp_path):
    path = tmp_path / "a.mtx"
    Tensor.from_package(A).to_file(path)
    d = fd.from_file(path, partitions=2, client=client)
    assert d.shape == (40, 30) and d.nse == A.nnz
    np.testing.assert_allclose(F.matmul(d, np.ones(30)), A @ np.ones(30), rtol=1e-12)
    pieces = [client.submit(_matrix, 7, 30, 0.3, seed, pure=False) for seed in (1, 2)]
    whole = sp.vstack([_matrix(7, 30, 0.3, 1), _matrix(7, 30, 0.3, 2)])
    dp = fd.from_partitions(pieces, client=client, tensor_format=N.DELTA(8))
    assert dp.partitions == 2 and dp.bounds == (0, 7, 14) and dp.tensor_format == N.DELTA(8)
    np.testing.assert_allclose(F.matmul(dp, np.ones(30)), whole @ np.ones(30), rtol=1e-12)


def _kill(client, d, p):
    addr = d.workers()[p]
    kill_worker(client, addr)
    return addr


def test_worker_loss_rebuilds_partitions(client):
    a = poisson2d(8)
    d = fd.from_package(a, partitions=2, client=client)
    x = np.linspace(0, 1, 64)
    np.testing.assert_allclose(F.matmul(d, x), a @ x, rtol=1e-12)
    dead = _kill(client, d, 0)
    np.testing.assert_allclose(F.matmul(d, x), a @ x, rtol=1e-12)
    assert dead not in d.workers()
    restore_workers(client, 2)
    _kill(client, d, 1)
    xs = F.solve(d, x + 1, method="cg", tol=1e-10)
    np.testing.assert_allclose(a @ xs, x + 1, rtol=1e-8)
    restore_workers(client, 2)


def test_worker_loss_during_a_solve(client):
    import threading
    a = poisson2d(14)
    d = fd.from_package(a, partitions=2, client=client)
    b = np.linspace(1, 2, 196)
    fd.solve(d, b, method="gmres", restart=200, tol=1e-12, loop="client")  # warm: kernels compiled on both workers
    killed = []
    timer = threading.Timer(0.5, lambda: killed.append((_kill(client, d, 0), time.monotonic())))
    timer.start()
    x = fd.solve(d, b, method="gmres", restart=200, tol=1e-12, loop="client")  # ~3 driver steps an iteration
    done = time.monotonic()
    timer.join()
    np.testing.assert_allclose(a @ x, b, rtol=1e-9)
    assert killed and killed[0][1] < done, "the worker was killed after the solve ended"
    restore_workers(client, 2)


def test_bad_input(client, monkeypatch):
    d = fd.from_package(A, partitions=2, client=client)
    with pytest.raises(ValueError, match="shape mismatch"):
        F.matmul(d, np.ones(31))
    with pytest.raises(ValueError, match="shape mismatch"):
        F.matmul(d, sp.csr_array((29, 4)))
    with pytest.raises(ValueError, match="partitions=41 exceeds the matrix's 40 rows"):
        fd.from_package(A, partitions=41, client=client)
    with pytest.raises(ValueError, match="square"):
        F.solve(d, np.ones(40))
    with pytest.raises(TypeError, match="first operand"):
        F.matmul(np.ones((3, 40)), d)
    with pytest.raises(ValueError, match="method"):
        F.solve(fd.from_package(poisson2d(3), client=client), np.ones(9), method="triangular")
    with pytest.raises(ConnectionError, match="tcp://127.0.0.1:9"):
        fd.connect("tcp://127.0.0.1:9", timeout=1)
    monkeypatch.setenv(fd.SCHEDULER_ENV, "tcp://127.0.0.1:9")
    monkeypatch.setattr("frontend.distributed._client.current_client", lambda: None)
    with pytest.raises(ConnectionError, match="tcp://127.0.0.1:9"):
        fd.get_client(timeout=1)


def test_failures_name_partition_and_worker(client):
    singular = sp.csr_array(np.diag([1.0, 2.0, 0.0, 4.0]) + np.eye(4, k=1))
    d = fd.from_package(singular, partitions=2, client=client)
    with pytest.raises(fd.DistributedError, match=r"partition 1 on worker tcp://.*Jacobi needs a nonzero diagonal"):
        F.solve(d, np.ones(4), method="cg", preconditioner="jacobi")
    slow = client.submit(_slow_piece, 2.0, pure=False)
    with pytest.raises(fd.DistributedError, match="timed out after 0.5 s waiting for partition 0"):
        fd.from_partitions([slow], client=client, timeout=0.5)


def _slow_piece(seconds):
    time.sleep(seconds)
    return sp.csr_array(np.eye(3))
