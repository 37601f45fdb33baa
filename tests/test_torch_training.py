"""Training a TorchUST parameter in torch's terms: ``requires_grad_()``, ``.grad`` a TorchUST of the same
pattern, torch's optimizers stepping it directly (against the same steps on a dense masked parameter),
sparse x sparse products with gradients to both operands, and a schedule with a sparse activation in front
of an N:M weight with a bias."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from frontend.torch_interface import NM, ScalarThreshold, TorchUST, schedule

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

GEN = torch.Generator().manual_seed(7)
DENSE = torch.randn(6, 5, dtype=torch.float64, generator=GEN) * (torch.rand(6, 5, generator=GEN) > 0.45)
DENSE[3] = 0.0  # an empty row
MASK = DENSE != 0
X = torch.randn(5, 3, dtype=torch.float64, generator=GEN)

LAYOUTS = {"CSR": lambda d: d.to_sparse_csr(), "CSC": lambda d: d.to_sparse_csc(),
           "COO": lambda d: d.to_sparse_coo(), "BSR": lambda d: d.to_sparse_bsr((1, 1))}
FORMATS = [*LAYOUTS, "DELTA"]


def make(fmt: str, d: torch.Tensor = DENSE) -> TorchUST:
    return TorchUST.from_torch(d, "DELTA(8)") if fmt == "DELTA" else TorchUST.from_torch(LAYOUTS[fmt](d))


@pytest.mark.parametrize("fmt", FORMATS)
def test_requires_grad_and_grad_are_torch_s(fmt: str) -> None:
    w = make(fmt)
    assert not w.requires_grad and w.grad is None
    assert w.requires_grad_() is w
    assert w.requires_grad and w.is_leaf and w.values().requires_grad
    (w @ X).sum().backward()
    g = w.grad
    assert isinstance(g, TorchUST) and g.format_name == w.format_name and g.same_pattern(w)
    torch.testing.assert_close(g.values(), w.values().grad)
    expect = torch.ones(6, 3, dtype=torch.float64) @ X.t() * MASK  # torch's masked gradient of a sparse leaf
    torch.testing.assert_close(g.dense(), expect)
    if fmt in ("CSR", "COO"):  # torch.sparse itself gives the gradient on the leaf's pattern
        ref = LAYOUTS[fmt](DENSE).requires_grad_()
        torch.sparse.mm(ref, X).sum().backward()
        torch.testing.assert_close(g.dense(), ref.grad.to_dense())
    w.grad = None
    assert w.grad is None and w.values().grad is None
    w.grad = torch.zeros_like(w)
    assert torch.count_nonzero(w.values().grad) == 0
    w.requires_grad = False
    assert not w.values().requires_grad


def test_training_through_the_values_keeps_working() -> None:
    w = make("CSR")
    w.values().requires_grad_(True)
    opt = torch.optim.SGD([w.values()], lr=0.1)
    (w @ X).pow(2).sum().backward()
    before = w.dense()
    expect = before - 0.1 * (2 * (DENSE @ X) @ X.t()) * MASK
    opt.step()
    torch.testing.assert_close(w.dense(), expect)


def _steps(opt_factory, fmt: str, n: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` optimizer steps on a TorchUST parameter and on a dense parameter masked to its pattern."""
    w = make(fmt).requires_grad_()
    d = (DENSE.clone()).requires_grad_()
    ow, od = opt_factory([w]), opt_factory([d])
    for step in range(n):
        x = X * (step + 1)
        (w @ x).tanh().sum().backward()
        ow.step()
        ow.zero_grad()
        ((d * MASK) @ x).tanh().sum().backward()
        od.step()
        od.zero_grad()
    return w.dense(), d.detach() * MASK


OPTIMIZERS = {
    "SGD-momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "SGD-nesterov-wd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "Adam": lambda p: torch.optim.Adam(p, lr=0.05),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1),
    "Adam-amsgrad": lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_optimizer_steps_match_a_dense_masked_parameter(fmt: str, opt: str) -> None:
    if fmt == "COO" and opt.startswith("Adam"):
        with pytest.raises(RuntimeError, match="does not support sparse gradients"):
            _steps(OPTIMIZERS[opt], fmt)  # torch's own check: a COO gradient is_sparse, as torch.sparse's
        return
    got, want = _steps(OPTIMIZERS[opt], fmt)
    torch.testing.assert_close(got, want)


def test_optimizer_state_lives_on_the_stored_values() -> None:
    w = make("DELTA").requires_grad_()
    opt = torch.optim.Adam([w], lr=0.1)
    (w @ X).sum().backward()
    opt.step()
    state = opt.state[w]
    for key in ("exp_avg", "exp_avg_sq"):
        assert isinstance(state[key], TorchUST) and state[key].values().shape == w.values().shape
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and torch.count_nonzero(w.grad.values()) == 0
    (w @ X).sum().backward()
    full = torch.norm(w.grad.dense())
    assert torch.allclose(torch.nn.utils.clip_grad_norm_([w], 0.5), full)  # the per-tensor path: norm, mul_
    torch.testing.assert_close(torch.norm(w.grad.dense()), torch.tensor(0.5, dtype=torch.float64))


# ----- sparse x sparse -------------------------------------------------------------------------------------------
PAIRS = [("CSR", "NM(2, 4)"), ("COO", "CSR"), ("DELTA(8)", "DELTA(8)"), ("BSR((2, 2))", "CSC"), ("CSC", "COO")]


@pytest.mark.parametrize(("fa", "fw"), PAIRS)
def test_sparse_input_sparse_weight_bias_gradcheck(fa: str, fw: str) -> None:
    g = torch.Generator().manual_seed(11)
    a = torch.relu(torch.randn(3, 8, dtype=torch.float64, generator=g))
    a[1] = 0.0
    w = NM(2, 4)(torch.randn(4, 8, dtype=torch.float64, generator=g))
    bias = torch.randn(4, dtype=torch.float64, generator=g)
    ua, uw = TorchUST.from_torch(a, fa), TorchUST.from_torch(w, fw)
    ia, _ = ua.entries()
    iw, _ = uw.entries()

    def on(u: TorchUST, index: torch.Tensor, ev: torch.Tensor) -> TorchUST:
        flat = torch.zeros(u.values().numel(), dtype=ev.dtype).index_put((index,), ev)
        return TorchUST.with_values(u, flat.reshape(u.values().shape))

    def f(ea: torch.Tensor, ew: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.linear(on(ua, ia, ea), on(uw, iw, ew), b)

    args = (ua.values().detach().reshape(-1)[ia].clone().requires_grad_(), uw.values().detach().reshape(-1)[iw]
            .clone().requires_grad_(), bias.clone().requires_grad_())
    out = f(*args)
    assert out.layout == torch.strided
    torch.testing.assert_close(out, F.linear(a, w, bias))
    assert torch.autograd.gradcheck(f, args, fast_mode=True)
    # the sparse result of a @ b stays sparse, its values differentiable in both operands
    assert torch.autograd.gradcheck(lambda ea, ew: (on(ua, ia, ea) @ on(uw, iw, ew).t()).values(), args[:2],
                                    fast_mode=True)


def test_schedule_sparse_activation_before_an_nm_weight_with_bias() -> None:
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)).double()
    s = schedule(model)
    s["1"].sparsify(ScalarThreshold(0.0)).set_format("CSR")
    s["2.weight"].sparsify(NM(2, 4)).set_format("NM(2, 4)")
    s.apply()
    ref = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)).double()
    ref.load_state_dict({"0.weight": model[0].weight, "0.bias": model[0].bias, "2.weight": model[2].weight.dense(),
                         "2.bias": model[2].bias})
    x = torch.randn(5, 8, dtype=torch.float64)
    y = model(x)
    torch.testing.assert_close(y, ref(x))
    y.square().sum().backward()
    ref(x).square().sum().backward()
    torch.testing.assert_close(model[0].weight.grad, ref[0].weight.grad)
    torch.testing.assert_close(model[2].bias.grad, ref[2].bias.grad)
    w = model[2].weight
    torch.testing.assert_close(w.grad.dense(), ref[2].weight.grad * (w.dense() != 0))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = copy.deepcopy(w.dense())
    opt.step()
    assert not torch.equal(before, w.dense()) and torch.equal(w.dense() != 0, before != 0)
