"""A per-call pipeline: a base pipeline with extra stages at its hook points.

    pipe = with_stages(Pipeline(), after_bufferization=["builtin.module(func.func(loop-invariant-code-motion))"])
    Matmul(A, x, pipeline=pipe)

Unlike ``register_pass`` (global, every compile), the extra stages apply only where the pipeline is
passed; ``describe()`` includes them, so they are part of the compile cache key.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlir_bridge import Stage

from .pipelines import HOOK_POINTS, Pipeline

StageLike = str | Callable[[str], str] | Stage
#: Where each hook point sits: (anchor stage name, insert before it?).
_ANCHORS = {"before_sparsification": ("sparsify", True), "after_bufferization": ("sparsify", False),
            "before_llvm": ("to-llvm", True)}


@dataclass(frozen=True)
class CustomPipeline:
    """``base`` plus ``extra``: ``((hook_point, (Stage, ...)), ...)``."""

    base: Any
    extra: tuple[tuple[str, tuple[Stage, ...]], ...]

    def stages(self) -> tuple[Stage, ...]:
        out = list(self.base.stages())
        for hook, stages in self.extra:
            anchor, before = _ANCHORS[hook]
            names = [s.name for s in out]
            if anchor not in names:
                raise ValueError(f"pipeline {self.base.describe()[:60]}... has no {anchor!r} stage for {hook!r}")
            at = names.index(anchor) + (0 if before else 1)
            if not before:  # after the stages already registered at this hook (register_pass order)
                while at < len(out) and out[at].name not in ("lower", "to-llvm"):
                    at += 1
            out[at:at] = stages
        return tuple(out)

    def describe(self) -> str:
        return "Custom[" + self.base.describe() + "]:" + "|".join(
            f"{h}=" + ",".join(s.describe() for s in st) for h, st in self.extra)


def with_stages(base: Any = None, **hooks: Sequence[StageLike]) -> CustomPipeline:
    """``base`` (default ``Pipeline()``) with stages added at hook points, e.g.
    ``with_stages(before_llvm=[my_text_fn])``; strings are pass pipelines, callables text rewrites."""
    extra = []
    for hook, items in hooks.items():
        if hook not in HOOK_POINTS:
            raise ValueError(f"unknown hook point {hook!r}; known: {HOOK_POINTS}")
        if isinstance(items, (str, Stage)) or callable(items):
            items = [items]
        stages = tuple(Stage.of(f"{hook}-{k}" if not isinstance(s, Stage) else s.name, s)
                       for k, s in enumerate(items))
        extra.append((hook, stages))
    return CustomPipeline(base if base is not None else Pipeline(), tuple(extra))
