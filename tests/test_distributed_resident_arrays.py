"""Resident operands of a planned distributed product (``plan.scatter``, ``plan(v)`` kept on the workers):
SpMV and SpMM against SciPy on 2 and 4 partitions, float32/float64/complex, chained products and power
iteration against NumPy, scalar operations, errors on a worker and a lost worker. One 2-worker LocalCluster
(processes) for the module."""
import hypothesis  # noqa: F401 - imported before Dask's threads start (see tests/test_distributed.py)
import numpy as np
import pytest
import scipy.sparse as sp

from frontend import distributed as fd
from ops_util import kill_worker, poisson2d, restore_workers

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    c = fd.start_local(2, threads_per_worker=1, processes=True)
    yield c
    c.close()


def _scattered(n, dtype, seed=0):
    """A square matrix with scattered columns (halos from every other partition), empty rows included."""
    a = sp.random_array((n, n), density=0.08, random_state=seed, dtype=np.float64) + sp.eye_array(n)
    a = sp.lil_array(a)
    a[3, :] = 0  # an empty row
    return sp.csr_array(a, dtype=dtype)


def _tol(dtype):
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


@pytest.mark.parametrize("parts", [2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["poisson", "scattered"])
def test_resident_spmv_and_spmm_match_scipy(client, parts, dtype, kind):
    a = poisson2d(7).astype(dtype) if kind == "poisson" else _scattered(60, dtype)
    n = a.shape[0]
    d = fd.from_package(a, partitions=parts, client=client)
    rng = np.random.default_rng(parts)
    for x in (rng.random(n).astype(dtype), rng.random((n, 3)).astype(dtype)):
        with d.plan_matmul(x) as plan:
            kept = x.copy()
            v = plan.scatter(x)
            x[:] = -1  # the rows were taken when scatter returned, though they are sent later
            x = kept
            assert isinstance(v, fd.ResidentArray) and v.shape == x.shape and v.dtype == dtype
            np.testing.assert_array_equal(v.numpy(), x)
            y = plan(v)
            assert y.shape == x.shape and y.dtype == np.result_type(a.dtype, x.dtype)
            np.testing.assert_allclose(y.numpy(), a @ x, rtol=_tol(dtype))
            z = plan(plan(y))  # chained: each product's halo comes from the other workers
            np.testing.assert_allclose(np.asarray(z), a @ (a @ (a @ x)), rtol=_tol(dtype) * 10)
            np.testing.assert_allclose(plan(v).numpy(), a @ x, rtol=_tol(dtype))  # v again, after others
            ax = a @ x  # normalized: the 2-norm of a vector, the Frobenius norm of a matrix
            np.testing.assert_allclose(plan(v).normalized().numpy(), ax / np.linalg.norm(ax), rtol=_tol(dtype) * 10)
            np.testing.assert_allclose(plan(x), a @ x, rtol=_tol(dtype))  # NumPy in, NumPy out, as before


@pytest.mark.parametrize("parts", [2, 4])
def test_power_iteration_on_the_workers(client, parts):
    a = poisson2d(10) + sp.diags_array(np.linspace(0, 1, 100))
    d = fd.from_package(a, partitions=parts, client=client)
    x0 = np.linspace(1, 2, 100)
    ref = x0
    for _ in range(20):
        ref = a @ ref
        ref /= np.linalg.norm(ref)
    with d.plan_matmul(x0) as plan:
        v = plan.scatter(x0)
        for _ in range(20):  # the norm summed among the workers: no round trip to the client
            v = plan(v).normalized()
        np.testing.assert_allclose(v.numpy(), ref, rtol=1e-12)
        w = plan.scatter(x0)
        for _ in range(20):  # the norm on the client: one round trip each
            w = plan(w)
            w = w / w.norm()
        np.testing.assert_allclose(w.numpy(), ref, rtol=1e-12)
        rayleigh = v.dot(plan(v))
        assert rayleigh == pytest.approx(ref @ (a @ ref), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_scalar_operations_stay_on_the_workers(client, dtype):
    a = _scattered(50, np.float64, seed=3)
    d = fd.from_package(a, partitions=3, client=client)
    rng = np.random.default_rng(1)
    x = rng.random(50).astype(dtype) + (1j * rng.random(50) if dtype == np.complex128 else 0)
    u = np.cos(np.arange(50)).astype(dtype)
    with d.plan_matmul(x) as plan:
        v, w = plan.scatter(x), plan.scatter(u)
        checks = [(v * 2.0, x * 2.0), (3 * v, 3 * x), (v / 4, x / 4), (-v, -x), (v + w, x + u), (v - w, x - u),
                  (v * np.float64(0.5), x * np.float64(0.5)), (np.float32(2) * v, np.float32(2) * x), (v * 2j, x * 2j)]
        for got, want in checks:
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got.numpy(), want, rtol=_tol(dtype))
        # products of combinations: their halo is formed from the exported arrays' entries
        y = plan(plan(v) * 0.5 - w)
        np.testing.assert_allclose(y.numpy(), a @ (0.5 * (a @ x) - u), rtol=_tol(dtype) * 10)
        assert v.norm() == pytest.approx(np.linalg.norm(x), rel=_tol(dtype))
        assert v.vdot(w) == pytest.approx(np.vdot(x, u), rel=_tol(dtype) * 10)
        assert v.dot(w) == pytest.approx(np.dot(x, u), rel=_tol(dtype) * 10)
        assert type(v.dot(w)) is np.result_type(x, u).type
        n = plan(v).normalized()
        np.testing.assert_allclose(n.numpy(), (a @ x) / np.linalg.norm(a @ x), rtol=_tol(dtype) * 10)
        assert "ResidentArray(shape=(50,)" in repr(v) and len(v) == 50 and v.ndim == 1


def test_one_partition_and_one_row(client):
    one = sp.csr_array(np.array([[3.0]]))
    d = fd.from_package(one, partitions=1, client=client)
    with d.plan_matmul(np.ones(1)) as plan:
        v = plan.scatter(np.array([2.0]))
        np.testing.assert_allclose(plan(plan(v)).numpy(), [18.0])
        assert plan(v).normalized().numpy().tolist() == [1.0]


def test_resident_operands_refuse_what_they_cannot_do(client):
    a = poisson2d(5)
    d = fd.from_package(a, partitions=2, client=client)
    x = np.ones(25)
    wide = fd.from_package(sp.csr_array(sp.random_array((20, 30), density=0.2, random_state=0)), partitions=2,
                           client=client)
    with wide.plan_matmul(np.ones(30)) as plan:
        with pytest.raises(ValueError, match="square DistributedTensor"):
            plan.scatter(np.ones(30))
        np.testing.assert_allclose(plan(np.ones(30)), wide.to_scipy() @ np.ones(30), rtol=1e-12)
    with d.plan_matmul(x, alpha=2.0) as plan, pytest.raises(ValueError, match="without alpha"):
        plan.scatter(x)
    with d.plan_matmul(x) as plan, d.plan_matmul(x) as other:
        v = plan.scatter(x)
        with pytest.raises(ValueError, match="shape"):
            plan.scatter(np.ones(24))
        with pytest.raises(TypeError, match="out="):
            plan(v, out=np.empty(25))
        with pytest.raises(ValueError, match="another plan"):
            other(v)
        with pytest.raises(TypeError):
            v * "2"
        with pytest.raises(TypeError):  # NumPy arrays are not resident: no silent gather
            np.ones(25) + v
        with pytest.raises(ValueError, match="vectors"):
            m = d.plan_matmul(np.ones((25, 2)))
            mv = m.scatter(np.ones((25, 2)))
            mv.dot(mv)
        m.close()
    with pytest.raises(fd.DistributedError, match="closed"):
        v.numpy()


def _break_a_block(key):
    """On a worker: the first block of its host of the plan ``key`` loses its kernel."""
    from frontend.distributed import _host
    for (k, _), host in list(_host._HOSTS.items()):
        if k == key:
            host.group.blocks[0].plan = None
    return 0


def test_an_error_on_a_worker_surfaces_at_the_next_synchronisation(client):
    a = poisson2d(8)
    d = fd.from_package(a, partitions=2, client=client)
    x = np.linspace(0, 1, 64)
    with d.plan_matmul(x) as plan:
        v = plan.scatter(x)
        np.testing.assert_allclose(plan(v).numpy(), a @ x, rtol=1e-12)
        worker = d.workers()[1]
        client.run(_break_a_block, plan._resident.hosts.key, workers=[worker])
        y = v
        for _ in range(3):  # asynchronous: nothing raises until the client waits
            y = plan(y)
        with pytest.raises(fd.DistributedError, match=r"partition 1 on worker .* failed: AttributeError") as err:
            y.norm()
        assert err.value.partition == 1 and err.value.worker == worker
        with pytest.raises(fd.DistributedError, match="gone"):
            plan(v)
        v = plan.scatter(x)  # new hosts
        np.testing.assert_allclose(plan(v).numpy(), a @ x, rtol=1e-12)


def test_resident_arrays_lost_with_a_worker(client):
    a = poisson2d(8)
    d = fd.from_package(a, partitions=2, client=client)
    x = np.linspace(0, 1, 64)
    plan = d.plan_matmul(x)
    v = plan.scatter(x)
    np.testing.assert_allclose(plan(v).numpy(), a @ x, rtol=1e-12)
    kill_worker(client, d.workers()[0])
    with pytest.raises(fd.WorkerLost, match="lost with it"):
        plan(v).numpy()
    np.testing.assert_allclose(plan(x), a @ x, rtol=1e-12)  # the NumPy path rebuilds and repeats
    restore_workers(client, 2)
    v = plan.scatter(x)
    np.testing.assert_allclose(plan(plan(v)).numpy(), a @ (a @ x), rtol=1e-12)
    plan.close()
