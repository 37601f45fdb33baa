"""Multi-threaded row-range kernels (``matmul(..., threads=n)``) against numpy and the one-thread path."""
from __future__ import annotations

import numpy as np
import pytest

import frontend as F
from concurrency import run_on_threads
from frontend import NamedFormats as N, Tensor
from frontend.ops._threads import chunk_bounds, resolve_threads
from lowering.pipelines import Pipeline
from ops_util import dense, rand

FORMATS = {"CSR": N.CSR, "BSR": N.BSR((2, 2)), "DELTA": N.DELTA(4), "DIAI": N.DIAI}
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def stored(a: np.ndarray, name: str) -> Tensor:
    return Tensor.from_dense(a, FORMATS[name])


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (4, 9)])
def test_spmv_spmm_match_numpy_and_one_thread(name, dtype, shape):
    a = rand(shape, dtype=dtype, seed=3)  # row 1 empty where there is one
    t = stored(a, name)
    rng = np.random.default_rng(1)
    for b in (rng.random(shape[1]).astype(dtype), rng.random((shape[1], 3)).astype(dtype)):
        mm = F.Matmul(t, b, threads=3)  # 7 and 4 rows: not divisible by 3; 1 row: one chunk
        assert mm.path == "emitter-rows"
        got = dense(mm.execute())
        ref = a.astype(np.float64) @ b.astype(np.float64)
        one = dense(F.matmul(t, b))
        assert got.dtype == dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])
        np.testing.assert_allclose(got, one, rtol=TOL[dtype], atol=TOL[dtype])
        np.testing.assert_allclose(dense(F.matmul(t, b, threads=2)), ref, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("name", ["CSR", "DIAI"])
def test_many_rows_and_tiles(name):
    """More rows than a DIA row tile (2048), chunks cutting through tiles; 'auto' splits large work."""
    n = 5003
    rng = np.random.default_rng(0)
    a = np.zeros((n, n))
    for k in (-2, 0, 3):
        a += np.diag(rng.random(n - abs(k)) + 0.5, k)
    a[10] = 0
    t = stored(a, name)
    x = rng.random((n, 2))
    for threads in (2, 5, "auto"):
        np.testing.assert_allclose(dense(F.matmul(t, x, threads=threads)), a @ x, rtol=1e-12)


def test_alpha_beta_semiring_epilog_and_batched():
    a = rand((6, 5), seed=2)
    t = stored(a, "CSR")
    b = np.random.default_rng(3).random((5, 4))
    c = np.ones((6, 4))
    out = F.matmul(t, b, c, alpha=2.0, beta=0.5, threads=2)
    assert out is c
    np.testing.assert_allclose(c, 2.0 * a @ b + 0.5, rtol=1e-12)
    c2 = np.ones((6, 4))
    F.matmul(t, b, c2, threads=2)
    np.testing.assert_allclose(c2, a @ b + 1, rtol=1e-12)
    got = F.matmul(t, b, semiring="min-plus", threads=2)
    np.testing.assert_array_equal(dense(got), dense(F.matmul(t, b, semiring="min-plus")))
    np.testing.assert_allclose(dense(F.matmul(t, b, epilog=lambda v: v * 3, threads=2)), 3 * (a @ b), rtol=1e-12)
    batch = rand((3, 4, 5), seed=4)
    tb = Tensor.from_dense(batch, N.BatchedCSR)
    mm = F.Matmul(tb, np.ones((3, 5, 2)), threads=2)
    assert mm.path == "emitter-rows"
    np.testing.assert_allclose(dense(mm.execute()), batch @ np.ones((3, 5, 2)), rtol=1e-12)


def test_not_row_parallel_ignores_threads():
    a = rand((6, 5), seed=5)
    csc = Tensor.from_dense(a, N.CSC)  # outer level over columns: not row-parallel
    assert F.Matmul(csc, np.ones(5), threads=2).path == "sparsifier"
    np.testing.assert_allclose(dense(F.matmul(csc, np.ones(5), threads=2)), a @ np.ones(5), rtol=1e-12)
    csr = stored(a, "CSR")
    assert F.Matmul(csr, stored(a.T.copy(), "CSR"), threads=2).path == "kernel:spgemm-csr"  # sparse result
    assert F.Matmul(csr, np.ones(5)).path == "emitter-rows"  # default: the row-range kernel on one chunk
    assert F.Matmul(csr, np.ones(5), pipeline=Pipeline()).path == "sparsifier"  # a custom pipeline: MLIR's


def test_threads_argument_checked():
    t = stored(rand((3, 3)), "CSR")
    for bad, err in ((0, ValueError), ("many", ValueError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(err, match="threads"):
            F.matmul(t, np.ones(3), threads=bad)
    assert resolve_threads(None) == 1 and resolve_threads(4) == 4
    assert chunk_bounds(7, 3) == [0, 2, 4, 7]


def test_concurrent_calls_are_thread_safe():
    a = rand((300, 200), density=0.1, seed=6)
    t = stored(a, "CSR")
    mm = F.Matmul(t, np.ones(200), threads=2).plan()  # compile once

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.random((200, 3))
            np.testing.assert_allclose(dense(F.matmul(t, x, threads=2)), a @ x, rtol=1e-12)

    errors = run_on_threads(worker, 4)
    assert not errors, errors[0]
    np.testing.assert_allclose(dense(mm.execute()), a @ np.ones(200), rtol=1e-12)
