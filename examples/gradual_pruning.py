"""Gradual pruning to 90% with ``schedule(model)`` and ``s.step()``, against the same MLP trained dense.

No dataset ships with the installed packages (torchvision and scikit-learn are not dependencies), so the
data is synthetic but learnable: 10 classes of 64-feature points, each class a mixture of two noisy
prototypes.  Layers 0 and 2 are ramped to 90% sparsity on the cubic schedule of Zhu & Gupta and stored as
CSR TorchUSTs; pruned entries stay in the stored pattern as zeros during training, so the SGD optimizer
(with momentum) keeps the same parameters; ``s.compact()`` drops them at the end.

Run: .venv/bin/python examples/gradual_pruning.py
"""
import copy
import warnings

import torch
import torch.nn as nn

from frontend.torch_interface import ScalarFraction, schedule

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def dataset(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    protos = torch.randn(10, 2, 64, generator=g)                # fixed: the same task for train and test
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    which = torch.randint(0, 2, (n,), generator=g)
    x = protos[y, which] + 2.0 * torch.randn(n, 64, generator=g)
    return x, y


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, s=None) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for i in range(0, len(x), 100):
            loss = nn.functional.cross_entropy(model(x[i:i + 100]), y[i:i + 100])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if s is not None:
                s.step(opt)        # ramp the target, re-prune every 10 steps, zero pruned momentum
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
x_train, y_train = dataset(2000, seed=1)
x_test, y_test = dataset(1000, seed=2)
base = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
dense, pruned = base, copy.deepcopy(base)
epochs = 8
steps = epochs * 20

dense_losses = train(dense, x_train, y_train, epochs)

s = schedule(pruned)
for name in ("0.weight", "2.weight"):
    s[name].sparsify(ScalarFraction(0.9), steps=int(0.7 * steps), every=10).set_format("CSR")
s.apply()
pruned_losses = train(pruned, x_train, y_train, epochs, s)
print("during training the pruned entries are stored zeros (same pattern, same optimizer parameters):")
print(s.report())
s.compact()
print("after s.compact() (stored zeros dropped):")
print(s.report())

print(f"dense : loss {dense_losses[0]:.3f} -> {dense_losses[-1]:.3f}, test accuracy "
      f"{accuracy(dense, x_test, y_test):.1%}")
print(f"pruned: loss {pruned_losses[0]:.3f} -> {pruned_losses[-1]:.3f}, test accuracy "
      f"{accuracy(pruned, x_test, y_test):.1%} (layers 0 and 2 at 90% sparsity, CSR)")
