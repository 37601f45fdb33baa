"""Sparse attention patterns as TorchUST masks (stored value 1 at every allowed query/key pair).

* :func:`sliding_window`: each query attends to keys within ``window`` positions (optionally causal).
* :func:`bigbird`: BigBird-style window + global tokens + random keys per query (Zaheer et al., 2020).
* :func:`topk_per_row`: a dynamic pattern computed at run time, the ``k`` keys with the largest score of
  a low-rank (cheap) approximation ``q_lr @ k_lr.T`` per query.
* :func:`sparse_attention`: a trainable head ``softmax(mask(q k^T / sqrt(d))) v`` on the compiled kernels.

Masks are built as CSR (sorted columns) and converted when ``fmt`` names another format; they are the
``M`` of ``torch.sparse.sampled_addmm(M, q, k.t())`` in a sparse-attention chain.
"""
from __future__ import annotations

from typing import Any

import torch

from ._products import sddmm, sparse_dense
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




# ----- a trainable sparse-attention head -------------------------------------------------------------------
def _row_ids(mask: TorchUST) -> tuple[torch.Tensor, torch.Tensor]:
    """The query row of every stored value of ``mask`` and whether it is an allowed key: an entry (not an
    ELL padding slot) with a nonzero value (not a zero stored inside a block)."""
    pos = mask.storage_positions().reshape(-1)
    valid = (pos >= 0) & (mask.values().detach().reshape(-1) != 0)
    return torch.where(valid, pos // max(mask.shape[1], 1), 0), valid


def _row_softmax(s: torch.Tensor, rows: torch.Tensor, valid: torch.Tensor, n: int) -> torch.Tensor:
    """Softmax of stored scores per row (padding slots get 0; a row without entries stays empty)."""
    s = torch.where(valid, s, torch.full((), float("-inf"), dtype=s.dtype))
    mx = torch.full((n,), float("-inf"), dtype=s.dtype).scatter_reduce(0, rows, s, "amax")
    e = torch.where(valid, torch.exp(s - mx[rows]), torch.zeros((), dtype=s.dtype))
    den = torch.zeros(n, dtype=s.dtype).index_add_(0, rows, e)
    return e / torch.where(den > 0, den, torch.ones((), dtype=s.dtype))[rows]


class _Holder:
    __slots__ = ("mask",)

    def __init__(self, mask: TorchUST) -> None:
        self.mask = mask


class _SparseAttention(torch.autograd.Function):
    """``softmax(mask(scale * q k^T)) v`` over the mask's stored entries, with gradients to q, k and v."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, holder: _Holder,
                scale: float) -> torch.Tensor:
        m = holder.mask
        rows, valid = _row_ids(m)
        s = sddmm(m, q * scale, k).reshape(-1)                   # sampled q k^T at the stored entries
        p = _row_softmax(s, rows, valid, m.shape[0])
        out = sparse_dense(TorchUST.with_values(m, p.reshape(m.values().shape)), v.detach(), "left")
        ctx.save_for_backward(q, k, v, p)
        ctx.holder, ctx.scale, ctx.rows = holder, scale, rows
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        q, k, v, p = ctx.saved_tensors
        m, scale, rows = ctx.holder.mask, ctx.scale, ctx.rows
        grad = grad.contiguous()
        pm = TorchUST.with_values(m, p.reshape(m.values().shape))
        dv = sparse_dense(pm, grad, "left", transpose=True)      # P^T dO
        dp = sddmm(m, grad, v).reshape(-1)                       # (dO v^T) at the stored entries
        rowsum = torch.zeros(m.shape[0], dtype=p.dtype).index_add_(0, rows, p * dp)
        ds = TorchUST.with_values(m, (p * (dp - rowsum[rows])).reshape(m.values().shape))
        dq = sparse_dense(ds, k.detach(), "left") * scale        # dS k
        dk = sparse_dense(ds, q.detach(), "left", transpose=True) * scale  # dS^T q
        return dq, dk, dv, None, None


def sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: TorchUST,
                     scale: float | None = None) -> torch.Tensor:
    """One attention head restricted to ``mask``'s stored entries: ``softmax(scale * q k^T) v`` where the
    softmax runs over each query's allowed keys (a query without keys gives 0, as ``torch.sparse.softmax``
    leaves an empty row empty).  ``q``: ``n_q x d``, ``k``: ``n_k x d``, ``v``: ``n_k x d_v``, ``mask``: a
    TorchUST ``n_q x n_k`` (keys allowed where it stores a nonzero value); ``scale`` defaults to ``1/sqrt(d)``.

    The sampled product and both products run on the compiled kernels (forward and backward, gradients to
    q, k and v); the row softmax runs on the stored values in torch."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or isinstance(t, TorchUST) or t.dim() != 2:
            raise TypeError(f"{name} must be a dense 2-D torch tensor")
    if not isinstance(mask, TorchUST) or mask.dim() != 2:
        raise TypeError(f"mask must be a 2-D TorchUST, got {type(mask).__name__}")
    nq, nk = mask.shape
    if q.shape[0] != nq or k.shape[0] != nk or v.shape[0] != nk or q.shape[1] != k.shape[1]:
        raise ValueError(f"shapes do not fit: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, "
                         f"mask {tuple(mask.shape)}")
    if mask.dtype != q.dtype:
        mask = TorchUST.with_values(mask, mask.values().detach().to(q.dtype))
    scale = float(scale) if scale is not None else 1.0 / max(q.shape[1], 1) ** 0.5
    return _SparseAttention.apply(q, k, v, _Holder(mask), scale)


__all__ = ["bigbird", "mask_from_rows", "sliding_window", "sparse_attention", "topk_per_row"]
