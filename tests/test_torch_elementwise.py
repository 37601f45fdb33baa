"""TorchUST elementwise ops, softmax, sum(dim) and sampled_addmm: values against dense torch, gradients by
gradcheck (float64) and against dense autograd, on CSR, COO, CSC, BSR (and DIA/DELTA for values), never
through the dense fallback."""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from frontend.format import NamedFormats as N
from frontend.torch_interface import DenseFallbackWarning, TorchUST, allow_dense_fallback

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

GRAD_FORMATS = {"CSR": N.CSR, "COO": N.COO, "BSR": N.BSR((2, 3))}
VALUE_FORMATS = {**GRAD_FORMATS, "CSC": N.CSC, "DIA": N.DIAI, "DELTA8": N.DELTA(8)}


def matrix(shape=(6, 9), seed=0, dtype=torch.float64, blocks=False) -> torch.Tensor:
    """Random entries with an empty row; ``blocks``: whole 2x3 blocks (a BSR without padding, for gradcheck:
    a padding zero perturbed by gradcheck would become an entry)."""
    g = torch.Generator().manual_seed(seed)
    m, n = shape
    if blocks:
        keep = torch.rand((m + 1) // 2, (n + 2) // 3, generator=g) < 0.5
        mask = keep.repeat_interleave(2, 0).repeat_interleave(3, 1)[:m, :n]
        vals = torch.rand(m, n, generator=g, dtype=torch.float64) + 0.5
        vals = vals * torch.where(torch.rand(m, n, generator=g) < 0.5, -1.0, 1.0)
    else:
        mask = torch.rand(m, n, generator=g) < 0.4
        vals = torch.randn(m, n, generator=g, dtype=torch.float64)
    d = (vals * mask).to(dtype)
    if m > 2 and not blocks:
        d[1] = 0
    return d


def ust(d: torch.Tensor, name: str) -> TorchUST:
    return TorchUST.from_torch(d, VALUE_FORMATS[name])


def dense(x) -> torch.Tensor:
    return x.to_dense() if isinstance(x, TorchUST) else x


def masked_softmax(d: torch.Tensor, dim: int, log: bool = False, mask: torch.Tensor | None = None) -> torch.Tensor:
    mask = d != 0 if mask is None else mask
    z = d.masked_fill(~mask, -float("inf"))
    out = (torch.log_softmax if log else torch.softmax)(z, dim)
    return torch.where(mask, out, torch.zeros_like(out))


CASES = ([(name, dtype, (6, 9)) for name in VALUE_FORMATS for dtype in (torch.float32, torch.float64)]
         + [(name, torch.float64, shape) for name in ("CSR", "BSR") for shape in ((1, 1), (3, 7), (4, 3))])


@pytest.mark.parametrize(("name", "dtype", "shape"), CASES)
def test_values_match_dense(name, dtype, shape):
    a, b = matrix(shape, 1, dtype), matrix(shape, 2, dtype)
    q = torch.randn(shape, dtype=dtype)
    A, B = ust(a, name), ust(b, name)
    close = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {}

    def check(got, want):
        torch.testing.assert_close(dense(got), want, **close)

    check(A + B, a + b)
    check(A - B, a - b)
    check(A * B, a * b)
    check(torch.add(A, B, alpha=2), a + 2 * b)
    check(A + q, a + q)
    check(q - A, q - a)
    check(A - q, a - q)
    check(A + 1.5, a + 1.5)
    check(A * q, a * q)
    check(q[:, :1] * A, a * q[:, :1])  # row scaling by a broadcast column
    check(A * 3, a * 3)
    check(torch.relu(A), torch.relu(a))
    check(F.relu(A), torch.relu(a))
    check(abs(A), a.abs())
    check(-A, -a)
    check(torch.tanh(A), torch.tanh(a))
    nz = a != 0
    check(torch.sigmoid(A), torch.where(nz, a.sigmoid(), torch.zeros_like(a)))  # stored entries only
    check(A.exp(), torch.where(nz, a.exp(), torch.zeros_like(a)))
    for dim in (0, 1, -1):
        check(torch.sparse.softmax(A, dim), masked_softmax(a, dim))
        check(torch.sparse.log_softmax(A, dim), masked_softmax(a, dim, log=True))
    check(A.sum(1), a.sum(1))
    check(torch.sum(A, 0, keepdim=True), a.sum(0, keepdim=True))
    x, y = torch.randn(shape[0], 4, dtype=dtype), torch.randn(4, shape[1], dtype=dtype)
    check(torch.sparse.sampled_addmm(A, x, y, beta=0.5, alpha=2.0), (0.5 * a + 2.0 * (x @ y)) * nz)


@pytest.mark.parametrize("name", ["CSR", "COO", "BSR"])
def test_result_structures(name):
    a, b = matrix(seed=3), matrix(seed=4)
    A, B = ust(a, name), ust(b, name)
    s, p = A + B, A * B
    assert isinstance(s, TorchUST) and isinstance(p, TorchUST)
    assert s.format_name == A.format_name  # same formats in, that format out
    nnz = lambda t: int((t.dense() != 0).sum())  # noqa: E731
    assert nnz(s) <= int(((a != 0) | (b != 0)).sum()) and nnz(p) <= int(((a != 0) & (b != 0)).sum())
    assert isinstance(A * torch.randn(6, 9, dtype=torch.float64), TorchUST)  # sampled: the sparse pattern
    assert not isinstance(A + torch.randn(6, 9, dtype=torch.float64), TorchUST)  # dense
    mixed = ust(a, "CSR") + ust(b, "COO")
    assert mixed.format_name == "CSR"
    torch.testing.assert_close(mixed.dense(), a + b)


def test_empty_matrix():
    a = torch.zeros(0, 4, dtype=torch.float64)
    A = TorchUST.from_torch(a, N.CSR)
    torch.testing.assert_close(dense(A + A), a)
    torch.testing.assert_close(dense(torch.sparse.softmax(A, 1)), a)
    torch.testing.assert_close(A.sum(0), a.sum(0))


def _grad_inputs(name: str, seed: int):
    d = matrix((6, 9), seed, torch.float64, blocks=(name == "BSR"))
    A = TorchUST.from_torch(d, GRAD_FORMATS[name])
    return A, A.values().detach().clone().requires_grad_(True)


def _on(t: TorchUST, v: torch.Tensor) -> TorchUST:
    return t.with_values(t, v)


UNARY = {"relu": torch.relu, "abs": torch.abs, "neg": torch.neg, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
         "exp": torch.exp}


@pytest.mark.parametrize("name", GRAD_FORMATS)
def test_gradcheck(name):
    A, va = _grad_inputs(name, 5)
    B, vb = _grad_inputs(name, 6)
    q = torch.randn(6, 9, dtype=torch.float64, requires_grad=True)
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randn(4, 9, dtype=torch.float64, requires_grad=True)
    checks = {
        "add": (lambda a, b: (_on(A, a) + _on(B, b)).values(), (va, vb)),
        "sub": (lambda a, b: (_on(A, a) - _on(B, b)).values(), (va, vb)),
        "mul": (lambda a, b: (_on(A, a) * _on(B, b)).values(), (va, vb)),
        "add_dense": (lambda a, d: _on(A, a) + d, (va, q)),
        "rsub_dense": (lambda a, d: d - _on(A, a), (va, q)),
        "mul_dense": (lambda a, d: (_on(A, a) * d).values(), (va, q)),
        "mul_scalar": (lambda a: (2.5 * _on(A, a)).values(), (va,)),
        "softmax": (lambda a: torch.sparse.softmax(_on(A, a), 1).values(), (va,)),
        "log_softmax": (lambda a: torch.sparse.log_softmax(_on(A, a), 0).values(), (va,)),
        "sum1": (lambda a: _on(A, a).sum(1), (va,)),
        "sum0": (lambda a: torch.sum(_on(A, a), 0), (va,)),
        "sampled_addmm": (lambda a, m1, m2: torch.sparse.sampled_addmm(_on(A, a), m1, m2, beta=0.7, alpha=1.3).values(),
                          (va, x, y)),
    }
    checks.update({op: ((lambda a, f=f: f(_on(A, a)).values()), (va,)) for op, f in UNARY.items()})
    for op, (fn, inputs) in checks.items():
        assert torch.autograd.gradcheck(fn, inputs), op


@pytest.mark.parametrize("name", GRAD_FORMATS)
def test_gradients_match_dense_autograd(name):
    """Loss through a chain of the handlers: gradients of the stored values and the dense factors equal
    dense torch's, restricted to the stored entries."""
    a = matrix((6, 9), 7, torch.float64, blocks=(name == "BSR"))
    b = matrix((6, 9), 8, torch.float64, blocks=(name == "BSR"))
    x0, y0, q0 = torch.randn(6, 4, dtype=torch.float64), torch.randn(4, 9, dtype=torch.float64), torch.randn(6, 9,
                                                                                                           dtype=torch.float64)
    A, B = TorchUST.from_torch(a, GRAD_FORMATS[name]), TorchUST.from_torch(b, GRAD_FORMATS[name])
    A.values().requires_grad_(True)
    B.values().requires_grad_(True)
    x, y, q = (t.clone().requires_grad_(True) for t in (x0, y0, q0))
    s = torch.sparse.sampled_addmm(torch.sigmoid(A) * B + A, x, y)
    loss = (torch.sparse.softmax(torch.tanh(s) * q, 1).to_dense() * q).sum() + (A - B).sum(0).pow(2).sum()
    loss.backward()

    ad, bd = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
    xd, yd, qd = (t.clone().requires_grad_(True) for t in (x0, y0, q0))
    ma, mb = a != 0, b != 0
    sd = (torch.sigmoid(ad) * bd * (ma & mb) + ad + xd @ yd) * ma  # s has A's pattern
    sm = masked_softmax(torch.tanh(sd) * qd, 1, mask=ma)
    loss_d = (sm * qd).sum() + (ad - bd).sum(0).pow(2).sum()
    loss_d.backward()
    torch.testing.assert_close(loss, loss_d)
    for t, ref, d in ((A, ad, a), (B, bd, b)):
        got = t.with_values(t, t.values().grad).dense()
        torch.testing.assert_close(got, ref.grad * (d != 0))
    for got, ref in ((x, xd), (y, yd), (q, qd)):
        torch.testing.assert_close(got.grad, ref.grad)


def test_no_dense_fallback():
    """Every handler runs on its own: with the fallback allowed and its warning an error, nothing densifies."""
    a, b = matrix(seed=9), matrix(seed=10)
    A, B = ust(a, "CSR"), ust(b, "BSR")
    A.values().requires_grad_(True)
    q = torch.randn(6, 9, dtype=torch.float64)
    with allow_dense_fallback(), warnings.catch_warnings():
        warnings.simplefilter("error", DenseFallbackWarning)
        outs = [A + B, A - B, A * B, A + q, q - A, A * q, 2 * A, torch.relu(A), abs(A), -A, torch.tanh(A),
                torch.sigmoid(A), torch.exp(A), torch.sparse.softmax(A, 1), torch.sparse.log_softmax(A, 0),
                A.sum(1), torch.sparse.sampled_addmm(A, torch.randn(6, 2, dtype=torch.float64),
                                                     torch.randn(2, 9, dtype=torch.float64))]
        total = sum(dense(o).sum() for o in outs)
        total.backward()
    assert A.values().grad is not None and torch.isfinite(A.values().grad).all()


def test_bad_shapes():
    A = ust(matrix(seed=1), "CSR")
    B = ust(matrix((6, 8), 2), "COO")
    with pytest.raises(ValueError, match=r"\(6, 9\).*\(6, 8\)"):
        A + B
    with pytest.raises(ValueError, match=r"\(6, 9\).*\(6, 8\)"):
        A * B
    with pytest.raises(ValueError, match="sampled_addmm"):
        torch.sparse.sampled_addmm(A, torch.randn(6, 3, dtype=torch.float64), torch.randn(2, 9, dtype=torch.float64))
    with pytest.raises(NotImplementedError, match="in-place"):
        F.relu(A, inplace=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_planned_product_ragged_blocks(dtype):
    """A BSR whose shape is not a multiple of its blocks: the planned product pads its dense operand (a
    copy), so each call must pass the new operand (it once read the plan-time copy: garbage)."""
    a = matrix((3, 7), 11, dtype)
    A = TorchUST.from_torch(a, N.BSR((2, 3)))
    for seed in range(3):
        v = torch.randn(7, generator=torch.Generator().manual_seed(seed), dtype=dtype)
        torch.testing.assert_close(torch.mv(A, v), a @ v)
        torch.testing.assert_close(A @ v[:, None].repeat(1, 2), a @ v[:, None].repeat(1, 2))
