"""Reading GPU modules: op lookup and which kernel indices a single thread owns.

Shared by the rewrites in ``gpu_kernels`` and ``gpu_transforms`` (run inside the compile process).
A thread owns an index computed from its parallel loop's induction variable (or its thread/block id)
by adds, multiplies and casts with loop indices and constants; an index using a value read from
memory (``i + crd[p]``) may collide across threads.
"""
from __future__ import annotations

from mlir import ir, passmanager

_DERIVE_OPS = ("arith.addi", "arith.muli", "arith.index_cast", "arith.index_castui", "arith.extui",
               "arith.extsi", "arith.trunci")


def op_of(x) -> ir.Operation:  # noqa: ANN001 - OpView or Operation
    """The Operation of an OpView (or the Operation itself)."""
    return x.operation if hasattr(x, "operation") else x


def walk(root: ir.Operation, name: str | tuple[str, ...]) -> list[ir.Operation]:
    """Every op named ``name`` (or one of the names) under ``root``, in walk order."""
    names = (name,) if isinstance(name, str) else name
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def defining_op(v: ir.Value) -> ir.Operation | None:
    """The op producing ``v`` (None for a block argument)."""
    return None if isinstance(v.owner, ir.Block) else op_of(v.owner)


def same(a: ir.Value, b: ir.Value) -> bool:
    """Whether ``a`` and ``b`` are the same SSA value."""
    return a == b  # same SSA value


def run_passes(module: ir.Module, passes: str) -> None:
    """Run a ``builtin.module(...)`` pipeline on ``module``."""
    passmanager.PassManager.parse(passes).run(module.operation)


def owned_values(kernel: ir.Operation) -> list[ir.Value]:
    """Induction variables of the kernel's thread-distributed loops and values derived from them."""
    owned: list[ir.Value] = []
    thread_vals: list[ir.Value] = [op_of(o).results[0] for o in walk(kernel, ("gpu.thread_id", "gpu.block_id"))]

    def from_thread(v: ir.Value, depth: int = 0) -> bool:
        if any(same(v, t) for t in thread_vals):
            return True
        op = defining_op(v)
        if op is None or depth > 8 or op.name not in _DERIVE_OPS:
            return False
        return any(from_thread(x, depth + 1) for x in op.operands)

    for loop in walk(kernel, "scf.for"):
        if from_thread(loop.operands[0]):
            owned.append(loop.regions[0].blocks[0].arguments[0])
    return owned + thread_vals


def loaded(v: ir.Value, depth: int = 0) -> bool:
    """Whether ``v`` depends on a value read from memory (an indirection such as ``crd[p]``)."""
    op = defining_op(v)
    if op is None:
        return False
    if op.name in ("memref.load", "vector.load", "vector.extractelement", "vector.extract") or depth > 8:
        return True
    return any(loaded(x, depth + 1) for x in op.operands)


def is_owned(v: ir.Value, owned: list[ir.Value], depth: int = 0) -> bool:
    """``v`` is a thread's parallel index, or computed from one by adds, multiplies and casts with
    loop indices and constants - never with loaded values (``i + crd[p]`` may collide across threads)."""
    if any(same(v, o) for o in owned):
        return True
    op = defining_op(v)
    if op is None or depth > 8 or op.name not in _DERIVE_OPS:
        return False
    if any(loaded(x) for x in op.operands):
        return False
    return any(is_owned(x, owned, depth + 1) for x in op.operands)
