"""Pipeline stages: a pass-pipeline string or a named Python rewrite."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Stage:
    """One step of a lowering pipeline.

    Exactly one of:

    * ``passes``: an MLIR pass pipeline, ``"builtin.module(...)"``;
    * ``text_fn``: ``(module_text: str) -> str``, needs no ``mlir`` import;
    * ``module_fn``: ``(module: mlir.ir.Module) -> None``, rewrites the module in
      place (called with the module's context active).

    Callbacks run in the crash-isolated compile process. ``version`` goes into the
    cache key: bump it when a callback's behaviour changes. For the subprocess
    fallback (no ``fork``), callbacks must be importable module-level functions.
    """

    name: str
    passes: str | None = None
    text_fn: Callable[[str], str] | None = None
    module_fn: Callable[[Any], None] | None = None
    version: str = "1"

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a Stage needs a non-empty name")
        given = [x is not None for x in (self.passes, self.text_fn, self.module_fn)]
        if sum(given) != 1:
            raise ValueError(f"stage {self.name!r}: give exactly one of passes, text_fn, module_fn")
        if self.passes is not None and not self.passes.strip().startswith("builtin.module("):
            raise ValueError(f"stage {self.name!r}: passes must be 'builtin.module(...)', got {self.passes!r}")

    @staticmethod
    def of(name: str, what: str | Callable[[str], str] | Stage) -> Stage:
        """A Stage from a pipeline string or a text callback (a Stage is returned as is)."""
        if isinstance(what, Stage):
            return what
        if isinstance(what, str):
            return Stage(name, passes=what)
        if callable(what):
            return Stage(name, text_fn=what)
        raise TypeError(f"cannot make a stage from {type(what).__name__}")

    def describe(self) -> str:
        """Stable text for cache keys."""
        if self.passes is not None:
            return f"{self.name}=passes:{self.passes.strip()}"
        fn = self.text_fn or self.module_fn
        kind = "text" if self.text_fn is not None else "module"
        qual = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        return f"{self.name}={kind}:{qual}@{self.version}"


class PipelineLike(Protocol):
    """What ``compile_module`` accepts as a pipeline (e.g. ``lowering.pipelines.Pipeline``)."""

    def stages(self) -> Sequence[Stage]: ...

    def describe(self) -> str: ...


PipelineArg = PipelineLike | str | Sequence[Stage]


def normalize(pipeline: PipelineArg) -> tuple[tuple[Stage, ...], str]:
    """(stages, description) of a pipeline object, a pass-pipeline string or a Stage list."""
    if isinstance(pipeline, str):
        stages: tuple[Stage, ...] = (Stage("passes", passes=pipeline),)
    elif hasattr(pipeline, "stages") and hasattr(pipeline, "describe"):
        stages = tuple(pipeline.stages())
    else:
        stages = tuple(pipeline)
        if not all(isinstance(s, Stage) for s in stages):
            raise TypeError("pipeline must be a Pipeline, a pass-pipeline string or a sequence of Stage")
    names = [s.name for s in stages]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate stage names in {names}")
    if hasattr(pipeline, "describe") and not isinstance(pipeline, str):
        return stages, pipeline.describe()
    return stages, "|".join(s.describe() for s in stages)
