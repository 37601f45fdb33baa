"""Module rewrites usable as ``Stage(module_fn=...)`` (run inside the compile process)."""
from __future__ import annotations

from mlir import ir, passmanager
from mlir.dialects import arith

from mlir_bridge.errors import CompileError

_ALLOCS = ("memref.alloc", "memref.alloca")


def _i1_allocs(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _ALLOCS:
            t = op.results[0].type.maybe_downcast()
            elem = t.element_type.maybe_downcast() if isinstance(t, ir.MemRefType) else None
            if isinstance(elem, ir.IntegerType) and elem.width == 1:
                found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def widen_i1_allocs(module: ir.Module) -> None:
    """Store ``i1`` buffers as ``i8``: works around MemRefToLLVM asserting on ``memref.store`` of i1.

    Every ``memref.alloc``/``alloca`` of i1 becomes i8; stores get ``arith.extui``, loads get
    ``arith.trunci``; ``linalg`` ops are first lowered to loops (only when such buffers exist).
    Any other use of such a buffer raises CompileError rather than miscompiling.
    """
    if not _i1_allocs(module):
        return
    passmanager.PassManager.parse("builtin.module(func.func(convert-linalg-to-loops))").run(module.operation)
    i8 = ir.IntegerType.get_signless(8)
    i1 = ir.IntegerType.get_signless(1)
    for alloc in _i1_allocs(module):
        old = alloc.results[0].type.maybe_downcast()
        buf = alloc.results[0]
        buf.set_type(ir.MemRefType.get(old.shape, i8, old.layout, old.memory_space))
        for use in list(buf.uses):
            user = use.owner
            user = user.operation if hasattr(user, "operation") else user
            if user.name == "memref.store" and use.operand_number == 1:
                with ir.InsertionPoint(user), user.location:
                    wide = arith.ExtUIOp(i8, user.operands[0]).result
                user.operands[0] = wide
            elif user.name == "memref.load":
                loaded = user.results[0]
                loaded.set_type(i8)
                with ir.InsertionPoint.after(user), user.location:
                    narrow = arith.TruncIOp(i1, loaded)
                loaded.replace_all_uses_except(narrow.result, narrow.operation)
            elif user.name == "memref.dealloc":
                continue
            else:
                raise CompileError(f"widen-i1: unsupported use of an i1 buffer by {user.name}",
                                   stage="widen-i1")
