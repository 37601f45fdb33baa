"""``reformat_model(model, "auto")``: each pruned layer stored as the shared format chooser picks, with the
dense model's outputs and gradients."""
import pytest
import torch
import torch.nn as nn

from frontend.torch_interface import TorchUST, choose_format_for_speed, prune_model, reformat_model


def _model(dtype: torch.dtype) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 1), nn.Linear(1, 7)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_auto_keeps_outputs_and_gradients(dtype):
    model = _model(dtype)
    prune_model(model, 0.8)
    x = torch.randn(5, 64, dtype=dtype)
    ref = model(x)
    report = reformat_model(model, "auto")
    assert len(report.layers) == 3 and report.bytes_after < report.bytes_before
    assert [r.format for r in report.layers][:1] == ["CSR"] and isinstance(model[0].weight, TorchUST)
    out = model(x)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out, ref, atol=tol, rtol=tol)
    out.sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_auto_leaves_dense_layers_and_refuses_other_strings():
    w = torch.randn(16, 8)
    assert choose_format_for_speed(w) is None                        # not sparse enough: stays dense
    assert choose_format_for_speed(torch.zeros(0, 4)) is None        # empty: nothing to gain
    w[w.abs() < 1.5] = 0
    tu = choose_format_for_speed(w)
    assert tu is not None and torch.equal(tu.to_dense(), w)
    with pytest.raises(ValueError, match="'auto'"):
        reformat_model(_model(torch.float32), "fastest")
