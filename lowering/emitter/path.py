"""The ``"emitter"`` lowering path: contractions on formats the sparsifier cannot encode."""
from __future__ import annotations

from typing import Any

from lowering.dispatch import Lowered, register_path
from lowering.emitter.kernel import emit_contraction


def lower_emitter(c: Any, target: str = "cpu", pipeline: Any = None) -> Lowered:
    """The walking-loop module of ``c``, compiled with the target's pipeline (the same stages and
    hook points as the sparsifier path: the sparsifier stages leave plain loops unchanged)."""
    if pipeline is None:
        from lowering.pipelines import Pipeline

        pipeline = Pipeline(target=target)
    return Lowered(emit_contraction(c), pipeline, "emitter")


def lower_emitter_rows(c: Any, target: str = "cpu", pipeline: Any = None) -> Lowered:
    """The row-range variant of ``c`` (``emit_contraction(c, rows=True)``) for multi-threaded runs."""
    if pipeline is None:
        from lowering.pipelines import Pipeline

        pipeline = Pipeline(target=target)
    return Lowered(emit_contraction(c, rows=True), pipeline, "emitter-rows")


register_path("emitter", lower_emitter)
register_path("emitter-rows", lower_emitter_rows)
