"""TorchUST: intercepted torch ops vs dense torch, autograd, refusal/fallback, aliasing."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from frontend.format import NamedFormats as N
from frontend.torch_interface import DenseFallbackWarning, TorchUST, allow_dense_fallback

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")


def emitter_available() -> bool:
    """Whether DELTA formats compile (ust-mlir's own emitter)."""
    w = torch.eye(2, dtype=torch.float64)
    try:
        torch.mv(TorchUST.from_torch(w, N.DELTA(2)), torch.ones(2, dtype=torch.float64))
    except NotImplementedError:
        return False
    return True


def _delta_param(bits: int):
    return pytest.param(N.DELTA(bits), id=f"DELTA{bits}", marks=pytest.mark.skipif(
        not emitter_available(), reason="DELTA needs ust-mlir's emitter, not available in this tree"))


FORMATS = [pytest.param(None, id="CSR-torch"), pytest.param(N.COO, id="COO"), pytest.param(N.CSC, id="CSC"),
           pytest.param(N.BSR((2, 2)), id="BSR2x2"), _delta_param(2)]
DTYPES = [torch.float32, torch.float64]


def weight(dtype: torch.dtype, m: int = 6, n: int = 8, seed: int = 0) -> torch.Tensor:
    """A sparse-ish matrix with an empty row and an empty column."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(m, n, generator=g, dtype=dtype)
    w[w.abs() < 0.8] = 0
    w[2] = 0
    w[:, n // 2] = 0
    return w


def tol(dtype: torch.dtype) -> dict:
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}


def close(a, b, dtype) -> None:
    a = a.dense() if isinstance(a, TorchUST) else a
    assert tuple(a.shape) == tuple(b.shape)
    torch.testing.assert_close(a, b, **tol(dtype))


def wrap(w: torch.Tensor, fmt) -> TorchUST:
    return TorchUST.from_torch(w.to_sparse_csr()) if fmt is None else TorchUST.from_torch(w, fmt)


# ----- construction, metadata, printing --------------------------------------------------------------------
def test_from_torch_zero_copy_metadata_and_round_trip():
    w = weight(torch.float64)
    csr = w.to_sparse_csr()
    u = TorchUST.from_torch(csr)
    assert isinstance(u, torch.Tensor) and u.shape == (6, 8) and u.dtype == torch.float64
    assert u.device.type == "cpu" and u.format_name == "CSR" and u.dim() == 2 and len(u) == 6
    assert u.values().data_ptr() == csr.values().data_ptr()  # zero-copy
    back = u.to_torch()
    assert back.layout == torch.sparse_csr
    torch.testing.assert_close(back.to_dense(), w)
    assert u.ust.nse == csr.values().numel()
    text = repr(u)
    assert "TorchUST(shape=(6, 8)" in text and "CSR" in text and "pos[1]" in text
    assert str(u) == text


@pytest.mark.parametrize("layout", ["strided", "coo", "csc", "bsr"])
def test_from_any_torch_layout(layout):
    w = weight(torch.float32)
    t = {"strided": w, "coo": w.to_sparse(), "csc": w.to_sparse_csc(), "bsr": w.to_sparse_bsr((2, 2))}[layout]
    u = TorchUST.from_torch(t)
    torch.testing.assert_close(u.dense(), w)
    torch.testing.assert_close(torch.mv(u, torch.ones(8)), w @ torch.ones(8))


def test_converted_formats_and_to_torch_of_formats_torch_lacks():
    w = weight(torch.float64)
    u = TorchUST.from_torch(w.to_sparse_csr(), N.BSR((2, 2)))
    assert u.format_name == "BSR2x2" and u.to_torch().layout == torch.sparse_bsr
    torch.testing.assert_close(u.to_torch().to_dense(), w)
    d = TorchUST.from_torch(w, N.DELTA(2))
    torch.testing.assert_close(d.to_torch(), w)  # no torch layout: dense copy
    assert TorchUST.from_torch(d) is d


def test_bad_input_is_refused():
    with pytest.raises(TypeError):
        TorchUST.from_torch([[1.0]])
    with pytest.raises(TypeError):
        TorchUST.from_torch(torch.eye(2), 3)
    assert TorchUST.from_torch(torch.eye(2), "CSR").format_name == "CSR"  # a format name is a format


# ----- intercepted ops vs dense torch ---------------------------------------------------------------------
# every format in one dtype, CSR and DELTA in both (each case compiles ~14 kernels)
PRODUCT_CASES = [pytest.param(f.values[0], d, id=f"{f.id}-{str(d)[6:]}", marks=f.marks) for f in FORMATS
                 for d in DTYPES
                 if f.id in ("CSR-torch", "DELTA2") or (d == torch.float64) == (f.id in ("COO", "BSR2x2"))]


@pytest.mark.parametrize("fmt,dtype", PRODUCT_CASES)
def test_products_match_dense(fmt, dtype):
    w = weight(dtype)
    u = wrap(w, fmt)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 3, generator=g, dtype=dtype)
    v = torch.randn(8, generator=g, dtype=dtype)
    r = torch.randn(6, generator=g, dtype=dtype)
    inp = torch.randn(6, 3, generator=g, dtype=dtype)
    close(torch.mm(u, x), w @ x, dtype)
    close(u.mm(x), w @ x, dtype)
    close(torch.mm(inp.t(), u), inp.t() @ w, dtype)
    close(torch.mv(u, v), w @ v, dtype)
    close(torch.addmm(inp, u, x, beta=0.5, alpha=-2.0), torch.addmm(inp, w, x, beta=0.5, alpha=-2.0), dtype)
    close(torch.addmm(inp, u, x, beta=0), w @ x, dtype)
    close(torch.addmv(r, u, v, beta=2.0, alpha=0.5), torch.addmv(r, w, v, beta=2.0, alpha=0.5), dtype)
    close(u @ v, w @ v, dtype)
    close(r @ u, r @ w, dtype)
    close(torch.matmul(u, x), w @ x, dtype)
    xb = torch.randn(2, 8, 3, generator=g, dtype=dtype)
    close(torch.matmul(u, xb), torch.matmul(w, xb), dtype)
    yb = torch.randn(2, 4, 6, generator=g, dtype=dtype)
    close(yb @ u, yb @ w, dtype)
    xl = torch.randn(2, 3, 8, generator=g, dtype=dtype)
    b = torch.randn(6, generator=g, dtype=dtype)
    close(F.linear(xl, u, b), F.linear(xl, w, b), dtype)
    close(F.linear(xl[0, 0], u), F.linear(xl[0, 0], w), dtype)


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_copies_and_scalar_ops(fmt):
    dtype = torch.float64
    w = weight(dtype)
    u = wrap(w, fmt)
    x = torch.randn(6, 3, dtype=dtype)
    close(u.t(), w.t(), dtype)
    close(torch.transpose(u, 0, 1), w.t(), dtype)
    close(u.transpose(-1, -2) @ x, w.t() @ x, dtype)
    assert u.transpose(1, 1) is u
    close(u.T, w.t(), dtype)
    close(u.mT @ x, w.t() @ x, dtype)
    close(u.t().t(), w, dtype)
    close(u.detach(), w, dtype)
    c = u.clone()
    assert c.values().data_ptr() != u.values().data_ptr()
    close(c, w, dtype)
    f = u.to(torch.float32)
    assert f.dtype == torch.float32 and isinstance(f, TorchUST)
    close(f, w.float(), torch.float32)
    assert u.to("cpu") is u
    close(u * 3, w * 3, dtype)
    close(2.5 * u, w * 2.5, dtype)
    close(u / 4, w / 4, dtype)
    close(-u, -w, dtype)
    close(torch.neg(u), -w, dtype)
    torch.testing.assert_close(u.sum(), w.sum())
    close(u.sum(0), w.sum(0), dtype)
    close(torch.sum(u, dim=1, keepdim=True), w.sum(1, keepdim=True), dtype)
    close(u.to_dense(), w, dtype)


def test_both_sparse_products_give_sparse_results():
    dtype = torch.float64
    a, b = weight(dtype, 6, 8), weight(dtype, 8, 5, seed=3)
    ua, ub = TorchUST.from_torch(a.to_sparse_csr()), TorchUST.from_torch(b.to_sparse_csr())
    p = torch.mm(ua, ub)
    assert isinstance(p, TorchUST) and p.shape == (6, 5)
    close(p, a @ b, dtype)
    close(ua @ ua.t(), a @ a.t(), dtype)
    close(torch.addmm(torch.ones(6, 5, dtype=dtype), ua, ub, alpha=2.0), 1 + 2 * (a @ b), dtype)


def test_dot_and_sparse_vectors():
    v = torch.tensor([0.0, 1.5, 0.0, -2.0, 0.0, 3.0], dtype=torch.float64)
    y = torch.arange(6, dtype=torch.float64)
    sv = TorchUST.from_torch(v.to_sparse())
    torch.testing.assert_close(torch.dot(sv, y), torch.dot(v, y))
    torch.testing.assert_close(y.dot(sv), torch.dot(v, y))


def test_batched_bmm_and_baddbmm():
    dtype = torch.float32
    g = torch.Generator().manual_seed(5)
    a = torch.randn(2, 4, 5, generator=g, dtype=dtype)
    a[:, torch.randn(4, 5, generator=g) < 0.3] = 0  # torch's batched CSR: same count per batch
    a[:, 2] = 0
    ua = TorchUST.from_torch(a.to_sparse_csr())
    y = torch.randn(2, 5, 3, generator=g, dtype=dtype)
    close(torch.bmm(ua, y), torch.bmm(a, y), dtype)
    close(ua @ y, a @ y, dtype)
    inp = torch.randn(2, 4, 3, generator=g, dtype=dtype)
    close(torch.baddbmm(inp, ua, y, beta=0.5, alpha=2.0), torch.baddbmm(inp, a, y, beta=0.5, alpha=2.0), dtype)


def test_empty_and_tiny_matrices():
    z = torch.zeros(3, 4, dtype=torch.float64)
    uz = TorchUST.from_torch(z.to_sparse_csr())
    close(torch.mm(uz, torch.ones(4, 2, dtype=torch.float64)), torch.zeros(3, 2, dtype=torch.float64),
          torch.float64)
    one = TorchUST.from_torch(torch.tensor([[2.0]], dtype=torch.float64).to_sparse_csr())
    close(one @ torch.tensor([3.0], dtype=torch.float64), torch.tensor([6.0], dtype=torch.float64), torch.float64)


def test_results_are_independent_tensors():
    w = weight(torch.float32)
    u = TorchUST.from_torch(w.to_sparse_csr())
    x = torch.randn(8, 3)
    first = torch.mm(u, x)
    saved = first.clone()
    second = torch.mm(u, 2 * x)
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, saved)
    torch.testing.assert_close(second, 2 * saved)


def test_planned_products_see_in_place_updates_and_new_storage():
    w = weight(torch.float64)
    u = TorchUST.from_torch(w.to_sparse_csr())
    x = torch.randn(8, 2, dtype=torch.float64)
    close(u @ x, w @ x, torch.float64)
    close(u @ x[:, :1], w @ x[:, :1], torch.float64)  # another shape: another plan
    with torch.no_grad():
        u.values().mul_(2)
    close(u @ x, 2 * w @ x, torch.float64)  # planned kernel reads the same memory
    u.values().data = u.values().data * 3  # new storage (as Module._apply does): the plan is rebuilt
    close(u @ x, 6 * w @ x, torch.float64)


# ----- refusal and dense fallback --------------------------------------------------------------------------
def test_unsupported_ops_are_refused_with_op_and_format():
    u = TorchUST.from_torch(weight(torch.float64), N.BSR((2, 2)))
    with pytest.raises(NotImplementedError, match=r"torch\.sin.*BSR2x2"):
        torch.sin(u)
    with pytest.raises(NotImplementedError, match="div"):
        u / torch.ones(6, 8, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="gelu"):
        F.gelu(u)


def test_dense_fallback_densifies_and_warns():
    w = weight(torch.float64)
    u = TorchUST.from_torch(w.to_sparse_csr())
    with allow_dense_fallback():
        with pytest.warns(DenseFallbackWarning, match="torch.sin"):
            out = torch.sin(u)
        torch.testing.assert_close(out, torch.sin(w))
        with pytest.warns(DenseFallbackWarning):
            torch.testing.assert_close(u / (w.abs() + 1), w / (w.abs() + 1))
    with pytest.raises(NotImplementedError):
        torch.sin(u)


# ----- autograd ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", [pytest.param(None, id="CSR"), pytest.param(N.COO, id="COO"),
                                 pytest.param(N.BSR((2, 2)), id="BSR2x2"), _delta_param(2)])
def test_gradcheck_linear_mm_matmul(fmt):
    w = weight(torch.float64, 6, 8)
    base = wrap(w, fmt)
    vals = base.values().detach().clone().requires_grad_(True)
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, dtype=torch.float64, requires_grad=True)

    def f(v, x, b):
        s = TorchUST.with_values(base, v)
        return (F.linear(x, s, b), torch.mm(s, x.t()), torch.matmul(x[:, :6], s), s.t() @ x[0, :6],
                torch.mv(s, x[1]))

    assert torch.autograd.gradcheck(f, (vals, x, b))


def test_weight_gradient_is_restricted_to_the_pattern():
    w = weight(torch.float64)
    u = TorchUST.from_torch(w.to_sparse_csr())
    u.requires_grad_()
    x = torch.randn(4, 8, dtype=torch.float64)
    F.linear(x, u).pow(2).sum().backward()
    wd = w.clone().requires_grad_(True)
    F.linear(x, wd).pow(2).sum().backward()
    mask = w != 0
    torch.testing.assert_close(u.values().grad, wd.grad[mask])


def test_sparse_fine_tuning_updates_only_stored_values():
    torch.manual_seed(0)
    w = weight(torch.float32, 4, 8)
    lin = torch.nn.Linear(8, 4)
    with torch.no_grad():
        lin.weight.copy_(w)
    from frontend.torch_interface import reformat_model
    reformat_model(lin, lambda wt: TorchUST.from_torch(wt.to_sparse_csr()))
    pattern = lin.weight.dense() != 0
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x, target = torch.randn(16, 8), torch.randn(16, 4)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(lin(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    dense = lin.weight.dense()
    assert torch.equal(dense != 0, pattern & (dense != 0)) and not dense[~pattern].any()


# ----- reused result arrays of planned products (frontend.torch_interface._products._Output) ----------------
@pytest.mark.parametrize("fmt", [pytest.param(None, id="CSR-torch"), pytest.param(N.COO, id="COO"),
                                 pytest.param(N.ELL, id="ELL")])
@pytest.mark.parametrize("dtype", DTYPES)
def test_planned_product_result_reuse_never_overwrites_a_held_result(fmt, dtype):
    w = weight(dtype, 7, 5)
    s = wrap(w, fmt)
    xs = [torch.randn(5, 3, dtype=dtype, generator=torch.Generator().manual_seed(k)) for k in range(6)]
    with torch.no_grad():
        held = s @ xs[0]                      # a held tensor
        view = (s @ xs[1])[2:]                # only a view of the result is held
        arr = (s @ xs[2]).numpy()             # only a NumPy view is held
        first = s @ xs[3]
        ptr = first.data_ptr()
        del first                             # nothing holds it: the next call may reuse its memory
        again = s @ xs[4]
        last = s @ xs[5]
    close(held, w @ xs[0], dtype)
    close(view, (w @ xs[1])[2:], dtype)
    close(torch.from_numpy(arr), w @ xs[2], dtype)
    close(again, w @ xs[4], dtype)
    close(last, w @ xs[5], dtype)
    assert again.data_ptr() == ptr and last.data_ptr() != ptr


@pytest.mark.parametrize("dtype", DTYPES)
def test_planned_product_result_reuse_under_autograd(dtype):
    w = weight(dtype, 6, 8)
    s = wrap(w, None)
    x = torch.randn(8, 4, dtype=dtype, requires_grad=True)
    xd = x.detach().clone().requires_grad_(True)
    loss = sum(((s @ (x * k)) ** 3).sum() for k in (1.0, 2.0, 3.0))  # pow saves each product
    loss_d = sum(((w @ (xd * k)) ** 3).sum() for k in (1.0, 2.0, 3.0))
    loss.backward()
    loss_d.backward()
    close(loss.detach(), loss_d.detach(), dtype)
    close(x.grad, xd.grad, dtype)
