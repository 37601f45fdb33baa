"""Sparse attention patterns as TorchUST masks (stored value 1 at every allowed query/key pair).

* :func:`sliding_window`: each query attends to keys within ``window`` positions (optionally causal).
* :func:`bigbird`: BigBird-style window + global tokens + random keys per query (Zaheer et al., 2020).
* :func:`topk_per_row`: a dynamic pattern computed at run time, the ``k`` keys with the largest score of
  a low-rank (cheap) approximation ``q_lr @ k_lr.T`` per query.

Masks are built as CSR (sorted columns) and converted when ``fmt`` names another format; they are the
``M`` of ``torch.sparse.sampled_addmm(M, q, k.t())`` in a sparse-attention chain.
"""
from __future__ import annotations

from typing import Any

import torch

from ._schedule_state import resolve_format
from ._subclass import TorchUST


def _positive_int(name: str, v: Any, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {v!r}")
    return v


def mask_from_rows(rows: list[torch.Tensor] | torch.Tensor, shape: tuple[int, int], *, fmt: Any = "CSR",
                   dtype: torch.dtype = torch.float32) -> TorchUST:
    """A mask TorchUST from the allowed key columns of every query row (``rows[i]``: any order,
    duplicates ignored; or a 2-D tensor with one row of columns per query)."""
    n, m = shape
    cols = [torch.unique(r.reshape(-1).to(torch.int64)) for r in rows]  # unique() sorts
    if len(cols) != n:
        raise ValueError(f"got columns for {len(cols)} rows, expected {n}")
    for i, c in enumerate(cols):
        if len(c) and (int(c[0]) < 0 or int(c[-1]) >= m):
            raise ValueError(f"row {i}: key column out of range 0..{m - 1}")
    counts = torch.tensor([len(c) for c in cols], dtype=torch.int64)
    crow = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    col = torch.cat(cols) if cols else torch.zeros(0, dtype=torch.int64)
    csr = torch.sparse_csr_tensor(crow, col, torch.ones(len(col), dtype=dtype), size=(n, m),
                                  check_invariants=False)  # valid by construction (checked above)
    out = TorchUST.from_torch(csr)
    target = resolve_format(fmt)
    return out if out.tensor_format == target else out.convert(target)


def sliding_window(n: int, window: int, *, causal: bool = False, fmt: Any = "CSR",
                   dtype: torch.dtype = torch.float32) -> TorchUST:
    """``n x n`` mask allowing ``|i - j| <= window`` (causal: ``0 <= i - j <= window``)."""
    n, window = _positive_int("n", n), _positive_int("window", window)
    rows = []
    for i in range(n):
        lo, hi = max(0, i - window), (i + 1 if causal else min(n, i + window + 1))
        rows.append(torch.arange(lo, hi))
    return mask_from_rows(rows, (n, n), fmt=fmt, dtype=dtype)


def bigbird(n: int, window: int, num_global: int, num_random: int, *, seed: int | None = None,
            fmt: Any = "CSR", dtype: torch.dtype = torch.float32) -> TorchUST:
    """``n x n`` BigBird mask: the sliding window ``|i - j| <= window``; the first ``num_global`` tokens
    attend to every key and every query attends to them; ``num_random`` keys per query drawn uniformly
    with replacement (a draw already allowed counts once; ``seed``: reproducible)."""
    n, window = _positive_int("n", n), _positive_int("window", window)
    num_global, num_random = _positive_int("num_global", num_global), _positive_int("num_random", num_random)
    g = torch.Generator().manual_seed(seed) if seed is not None else None
    glob = torch.arange(min(num_global, n))
    rand = torch.randint(max(n, 1), (n, num_random), generator=g)
    rows = []
    for i in range(n):
        if i < num_global:
            rows.append(torch.arange(n))
            continue
        rows.append(torch.cat([torch.arange(max(0, i - window), min(n, i + window + 1)), glob, rand[i]]))
    return mask_from_rows(rows, (n, n), fmt=fmt, dtype=dtype)


def topk_per_row(q_lr: torch.Tensor, k_lr: torch.Tensor, k: int, *, fmt: Any = "CSR",
                 dtype: torch.dtype | None = None) -> TorchUST:
    """A dynamic mask: for every query row, the ``k`` keys with the largest low-rank score
    ``q_lr @ k_lr.T`` (``q_lr``: ``n_q x r``, ``k_lr``: ``n_k x r``; all keys when ``k >= n_k``).
    Computed without gradients (the pattern is a decision, not a differentiable function)."""
    if not isinstance(q_lr, torch.Tensor) or not isinstance(k_lr, torch.Tensor):
        raise TypeError("topk_per_row needs torch tensors q_lr and k_lr")
    if q_lr.dim() != 2 or k_lr.dim() != 2 or q_lr.shape[1] != k_lr.shape[1]:
        raise ValueError(f"q_lr and k_lr must be 2-D with the same rank, got {tuple(q_lr.shape)} and "
                         f"{tuple(k_lr.shape)}")
    k = _positive_int("k", k)
    nq, nk = q_lr.shape[0], k_lr.shape[0]
    kk = min(k, nk)
    with torch.no_grad():
        if kk == 0 or nq == 0:
            cols = torch.zeros(nq, 0, dtype=torch.int64)
        else:
            cols = (q_lr.detach() @ k_lr.detach().t()).topk(kk, dim=1).indices
    return mask_from_rows(list(cols), (nq, nk), fmt=fmt, dtype=dtype or q_lr.dtype)


__all__ = ["bigbird", "mask_from_rows", "sliding_window", "topk_per_row"]
