"""Which of the project's modules one warm ``frontend.matmul(A, x)`` call runs code in (SciPy CSR SpMV).

    .venv/bin/python benchmarks/trace_call.py

Prints the number of distinct modules, the number of module entries (a call into another module than the
caller's counts once) and the sequence, traced with ``sys.setprofile``; docs/architecture.md lists the steps.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import frontend  # noqa: E402

PACKAGES = ("frontend", "lowering", "mlir_bridge")


def trace(fn: Any) -> list[str]:
    """Modules entered while ``fn()`` runs, in order, consecutive repeats folded."""
    seq: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            mod = frame.f_globals.get("__name__", "")
            if mod.split(".")[0] in PACKAGES and (not seq or seq[-1] != mod):
                seq.append(mod)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seq


def main() -> None:
    a = sp.random(200, 200, density=0.05, format="csr", random_state=0)
    x = np.ones(200)
    frontend.matmul(a, x)  # compiled and cached: the next call is the warm one
    seq = trace(lambda: frontend.matmul(a, x))
    distinct = list(dict.fromkeys(seq))
    print(f"{len(distinct)} modules, {len(seq)} module entries")
    print(" -> ".join(seq))


if __name__ == "__main__":
    main()
