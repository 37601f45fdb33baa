"""Compiling solver modules: loop-level cleanups, then the project's CPU pipeline, via mlir_bridge."""
from __future__ import annotations

from functools import cache

from mlir_bridge import CompiledModule, Stage, compile_module

#: Folds single-trip loops (CSR is 1x1 blocks), hoists invariant loads, removes duplicates.
CLEANUP = Stage("solve-cleanup", passes="builtin.module(canonicalize,cse,loop-invariant-code-motion,"
                                        "canonicalize,cse)")


@cache
def _stages(target: str) -> tuple[Stage, ...]:
    from ..pipelines import Pipeline

    return (CLEANUP, *Pipeline(target=target).stages())


def compile_solver(text: str, target: str = "cpu") -> CompiledModule:
    """Compile a solver module (memref-only functions) through mlir_bridge's cache."""
    return compile_module(text, _stages(target), target=target)
