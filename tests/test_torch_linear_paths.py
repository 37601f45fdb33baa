"""TorchUST weights in nn.Linear / F.linear / mm / matmul / addmm: every entry point takes the planned product
(batch 1 through the SpMV kernel, ``x @ W^T`` as ``(W @ x^T)^T``) and matches dense torch."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST, reformat_model

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

FORMATS = [pytest.param(None, id="CSR-torch"), pytest.param(N.DELTA(2), id="DELTA2"),
           pytest.param(N.BSR((2, 2)), id="BSR2x2")]  # BSR 5x9 is ragged: the plan pads its own operand copy
DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]


def weight(dtype: torch.dtype, m: int = 5, n: int = 9) -> torch.Tensor:
    """A non-square weight with empty rows (0 and 3) and an empty column."""
    g = torch.Generator().manual_seed(3)
    w = torch.randn(m, n, generator=g, dtype=dtype)
    w[w.abs() < 0.7] = 0
    w[0] = 0
    w[3] = 0
    w[:, 4] = 0
    return w


def wrap(w: torch.Tensor, fmt) -> TorchUST:
    return TorchUST.from_torch(w.to_sparse_csr()) if fmt is None else TorchUST.from_torch(w, fmt)


def close(a: torch.Tensor, b: torch.Tensor) -> None:
    assert tuple(a.shape) == tuple(b.shape)
    tol = 1e-5 if b.dtype == torch.float32 else 1e-12
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [1, 3])
def test_linear_entry_points_match_dense(fmt, dtype, batch):
    w = weight(dtype)
    u = wrap(w, fmt)
    g = torch.Generator().manual_seed(batch)
    x = torch.randn(batch, 9, generator=g, dtype=dtype)
    b = torch.randn(5, generator=g, dtype=dtype)
    xt = torch.randn(9, batch, generator=g, dtype=dtype)
    inp = torch.randn(batch, 5, generator=g, dtype=dtype)
    with torch.no_grad():
        for _ in range(2):  # the second call runs the cached plan (and may reuse the first result's array)
            close(F.linear(x, u, b), F.linear(x, w, b))
            close(F.linear(x, u), F.linear(x, w))
            close(F.linear(x[0], u, b), F.linear(x[0], w, b))  # 1-D input
            close(x @ u.t(), x @ w.t())
            close(torch.matmul(x, u.T), x @ w.t())
            close(torch.mm(u, xt), w @ xt)
            close(u @ xt, w @ xt)
            close(torch.addmm(b, x, u.t()), torch.addmm(b, x, w.t()))
            close(torch.addmm(inp, x, u.t(), beta=0.5, alpha=-2.0), torch.addmm(inp, x, w.t(), beta=0.5, alpha=-2.0))
            close(torch.addmm(b[:, None], u, xt), torch.addmm(b[:, None], w, xt))
            close(torch.addmv(b, u, x[0], alpha=3.0), torch.addmv(b, w, x[0], alpha=3.0))
    assert u.plans(), "the products ran through planned kernels"


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_one_runs_the_spmv_plan(dtype):
    w = weight(dtype)
    u = wrap(w, None)
    x = torch.randn(1, 9, dtype=dtype)
    with torch.no_grad():
        close(F.linear(x, u), F.linear(x, w))
        close(torch.mm(u, x.t()), w @ x.t())
    shapes = {key[2] for key in u.plans()}
    assert shapes == {(9,)}, f"batch 1 planned as {shapes}, expected one SpMV plan"


def test_addmm_beta_zero_ignores_nan_input():
    w = weight(torch.float64)
    u = wrap(w, None)
    x = torch.randn(2, 9, dtype=torch.float64)
    inp = torch.full((2, 5), float("nan"), dtype=torch.float64)
    close(torch.addmm(inp, x, u.t(), beta=0), x @ w.t())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("batch", [1, 4])
def test_mlp_forward_and_gradients_match_dense(fmt, batch):
    dtype = torch.float64
    dense = nn.Sequential(nn.Linear(9, 5), nn.ReLU(), nn.Linear(5, 3, bias=False)).to(dtype)
    with torch.no_grad():
        dense[0].weight.copy_(weight(dtype))
    sparse = nn.Sequential(nn.Linear(9, 5), nn.ReLU(), nn.Linear(5, 3, bias=False)).to(dtype)
    sparse.load_state_dict(dense.state_dict())
    reformat_model(sparse, lambda wt: wrap(wt.detach(), fmt) if tuple(wt.shape) == (5, 9) else None)
    u = sparse[0].weight
    assert isinstance(u, TorchUST)
    x = torch.randn(batch, 9, dtype=dtype)
    with torch.inference_mode():
        close(sparse(x), dense(x))
    with torch.no_grad():  # plans made in inference mode also run outside it
        close(sparse(x), dense(x))
    xs, xd = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    out = sparse(xs)
    ref = dense(xd)
    close(out.detach(), ref.detach())
    (out ** 2).sum().backward()
    (ref ** 2).sum().backward()
    close(xs.grad, xd.grad)
    close(sparse[0].bias.grad, dense[0].bias.grad)
    mask = dense[0].weight.detach() != 0
    close(TorchUST.with_values(u, u.values().grad).dense()[mask], dense[0].weight.grad[mask])


def test_addmm_with_an_input_that_does_not_broadcast_raises_torchs_error():
    u = wrap(weight(torch.float64), None)
    x = torch.randn(2, 9, dtype=torch.float64)
    with pytest.raises(RuntimeError):
        torch.addmm(torch.ones(3, 5, dtype=torch.float64), x, u.t())
