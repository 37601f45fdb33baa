"""Chunks of threaded kernels run on torch's OpenMP team (``frontend.ops._threads``) once torch's libgomp is
loaded: same results as numpy and as the own worker pool, errors re-raised, concurrent callers safe."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import frontend as F
from concurrency import run_on_threads
from frontend import NamedFormats as N, Tensor
from frontend.ops import _threads
from ops_util import dense, rand

torch = pytest.importorskip("torch")  # loads libgomp

FORMATS = {"CSR": N.CSR, "BSR": N.BSR((2, 2)), "DELTA": N.DELTA(4)}


@pytest.fixture(params=[True, False], ids=["openmp", "own-pool"])
def use_openmp(request):
    with _threads.on_openmp_team(request.param):
        yield request.param


def test_team_used_only_inside_the_context(monkeypatch):
    used = []
    real = _threads._run_on_openmp
    monkeypatch.setattr(_threads, "_run_on_openmp", lambda *a: (used.append(1), real(*a)))
    _threads.run_chunks([lambda: None] * 4)
    assert used == []
    with _threads.on_openmp_team():
        _threads.run_chunks([lambda: None] * 4)
        assert used == [1]
        with _threads.on_openmp_team(False):
            _threads.run_chunks([lambda: None] * 4)
        _threads.run_chunks([lambda: None] * 4)
    assert used == [1, 1]
    monkeypatch.setattr(_threads, "USE_OPENMP", False)
    with _threads.on_openmp_team():
        _threads.run_chunks([lambda: None] * 4)
    assert used == [1, 1]


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_bias", [False, True])
def test_torchust_linear_on_the_team_matches_torch(monkeypatch, dtype, with_bias):
    from frontend.torch_interface import TorchUST
    if torch.get_num_threads() < 2:
        pytest.skip("torch runs on one thread: products are not split")
    used = []
    real = _threads._run_on_openmp
    monkeypatch.setattr(_threads, "_run_on_openmp", lambda *a: (used.append(1), real(*a)))
    a = torch.from_numpy(rand((3000, 700), dtype=np.float64, seed=4)).to(dtype)
    a[::7] = 0  # empty rows
    w = TorchUST.from_torch(a.to_sparse_csr())
    bias = torch.randn(3000, dtype=dtype) if with_bias else None
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    with torch.no_grad():
        for batch in (1, 3, 32, 64):  # 64 x 700 >= TORCH_GRAIN_SIZE: the team; smaller: the own pool
            x = torch.randn(batch, 700, dtype=dtype)
            for _ in range(2):  # planned, then the cached plan
                got = torch.nn.functional.linear(x, w, bias)
                torch.testing.assert_close(got, torch.nn.functional.linear(x, a, bias), rtol=tol, atol=tol)
            assert len(used) == (2 if batch == 64 else 0)


def test_openmp_runtime_found_after_torch():
    assert _threads.openmp_parallel() is not None


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (9, 5), (0, 3)])
def test_threaded_products_match_numpy(use_openmp, name, dtype, shape):
    a = rand(shape, dtype=dtype, seed=5)  # row 1 empty where there is one
    t = Tensor.from_dense(a, FORMATS[name])
    rng = np.random.default_rng(2)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for b in (rng.random(shape[1]).astype(dtype), rng.random((shape[1], 3)).astype(dtype)):
        mm = F.Matmul(t, b, threads=3)
        for _ in range(2):  # planned, then re-executed
            np.testing.assert_allclose(dense(mm.execute()), a @ b, rtol=tol, atol=tol)


def test_every_chunk_runs_once_on_several_threads(use_openmp):
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def chunk(k: int):
        def call() -> None:
            with lock:
                seen.append((k, threading.get_ident()))
        return call

    _threads.run_chunks([chunk(k) for k in range(40)])
    assert sorted(k for k, _ in seen) == list(range(40))


def test_chunk_error_is_reraised(use_openmp):
    ran = []

    def bad() -> None:
        raise ValueError("chunk failed")

    with pytest.raises(ValueError, match="chunk failed"):
        _threads.run_chunks([lambda: ran.append(0), bad, lambda: ran.append(2)])
    _threads.run_chunks([lambda: ran.append(3), lambda: ran.append(4)])  # the team still works afterwards
    assert {3, 4} <= set(ran)


def test_concurrent_callers(use_openmp):
    a = rand((64, 40), dtype=np.float64, seed=7)
    x = np.random.default_rng(3).random((40, 4))
    t = Tensor.from_dense(a, N.CSR)

    got: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        got[k] = dense(F.Matmul(t, x, threads=2).execute())

    assert run_on_threads(work, 4) == []
    assert sorted(got) == [0, 1, 2, 3]
    for y in got.values():
        np.testing.assert_allclose(y, a @ x, rtol=1e-12)


def test_interleaved_with_torch_parallel_regions(use_openmp):
    a = rand((300, 200), dtype=np.float32, seed=9)
    t = Tensor.from_dense(a, N.CSR)
    x = torch.randn(200, 8)
    mm = F.Matmul(t, x.numpy(), threads=2)
    for _ in range(3):
        y = torch.relu(torch.from_numpy(np.asarray(dense(mm.execute()))))  # torch's team between our calls
        np.testing.assert_allclose(y.numpy(), np.maximum(a @ x.numpy(), 0), rtol=2e-5, atol=2e-5)
