"""The built-in paths, kernels, passes and pipelines of ``lowering``: the one place registering them.

``lowering/__init__`` calls :func:`register_all` once, when the package is first imported:

- lowering paths (:func:`lowering.dispatch.register_path`): ``"sparsifier"`` (MLIR's sparsifier),
  ``"emitter"`` and ``"emitter-rows"`` (ust-mlir's own code generator);
- kernels (:func:`lowering.register_kernel`): the SpGEMM kernel for CSR x CSR -> CSR and CSC x CSC -> CSC;
- passes (:func:`lowering.register_pass`): ``widen-i1`` at ``after_bufferization``;
- the GPU: the ``"gpu"`` pipeline's stages and the ``"emitter-gpu"`` path's builder.

The CUDA compilation target (``mlir_bridge.gpu.GPU``) registers itself in ``mlir_bridge``, which must
not import ``lowering``.
"""
from __future__ import annotations

from frontend.format import NamedFormats

from . import dispatch, pipelines
from .emitter.path import lower_emitter, lower_emitter_rows
from .gpu.dispatch import register_gpu_emitter
from .gpu.emitter import lower_emitter_gpu
from .gpu.pipeline import gpu_stages
from .kernels import spgemm
from .kernels.registry import register_kernel
from .sparsifier.path import lower_sparsifier


def register_all() -> None:
    """Register every built-in (see the module docstring); call once."""
    dispatch.register_path("sparsifier", lower_sparsifier)
    dispatch.register_path("emitter", lower_emitter)
    dispatch.register_path("emitter-rows", lower_emitter_rows)
    register_kernel("matmul", (NamedFormats.CSR, NamedFormats.CSR), spgemm.build, name="spgemm-csr",
                    when=spgemm.applies, row_ranges=spgemm.row_operand, bounds_safe=True)
    register_kernel("matmul", (NamedFormats.CSC, NamedFormats.CSC), spgemm.build_csc, name="spgemm-csc",
                    when=spgemm.applies, row_ranges=spgemm.row_operand, bounds_safe=True)
    pipelines.register_pass("after_bufferization", pipelines.WIDEN_I1)
    pipelines.register_stages("gpu", gpu_stages)
    register_gpu_emitter(lower_emitter_gpu)
