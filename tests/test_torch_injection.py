"""prune_model / reformat_model: pruning variants, injected formats, outputs vs the pruned dense model."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from torch.nn.utils import prune

from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST, choose_format, prune_model, reformat_model

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")


class ConvNet(nn.Module):
    """A convolution followed by two linear layers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.fc1 = nn.Linear(2 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x)).flatten(1)
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(h)))))


def make_model(seed: int = 0) -> ConvNet:
    torch.manual_seed(seed)
    return ConvNet().double()


def test_prune_l1_unstructured_amount():
    m = prune_model(make_model(), amount=0.75)
    for lin in (m.fc1, m.fc2, m.head):
        assert prune.is_pruned(lin)
        assert (lin.weight == 0).double().mean().item() == pytest.approx(0.75, abs=0.02)
    assert not prune.is_pruned(m.conv)


def test_prune_2_4_keeps_two_of_every_four():
    m = prune_model(make_model(), structured="2:4")
    w = m.fc1.weight.detach()
    groups = (w.reshape(w.shape[0], -1, 4) != 0).sum(-1)
    assert torch.all(groups == 2)
    assert torch.all(((m.fc2.weight.detach().reshape(8, -1, 4)) != 0).sum(-1) == 2)


def test_prune_blocks():
    m = prune_model(make_model(), amount=0.5, structured=("block", (4, 4)), names=["fc1"])
    w = m.fc1.weight.detach()
    tiles = (w.reshape(4, 4, 8, 4).abs().sum(dim=(1, 3)) != 0)
    assert tiles.sum().item() == 16  # half of the 32 tiles
    assert not prune.is_pruned(m.fc2)


def test_prune_rejects_bad_arguments():
    with pytest.raises(ValueError, match="structured"):
        prune_model(make_model(), structured="diagonal")
    with pytest.raises(ValueError, match="amount"):
        prune_model(make_model(), amount=1.5)
    with pytest.raises(ValueError, match="multiple of 3"):
        prune_model(make_model(), structured=(1, 3))


def test_reformat_default_policy_matches_pruned_dense_model():
    model = prune_model(make_model(), amount=0.8, names=["fc1", "fc2"])
    dense = prune_model(make_model(), amount=0.8, names=["fc1", "fc2"])
    x = torch.randn(5, 1, 4, 4, dtype=torch.float64)
    expected = dense(x)
    report = reformat_model(model)
    names = [r.layer for r in report.layers]
    assert names == ["fc1", "fc2", "head"]
    by = {r.layer: r for r in report.layers}
    assert by["head"].format == "dense" and by["head"].bytes_after == by["head"].bytes_before
    for name in ("fc1", "fc2"):
        r = by[name]
        assert r.format in ("CSR", "DELTA8") and r.sparsity == pytest.approx(0.8, abs=0.02)
        assert r.bytes_after < r.bytes_before
        assert isinstance(getattr(model, name).weight, TorchUST)
        assert not prune.is_pruned(getattr(model, name))
    assert report.bytes_after < report.bytes_before and "total" in str(report)
    torch.testing.assert_close(model(x), expected)
    torch.testing.assert_close(model(x), expected)  # second forward: cached kernels
    clone = copy.deepcopy(model)
    torch.testing.assert_close(clone(x), expected)
    params = dict(model.named_parameters())
    assert "fc1.weight_values" in params and "fc1.weight" not in params
    assert params["fc1.weight_values"].numel() == model.fc1.weight.values().numel()


@pytest.mark.parametrize("fmt", [N.CSR, N.COO, N.BSR((4, 4)), N.DELTA(4)], ids=lambda f: f.name)
def test_reformat_with_user_function(fmt):
    model = prune_model(make_model(1), amount=0.6)
    dense = prune_model(make_model(1), amount=0.6)
    x = torch.randn(3, 1, 4, 4, dtype=torch.float64)
    expected = dense(x)

    def func(w: torch.Tensor):
        return TorchUST.from_torch(w, fmt) if w.shape[0] >= 8 else None

    report = reformat_model(model, func)
    assert [r.format != "dense" for r in report.layers] == [True, True, False]
    torch.testing.assert_close(model(x), expected)


def test_reformat_accepts_torch_sparse_and_rejects_garbage():
    model = make_model()
    report = reformat_model(model, lambda w: w.to_sparse_csr(), modules=(nn.Linear,))
    assert all(r.format == "CSR" for r in report.layers)
    with pytest.raises(TypeError, match="expected a TorchUST"):
        reformat_model(make_model(), lambda w: "CSR")


def test_choose_format_threshold():
    w = torch.randn(16, 32)
    assert choose_format(w) is None
    w[torch.rand(16, 32) < 0.9] = 0
    tu = choose_format(w)
    assert isinstance(tu, TorchUST) and tu.format_name in ("CSR", "DELTA8")
    torch.testing.assert_close(tu.dense(), w)
    assert choose_format(w, threshold=0.95) is None


def test_unsupported_layer_ops_are_refused_not_densified():
    model = make_model()
    reformat_model(model, lambda w: TorchUST.from_torch(w.to_sparse()), modules=(nn.Conv2d,))
    assert isinstance(model.conv.weight, TorchUST) and model.conv.weight.dim() == 4
    with pytest.raises(NotImplementedError, match="conv2d"):
        model(torch.randn(1, 1, 4, 4, dtype=torch.float64))
