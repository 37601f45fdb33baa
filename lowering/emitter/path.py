"""The ``"emitter"`` and ``"emitter-rows"`` lowering paths: contractions on formats the sparsifier cannot
encode, and the row-range variant of multi-threaded runs (registered by :mod:`lowering.builtins`)."""
from __future__ import annotations

from ..contraction import Contraction
from ..dispatch import Lowered
from ..pipelines import Pipeline
from .kernel import emit_contraction


def lower_emitter(c: Contraction, target: str = "cpu") -> Lowered:
    """The walking-loop module of ``c``, compiled with the target's pipeline (the same stages and
    hook points as the sparsifier path: the sparsifier stages leave plain loops unchanged)."""
    return Lowered(emit_contraction(c), Pipeline(target=target), "emitter")


def lower_emitter_rows(c: Contraction, target: str = "cpu") -> Lowered:
    """The row-range variant of ``c`` (``emit_contraction(c, rows=True)``) for multi-threaded runs."""
    return Lowered(emit_contraction(c, rows=True), Pipeline(target=target), "emitter-rows")
