"""Rewrites of GPU kernels (``Stage(module_fn=...)`` after ``sparse-gpu-codegen`` / ``gpu-loops``).

* ``require_kernels``: the module has a GPU kernel (else CompileError: the sparsifier found no loop).
* ``atomic_scatter``: a kernel store that no thread owns (e.g. CSC's ``y[crd[p]] += ...``, which the
  sparsifier emits unguarded) becomes ``memref.atomic_rmw``.
* ``grid_size``: the sparsifier launches one block of a grid-stride loop; launch enough blocks for one
  thread per outer iteration.
"""
from __future__ import annotations

from mlir import ir

from mlir_bridge.errors import CompileError
from mlir_bridge.gpu.ir import defining_op, is_owned, owned_values, run_passes, same, walk

_ADD_KINDS = {"arith.addf": 0, "arith.addi": 1}  # arith::AtomicRMWKind addf / addi


def require_kernels(module: ir.Module) -> None:
    """CompileError unless the module has at least one GPU kernel."""
    if not walk(module.operation, "gpu.func"):
        raise CompileError("no GPU kernel: the sparsifier found no parallel outer loop for this operation "
                           "and format (a compressed outer level, e.g. COO or DCSR, or a sparse output, "
                           "is not parallelized); use a format with a dense outer level (CSR, BSR) or "
                           "the cuSPARSE path", stage="gpu-kernels")


def _rmw_operand(store: ir.Operation) -> tuple[ir.Operation, ir.Value] | None:
    """(add op, increment) when ``store`` writes ``load(same place) + increment``."""
    value, mem, idx = store.operands[0], store.operands[1], list(store.operands)[2:]
    add = defining_op(value)
    if add is None or add.name not in _ADD_KINDS:
        return None
    for k in (0, 1):
        load = defining_op(add.operands[k])
        if (load is not None and load.name == "memref.load" and same(load.operands[0], mem)
                and all(same(a, b) for a, b in zip(list(load.operands)[1:], idx))):
            return add, add.operands[1 - k]
    return None


def atomic_scatter(module: ir.Module) -> None:
    """Make every kernel store that no single thread owns an atomic add (CompileError if not an add).

    Scalar ``memref.store`` only: vector stores come from ust-mlir's emitter alone, whose parallel loops
    write disjoint outputs by construction (its ``parallel_dims``).
    """
    for kernel in walk(module.operation, "gpu.func"):
        owned = owned_values(kernel)
        for store in walk(kernel, "memref.store"):
            mem = store.operands[1]
            idx = list(store.operands)[2:]
            if any(is_owned(i, owned) for i in idx):
                continue
            home = defining_op(mem)
            if home is not None and home.name == "memref.alloca":
                continue  # thread-private scratch
            found = _rmw_operand(store)
            if found is None:
                raise CompileError("a GPU kernel stores to an element several threads may write, and the "
                                   "store is not an addition that could be made atomic", stage="gpu-atomics")
            add, inc = found
            with ir.InsertionPoint(store), store.location:
                kind = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _ADD_KINDS[add.name])
                ir.Operation.create("memref.atomic_rmw", results=[inc.type], operands=[inc, mem, *idx],
                                    attributes={"kind": kind})
            store.erase()
    run_passes(module, "builtin.module(gpu.module(canonicalize,cse))")


_MAX_BLOCKS = 65535


def _kernel_trip_count(kernel: ir.Operation) -> int | None:
    """Constant upper bound of the kernel's grid-stride loop (the first loop starting at the thread's
    global index), or None (e.g. kernels of gpu-kernel-outlining, which are not grid-stride)."""
    owned = owned_values(kernel)
    for loop in walk(kernel, "scf.for"):
        if not any(same(loop.regions[0].blocks[0].arguments[0], o) for o in owned):
            continue
        ub = defining_op(loop.operands[1])
        if ub is not None and ub.name == "arith.constant":
            return ir.IntegerAttr(ub.attributes["value"]).value
        return None
    return None


def grid_size(module: ir.Module) -> None:
    """Launch enough blocks for one thread per outer iteration (the sparsifier launches one block).

    Kernels are grid-stride loops, so any grid size is correct; this one fills the device.
    """
    kernels = {ir.StringAttr(k.attributes["sym_name"]).value: k for k in walk(module.operation, "gpu.func")}
    for launch in walk(module.operation, "gpu.launch_func"):
        ref = str(launch.attributes["kernel"])  # @module::@kernel
        kernel = kernels.get(ref.rsplit("::@", 1)[-1])
        trips = _kernel_trip_count(kernel) if kernel is not None else None
        if not trips:
            continue
        ndeps = sum(1 for o in launch.operands if str(o.type) == "!gpu.async.token")
        block = defining_op(launch.operands[ndeps + 3])
        if block is None or block.name != "arith.constant":
            continue
        threads = ir.IntegerAttr(block.attributes["value"]).value
        blocks = max(1, min(_MAX_BLOCKS, -(-trips // threads)))
        with ir.InsertionPoint(launch), launch.location:
            value = ir.Operation.create("arith.constant", results=[ir.IndexType.get()],
                                        attributes={"value": ir.IntegerAttr.get(ir.IndexType.get(), blocks)})
        launch.operands[ndeps] = value.results[0]
