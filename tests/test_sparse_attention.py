"""sparse_attention: forward and gradients to q, k, v against masked dense attention (masked_fill(-inf))."""
from __future__ import annotations

import pytest
import torch

from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST
from frontend.torch_interface.attention import (
    bigbird,
    mask_from_rows,
    sliding_window,
    sparse_attention,
    topk_per_row,
)

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")


def dense_attention(q, k, v, mask: TorchUST, scale: float) -> torch.Tensor:
    allowed = mask.dense() != 0
    p = torch.softmax((q @ k.T * scale).masked_fill(~allowed, float("-inf")), 1)
    return torch.nan_to_num(p, nan=0.0) @ v  # a query without keys: 0 (as the sparse softmax)


def qkv(nq, nk, d, dv, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(n, c, generator=g, dtype=torch.float64).to(dtype).requires_grad_(True)
                 for n, c in ((nq, d), (nk, d), (nk, dv)))


def check(mask: TorchUST, q, k, v, tol):
    scale = 1.0 / q.shape[1] ** 0.5
    out = sparse_attention(q, k, v, mask)
    ref = dense_attention(q, k, v, mask, scale)
    torch.testing.assert_close(out, ref, **tol)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64).to(out.dtype)
    got = torch.autograd.grad(out, (q, k, v), g)
    exp = torch.autograd.grad(ref, (q, k, v), g)
    for a, b in zip(got, exp, strict=True):
        torch.testing.assert_close(a, b, **tol)


@pytest.mark.parametrize("fmt", ["CSR", "COO", "ELL", N.BSR((2, 2)), "DCSR"], ids=str)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fixed_patterns_match_masked_dense(fmt, dtype):
    tol = {} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-5}
    q, k, v = qkv(10, 10, 4, 3, dtype)
    check(bigbird(10, 1, 1, 2, seed=0, fmt=fmt), q, k, v, tol)
    check(sliding_window(10, 2, causal=True, fmt=fmt), q, k, v, tol)


@pytest.mark.parametrize(("nq", "nk"), [(6, 11), (1, 1), (12, 5)])
def test_dynamic_topk_non_square(nq, nk):
    q, k, v = qkv(nq, nk, 4, 2, torch.float64, seed=1)
    mask = topk_per_row(q.detach()[:, :2], k.detach()[:, :2], 3)  # low-rank score from 2 of 4 dims
    check(mask, q, k, v, {})


def test_empty_rows_give_zero_output_and_gradient():
    q, k, v = qkv(4, 5, 3, 2, torch.float64)
    mask = mask_from_rows([torch.tensor([0, 2]), torch.tensor([], dtype=torch.int64), torch.tensor([4]),
                           torch.tensor([], dtype=torch.int64)], (4, 5), dtype=torch.float64)
    out = sparse_attention(q, k, v, mask)
    assert torch.all(out[1] == 0) and torch.all(out[3] == 0)
    check(mask, q, k, v, {})


def test_gradcheck_and_training_step():
    q, k, v = qkv(5, 6, 3, 2, torch.float64, seed=2)
    mask = topk_per_row(q.detach(), k.detach(), 2, fmt="COO")
    assert torch.autograd.gradcheck(lambda a, b, c: sparse_attention(a, b, c, mask), (q, k, v))


def test_bad_input():
    q, k, v = qkv(4, 4, 3, 2, torch.float64)
    mask = sliding_window(4, 1, dtype=torch.float64)
    with pytest.raises(TypeError, match="mask must be a 2-D TorchUST"):
        sparse_attention(q, k, v, mask.dense())
    with pytest.raises(ValueError, match="shapes do not fit"):
        sparse_attention(q, k[:3], v, mask)
    with pytest.raises(TypeError, match="dense 2-D"):
        sparse_attention(q[0], k, v, mask)


# ----- the same chain written with torch functions on TorchUST (the elementwise handlers) ----------------------
def torch_chain(q, k, v, mask: TorchUST, scale: float) -> torch.Tensor:
    s = torch.sparse.sampled_addmm(mask, q, k.t(), beta=0.0, alpha=scale)
    return torch.mm(torch.sparse.softmax(s, 1), v)


@pytest.mark.parametrize("fmt", ["CSR", "COO", "ELL"], ids=str)
@pytest.mark.parametrize(("nq", "nk"), [(10, 10), (6, 9), (1, 1)])
def test_torch_function_chain_matches_masked_dense_and_fused(fmt, nq, nk):
    q, k, v = qkv(nq, nk, 4, 3, torch.float64, seed=4)
    mask = topk_per_row(q.detach()[:, :2], k.detach()[:, :2], 3, fmt=fmt)
    scale = 0.5
    out = torch_chain(q, k, v, mask, scale)
    ref = dense_attention(q, k, v, mask, scale)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(out, sparse_attention(q, k, v, mask, scale=scale))
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    for a, b in zip(torch.autograd.grad(out, (q, k, v), g), torch.autograd.grad(ref, (q, k, v), g), strict=True):
        torch.testing.assert_close(a, b)
