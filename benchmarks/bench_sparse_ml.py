"""Scorch's sparse-ML workloads on the CPU: ours (TorchUST / frontend.ops) against dense torch and torch.sparse.

* ``gcn``: a 2-layer GCN ``A relu(A X W1) W2`` on a power-law graph (A row-normalised, CSR).
* ``moe``: mixture-of-experts combine with one-hot sparse gates, ``einsum("bnd,bn->bd", E, G)``
  (ours: ``torch.einsum`` on a CSR TorchUST G, i.e. ``frontend.einsum``; its backward gives E's gradient and
  G's stored values' gradient, sampled at G's entries; torch.sparse: ``bmm`` of the gates as a sparse COO
  ``b x 1 x n`` tensor).
* ``attention``: one sparse-attention head, ``softmax(mask(Q K^T)) V`` at a given density (ours, forward:
  the SDDMM ``einsum("ij,ik,jk->ij")`` over the mask, ``frontend.ops.softmax`` over the stored values, SpMM,
  all compiled kernels; forward+backward: ``torch_interface.attention.sparse_attention`` (the fused head)
  and, as its own row, the torch chain ``sampled_addmm -> torch.sparse.softmax -> torch.mm`` on a TorchUST).
* ``autoencoder``: a pruned MLP autoencoder (90% of every weight dropped, ScalarFraction) through
  ``schedule(model)`` with CSR weights.

Forward and forward+backward times (where the contender supports it) are the best of ``--reps``
interleaved rounds after warm-up (first calls compile); compare ratios within one run.  Run::

    .venv/bin/python benchmarks/bench_sparse_ml.py            # modest sizes (2-core machine)
    .venv/bin/python benchmarks/bench_sparse_ml.py --nodes 100000 --seq 4096
"""
from __future__ import annotations

import argparse
import copy
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from frontend import (
    Tensor,  # noqa: E402
    ops as F,  # noqa: E402
)
from frontend.torch_interface import ScalarFraction, TorchUST, schedule  # noqa: E402
from frontend.torch_interface.attention import mask_from_rows, sparse_attention  # noqa: E402
from suitekit.timing import interleaved_min  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
warnings.filterwarnings("ignore", message="Sparse invariant checks")


def best_ms(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, float]:
    """Best milliseconds of each function over ``reps`` interleaved rounds (suitekit.timing)."""
    return {name: t * 1e3 for name, t in interleaved_min(fns, reps).items()}


def arr(r: Any) -> np.ndarray:
    """A kernel result (a frontend Tensor or an array) as NumPy."""
    return r.to_dense() if isinstance(r, Tensor) else np.asarray(r)


def power_law_graph(n: int, avg_degree: int, seed: int = 0) -> torch.Tensor:
    """A row-normalised adjacency (with self loops) whose degrees follow a Zipf-like law, as torch CSR."""
    rng = np.random.default_rng(seed)
    deg = np.minimum(rng.zipf(2.0, n) * max(avg_degree // 2, 1), n).astype(np.int64)
    deg = np.maximum((deg * (avg_degree / deg.mean())).astype(np.int64), 1)
    rows = np.repeat(np.arange(n), deg)
    cols = rng.integers(0, n, len(rows))
    rows, cols = np.concatenate([rows, np.arange(n)]), np.concatenate([cols, np.arange(n)])
    a = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])), torch.ones(len(rows)), (n, n)).coalesce()
    a = torch.sparse_coo_tensor(a.indices(), torch.ones(a.indices().shape[1]), (n, n)).coalesce()
    d = torch.zeros(n).index_add_(0, a.indices()[0], a.values())
    a = torch.sparse_coo_tensor(a.indices(), a.values() / d[a.indices()[0]], (n, n)).coalesce()
    return a.to_sparse_csr()


def fwd_bwd(forward: Callable[[], torch.Tensor], params: list[torch.Tensor]) -> Callable[[], None]:
    def run() -> None:
        for p in params:
            p.grad = None
        forward().sum().backward()
    return run


def gcn(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    n, f, h, c = args.nodes, 64, 32, 16
    a = power_law_graph(n, args.degree)
    torch.manual_seed(0)
    x = torch.randn(n, f)
    w1, w2 = (torch.randn(f, h) * 0.1).requires_grad_(True), (torch.randn(h, c) * 0.1).requires_grad_(True)
    ours_a = TorchUST.from_torch(a)

    def run(adj: Any) -> Callable[[], torch.Tensor]:
        return lambda: adj @ (torch.relu(adj @ (x @ w1)) @ w2)

    fns = {"ours": run(ours_a), "torch.sparse": run(a)}
    if n <= args.dense_limit:
        fns["dense"] = run(a.to_dense())
    out: dict[str, dict[str, float]] = {"forward": {}, "forward+backward": {}}
    with torch.no_grad():
        out["forward"] = best_ms(fns, args.reps)
    out["forward+backward"] = best_ms({k: fwd_bwd(v, [w1, w2]) for k, v in fns.items()}, args.reps)
    return out


def moe(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    b, n, d = args.tokens, 16, 256
    g = torch.Generator().manual_seed(0)
    e = torch.randn(b, n, d, generator=g)
    choice = torch.randint(0, n, (b,), generator=g)
    gates = torch.zeros(b, n).index_put_((torch.arange(b), choice), torch.rand(b, generator=g))
    g_ours = TorchUST.from_torch(gates.to_sparse_csr())
    g3 = gates.reshape(b, 1, n).to_sparse()

    def torch_sparse(ev: torch.Tensor, gs: torch.Tensor) -> torch.Tensor:  # batched sparse COO x dense
        return torch.bmm(gs, ev).squeeze(1)

    fns = {
        "ours": lambda: torch.einsum("bnd,bn->bd", e, g_ours),        # frontend.einsum through the handler
        "dense": lambda: torch.einsum("bnd,bn->bd", e, gates),
        "torch.sparse": lambda: torch_sparse(e, g3),
    }
    ref = torch.einsum("bnd,bn->bd", e, gates)
    for f in fns.values():
        torch.testing.assert_close(f(), ref, rtol=1e-5, atol=1e-5)
    out = {}
    with torch.no_grad():
        out["forward"] = best_ms(fns, args.reps)
    eg = e.clone().requires_grad_(True)
    gd = gates.clone().requires_grad_(True)
    g_ours.values().requires_grad_(True)
    gs = g3.clone().requires_grad_(True)
    grads = {
        "ours": fwd_bwd(lambda: torch.einsum("bnd,bn->bd", eg, g_ours), [eg, g_ours.values()]),
        "dense": fwd_bwd(lambda: torch.einsum("bnd,bn->bd", eg, gd), [eg, gd]),
        "torch.sparse": fwd_bwd(lambda: torch_sparse(eg, gs), [eg, gs]),
    }
    out["forward+backward"] = best_ms(grads, args.reps)
    return out


def attention(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    s, d = args.seq, 64
    keep = max(1, int(round(args.density * s)))
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(s, d, generator=g) / d ** 0.25 for _ in range(3))
    cols = [torch.randperm(s, generator=g)[:keep] for _ in range(s)]
    mask = mask_from_rows(cols, (s, s))
    m_csr = mask.to_torch()
    pattern = mask.ust
    qn, kn, vn = q.numpy(), k.numpy(), v.numpy()
    dense_mask = m_csr.to_dense() > 0

    def ours() -> Any:
        sc = F.einsum("ij,ik,jk->ij", pattern, qn, kn)                  # SDDMM over the mask
        return F.matmul(F.softmax(sc, 1), vn)                            # row softmax, SpMM

    def torch_sparse() -> Any:
        sc = torch.sparse.sampled_addmm(m_csr, q, k.t(), beta=0.0)
        p = torch.sparse.softmax(sc.to_sparse_coo(), 1)
        return torch.sparse.mm(p, v)

    def dense() -> Any:
        sc = (q @ k.t()).masked_fill(~dense_mask, float("-inf"))
        return torch.softmax(sc, 1) @ v

    ref = dense()
    np.testing.assert_allclose(arr(ours()), ref.numpy(), rtol=1e-3, atol=1e-4)
    out = {}
    with torch.no_grad():
        out["forward"] = best_ms({"ours": ours, "torch.sparse": torch_sparse, "dense": dense}, args.reps)
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))

    def dense_grad() -> torch.Tensor:
        sc = (qg @ kg.t()).masked_fill(~dense_mask, float("-inf"))
        return torch.softmax(sc, 1) @ vg

    def sparse_grad() -> torch.Tensor:
        sc = torch.sparse.sampled_addmm(m_csr, qg, kg.t(), beta=0.0)
        return torch.sparse.mm(torch.sparse.softmax(sc.to_sparse_coo(), 1), vg)

    fns = {"ours": fwd_bwd(lambda: sparse_attention(qg, kg, vg, mask, scale=1.0), [qg, kg, vg]),
           "dense": fwd_bwd(dense_grad, [qg, kg, vg])}
    try:
        fwd_bwd(sparse_grad, [qg, kg, vg])()
        fns["torch.sparse"] = fwd_bwd(sparse_grad, [qg, kg, vg])
    except (RuntimeError, NotImplementedError) as e:  # torch.sparse lacks a backward in this chain
        print(f"# attention forward+backward: torch.sparse skipped ({str(e).splitlines()[0][:80]})")
    mask_dense_values = TorchUST.with_values(mask, mask.values().to(q.dtype))

    def chain() -> torch.Tensor:  # the torch functions on a TorchUST mask (its handlers)
        sc = torch.sparse.sampled_addmm(mask_dense_values, qg, kg.t(), beta=0.0)
        return torch.mm(torch.sparse.softmax(sc, 1), vg)

    fns["chain"] = fwd_bwd(chain, [qg, kg, vg])
    t = best_ms(fns, args.reps)
    peers = {k: t[k] for k in ("torch.sparse", "dense") if k in t}
    out["forward+backward"] = {"ours": t["ours"], **peers}
    out["fwd+bwd torch chain"] = {"ours": t["chain"], **peers}
    return out


def autoencoder(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    torch.manual_seed(0)
    sizes = [784, 512, 128, 512, 784]
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    dense = nn.Sequential(*layers[:-1])
    for m in dense:
        if isinstance(m, nn.Linear):
            with torch.no_grad():
                m.weight.copy_(ScalarFraction(0.9)(m.weight))
    ours = copy.deepcopy(dense)
    s = schedule(ours)
    for name, m in ours.named_modules():
        if isinstance(m, nn.Linear):
            s[f"{name}.weight"].set_format("CSR")
    s.apply()
    ws = [m.weight.detach().to_sparse_coo().requires_grad_(True) for m in dense if isinstance(m, nn.Linear)]
    bs = [m.bias for m in dense if isinstance(m, nn.Linear)]

    def torch_sparse(x: torch.Tensor) -> torch.Tensor:
        h = x.t()
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = torch.sparse.mm(w, h) + b[:, None]
            if i < len(ws) - 1:
                h = torch.relu(h)
        return h.t()

    x = torch.randn(args.batch, 784)
    fns = {"ours": lambda: ours(x), "torch.sparse": lambda: torch_sparse(x), "dense": lambda: dense(x)}
    torch.testing.assert_close(ours(x), dense(x), rtol=1e-4, atol=1e-4)
    out = {}
    with torch.no_grad():
        out["forward"] = best_ms(fns, args.reps)
    params = {"ours": list(ours.parameters()), "torch.sparse": ws + bs, "dense": list(dense.parameters())}
    out["forward+backward"] = best_ms({k: fwd_bwd(v, params[k]) for k, v in fns.items()}, args.reps)
    return out


WORKLOADS = {"gcn": gcn, "moe": moe, "attention": attention, "autoencoder": autoencoder}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=20000, help="GCN graph nodes (the issue's size: 100000)")
    ap.add_argument("--degree", type=int, default=8, help="GCN average degree")
    ap.add_argument("--dense-limit", type=int, default=8000, help="largest graph run with a dense adjacency")
    ap.add_argument("--tokens", type=int, default=4096, help="MoE tokens")
    ap.add_argument("--seq", type=int, default=2048, help="attention sequence length (the issue's: 4096)")
    ap.add_argument("--density", type=float, default=0.05, help="attention mask density")
    ap.add_argument("--batch", type=int, default=64, help="autoencoder batch")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", nargs="*", choices=list(WORKLOADS), default=list(WORKLOADS))
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; times in ms (best of {args.reps})")
    print(f"{'workload':<12} {'pass':<17} {'ours':>9} {'torch.sparse':>13} {'dense':>9} {'sparse/ours':>12} "
          f"{'dense/ours':>11}")
    for name in args.only:
        for mode, t in WORKLOADS[name](args).items():
            o, ts, dn = t.get("ours"), t.get("torch.sparse"), t.get("dense")

            def fmt(x: float | None) -> str:
                return "-" if x is None else f"{x:.2f}"

            def ratio(x: float | None) -> str:
                return "-" if x is None or o is None else f"{x / o:.2f}x"

            print(f"{name:<12} {mode:<17} {fmt(o):>9} {fmt(ts):>13} {fmt(dn):>9} {ratio(ts):>12} {ratio(dn):>11}",
                  flush=True)


if __name__ == "__main__":
    main()
