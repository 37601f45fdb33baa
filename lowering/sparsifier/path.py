"""The ``"sparsifier"`` lowering path: the ``linalg.generic`` module compiled by MLIR's sparsifier."""
from __future__ import annotations

from typing import Any

from ..contraction import Contraction
from ..dispatch import Lowered
from ..pipelines import Pipeline
from .generic import build_module

#: Sparsifier options for generated contractions on the CPU: 8-wide vector loops with reassociated
#: floating-point reductions (SpMM about 2x, SpMV at parity or better than unvectorized; see
#: benchmarks/bench_ops.py). Results may differ from sequential summation in the last bits.
CPU_SPARSIFIER_OPTIONS: dict[str, Any] = {"vl": 8, "reassociate_fp_reductions": True}


def sparsifier_pipeline(target: str = "cpu", lanes: int | None = None) -> Pipeline:
    """The sparsifier Pipeline generated contractions compile with on ``target``; ``lanes``
    (``Contraction.lanes``) replaces the CPU's vector length (1: no vectorization)."""
    if target != "cpu":
        return Pipeline(target=target)
    options = dict(CPU_SPARSIFIER_OPTIONS)
    if lanes is not None:
        options["vl"] = 0 if lanes == 1 else lanes
    return Pipeline(target=target, **options)


def lower_sparsifier(c: Contraction, target: str = "cpu") -> Lowered:
    """The ``linalg.generic`` module of ``c`` with the sparsifier pipeline for ``target``."""
    return Lowered(build_module(c), sparsifier_pipeline(target, c.lanes), "sparsifier")
