"""Which code path lowers a contraction, and lowering it through that path.

:func:`choose_path` is the one place deciding it: a registered kernel first (``"kernel:<name>"``), else
MLIR's sparsifier (``"sparsifier"``), or, for formats the sparsifier cannot take (range/delta levels,
diagonal maps: ``fmt.mlir_support() == "emitter"``; contractions with one stored operand and a dense result that the
sparsifier miscompiles, :mod:`lowering.miscompiles`), ust-mlir's own emitter (``"emitter"``).
Contractions with ``row_range=True`` (multi-threaded runs) always take the emitter's row-range variant
(``"emitter-rows"``). :func:`lower` lowers through the path it names: the builder registered for it with
:func:`register_path` (the built-in ones by :mod:`lowering.builtins`) or the kernel's own.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import pipelines
from .contraction import Contraction
from .emitter import rules
from .emitter.kernel import walked_index
from .kernels import registry as kernels
from .miscompiles import miscompiles
from .pipelines import Pipeline

KERNEL_PREFIX = "kernel:"


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


def choose_path(c: Contraction, target: str = "cpu") -> str:
    """``"kernel:<name>"`` for a registered kernel (``lowering.register_kernel``), else ``"sparsifier"``
    unless an operand's format needs ust-mlir's own emitter (``"emitter"``; ``"emitter-rows"`` for
    ``row_range``). The paths are the same on every CPU ``target``."""
    if c.row_range:
        return "emitter-rows"
    if any(t.elem != c.output.elem for t in c.inputs):  # f16/bf16 loaded and widened: only the emitter does
        return "emitter"
    entry = kernels.match_kernel(c)
    if entry is not None:
        return KERNEL_PREFIX + entry.name
    if _emitter_formats(c) or _walked_semantics(c):
        return "emitter"
    return "sparsifier"


#: The name ``lowering.path_of`` has always had.
path_of = choose_path


def lower(c: Contraction, target: str = "cpu", pipeline: Any = None) -> Lowered:
    """The lowering of ``c`` for ``target`` through :func:`choose_path`'s path; ``pipeline`` replaces the
    path's default pipeline."""
    path = choose_path(c, target)
    if path.startswith(KERNEL_PREFIX):
        lowered = _lower_kernel(c, target, path)
    else:
        builder = _PATHS.get(path)
        if builder is None:  # lowering/__init__ registers the built-in paths: a broken install
            raise RuntimeError(f"internal error: no lowering path {path!r} is registered (needed for "
                               f"{'; '.join(_emitter_formats(c)) or 'these operands'}); lowering.builtins "
                               "registers it when the lowering package is imported")
        lowered = builder(c, target)
    if pipeline is not None:
        lowered = Lowered(lowered.text, pipeline, lowered.path)
    return lowered


def _lower_kernel(c: Contraction, target: str, path: str) -> Lowered:
    entry = kernels.kernel_named(path[len(KERNEL_PREFIX):])
    pipe = entry.pipeline if entry.pipeline is not None else Pipeline(target=target)
    return Lowered(entry.build(c), pipe, path)


def _walked_semantics(c: Contraction) -> bool:
    """Whether ``c`` has one stored operand and a dense result, which the emitter computes right, and the
    sparsifier's code for it would be wrong (:func:`lowering.miscompiles.miscompiles`)."""
    if not miscompiles(c):
        return False
    try:
        walked_index(c)
    except ValueError:
        return False
    return True


def _emitter_formats(c: Contraction) -> list[str]:
    """The operands' formats MLIR's sparsifier cannot encode, named, each once."""
    names = []
    for t in c.inputs + (c.output,):
        f = t.fmt
        if f is not None and f.mlir_support() != "sparsifier":
            names.append(f"{f.name} {f}" if f.name else str(f))
    return list(dict.fromkeys(names))


def registry_state() -> tuple:
    """What registered kernels, level rules and hook-point passes currently are (plan caches key on it):
    their generation counters, which change on every (un)registration and never repeat in a process."""
    return (kernels.generation(), rules.generation(), pipelines.generation())
