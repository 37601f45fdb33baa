"""frontend.compile: whole torch models with sparse weights/inputs through torch-mlir and our pipeline."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import frontend
from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST, prune_model, reformat_model

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")


class GCN(nn.Module):
    """Two graph-convolution layers: ``A @ (H @ W)`` with a sparse adjacency ``A``."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(5, 8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, adj: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        h = torch.relu(torch.mm(adj, self.l1(h)))
        return torch.mm(adj, self.l2(h))


def adjacency(n: int, p: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = (torch.rand(n, n, generator=g) < p).float()
    a[3] = 0  # an isolated node: an empty row
    return a


@pytest.mark.parametrize("layout", ["csr", "bsr", "coo"])
def test_mlp_with_sparse_weight_matches_eager(layout):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 8))
    prune_model(mlp, amount=0.8)

    def func(w):  # two sparse layers with bias + ReLU between them, a dense head
        if w.shape[0] != 32:
            return None
        return TorchUST.from_torch({"csr": w.to_sparse_csr, "coo": w.to_sparse,
                                    "bsr": lambda: w.to_sparse_bsr((4, 4))}[layout]())

    reformat_model(mlp, func)
    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = mlp(x)
    compiled = frontend.compile(mlp, x)
    head = compiled.mlir().split("func.func @main(", 1)[1].split(")", 1)[0]
    assert head.count("#sparse>") == 2  # both hidden weights are sparse arguments
    torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-5)
    x2 = torch.randn(4, 16)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x2), mlp(x2), rtol=1e-5, atol=1e-5)
    with torch.no_grad():  # in-place value updates (same memory) are seen
        mlp[0].weight.values().mul_(2)
        torch.testing.assert_close(compiled(x2), mlp(x2), rtol=1e-5, atol=1e-5)
    again = frontend.compile(mlp, x)  # same text: the compiled module comes from the cache
    assert again.function.module is compiled.function.module


def test_gcn_with_sparse_adjacency_matches_eager():
    torch.manual_seed(1)
    gcn = GCN()
    a = adjacency(10, 0.3, 0)
    h = torch.randn(10, 5)
    compiled = frontend.compile(gcn, a.to_sparse_csr(), h)
    with torch.no_grad():
        for p, seed in ((0.3, 0), (0.6, 1), (0.0, 2)):
            a2 = adjacency(10, p, seed)
            torch.testing.assert_close(compiled(a2.to_sparse_csr(), h), gcn(a2, h), rtol=1e-5, atol=1e-5)
    with torch.no_grad():  # another layout (or shape) compiles once more: a second variant
        torch.testing.assert_close(compiled(a, h), gcn(a, h), rtol=1e-5, atol=1e-5)
    assert compiled.variants == 2
    with pytest.raises(TypeError, match="takes 2 inputs"):
        compiled(h)


def test_bad_inputs_are_refused():
    lin = nn.Linear(8, 4)
    delta_input = TorchUST.from_torch(torch.eye(8), N.DELTA(4))  # an *input* (not a weight) without a torch layout
    with pytest.raises(ValueError, match="DELTA4"):
        frontend.compile(lin, delta_input)
    with pytest.raises(TypeError, match="nn.Module"):
        frontend.compile(lambda x: x, torch.randn(2))
    with pytest.raises(TypeError, match="torch tensors"):
        frontend.compile(lin, [1.0] * 8)


class _WeightTimesItself(nn.Module):
    def __init__(self, w: torch.Tensor) -> None:
        super().__init__()
        self.w = w

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.w.sum()


def test_kernel_weight_outside_a_product_is_refused():
    model = _WeightTimesItself(TorchUST.from_torch(torch.eye(4), N.DELTA(4)))
    with pytest.raises((ValueError, NotImplementedError)):
        frontend.compile(model, torch.randn(4))
