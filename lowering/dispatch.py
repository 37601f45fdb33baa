"""Which code path lowers a contraction: MLIR's sparsifier, or a registered emitter.

``lower(c, target)`` is the single place deciding it: a registered kernel first, else MLIR's sparsifier,
or, for formats the sparsifier cannot take (range/delta levels, diagonal maps:
``fmt.mlir_support() == "emitter"``), ust-mlir's own emitter (:mod:`lowering.emitter.path`, registered
with ``register_path("emitter", builder)`` when the ``lowering`` package is imported). Contractions with
``row_range=True`` (multi-threaded runs) always take the emitter's row-range variant (``"emitter-rows"``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from lowering.kernels import registry as _kernels
from lowering import pipelines as _pipelines
from lowering.contraction import Contraction, build_module
from lowering.emitter import rules as _rules


@dataclass(frozen=True)
class Lowered:
    """MLIR text, the pipeline to compile it with and the path's name (``"sparsifier"``, ...)."""

    text: str
    pipeline: Any
    path: str


_PATHS: dict[str, Callable[[Contraction, str], Lowered]] = {}


def register_path(name: str, builder: Callable[[Contraction, str], Lowered]) -> None:
    """Make ``builder(contraction, target) -> Lowered`` the lowering for path ``name``."""
    _PATHS[name] = builder


#: Sparsifier options for generated contractions on the CPU: 8-wide vector loops with reassociated
#: floating-point reductions (SpMM about 2x, SpMV at parity or better than unvectorized; see
#: benchmarks/bench_ops.py). Results may differ from sequential summation in the last bits.
CPU_SPARSIFIER_OPTIONS = {"vl": 8, "reassociate_fp_reductions": True}


def sparsifier_pipeline(target: str = "cpu") -> Any:
    """The sparsifier Pipeline generated contractions compile with on ``target``."""
    from lowering.pipelines import Pipeline

    return Pipeline(target=target, **(CPU_SPARSIFIER_OPTIONS if target == "cpu" else {}))


def _sparsifier(c: Contraction, target: str) -> Lowered:
    return Lowered(build_module(c), sparsifier_pipeline(target), "sparsifier")


register_path("sparsifier", _sparsifier)


def path_of(c: Contraction) -> str:
    """``"kernel:<name>"`` for a registered kernel (``lowering.register_kernel``), else ``"sparsifier"``
    unless an operand's format needs ust-mlir's own emitter."""
    from lowering.kernels.registry import match_kernel

    if c.row_range:
        return "emitter-rows"
    entry = match_kernel(c)
    if entry is not None:
        return f"kernel:{entry.name}"
    for t in c.inputs + (c.output,):
        if t.fmt is not None and t.fmt.mlir_support() != "sparsifier":
            return "emitter"
    return "sparsifier"


def _emitter_formats(c: Contraction) -> str:
    names = []
    for t in c.inputs + (c.output,):
        f = t.fmt
        if f is not None and f.mlir_support() != "sparsifier":
            names.append(f"{f.name} {f}" if getattr(f, "name", None) else str(f))
    return "; ".join(dict.fromkeys(names))


def lower(c: Contraction, target: str = "cpu", pipeline: Any = None) -> Lowered:
    """The lowering of ``c`` for ``target`` through the path its formats need (a registered kernel
    first); ``pipeline`` replaces the path's default pipeline."""
    lowered = _lower(c, target)
    if pipeline is not None:
        lowered = Lowered(lowered.text, pipeline, lowered.path)
    return lowered


def registry_state() -> tuple:
    """What registered kernels, level rules and hook-point passes currently are (plan caches key on it):
    their generation counters, which change on every (un)registration and never repeat in a process."""
    return (_kernels.generation(), _rules.generation(), _pipelines.generation())


def _lower(c: Contraction, target: str) -> Lowered:
    from lowering.kernels.registry import match_kernel

    entry = None if c.row_range else match_kernel(c)
    if entry is not None:
        if entry.pipeline is not None:
            pipe = entry.pipeline
        else:
            from lowering.pipelines import Pipeline
            pipe = Pipeline(target=target)
        return Lowered(entry.build(c), pipe, f"kernel:{entry.name}")
    path = path_of(c)
    builder = _PATHS.get(path)
    if builder is None:  # importing the lowering package registers both paths: a broken install
        raise RuntimeError(f"internal error: no lowering path {path!r} is registered (needed for "
                           f"{_emitter_formats(c) or 'these operands'}); lowering/__init__.py registers it "
                           "on import")
    return builder(c, target)
