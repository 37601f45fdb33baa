"""frontend.compile: a 2-layer graph convolution (sparse adjacency x dense features) as one MLIR module.

Run: .venv/bin/python examples/torch_compile_gcn.py
"""
import time
import warnings

import torch
import torch.nn as nn

import frontend

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
torch.manual_seed(0)


class GCN(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.l1 = nn.Linear(features, hidden)
        self.l2 = nn.Linear(hidden, classes)

    def forward(self, adj: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        h = torch.relu(torch.mm(adj, self.l1(h)))
        return torch.mm(adj, self.l2(h))


n = 200
adj = (torch.rand(n, n) < 0.02).float() + torch.eye(n)
adj = (adj / adj.sum(1, keepdim=True)).to_sparse_csr()
h = torch.randn(n, 16)
gcn = GCN(16, 32, 4).eval()

start = time.perf_counter()
compiled = frontend.compile(gcn, adj, h)
print(f"compiled in {time.perf_counter() - start:.2f} s; the module's sparse encodings:")
print("\n".join(line for line in compiled.mlir().splitlines() if "#sparse_tensor.encoding" in line))
with torch.no_grad():
    expected = gcn(adj, h)
out = compiled(adj, h)
print("max |compiled - eager|:", (out - expected).abs().max().item())
