"""Compiling solver modules: loop-level cleanups, then the project's CPU pipeline, via mlir_bridge.

Solvers built for several threads hold ``scf.parallel`` loops (see :class:`lowering.solve.vectors.Team`);
they are lowered to OpenMP (``convert-scf-to-openmp`` with a fixed team size, then ``convert-to-llvm``)
and linked with the LLVM-compatible OpenMP runtime of the ``intel-openmp`` package (``libiomp5``), found
through an rpath when a cached module is loaded. docs/solve.md says why OpenMP and not the async runtime.
"""
from __future__ import annotations

from functools import cache

from mlir_bridge import CPU, CompiledModule, Stage, Target, compile_module
from mlir_bridge.toolchain import distribution_library

#: Folds single-trip loops (CSR is 1x1 blocks), hoists invariant loads, removes duplicates.
CLEANUP = Stage("solve-cleanup", passes="builtin.module(canonicalize,cse,loop-invariant-code-motion,"
                                        "canonicalize,cse)")

#: Where the OpenMP runtime comes from (a pinned dependency in pyproject.toml).
OPENMP_DIST, OPENMP_LIBRARY = "intel-openmp", "libiomp5.so"


def openmp_available() -> bool:
    """Whether the OpenMP runtime that parallel solvers link is installed."""
    return distribution_library(OPENMP_DIST, OPENMP_LIBRARY) is not None


@cache
def openmp_target() -> Target:
    """The CPU target linking the OpenMP runtime (parallel solvers, models with threaded weight kernels)."""
    lib = distribution_library(OPENMP_DIST, OPENMP_LIBRARY)
    if lib is None:
        raise RuntimeError(f"parallel solvers need the OpenMP runtime {OPENMP_LIBRARY} of the {OPENMP_DIST!r} "
                           "package (pip install the project again, or pass threads=1)")
    return Target(name="cpu-openmp", extra_libs=(str(lib),))


@cache
def _stages(threads: int) -> tuple[Stage, ...]:
    from ..pipelines import Pipeline

    cpu = Pipeline(target="cpu").stages()
    if threads == 1:
        return (CLEANUP, *cpu)
    openmp = Stage("scf-to-openmp", passes=f"builtin.module(convert-scf-to-openmp{{num-threads={threads}}})")
    return (CLEANUP, openmp, *cpu)


def compile_solver(text: str, threads: int = 1) -> CompiledModule:
    """Compile a solver module (memref-only functions) through mlir_bridge's cache.

    ``threads`` must match the team size the module was built for (its ``scf.parallel`` loops).
    """
    return compile_module(text, _stages(threads), target=openmp_target() if threads > 1 else CPU)
