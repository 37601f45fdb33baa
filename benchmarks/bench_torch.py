"""PyTorch MLP inference (n -> n -> n -> 10) pruned to unstructured sparsity: dense torch, torch.sparse CSR,
TorchUST with CSR and DELTA(8) weights, and ``frontend.compile`` of the CSR model; weight bytes per format.

Times are the best of ``--reps`` interleaved rounds after warm-up (first forwards compile; the machine is shared,
so compare ratios within one run).  Run::

    .venv/bin/python benchmarks/bench_torch.py --size 4096 --batch 1 32 --sparsity 0.5 0.7 0.9 0.95
    .venv/bin/python benchmarks/bench_torch.py --size 4096 --variants "dense torch" "torch.sparse CSR" "TorchUST CSR"
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import frontend  # noqa: E402
from frontend.format import NamedFormats as N  # noqa: E402
from frontend.torch_interface import TorchUST, choose_format, prune_model, reformat_model  # noqa: E402
from suitekit.timing import interleaved_min  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def mlp(n: int) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(n, n), nn.ReLU(), nn.Linear(n, n), nn.ReLU(), nn.Linear(n, 10)).eval()


class TorchCSR(nn.Module):
    """The same MLP with ``torch.sparse`` CSR weights (``torch.addmm`` on a CSR matrix)."""

    def __init__(self, dense: nn.Sequential) -> None:
        super().__init__()
        self.ws = [m.weight.detach().to_sparse_csr() for m in dense if isinstance(m, nn.Linear)]
        self.bs = [m.bias.detach() for m in dense if isinstance(m, nn.Linear)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.t()
        for k, (w, b) in enumerate(zip(self.ws, self.bs)):
            h = torch.addmm(b[:, None], w, h)
            if k < len(self.ws) - 1:
                h = torch.relu(h)
        return h.t()


def best_us(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, float]:
    """Best microseconds of each function over ``reps`` interleaved rounds (suitekit.timing)."""
    return {name: t * 1e6 for name, t in interleaved_min(fns, reps).items()}


def weight_bytes(model: nn.Module) -> int:
    total = 0
    for m in model.modules():
        if isinstance(m, nn.Linear):
            w = m.weight
            total += w.storage_bytes if isinstance(w, TorchUST) else w.numel() * w.element_size()
    return total


def csr_bytes(model: TorchCSR) -> int:
    return sum(sum(t.numel() * t.element_size() for t in (w.crow_indices(), w.col_indices(), w.values()))
               for w in model.ws)


def run(size: int, batches: list[int], sparsities: list[float], reps: int, variants: list[str]) -> None:
    print(f"MLP {size} -> {size} -> {size} -> 10, float32, {torch.get_num_threads()} torch threads; "
          "best microseconds per forward (ratio = first row / variant)")
    for s in sparsities:
        dense = prune_model(mlp(size), amount=s, names=["0", "2"])
        reformat_model(dense, lambda w: None)  # pruning permanent, weights stay dense
        tcsr = TorchCSR(dense)
        ucsr = copy.deepcopy(dense)
        reformat_model(ucsr, lambda w: choose_format(w, threshold=0, candidates=[N.CSR]) if w.shape[0] == size
                       else None)  # 32-bit indices
        udelta = copy.deepcopy(dense)
        reformat_model(udelta, lambda w: choose_format(w, threshold=0, candidates=[N.DELTA(8)])
                       if w.shape[0] == size else None)
        dense_nm = prune_model(mlp(size), amount=s, structured="2:4", names=["0", "2"])  # 2:4 = 50% per group
        reformat_model(dense_nm, lambda w: None)
        unm = copy.deepcopy(dense_nm)
        reformat_model(unm, lambda w: choose_format(w, threshold=0, candidates=[N.NM(2, 4)])
                       if w.shape[0] == size else None)
        print(f"\nsparsity {s:.0%}: weight bytes dense {weight_bytes(dense):,}, torch CSR {csr_bytes(tcsr):,} "
              f"(+ dense head), TorchUST CSR {weight_bytes(ucsr):,}, DELTA8 {weight_bytes(udelta):,}")
        for b in batches:
            x = torch.randn(b, size)
            eager = {"dense torch": dense, "torch.sparse CSR": tcsr, "TorchUST CSR": ucsr,
                     "TorchUST DELTA8": udelta, "TorchUST NM2:4": unm}
            refs = {name: dense_nm if "NM" in name else dense for name in VARIANTS}
            fns: dict[str, Callable[[], Any]] = {}
            compile_s = 0.0
            for name in VARIANTS:
                if name not in variants:
                    continue
                if name.startswith("compile"):
                    t0 = time.perf_counter()
                    model = frontend.compile(eager[name.replace("compile", "TorchUST")], x)
                    compile_s = max(compile_s, time.perf_counter() - t0)
                else:
                    model = eager[name]
                fns[name] = (lambda m: lambda: m(x))(model)
            with torch.inference_mode():
                for name, fn in fns.items():
                    err = (fn() - refs[name](x)).abs().max().item()
                    assert err < 1e-3, f"{name} differs from dense by {err}"
                rows = list(best_us(fns, reps).items())
            base = rows[0][1]
            print(f"  batch {b}" + (f" (frontend.compile took up to {compile_s:.1f} s):" if compile_s else ":"))
            for name, us in rows:
                print(f"    {name:<18} {us:>12,.0f} us   x{base / us:5.2f}")


VARIANTS = ("dense torch", "torch.sparse CSR", "TorchUST CSR", "TorchUST DELTA8", "TorchUST NM2:4", "compile CSR",
            "compile DELTA8", "compile NM2:4")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    p.add_argument("--sparsity", type=float, nargs="+", default=[0.5, 0.7, 0.9, 0.95])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads(N) first (TorchUST products follow it); default: torch's own")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS, metavar="NAME",
                   help=f"what to time (default all; ratios are against the first given): {', '.join(VARIANTS)}")
    a = p.parse_args()
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    print(f"# load average at start {os.getloadavg()[0]:.1f}")
    run(a.size, a.batch, a.sparsity, a.reps, a.variants)
    print(f"# load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
