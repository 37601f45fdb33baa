"""In-process MLIR: contexts, parsing with diagnostics, running stages, reading signatures.

Importing this module imports ``mlir``; the rest of the bridge imports it lazily.
"""
from __future__ import annotations

import threading

from mlir import ir, passmanager

from mlir_bridge.errors import CompileError
from mlir_bridge.signature import Signature, ValueSpec
from mlir_bridge.stage import Stage

#: Serializes in-process MLIR use in the parent against ``os.fork`` (see isolate.py).
MLIR_LOCK = threading.RLock()

_C_INTERFACE = "llvm.emit_c_interface"


def new_context() -> ir.Context:
    """A context with all upstream dialects available and no multithreading."""
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    return ctx


def _diagnostics(err: Exception) -> str:
    return str(err)


def parse(text: str, ctx: ir.Context) -> ir.Module:
    """Parse and verify ``text``; raise CompileError with MLIR's diagnostics if invalid."""
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as err:
            raise CompileError("invalid MLIR module", stage="verify", diagnostics=_diagnostics(err)) from None
        if not module.operation.verify():
            raise CompileError("invalid MLIR module", stage="verify", diagnostics="verification failed")
    return module


def verify_text(text: str) -> None:
    """Parse ``text`` in a private context of the calling process (raises CompileError)."""
    with MLIR_LOCK:
        parse(text, new_context())


def run_stage(module: ir.Module, stage: Stage) -> ir.Module:
    """Apply one stage; return the (possibly new) module."""
    ctx = module.context
    with ctx, ir.Location.unknown():
        try:
            if stage.passes is not None:
                passmanager.PassManager.parse(stage.passes).run(module.operation)
            elif stage.module_fn is not None:
                stage.module_fn(module)
            else:
                text = stage.text_fn(str(module))  # type: ignore[misc]
                if not isinstance(text, str):
                    raise CompileError(f"stage {stage.name!r} returned {type(text).__name__}, not str",
                                       stage=stage.name)
                module = ir.Module.parse(text)
            if not module.operation.verify():
                raise CompileError(f"stage {stage.name!r} produced invalid IR", stage=stage.name)
        except ir.MLIRError as err:
            raise CompileError(f"stage {stage.name!r} failed", stage=stage.name,
                               diagnostics=_diagnostics(err)) from None
    return module


def _public_funcs(module: ir.Module) -> list[ir.Operation]:
    out = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or len(op.regions[0].blocks) == 0:
            continue
        vis = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        if vis is None or ir.StringAttr(vis).value == "public":
            out.append(op)
    return out


def mark_c_interface(module: ir.Module) -> None:
    """Ask func-to-llvm for ``_mlir_ciface_<name>`` wrappers of every public function."""
    with module.context:
        for op in _public_funcs(module):
            op.attributes[_C_INTERFACE] = ir.UnitAttr.get()


def _value_spec(t: ir.Type, where: str) -> ValueSpec:
    t = t.maybe_downcast()
    if isinstance(t, ir.MemRefType):
        mt = t
        if ", " in str(mt):
            raise CompileError(f"{where}: memref with a layout or memory space is not supported: {mt}",
                               stage="signature")
        shape = tuple(-1 if mt.is_dynamic_dim(i) else int(mt.shape[i]) for i in range(mt.rank))
        spec = ValueSpec("memref", str(mt.element_type), shape)
    elif isinstance(t, ir.ShapedType):
        raise CompileError(f"{where}: {t} is not lowered to a memref (missing bufferization?)",
                           stage="signature")
    else:
        spec = ValueSpec("scalar", str(t))
    try:
        spec.check()
    except ValueError as err:
        raise CompileError(f"{where}: {err}", stage="signature") from None
    return spec


def read_signatures(module: ir.Module) -> dict[str, Signature]:
    """Signatures of the public ``func.func`` ops (empty once lowered to the LLVM dialect)."""
    sigs = {}
    for op in _public_funcs(module):
        name = ir.StringAttr(op.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        args = tuple(_value_spec(t, f"@{name} argument {i}") for i, t in enumerate(ftype.inputs))
        res = tuple(_value_spec(t, f"@{name} result {i}") for i, t in enumerate(ftype.results))
        sigs[name] = Signature(name, args, res)
    return sigs
