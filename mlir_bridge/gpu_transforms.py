"""GPU module rewrites, usable as ``Stage(module_fn=...)`` right after ``sparse-gpu-codegen``.

* ``require_kernels``: the sparsifier found a loop to run on the GPU (else CompileError).
* ``atomic_scatter``: a kernel store that no thread owns (its indices do not follow the
  thread's parallel loop, e.g. CSC's scatter into ``y[crd[p]]``) becomes ``memref.atomic_rmw``;
  the sparsifier itself emits such racy read-modify-write loops.
* ``device_resident``: the sparsifier's host code stages every buffer through ``gpu.alloc`` +
  ``gpu.memcpy``; this points kernels at the caller's (device) buffers instead, so arguments are
  device pointers, passed zero-copy, and checks that the host never dereferences them.
"""
from __future__ import annotations

from mlir import ir, passmanager

from .errors import CompileError

_ADD_KINDS = {"arith.addf": 0, "arith.addi": 1}  # arith::AtomicRMWKind addf / addi
_VIEW_OPS = ("memref.subview", "memref.cast", "memref.reinterpret_cast")
_DERIVE_OPS = ("arith.addi", "arith.muli", "arith.index_cast", "arith.index_castui", "arith.extui",
               "arith.extsi", "arith.trunci")
_HOST_OK = ("gpu.launch_func", "memref.dim", "func.return", "memref.extract_strided_metadata")


def _op(x) -> ir.Operation:  # noqa: ANN001 - OpView or Operation
    return x.operation if hasattr(x, "operation") else x


def _walk(root: ir.Operation, name: str | tuple[str, ...]) -> list[ir.Operation]:
    names = (name,) if isinstance(name, str) else name
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def _defining_op(v: ir.Value) -> ir.Operation | None:
    return None if isinstance(v.owner, ir.Block) else _op(v.owner)


def _same(a: ir.Value, b: ir.Value) -> bool:
    return a == b  # same SSA value

def _run(module: ir.Module, passes: str) -> None:
    passmanager.PassManager.parse(passes).run(module.operation)


def require_kernels(module: ir.Module) -> None:
    """CompileError unless the module has at least one GPU kernel."""
    if not _walk(module.operation, "gpu.func"):
        raise CompileError("no GPU kernel: the sparsifier found no parallel outer loop for this operation "
                           "and format (a compressed outer level, e.g. COO or DCSR, or a sparse output, "
                           "is not parallelized); use a format with a dense outer level (CSR, BSR) or "
                           "the cuSPARSE path", stage="gpu-kernels")


# ----- atomics ---------------------------------------------------------------------------------------
def _owned_values(kernel: ir.Operation) -> list[ir.Value]:
    """Induction variables of the kernel's thread-distributed loops and values derived from them."""
    owned: list[ir.Value] = []
    thread_vals: list[ir.Value] = [_op(o).results[0] for o in _walk(kernel, ("gpu.thread_id", "gpu.block_id"))]

    def from_thread(v: ir.Value, depth: int = 0) -> bool:
        if any(_same(v, t) for t in thread_vals):
            return True
        op = _defining_op(v)
        if op is None or depth > 8 or op.name not in _DERIVE_OPS:
            return False
        return any(from_thread(x, depth + 1) for x in op.operands)

    for loop in _walk(kernel, "scf.for"):
        if from_thread(loop.operands[0]):
            owned.append(loop.regions[0].blocks[0].arguments[0])
    return owned + thread_vals


def _loaded(v: ir.Value, depth: int = 0) -> bool:
    """Whether ``v`` depends on a value read from memory (an indirection such as ``crd[p]``)."""
    op = _defining_op(v)
    if op is None:
        return False
    if op.name in ("memref.load", "vector.load", "vector.extractelement", "vector.extract") or depth > 8:
        return True
    return any(_loaded(x, depth + 1) for x in op.operands)


def _is_owned(v: ir.Value, owned: list[ir.Value], depth: int = 0) -> bool:
    """``v`` is a thread's parallel index, or computed from one by adds, multiplies and casts with
    loop indices and constants - never with loaded values (``i + crd[p]`` may collide across threads)."""
    if any(_same(v, o) for o in owned):
        return True
    op = _defining_op(v)
    if op is None or depth > 8 or op.name not in _DERIVE_OPS:
        return False
    if any(_loaded(x) for x in op.operands):
        return False
    return any(_is_owned(x, owned, depth + 1) for x in op.operands)


def _rmw_operand(store: ir.Operation) -> tuple[ir.Operation, ir.Value] | None:
    """(add op, increment) when ``store`` writes ``load(same place) + increment``."""
    value, mem, idx = store.operands[0], store.operands[1], list(store.operands)[2:]
    add = _defining_op(value)
    if add is None or add.name not in _ADD_KINDS:
        return None
    for k in (0, 1):
        load = _defining_op(add.operands[k])
        if (load is not None and load.name == "memref.load" and _same(load.operands[0], mem)
                and all(_same(a, b) for a, b in zip(list(load.operands)[1:], idx))):
            return add, add.operands[1 - k]
    return None


def atomic_scatter(module: ir.Module) -> None:
    """Make every kernel store that no single thread owns an atomic add (CompileError if not an add).

    Scalar ``memref.store`` only: vector stores come from ust-mlir's emitter alone, whose parallel loops
    write disjoint outputs by construction (its ``parallel_dims``).
    """
    for kernel in _walk(module.operation, "gpu.func"):
        owned = _owned_values(kernel)
        for store in _walk(kernel, "memref.store"):
            mem = store.operands[1]
            idx = list(store.operands)[2:]
            if any(_is_owned(i, owned) for i in idx):
                continue
            home = _defining_op(mem)
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
    _run(module, "builtin.module(gpu.module(canonicalize,cse))")


# ----- device-resident buffers ------------------------------------------------------------------------
def _root_arg(v: ir.Value) -> ir.Value | None:
    """The function argument ``v`` is (a whole-buffer view of), or None."""
    for _ in range(16):
        if isinstance(v.owner, ir.Block):
            return v
        op = _op(v.owner)
        if op.name == "memref.cast":
            v = op.operands[0]
        elif op.name == "memref.subview":
            offs = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
            strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
            if any(o != 0 for o in offs) or any(s != 1 for s in strides):
                return None
            v = op.operands[0]
        else:
            return None
    return None


def _forward_token(op: ir.Operation) -> None:
    """Replace the async token result of ``op`` by its single async dependency."""
    tokens = [r for r in op.results if str(r.type) == "!gpu.async.token"]
    if not tokens:
        return
    deps = [o for o in op.operands if str(o.type) == "!gpu.async.token"]
    if len(deps) != 1:
        raise CompileError(f"device-resident: {op.name} with {len(deps)} async dependencies",
                           stage="device-resident")
    tokens[0].replace_all_uses_with(deps[0])


def _home_of(alloc: ir.Operation) -> ir.Value | None:
    """The argument a gpu.alloc stages (the only argument it is copied from or to), or None."""
    buf = alloc.results[0]
    homes: list[ir.Value] = []
    for use in buf.uses:
        user = _op(use.owner)
        if user.name != "gpu.memcpy":
            continue
        dst, src = [o for o in user.operands if str(o.type) != "!gpu.async.token"]
        other = src if _same(dst, buf) else dst
        root = _root_arg(other)
        if root is None:
            return None
        homes.append(root)
    if not homes or any(not _same(h, homes[0]) for h in homes):
        return None
    return homes[0]


def _drop_staging(func: ir.Operation) -> None:
    for alloc in _walk(func, "gpu.alloc"):
        home = _home_of(alloc)
        if home is None:
            continue
        buf = alloc.results[0]
        for use in list(buf.uses):
            user = _op(use.owner)
            if user.name in ("gpu.memcpy", "gpu.dealloc"):
                _forward_token(user)
                user.erase()
        if buf.type != home.type:
            with ir.InsertionPoint(alloc), alloc.location:
                home = ir.Operation.create("memref.cast", results=[buf.type], operands=[home]).results[0]
        buf.replace_all_uses_with(home)
        _forward_token(alloc)
        alloc.erase()


def _check_host_use(func: ir.Operation, name: str) -> None:
    args = func.regions[0].blocks[0].arguments
    for i, arg in enumerate(args):
        if "memref" not in str(arg.type):
            continue
        todo = [arg]
        while todo:
            v = todo.pop()
            for use in v.uses:
                user = _op(use.owner)
                if user.name in _VIEW_OPS:
                    todo.extend(user.results)
                elif user.name not in _HOST_OK:
                    raise CompileError(f"@{name}: argument {i} would be read or written by host code "
                                       f"({user.name}), so it cannot be a device buffer; this operation "
                                       "and format have no device-resident GPU lowering", stage="device-resident")
    for ret in _walk(func, "func.return"):
        for k, v in enumerate(ret.operands):
            if "memref" in str(v.type) and _root_arg(v) is None:
                raise CompileError(f"@{name}: result {k} is not one of the arguments (a buffer allocated "
                                   "by the host code); GPU kernels must write into given outputs",
                                   stage="device-resident")


def device_resident(module: ir.Module) -> None:
    """Kernels use the caller's device buffers directly; the host touches none of them."""
    require_kernels(module)
    _run(module, "builtin.module(inline,canonicalize)")
    for func in _walk(module.operation, "func.func"):
        if len(func.regions[0].blocks) == 0:
            continue
        _drop_staging(func)
    _run(module, "builtin.module(canonicalize,cse,symbol-dce)")
    for func in _walk(module.operation, "func.func"):
        if len(func.regions[0].blocks) == 0:
            continue
        _check_host_use(func, ir.StringAttr(func.attributes["sym_name"]).value)


# ----- launch grid ------------------------------------------------------------------------------------
_MAX_BLOCKS = 65535


def _kernel_trip_count(kernel: ir.Operation) -> int | None:
    """Constant upper bound of the kernel's grid-stride loop (the first loop starting at the thread's
    global index), or None (e.g. kernels of gpu-kernel-outlining, which are not grid-stride)."""
    owned = _owned_values(kernel)
    for loop in _walk(kernel, "scf.for"):
        if not any(_same(loop.regions[0].blocks[0].arguments[0], o) for o in owned):
            continue
        ub = _defining_op(loop.operands[1])
        if ub is not None and ub.name == "arith.constant":
            return ir.IntegerAttr(ub.attributes["value"]).value
        return None
    return None


def grid_size(module: ir.Module) -> None:
    """Launch enough blocks for one thread per outer iteration (the sparsifier launches one block).

    Kernels are grid-stride loops, so any grid size is correct; this one fills the device.
    """
    kernels = {ir.StringAttr(k.attributes["sym_name"]).value: k for k in _walk(module.operation, "gpu.func")}
    for launch in _walk(module.operation, "gpu.launch_func"):
        ref = str(launch.attributes["kernel"])  # @module::@kernel
        kernel = kernels.get(ref.rsplit("::@", 1)[-1])
        trips = _kernel_trip_count(kernel) if kernel is not None else None
        if not trips:
            continue
        ndeps = sum(1 for o in launch.operands if str(o.type) == "!gpu.async.token")
        block = _defining_op(launch.operands[ndeps + 3])
        if block is None or block.name != "arith.constant":
            continue
        threads = ir.IntegerAttr(block.attributes["value"]).value
        blocks = max(1, min(_MAX_BLOCKS, -(-trips // threads)))
        with ir.InsertionPoint(launch), launch.location:
            value = ir.Operation.create("arith.constant", results=[ir.IndexType.get()],
                                        attributes={"value": ir.IntegerAttr.get(ir.IndexType.get(), blocks)})
        launch.operands[ndeps] = value.results[0]


# ----- loop code that allocates its own output (ust-mlir's emitter) ------------------------------------------------
def _self_copy(store: ir.Operation) -> bool:
    """``store load(m[idx]) -> m[idx]``: a no-op."""
    src = _defining_op(store.operands[0])
    return (src is not None and src.name == "memref.load" and _same(src.operands[0], store.operands[1])
            and all(_same(a, b) for a, b in zip(list(src.operands)[1:], list(store.operands)[2:])))


def output_in_place(module: ir.Module) -> None:
    """A function returning a fresh ``memref.alloc`` initialised by copying argument ``c`` into it
    writes into ``c`` instead (no host allocation, no host copy), so its loops can run on the device."""
    for func in _walk(module.operation, "func.func"):
        if len(func.regions[0].blocks) == 0:
            continue
        for ret in _walk(func, "func.return"):
            for v in ret.operands:
                alloc = _defining_op(v)
                if alloc is None or alloc.name != "memref.alloc":
                    continue
                sources = set()
                for use in v.uses:
                    user = _op(use.owner)
                    if user.name == "memref.store" and use.operand_number == 1:
                        src = _defining_op(user.operands[0])
                        if src is not None and src.name == "memref.load" and isinstance(src.operands[0].owner, ir.Block):
                            sources.add(src.operands[0])
                c = [s for s in sources if s.type == v.type]
                if len(c) != 1:
                    continue
                v.replace_all_uses_with(c[0])
                alloc.erase()
                for store in _walk(func, "memref.store"):
                    if _self_copy(store):
                        load = _defining_op(store.operands[0])
                        store.erase()
                        if load is not None and not list(load.results[0].uses):
                            load.erase()
    # no canonicalize here: it would fold single-iteration parallel loops before they become kernels
