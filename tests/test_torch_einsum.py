"""``torch.einsum`` with TorchUST operands: values and gradients against dense torch einsum."""
from __future__ import annotations

import pytest
import torch

from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

FORMATS = [pytest.param(None, id="CSR-torch"), pytest.param(N.COO, id="COO"), pytest.param(N.CSC, id="CSC"),
           pytest.param(N.BSR((2, 2)), id="BSR2x2"), pytest.param(N.ELL, id="ELL")]
DTYPES = [torch.float32, torch.float64]


def tol(dtype: torch.dtype) -> dict:
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}


def gates(b: int, n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """One-hot gates with a random weight per token; every third token has no expert (an empty row)."""
    g = torch.Generator().manual_seed(seed)
    out = torch.zeros(b, n, dtype=dtype)
    choice = torch.randint(0, n, (b,), generator=g)
    out[torch.arange(b), choice] = torch.rand(b, generator=g, dtype=dtype) + 0.1
    out[::3] = 0
    return out


def wrap(w: torch.Tensor, fmt) -> TorchUST:
    return TorchUST.from_torch(w.to_sparse_csr()) if fmt is None else TorchUST.from_torch(w, fmt)


def dense_grads(eq: str, dense: torch.Tensor, mat: torch.Tensor, sparse_first: bool, seed: torch.Tensor):
    d, m = dense.clone().requires_grad_(True), mat.clone().requires_grad_(True)
    y = torch.einsum(eq, m, d) if sparse_first else torch.einsum(eq, d, m)
    (y * seed).sum().backward()
    return y.detach(), d.grad, m.grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("b,n,d", [(7, 5, 3)])
def test_moe_combine_values_and_gradients(fmt, dtype, b, n, d):
    g = torch.Generator().manual_seed(1)
    e = torch.randn(b, n, d, generator=g, dtype=dtype)
    gm = gates(b, n, dtype)
    seed = torch.randn(b, d, generator=g, dtype=dtype)
    y_ref, de_ref, dg_ref = dense_grads("bnd,bn->bd", e, gm, False, seed)
    gu = wrap(gm, fmt)
    with torch.no_grad():
        torch.testing.assert_close(torch.einsum("bnd,bn->bd", e, gu), y_ref, **tol(dtype))
    gu.values().requires_grad_(True)
    e1 = e.clone().requires_grad_(True)
    y = torch.einsum("bnd,bn->bd", e1, gu)
    torch.testing.assert_close(y.detach(), y_ref, **tol(dtype))
    (y * seed).sum().backward()
    torch.testing.assert_close(e1.grad, de_ref, **tol(dtype))
    idx, dims = gu.entry_coordinates()       # the values' gradient is the dense one at the stored entries
    got = gu.values().grad.reshape(-1)[idx]
    torch.testing.assert_close(got, dg_ref[dims[0], dims[1]], **tol(dtype))


@pytest.mark.parametrize("fmt", FORMATS[:2])
def test_gradcheck_against_torch(fmt):
    dt = torch.float64
    g = torch.Generator().manual_seed(2)
    e = torch.randn(6, 4, 3, generator=g, dtype=dt, requires_grad=True)
    gu = wrap(gates(6, 4, dt, seed=3), fmt)
    vals = gu.values().detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda ev, gv: torch.einsum("bnd,bn->bd", ev, TorchUST.with_values(gu, gv)),
                                    (e, vals))


@pytest.mark.parametrize("eq,sparse_first", [("ij,jk->ik", True), ("ij,jk->ik", False), ("ij,j->i", True),
                                             ("ki,ij->kj", False), ("ij,jk->i", True), ("ij,jk", True)])
@pytest.mark.parametrize("dtype", [torch.float64])
def test_other_equations_non_square(eq, sparse_first, dtype):
    g = torch.Generator().manual_seed(4)
    a = torch.randn(5, 7, generator=g, dtype=dtype)
    a[a.abs() < 0.7] = 0
    a[1] = 0                                                    # an empty row
    lhs = eq.split("->")[0].split(",")
    dense_sub = lhs[1] if sparse_first else lhs[0]
    sparse_sub = lhs[0] if sparse_first else lhs[1]
    sizes = dict(zip(sparse_sub, a.shape)) | {c: 3 for c in dense_sub if c not in sparse_sub}
    dense = torch.randn([sizes[c] for c in dense_sub], generator=g, dtype=dtype)
    y_ref = torch.einsum(eq, a, dense) if sparse_first else torch.einsum(eq, dense, a)
    seed = torch.randn(y_ref.shape, generator=g, dtype=dtype)
    _, dd_ref, da_ref = dense_grads(eq, dense, a, sparse_first, seed)
    au = wrap(a, None)
    au.values().requires_grad_(True)
    d1 = dense.clone().requires_grad_(True)
    y = torch.einsum(eq, au, d1) if sparse_first else torch.einsum(eq, d1, au)
    torch.testing.assert_close(y.detach(), y_ref, **tol(dtype))
    (y * seed).sum().backward()
    torch.testing.assert_close(d1.grad, dd_ref, **tol(dtype))
    idx, dims = au.entry_coordinates()
    torch.testing.assert_close(au.values().grad.reshape(-1)[idx], da_ref[dims[0], dims[1]], **tol(dtype))


def test_one_by_one_f32():
    e = torch.randn(1, 1, 1, requires_grad=True)
    gu = wrap(torch.full((1, 1), 2.0), None)
    gu.values().requires_grad_(True)
    y = torch.einsum("bnd,bn->bd", e, gu)
    torch.testing.assert_close(y.detach(), 2.0 * e.detach().reshape(1, 1))
    y.sum().backward()
    torch.testing.assert_close(e.grad, torch.full((1, 1, 1), 2.0))
    torch.testing.assert_close(gu.values().grad, e.detach().reshape(1))


def test_empty_sparse_operand():
    e = torch.randn(4, 3, 2, dtype=torch.float64, requires_grad=True)
    gu = wrap(torch.zeros(4, 3, dtype=torch.float64), None)
    gu.values().requires_grad_(True)
    y = torch.einsum("bnd,bn->bd", e, gu)
    assert torch.equal(y, torch.zeros(4, 2, dtype=torch.float64))
    y.sum().backward()
    assert torch.equal(e.grad, torch.zeros_like(e))
    assert gu.values().grad.numel() == 0


def test_list_form_and_bad_input():
    a = wrap(torch.eye(3), None)
    x = torch.randn(3, 2)
    torch.testing.assert_close(torch.einsum("ij,jk->ik", [a, x]), x)
    with pytest.raises(ValueError, match="ellipsis"):
        torch.einsum("...j,jk->...k", a, x)
    with pytest.raises(ValueError, match="subscripts 'ijk' for a 2-D"):
        torch.einsum("ijk,jk->ik", a, x)
    with pytest.raises(ValueError, match="distinct letters"):
        torch.einsum("ii,ik->ik", a, x)


def test_sparse_result_with_gradients_is_refused():
    a = wrap(torch.eye(3, dtype=torch.float64), None)
    a.values().requires_grad_(True)
    x = torch.randn(3, 2, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="sparse result"):
        torch.einsum("ij,ik,jk->ij", a, x, x)


def test_planned_einsum_follows_new_operands_and_values():
    """Later calls reuse the plan cached on the TorchUST with the new dense operands swapped in by pointer."""
    dt = torch.float64
    gm = gates(9, 4, dt, seed=5)
    gu = wrap(gm, None)
    for seed in range(3):
        e = torch.randn(9, 4, 3, generator=torch.Generator().manual_seed(seed), dtype=dt)
        torch.testing.assert_close(torch.einsum("bnd,bn->bd", e, gu), torch.einsum("bnd,bn->bd", e, gm), **tol(dt))
    e_t = torch.randn(9, 3, 4, dtype=dt).transpose(1, 2)  # not contiguous: a contiguous copy is swapped in
    torch.testing.assert_close(torch.einsum("bnd,bn->bd", e_t, gu), torch.einsum("bnd,bn->bd", e_t, gm), **tol(dt))
    with torch.no_grad():
        gu.values().mul_(2)                                  # in-place update of the stored values
    torch.testing.assert_close(torch.einsum("bnd,bn->bd", e_t, gu), torch.einsum("bnd,bn->bd", e_t, 2 * gm),
                               **tol(dt))
    e5 = torch.randn(9, 4, 5, dtype=dt)                   # another shape: another plan
    torch.testing.assert_close(torch.einsum("bnd,bn->bd", e5, gu), torch.einsum("bnd,bn->bd", e5, 2 * gm),
                               **tol(dt))
    assert sum(1 for k in gu.plans() if k[0] == "einsum") == 2


def test_rebind_dense_checks_its_array():
    import numpy as np
    import scipy.sparse as sp

    from frontend.ops._cpu import CpuMatmul
    from frontend.ops._options import MatmulOptions
    from frontend.tensor import Tensor

    a = sp.random(6, 5, density=0.4, format="csr", random_state=0)
    x = np.random.default_rng(0).random((5, 3))
    mm = CpuMatmul.for_einsum("ij,jk->ik", [Tensor.from_package(a), x], MatmulOptions())
    mm.plan()
    x2 = np.random.default_rng(1).random((5, 3))
    mm.rebind_dense(1, x2)
    r = mm.execute()
    np.testing.assert_allclose(r.to_dense() if isinstance(r, Tensor) else np.asarray(r), a @ x2, rtol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        mm.rebind_dense(1, np.zeros((4, 3)))
    with pytest.raises(ValueError, match="dtype"):
        mm.rebind_dense(1, np.zeros((5, 3), np.float32))
    with pytest.raises(ValueError, match="dense array operand"):
        mm.rebind_dense(0, x2)
