"""A new operand each call (a mask per training step, a matrix per request) must not make the process grow: every
memo kept per buffer set (view cache, validation, operand statistics, schedules, converted copies, prepared calls)
lets go of its operands once they die. Each case runs 2,000 calls with a fresh operand after a warm-up and checks the
resident memory grew by less than 2 MiB."""
from __future__ import annotations

import gc
import os

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import Tensor

torch = pytest.importorskip("torch")

CALLS = 2000
WARM = 100
LIMIT = 2 << 20
N = 64

A = sp.random(N, N, density=0.1, format="csr", random_state=0, dtype=np.float64)
A.sort_indices()
X = np.random.default_rng(0).random((N, 4))
XT = torch.from_numpy(X)
T = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)), torch.from_numpy(A.indices.astype(np.int64)),
                            torch.from_numpy(A.data.copy()), (N, N))
C = T.to_sparse_coo().coalesce()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _numpy_tensor() -> Tensor:
    """A CSR Tensor over fresh NumPy buffers (no package object behind it)."""
    return Tensor.from_buffers("CSR", (N, N), pos=[None, A.indptr.copy()], crd=[None, A.indices.copy()],
                               values=A.data.copy())


def _torch_ust_backward() -> None:
    from frontend.torch_interface import TorchUST

    u = TorchUST.from_torch(T.clone())
    u.requires_grad_()
    (u @ XT).sum().backward()


def _pydata_matmul() -> None:
    sparse = pytest.importorskip("sparse")
    F.matmul(sparse.COO.from_scipy_sparse(A), X)


CASES = {  # one per package and operation family
    "torch CSR matmul": lambda: F.matmul(T.clone(), XT),
    "torch COO matmul": lambda: F.matmul(C.clone(), XT),
    "torch CSR softmax": lambda: F.softmax(T.clone()),
    "TorchUST product with backward": _torch_ust_backward,
    "scipy CSR matmul": lambda: F.matmul(A.copy(), X),
    "scipy CSR SpGEMM": lambda: F.matmul(A.copy(), A),
    "scipy CSR add": lambda: F.add(A.copy(), A),
    "scipy CSR sum": lambda: F.sum(A.copy(), 0),
    "numpy Tensor matmul": lambda: F.matmul(_numpy_tensor(), X),
    "pydata COO matmul": _pydata_matmul,
}


@pytest.mark.parametrize("name", list(CASES))
def test_fresh_operands_do_not_grow_the_process(name):
    step = CASES[name]
    for _ in range(WARM):
        step()
    gc.collect()
    before = _rss()
    for _ in range(CALLS):
        step()
    gc.collect()
    grown = _rss() - before
    assert grown < LIMIT, f"{name}: the process grew by {grown / 1024:.0f} KiB over {CALLS} calls"
