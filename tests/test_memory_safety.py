"""No out-of-bounds reads after index buffers change in place after validation."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend
from frontend import Matmul, Tensor, thaw

DENSE = np.array([[1.0, 0, 2, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]])


def _csr() -> sps.csr_array:
    return sps.csr_array(DENSE)


def test_planned_scipy_matmul_sees_index_changes() -> None:
    a, x = _csr(), np.arange(1.0, 5.0)
    mm = Matmul(a, x)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), DENSE @ x)
    with pytest.raises(ValueError, match="read-only"):
        a.indices[0] = 100  # validated index buffers are frozen
    thaw(a.indices)[0] = 100  # made writable on purpose: the next call validates again
    with pytest.raises(ValueError, match=r"level 1 \(j : compressed\): coordinate 100"):
        mm.execute()
    with pytest.raises(ValueError, match="coordinate 100"):
        frontend.matmul(a, x)  # the one-shot path (view cache) too
    thaw(a.indices)[0] = 1  # a valid change: computed with it
    moved = DENSE.copy()
    moved[0, [0, 1]] = [0, 1]
    np.testing.assert_allclose(mm.execute(), moved @ x)
    np.testing.assert_allclose(frontend.matmul(a, x), moved @ x)
    assert not a.indices.flags.writeable  # frozen again after the new validation


def test_positions_changed_in_place() -> None:
    a, x = _csr(), np.ones(4)
    mm = Matmul(a, x)
    mm.plan()
    thaw(a.indptr)[-1] = 50
    with pytest.raises(ValueError, match="pos ends at 50"):
        mm.execute()


def test_values_change_freely() -> None:
    a, x = _csr(), np.ones(4)
    mm = Matmul(a, x)
    mm.plan()
    a.data *= 2  # values are never frozen: in-place scaling is seen without a new validation
    np.testing.assert_allclose(mm.execute(), 2 * DENSE @ x)


def test_tensor_buffers_and_einsum() -> None:
    t = Tensor.from_dense(DENSE, "CSR")
    x = np.ones(4)
    np.testing.assert_allclose(frontend.einsum("ij,j->i", t, x).to_dense(), DENSE @ x)  # Tensors in, Tensor out
    thaw(t.crd(1))[2] = -3
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
    w.col_indices()[0] = 100  # torch's version counter moves
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
    thaw(crd)[0] = 9
    with pytest.raises(ValueError, match="coordinate 9"):
        w @ x


def test_unchecked_opt_out() -> None:
    a, x = _csr(), np.ones(4)
    mm = Matmul(a, x, checked=False)
    mm.plan()
    thaw(a.indices)[0] = 1  # still valid: the caller's guarantee
    mm.execute()
    assert a.indices.flags.writeable  # not looked at again (a checked plan would validate and freeze)
    checked = Matmul(a, x)
    checked.plan()
    assert not a.indices.flags.writeable
    b = _csr()
    mm.reset_operands_unchecked(a=b)
    thaw(b.indices)
    mm.execute()
    assert b.indices.flags.writeable


def test_planned_solve_sees_index_changes() -> None:
    a = sps.csr_array(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]]))
    b = np.array([1.0, 2.0, 3.0])
    s = frontend.Solve(a)
    np.testing.assert_allclose(a @ s.execute(b), b, rtol=1e-6)
    thaw(a.indices)[0] = 7
    with pytest.raises(ValueError, match="coordinate 7"):
        s.execute(b)
    thaw(a.indices)[0] = 0
    np.testing.assert_allclose(a @ s.execute(b), b, rtol=1e-6)
