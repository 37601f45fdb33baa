"""An exported torch program -> linalg-on-tensors MLIR text, with torch-mlir (its own MLIR, in-process).

torch-mlir's FX importer maps sparse torch layouts (COO, CSR, CSC, BSR, BSC) of a placeholder's
``meta["val"]`` to ``#sparse_tensor.encoding``s; its torch -> linalg pipeline then gives the text that
``mlir_bridge`` compiles with our sparsifier pipeline (the two MLIRs exchange only text).
"""
from __future__ import annotations

import re
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


#: torch-mlir leaves these as ``torch.operator`` (no lowering); they are layout conversions.
_CONVERSIONS = re.compile(
    r'^(?P<indent>\s*)(?P<res>%[\w.$-]+) = torch\.operator "torch\.aten\.(?:_?to_sparse\w*|_?to_dense)"'
    r'\((?P<src>%[\w.$-]+)(?:, [^)]*)?\) : \((?P<st>!torch\.vtensor<[^>]*>)(?:, [^)]*)?\) -> '
    r'(?P<rt>!torch\.vtensor<[^>]*>)\s*$')
_VTENSOR = re.compile(r"!torch\.vtensor<\[(?P<dims>[^\]]*)\],(?P<elem>[^,>]+)(?:,(?P<enc>[^>]+))?>")


def builtin_tensor_type(vtensor: str) -> str:
    """``!torch.vtensor<[2,?],f32,#enc>`` -> ``tensor<2x?xf32, #enc>`` (signed integers signless)."""
    m = _VTENSOR.fullmatch(vtensor.strip())
    if m is None:
        raise ValueError(f"not a ranked value tensor type: {vtensor}")
    dims = [d.strip() for d in m.group("dims").split(",") if d.strip()]
    dims = ["?" if d in ("?", "-1") else d for d in dims]
    elem = re.sub(r"^si(\d+)$", r"i\1", m.group("elem").strip())
    enc = f", {m.group('enc').strip()}" if m.group("enc") else ""
    return f"tensor<{''.join(d + 'x' for d in dims)}{elem}{enc}>"


def rewrite_sparse_conversions(text: str) -> str:
    """Replace torch-mlir's unlowered ``torch.operator "torch.aten._to_sparse*"`` / ``_to_dense`` (layout
    conversions: ``x.to_sparse()``, ``to_sparse_csr()``, ... inside a model) by ``sparse_tensor.convert``
    between the builtin tensor types of operand and result (the result type's encoding is eager's layout)."""
    out = []
    for k, line in enumerate(text.split("\n")):
        m = _CONVERSIONS.match(line)
        if m is None:
            out.append(line)
            continue
        ind, res, src, st, rt = m.group("indent", "res", "src", "st", "rt")
        bs, br = builtin_tensor_type(st), builtin_tensor_type(rt)
        a, c = f"%ust_cv{k}_in", f"%ust_cv{k}_out"
        out.append(f"{ind}{a} = torch_c.to_builtin_tensor {src} : {st} -> {bs}")
        out.append(f"{ind}{c} = sparse_tensor.convert {a} : {bs} to {br}")
        out.append(f"{ind}{res} = torch_c.from_builtin_tensor {c} : {br} -> {rt}")
    return "\n".join(out)


def _load_torch_conversion(context: Any) -> None:
    """Load the ``torch_c`` dialect into ``context`` (Python registers only ``torch``; running one of its
    passes loads it)."""
    from torch_mlir import ir
    from torch_mlir.passmanager import PassManager
    with context:
        PassManager.parse("builtin.module(torch-func-backend-type-conversion)").run(
            ir.Module.parse("module {}").operation)


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
        text = str(module)
        if "torch.operator" in text:
            rewritten = rewrite_sparse_conversions(text)
            if rewritten != text:
                _load_torch_conversion(context)
                module = ir.Module.parse(rewritten, context)
        run_pipeline_with_repro_report(module, TORCH_BACKEND, "Lowering TorchFX IR -> Torch Backend IR")
        module = lower_mlir_module(False, OutputType.LINALG_ON_TENSORS, module)
    except (TorchMlirCompilerError, NotImplementedError, RuntimeError) as err:
        raise TorchImportError(f"torch-mlir could not lower the model: {err}") from None
    except AssertionError as err:  # the importer asserts on layouts it cannot encode (COO with 1 sparse dim)
        raise TorchImportError(f"torch-mlir could not import the model (a layout or op it does not encode: "
                               f"{err!r})") from None
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
