"""PyTorch injection: TorchUST in torch code, a pruned MLP reformatted in place, sparse fine-tuning.

Run: .venv/bin/python examples/torch_injection.py
"""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from frontend.format import NamedFormats
from frontend.torch_interface import TorchUST, prune_model, reformat_model

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
torch.manual_seed(0)

# 1. Plain torch calls on a TorchUST run the compiled kernels: a sparse vector in a dot product,
#    a matrix in DELTA(2) (a format torch does not have) in mv.
v = torch.tensor([0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0])
sv = TorchUST.from_torch(v.to_sparse())
y = torch.arange(8.0)
print("dot:", torch.dot(sv, y).item(), "(dense torch:", torch.dot(v, y).item(), ")")
A = torch.tensor([[1.0, 0, 0, 0, 0, 0, 0, 2], [0, 0, 3, 4, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 5]])
D = TorchUST.from_torch(A, NamedFormats.DELTA(2))
print(D)
print("mv:", torch.mv(D, y).tolist(), "(dense torch:", (A @ y).tolist(), ")")

# 2. A pruned MLP: pruning becomes permanent and each linear weight is stored by its sparsity.
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
prune_model(model, amount=0.9, names=["0", "2"])
x = torch.randn(32, 64)
with torch.no_grad():
    expected = model(x)
report = reformat_model(model)
print(report)
with torch.no_grad():
    out = model(x)  # first forward compiles (cached); later ones only execute
print("max |TorchUST model - pruned dense model|:", (out - expected).abs().max().item())

# 3. Sparse fine-tuning: gradients reach only the stored values (model.parameters() holds them).
target = torch.randn(32, 10)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
pattern = model[0].weight.dense() != 0
for step in range(5):
    opt.zero_grad()
    loss = F.mse_loss(model(x), target)
    loss.backward()
    opt.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("pattern kept:", bool(((model[0].weight.dense() != 0) & ~pattern).sum() == 0))
