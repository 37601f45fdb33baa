"""What Tensor's operators cost over the function they call, on a tiny 8x8 CSR matrix (where the per-call
overhead is all there is): ``A @ x`` against ``frontend.matmul(A, x)``, ``A + A`` against ``frontend.add``,
``A * 2.0`` against ``frontend.multiply``. Each pair is timed alternately, best of several rounds.

    .venv/bin/python benchmarks/bench_operators.py [--rounds 7] [--calls 20000]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import frontend as F  # noqa: E402
from frontend import NamedFormats, Tensor  # noqa: E402
from frontend.tensor import _operators  # noqa: E402


def _per_call(fn: Callable[[], Any], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def pair(op: Callable[[], Any], function: Callable[[], Any], rounds: int, calls: int) -> tuple[float, float]:
    """Best seconds per call of the operator and of the function, measured alternately."""
    op(), function()
    best_op = best_fn = float("inf")
    for _ in range(rounds):
        best_op = min(best_op, _per_call(op, calls))
        best_fn = min(best_fn, _per_call(function, calls))
    return best_op, best_fn


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=20000)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    d = rng.standard_normal((8, 8)) * (rng.random((8, 8)) < 0.3)
    A = Tensor.from_dense(d, NamedFormats.CSR)
    x = np.ones(8)
    cases = {
        "A @ x vs F.matmul(A, x)": (lambda: A @ x, lambda: F.matmul(A, x)),
        "A + A vs F.add(A, A)": (lambda: A + A, lambda: F.add(A, A)),
        "A * 2.0 vs F.multiply(A, 2.0)": (lambda: A * 2.0, lambda: F.multiply(A, 2.0)),
    }
    print(f"{'8x8 CSR, float64':<32} {'operator us':>12} {'function us':>12} {'overhead us':>12}")
    for name, (op, fn) in cases.items():
        t_op, t_fn = pair(op, fn, args.rounds, args.calls)
        print(f"{name:<32} {t_op * 1e6:12.2f} {t_fn * 1e6:12.2f} {(t_op - t_fn) * 1e6:12.2f}")
    # the operator's own cost, free of the operation's noise: the table entry swapped for a function that
    # returns at once, A @ x against calling that function
    real = _operators.TABLE["matmul"]

    def nothing(a: Any, b: Any) -> Any:
        return a

    _operators.register({"matmul": nothing})
    try:
        t_op, t_fn = pair(lambda: A @ x, lambda: nothing(A, x), args.rounds, args.calls * 10)
    finally:
        _operators.register({"matmul": real})
    print(f"{'A @ x dispatch alone':<32} {t_op * 1e6:12.3f} {t_fn * 1e6:12.3f} {(t_op - t_fn) * 1e6:12.3f}")


if __name__ == "__main__":
    main()
