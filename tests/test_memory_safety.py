"""Index buffers changed in place after validation: never frozen, never read out of bounds.

Bounds-safe kernels (the emitter, row sums, row softmax, the union merge) read the current buffers with every
position range and coordinate clamped; the other kernels check NumPy index buffers on every call (ValueError
naming the level); torch buffers are validated again when their version counter moved.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend
from frontend import Matmul, Tensor, thaw

DENSE = np.array([[1.0, 0, 2, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]])


def _csr() -> sps.csr_array:
    return sps.csr_array(DENSE)


def test_planned_scipy_matmul_follows_index_changes() -> None:
    a, x = _csr(), np.arange(1.0, 5.0)
    mm = Matmul(a, x)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), DENSE @ x)
    assert a.indices.flags.writeable and a.indptr.flags.writeable  # the caller's arrays are left as they are
    a.indices[0] = 1  # a valid change: computed with it by the planned and the one-shot call
    moved = DENSE.copy()
    moved[0, [0, 1]] = [0, 1]
    np.testing.assert_allclose(mm.execute(), moved @ x)
    np.testing.assert_allclose(frontend.matmul(a, x), moved @ x)
    a.indices[0] = 100  # out of range: the bounds-safe kernel clamps it (a wrong but finite answer)
    assert np.isfinite(mm.execute()).all() and np.isfinite(frontend.matmul(a, x)).all()


def test_kernels_that_are_not_bounds_safe_check_every_call() -> None:
    a = sps.coo_array(DENSE)  # COO x dense runs on the sparsifier's code: contents checked on every call
    x = np.arange(1.0, 5.0)
    mm = Matmul(a, x)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), DENSE @ x)
    a.col[0] = 100
    with pytest.raises(ValueError, match=r"coordinate 100"):
        mm.execute()
    with pytest.raises(ValueError, match="coordinate 100"):
        frontend.matmul(a, x)
    a.col[0] = 0
    np.testing.assert_allclose(mm.execute(), DENSE @ x)


def test_positions_changed_in_place() -> None:
    a, x = _csr(), np.ones(4)
    mm = Matmul(a, x)
    mm.plan()
    a.indptr[-1] = 50  # past the coordinates: clamped
    assert np.isfinite(mm.execute()).all()
    a.indptr[2] = -7  # negative and decreasing: clamped (unsigned minimum)
    assert np.isfinite(mm.execute()).all()
    assert np.isfinite(frontend.sum(a, 1)).all()


def test_values_change_freely() -> None:
    a, x = _csr(), np.ones(4)
    mm = Matmul(a, x)
    mm.plan()
    a.data *= 2  # values are read on every call
    np.testing.assert_allclose(mm.execute(), 2 * DENSE @ x)


def test_tensor_buffers_and_einsum() -> None:
    t = Tensor.from_dense(DENSE, "COO")
    x = np.ones(4)
    np.testing.assert_allclose(frontend.einsum("ij,j->i", t, x).to_dense(), DENSE @ x)  # Tensors in, Tensor out
    t.crd(1)[2] = -3
    with pytest.raises(ValueError, match="coordinate -3"):
        frontend.einsum("ij,j->i", t, x)
    with pytest.raises(ValueError, match="coordinate -3"):
        frontend.matmul(t, x)


def test_torch_buffers_changed_by_torch() -> None:
    torch = pytest.importorskip("torch")
    w = torch.tensor(DENSE).to_sparse_csr()
    x = torch.ones(4, dtype=torch.float64)
    mm = Matmul(w, x)
    mm.plan()
    torch.testing.assert_close(mm.execute(), torch.tensor(DENSE @ np.ones(4)))
    w.col_indices()[0] = 100  # torch's version counter moves: validated again
    with pytest.raises(ValueError, match="coordinate 100"):
        mm.execute()
    with pytest.raises(ValueError, match="coordinate 100"):
        frontend.matmul(w, x)
    w.col_indices()[0] = 0
    torch.testing.assert_close(mm.execute(), torch.tensor(DENSE @ np.ones(4)))


def test_torchust_weight_updated_by_optimizer() -> None:
    torch = pytest.importorskip("torch")
    from frontend.torch_interface import TorchUST

    w = TorchUST.from_torch(torch.tensor(DENSE, dtype=torch.float32), tensor_format="CSR")
    w.values().requires_grad_(True)
    opt = torch.optim.SGD([w.values()], lr=0.5)
    x = torch.ones(4, 2)
    for _ in range(2):
        opt.zero_grad()
        (w @ x).sum().backward()
        opt.step()  # values change in place: no revalidation needed, results follow
    want = torch.tensor(DENSE, dtype=torch.float32)
    want[want != 0] -= 2 * 0.5 * 2
    torch.testing.assert_close((w @ x).detach(), want @ x)
    crd = w.ust.crd(1)
    crd[0] = 9  # through a NumPy view: torch's version does not move, the bounds-safe kernel clamps it
    assert torch.isfinite((w @ x).detach()).all()
    with pytest.raises(ValueError, match="coordinate 9"):  # kernels that are not bounds-safe check every call
        w.ust.convert("CSC")  # the conversion kernels


def test_unchecked_opt_out() -> None:
    a, x = sps.coo_array(DENSE), np.ones(4)
    mm = Matmul(a, x, checked=False)
    mm.plan()
    a.col[0] = 1  # still valid: the caller's guarantee, not looked at again
    np.testing.assert_allclose(mm.execute(), np.bincount(a.row, a.data * x[a.col], minlength=4))
    b = sps.coo_array(DENSE)
    mm.reset_operands_unchecked(a=b)
    np.testing.assert_allclose(mm.execute(), DENSE @ x)


def test_thaw_is_a_no_op() -> None:
    a = _csr()
    frontend.matmul(a, np.ones(4))
    assert thaw(a.indices) is a.indices and a.indices.flags.writeable


def test_planned_solve_sees_index_changes() -> None:
    a = sps.csr_array(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]]))
    b = np.array([1.0, 2.0, 3.0])
    s = frontend.Solve(a)
    np.testing.assert_allclose(a @ s.execute(b), b, rtol=1e-6)
    a.indices[0] = 7
    with pytest.raises(ValueError, match="coordinate 7"):
        s.execute(b)
    a.indices[0] = 0
    np.testing.assert_allclose(a @ s.execute(b), b, rtol=1e-6)
    lower = sps.csr_array(np.array([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [1.0, 0.0, 4.0]]))
    s = frontend.Solve(lower)
    np.testing.assert_allclose(lower @ s.execute(b), b, rtol=1e-6)
    lower.indices[2] = 1  # a valid change of the pattern (row 2: columns 0, 2 -> 1, 2): analysed again
    np.testing.assert_allclose(lower @ s.execute(b), b, rtol=1e-6)
