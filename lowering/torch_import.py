"""An exported torch program -> linalg-on-tensors MLIR text, with torch-mlir (its own MLIR, in-process).

torch-mlir's FX importer maps sparse torch layouts (COO, CSR, CSC, BSR, BSC) of a placeholder's
``meta["val"]`` to ``#sparse_tensor.encoding``s; its torch -> linalg pipeline then gives the text that
``mlir_bridge`` compiles with our sparsifier pipeline (the two MLIRs exchange only text).
"""
from __future__ import annotations

from typing import Any

#: torch-mlir's lowering from the imported torch dialect to the torch backend contract.
TORCH_BACKEND = ("builtin.module(func.func(torch-match-quantized-custom-ops), "
                 "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})")


class TorchImportError(ValueError):
    """torch-mlir could not import or lower the program (its diagnostics are in the message)."""


def decompositions() -> dict:
    """The decomposition table torch-mlir's importer expects (run before importing)."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    return get_decomposition_table()


def program_to_linalg(program: Any, func_name: str = "main") -> str:
    """Import a (decomposed) ``torch.export.ExportedProgram`` and lower it to linalg-on-tensors text."""
    from torch_mlir import ir
    from torch_mlir.compiler_utils import (
        OutputType,
        TorchMlirCompilerError,
        lower_mlir_module,
        run_pipeline_with_repro_report,
    )
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    context = ir.Context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    try:
        importer.import_frozen_program(program, func_name=func_name)
        module = importer.module
        run_pipeline_with_repro_report(module, TORCH_BACKEND, "Lowering TorchFX IR -> Torch Backend IR")
        module = lower_mlir_module(False, OutputType.LINALG_ON_TENSORS, module)
    except (TorchMlirCompilerError, NotImplementedError, RuntimeError) as err:
        raise TorchImportError(f"torch-mlir could not lower the model: {err}") from None
    return str(module)


#: The CPU pipeline's first stage for whole models: element-wise ops fuse with each other *before* named
#: ops (matmul) become generics, so nothing fuses into a sparse product's kernel (a dense producer fused
#: into a sparse matmul leaves a kernel the sparsifier does not sparsify, and lowering then fails).
MODEL_PREPARE = ("builtin.module(sparse-assembler{direct-out=true},func.func(linalg-fuse-elementwise-ops),"
                 "func.func(linalg-generalize-named-ops))")


def model_stages(pipeline: Any) -> tuple:
    """``pipeline``'s stages (a ``lowering.pipelines.Pipeline``) with :data:`MODEL_PREPARE` first."""
    from mlir_bridge import Stage
    stages = tuple(pipeline.stages())
    return tuple(Stage("prepare-model", passes=MODEL_PREPARE) if s.name == "prepare" else s for s in stages)
