"""A one-layer sparse-attention model trained on the compiled kernels, next to masked dense attention.

The task (synthetic): each token must output the average of the values of the tokens in its local window
and of a global "summary" token, which a BigBird mask (window + global + random keys) can express.  The
head ``softmax(mask(Q K^T / sqrt(d))) V`` is the torch chain ``torch.sparse.sampled_addmm(M, q, k.t())`` ->
``torch.sparse.softmax(S, 1)`` -> ``torch.mm(P, v)`` on a TorchUST mask (SDDMM, softmax, SpMM and their
gradients on the project's kernels; ``sparse_attention`` is the same head fused); the same model with
``masked_fill(-inf)`` dense attention is the reference.  A dynamic top-k mask (computed from a low-rank
score at run time) is shown at the end.

Run: .venv/bin/python examples/sparse_attention.py
"""
import warnings

import torch
import torch.nn as nn

from frontend.torch_interface.attention import bigbird, sparse_attention, topk_per_row

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
torch.manual_seed(0)
n, d = 96, 16
mask = bigbird(n, window=3, num_global=1, num_random=2, seed=0)
print(f"mask: {mask.format_name}, {mask.ust.nse} of {n * n} pairs ({mask.ust.nse / n / n:.1%})")


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor, dense: bool = False) -> torch.Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        if not dense:  # the torch-function chain on a TorchUST mask; sparse_attention(q, k, v, mask) is the fused form
            scores = torch.sparse.sampled_addmm(mask, q, k.t(), beta=0.0, alpha=d ** -0.5)
            return torch.mm(torch.sparse.softmax(scores, 1), v)
        scores = (q @ k.T / d ** 0.5).masked_fill(mask.dense() == 0, float("-inf"))
        return torch.softmax(scores, 1) @ v


def target(x: torch.Tensor) -> torch.Tensor:
    i, j = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    w = (((i - j).abs() <= 1) | (j == 0)).float()
    return (w / w.sum(1, keepdim=True)) @ x


sparse_head = Head()
dense_head = Head()
dense_head.load_state_dict(sparse_head.state_dict())
for name, model, dense in (("sparse", sparse_head, False), ("dense ", dense_head, True)):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(150):
        x = torch.randn(n, d)
        loss = (model(x, dense) - target(x)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"{name} attention: loss {losses[0]:.4f} -> {sum(losses[-10:]) / 10:.4f}")

x = torch.randn(n, d)
with torch.no_grad():
    gap = (sparse_head(x) - sparse_head(x, dense=True)).abs().max().item()
print(f"trained sparse head, sparse vs masked dense forward: max |diff| = {gap:.2e}")

# A dynamic pattern: the 8 best keys per query of a rank-4 score, recomputed for every input.
with torch.no_grad():
    q_lr, k_lr = sparse_head.q(x)[:, :4], sparse_head.k(x)[:, :4]
dyn = topk_per_row(q_lr, k_lr, 8)
out = sparse_attention(sparse_head.q(x), sparse_head.k(x), sparse_head.v(x), dyn)
print(f"dynamic top-8 mask: {dyn.ust.nse} pairs, output {tuple(out.shape)}")
