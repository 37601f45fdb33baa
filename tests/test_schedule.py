"""schedule(model): weights, activations and gradients against dense references; gradual pruning."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from frontend.format import NamedFormats as N, TensorFormat
from frontend.torch_interface import (
    NM,
    KeepAll,
    RandomFraction,
    ScalarFraction,
    ScalarThreshold,
    TorchUST,
    schedule,
)
from frontend.torch_interface._schedule_state import cubic_progress

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")


def mlp(seed: int = 0, dtype=torch.float64, sizes=(8, 16, 4)) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2])).to(dtype)


def x_of(rows: int, cols: int = 8, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)


def dense_forward(m: nn.Sequential, x: torch.Tensor, w0=None, act=None) -> torch.Tensor:
    """The reference: the same model with weight 0 replaced by ``w0`` and ``act`` applied to the ReLU output."""
    w = m[0].weight if w0 is None else w0
    h = torch.relu(torch.nn.functional.linear(x, w, m[0].bias))
    if act is not None:
        h = act(h)
    return m[2](h)


# ----- parameters ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("fmt", "sp"), [
    ("CSR", ScalarFraction(0.6)), ("COO", NM(2, 4)), ("BSR((2, 2))", ScalarThreshold(0.2)),
    ("(i, j) -> (i : dense, j : compressed)", NM(1, 4)), (N.DELTA(4), KeepAll()), ("CSR", RandomFraction(0.9, seed=1)),
    ("ELL", ScalarFraction(0.5)), ("BlockedELL(2,2)", NM(2, 4))],
    ids=str)
def test_parameter_sparsify_and_format(fmt, sp):
    m, ref = mlp(), mlp()
    s = schedule(m)
    s["0.weight"].sparsify(sp).set_format(fmt)
    assert s.apply() is m
    w_ref = sp(ref[0].weight.detach())
    assert isinstance(m[0].weight, TorchUST)
    torch.testing.assert_close(m[0].weight.dense(), w_ref)
    for rows in (5, 1, 0):
        x = x_of(rows)
        torch.testing.assert_close(m(x), dense_forward(ref, x, w0=w_ref))
    names = [n for n, _ in m.named_parameters()]
    assert "0.weight_values" in names and "0.weight" not in names
    # gradients of the stored values = the dense gradient at the stored entries
    x = x_of(6)
    m(x).square().sum().backward()
    w = w_ref.clone().requires_grad_(True)
    dense_forward(ref, x, w0=w).square().sum().backward()
    tu = m[0].weight
    torch.testing.assert_close(tu.values().grad, tu.gather_stored(w.grad.reshape(-1)))


def test_dense_parameter_without_format_is_masked_in_place():
    m, ref = mlp(), mlp()
    s = schedule(m)
    s["2.weight"].sparsify(ScalarFraction(0.5))
    s.apply()
    assert isinstance(m[2].weight, nn.Parameter)
    torch.testing.assert_close(m[2].weight.detach(), ScalarFraction(0.5)(ref[2].weight.detach()))
    m(x_of(4)).sum().backward()
    assert torch.all(m[2].weight.grad[m[2].weight.detach() == 0] == 0)  # dropped entries get no gradient


# ----- activations -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("fmt", "dtype"), [
    ("CSR", torch.float32), ("COO", torch.float64), ("CSR", torch.float64),
    (TensorFormat.parse("(i, j) -> (i : compressed, j : compressed)"), torch.float64)], ids=str)
def test_activation_becomes_torchust_and_matches_dense(fmt, dtype):
    m, ref = mlp(dtype=dtype), mlp(dtype=dtype)
    sp = ScalarThreshold(0.3)
    s = schedule(m)
    s["1"].sparsify(sp).set_format(fmt)
    s.apply()
    seen = []
    m[2].register_forward_pre_hook(lambda mod, inp: seen.append(type(inp[0])))
    for rows in (7, 1):
        x = x_of(rows, dtype=dtype)
        tol = {} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-5}
        torch.testing.assert_close(m(x), dense_forward(ref, x, act=sp), **tol)
    assert seen[0] is TorchUST
    # gradients of every parameter against the dense model with the masked activation
    x = x_of(5, dtype=dtype)
    m(x).square().sum().backward()
    dense_forward(ref, x, act=sp).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, **({} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-5}))
    row = {r.name: r for r in s.report().rows}["1"]
    assert row.kind == "activation" and row.sparsity is not None and row.sparsity > 0


def test_activation_sparsifier_without_format_stays_dense():
    m, ref = mlp(), mlp()
    s = schedule(m)
    s["1"].sparsify(ScalarFraction(0.5))
    s.apply()
    x = x_of(4)
    out = m(x)
    assert not isinstance(out, TorchUST)
    torch.testing.assert_close(out, dense_forward(ref, x, act=ScalarFraction(0.5)))


# ----- gradients -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", [None, "CSR", "COO"])
def test_parameter_gradient_sparsified(fmt):
    m, ref = mlp(), mlp()
    gsp = ScalarFraction(0.75)
    s = schedule(m)
    plan = s["2.weight"].grad.sparsify(gsp)
    if fmt:
        plan.set_format(fmt)
    s.apply()
    x = x_of(5)
    m(x).square().sum().backward()
    ref(x).square().sum().backward()
    expected = gsp(ref[2].weight.grad)
    torch.testing.assert_close(m[2].weight.grad, expected)
    value = s["2.weight"].grad.value
    assert isinstance(value, TorchUST) == bool(fmt)
    torch.testing.assert_close(value.dense() if fmt else value, expected)
    torch.testing.assert_close(m[0].weight.grad, ref[0].weight.grad)  # other gradients untouched (backprop
    # through layer 2 uses its weight, not its sparsified gradient)


def test_gradient_of_a_torchust_weight_and_of_an_activation():
    m, ref = mlp(), mlp()
    s = schedule(m)
    s["0.weight"].sparsify(ScalarFraction(0.5)).set_format("CSR").grad.sparsify(ScalarFraction(0.5)).set_format("COO")
    s["1"].grad.sparsify(ScalarThreshold(0.5))
    s.apply()
    x = x_of(5)
    m(x).square().sum().backward()
    w = ScalarFraction(0.5)(ref[0].weight.detach()).requires_grad_(True)
    pre = torch.nn.functional.linear(x, w, ref[0].bias)
    h = torch.relu(pre)
    h.register_hook(lambda g: ScalarThreshold(0.5)(g))
    ref[2](h).square().sum().backward()
    stored_mask = (w.detach() != 0)
    g_ref = ScalarFraction(0.5)(torch.where(stored_mask, w.grad, 0.0))
    got = s["0.weight"].grad.value
    assert isinstance(got, TorchUST) and got.format_name == "COO"
    torch.testing.assert_close(got.dense(), g_ref)
    torch.testing.assert_close(s["1"].grad.value, ScalarThreshold(0.5)(s["1"].grad.value))
    torch.testing.assert_close(m[0].bias.grad, ref[0].bias.grad)


# ----- report and errors -------------------------------------------------------------------------------------------
def test_report_and_bad_input():
    m = mlp(sizes=(64, 64, 4))
    s = schedule(m)
    s["0.weight"].sparsify(ScalarFraction(0.9)).set_format("CSR")
    s["1"].set_format("CSR")
    s.apply()
    rep = s.report()
    row = rep.rows[0]
    assert (row.name, row.kind, row.format) == ("0.weight", "parameter", "CSR")
    assert row.sparsity == pytest.approx(0.9, abs=0.01) and row.bytes_stored < row.bytes_dense
    assert rep.rows[1].sparsity is None  # activation not measured before a forward
    assert rep.bytes_saved > 0 and "bytes saved" in str(rep)
    with pytest.raises(KeyError, match="neither a parameter nor a module"):
        schedule(mlp())["3.weight"]
    with pytest.raises(ValueError, match="unknown format name"):
        schedule(mlp())["0.weight"].set_format("NOPE")
    with pytest.raises(TypeError, match="format"):
        schedule(mlp())["0.weight"].set_format(3)
    with pytest.raises(TypeError, match="Sparsifier"):
        schedule(mlp())["0.weight"].sparsify("magnitude")
    with pytest.raises(ValueError, match="no level to ramp"):
        schedule(mlp())["0.weight"].sparsify(NM(2, 4), steps=10)
    with pytest.raises(ValueError, match="not gradients"):
        schedule(mlp())["0.weight"].grad.sparsify(ScalarFraction(0.5), steps=3)
    with pytest.raises(ValueError, match="applied already"):
        s.apply()
    with pytest.raises(ValueError, match="before step"):
        schedule(mlp()).step()
    with pytest.raises(TypeError, match="nn.Module"):
        schedule("model")


# ----- gradual pruning ---------------------------------------------------------------------------------------------
def test_cubic_progress_matches_zhu_gupta():
    steps = 10
    assert cubic_progress(0, steps) == 0.0 and cubic_progress(steps, steps) == 1.0
    assert cubic_progress(25, steps) == 1.0
    for t in range(steps + 1):
        assert cubic_progress(t, steps) == pytest.approx(1 - (1 - t / steps) ** 3)
    vals = [cubic_progress(t, steps) for t in range(steps + 1)]
    assert all(b >= a for a, b in zip(vals, vals[1:], strict=False))


def _task(n: int = 128, d: int = 16, classes: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, classes, generator=g)
    return x, (x @ w).argmax(1)


@pytest.mark.parametrize(("fmt", "opt_name"), [("CSR", "sgd_momentum"), ("CSR", "adam"), (None, "sgd_momentum")])
def test_gradual_pruning_reaches_target_while_loss_falls(fmt, opt_name):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    x, y = _task()
    s = schedule(model)
    plan = s["0.weight"].sparsify(ScalarFraction(0.8), steps=30, every=5)
    if fmt:
        plan.set_format(fmt)
    s.apply()
    values = s._states["0.weight"].values
    nse0 = model[0].weight.ust.nse if fmt else None
    opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_name == "sgd_momentum"
           else torch.optim.Adam(model.parameters(), lr=0.01))
    loss_fn = nn.CrossEntropyLoss()
    losses, sparsities = [], []
    for _ in range(40):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        s.step(opt)
        losses.append(loss.item())
        sparsities.append(s.report().rows[0].sparsity)
    assert s.target_reached()
    assert sparsities[-1] == pytest.approx(0.8, abs=0.01)
    assert all(b >= a - 1e-9 for a, b in zip(sparsities, sparsities[1:], strict=False))  # monotone ramp
    assert sparsities[4] < 0.8  # a ramp, not a jump
    assert min(losses[-5:]) < 0.6 * losses[0]
    if fmt:
        assert model[0].weight.ust.nse == nse0  # pattern kept: dropped entries are stored zeros
        assert model[0].weight.values() is values  # the optimizer's parameter object
    keep = s._states["0.weight"].keep
    for buf in opt.state[values].values():
        if isinstance(buf, torch.Tensor) and buf.shape == values.shape:
            assert torch.all(buf[~keep] == 0)  # momentum / moments zeroed at dropped entries
    if fmt:
        with torch.no_grad():
            before = model(x)
        s.compact()
        assert model[0].weight.ust.nse == int(keep.sum()) < nse0
        assert model[0].weight.values().requires_grad
        with torch.no_grad():
            torch.testing.assert_close(model(x), before)


def test_gradual_activation_sparsity_ramps():
    m = mlp()
    s = schedule(m)
    s["1"].sparsify(RandomFraction(0.5, seed=0), steps=4).set_format("CSR")
    s.apply()
    x = x_of(8) + 3.0
    seen = []
    for _ in range(6):
        m(x)
        seen.append(s.report().rows[0].sparsity)
        s.step()
    assert seen[0] < seen[2] < seen[4] and seen[4] >= 0.5 - 1e-9
