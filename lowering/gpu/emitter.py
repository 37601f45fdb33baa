"""The ``"emitter-gpu"`` path: ust-mlir's own loop code (range/delta formats) on the GPU.

The emitter (``lowering.emitter``) already marks the loops whose iterations write disjoint outputs as
``scf.parallel`` (one per row for DELTA/CSR-like walks, one per row tile for diagonal formats). On the
GPU its output is made the given buffer ``c`` (``output_in_place``), then those loops are mapped to
blocks x threads before anything canonicalizes (which would fold a single-iteration loop away), then
the GPU pipeline runs as for the sparsifier; scatters no thread owns become atomics.
Registered with ``lowering.gpu.dispatch.register_gpu_emitter`` by :mod:`lowering.builtins`.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir_bridge import Stage

from ..contraction import Contraction
from ..dispatch import Lowered
from ..emitter.kernel import emit_contraction
from . import dia
from .pipeline import GpuPipeline, _gpu_fn

gpu_output_in_place = _gpu_fn("output_in_place")


@dataclass(frozen=True)
class GpuEmitterPipeline(GpuPipeline):
    """GpuPipeline preceded by ``output-in-place`` (the emitter allocates its result on the host)."""

    def stages(self) -> tuple[Stage, ...]:
        early = GpuPipeline.loops_stage(self.num_threads)
        return (Stage("output-in-place", module_fn=gpu_output_in_place, version="1"),
                Stage("emitter-loops", passes=early.passes)) + super().stages()


def lower_emitter_gpu(c: Contraction, chip: str, gpu_format: str = "fatbin") -> Lowered:
    """The emitter's module for ``c`` (init ``"c"``, as a separate copy loop that ``output-in-place`` turns
    into writing ``c``) with the GPU pipeline for ``chip``; DIA-I SpMV/SpMM use row-parallel loops instead
    (``lowering.gpu.dia``: one thread per row, not per row tile)."""
    text = dia.dia_rows_module(c) if dia.applies(c) else emit_contraction(c, fuse_init=False, prefetch=False)
    return Lowered(text, GpuEmitterPipeline(gpu_chip=chip, gpu_format=gpu_format), "emitter-gpu")

