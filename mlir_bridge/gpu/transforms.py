"""Rewrites of the host code of GPU modules (``Stage(module_fn=...)``), so kernels use the caller's buffers.

* ``device_resident``: the sparsifier's host code stages every buffer through ``gpu.alloc`` +
  ``gpu.memcpy``; this points kernels at the caller's (device) buffers instead, so arguments are
  device pointers, passed zero-copy, and checks that the host never dereferences them.
* ``output_in_place``: loop code returning a fresh allocation initialised from argument ``c`` (ust-mlir's
  emitter) writes into ``c`` instead.
The kernel rewrites (``require_kernels``, ``atomic_scatter``, ``grid_size``) live in ``gpu_kernels``.
"""
from __future__ import annotations

from mlir import ir

from mlir_bridge.errors import CompileError
from mlir_bridge.gpu.ir import defining_op, op_of, run_passes, same, walk
from mlir_bridge.gpu.kernels import atomic_scatter, grid_size, require_kernels

__all__ = ["atomic_scatter", "device_resident", "grid_size", "output_in_place", "require_kernels"]

_VIEW_OPS = ("memref.subview", "memref.cast", "memref.reinterpret_cast")
_HOST_OK = ("gpu.launch_func", "memref.dim", "func.return", "memref.extract_strided_metadata")


def _root_arg(v: ir.Value) -> ir.Value | None:
    """The function argument ``v`` is (a whole-buffer view of), or None."""
    for _ in range(16):
        if isinstance(v.owner, ir.Block):
            return v
        op = op_of(v.owner)
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
        user = op_of(use.owner)
        if user.name != "gpu.memcpy":
            continue
        dst, src = [o for o in user.operands if str(o.type) != "!gpu.async.token"]
        other = src if same(dst, buf) else dst
        root = _root_arg(other)
        if root is None:
            return None
        homes.append(root)
    if not homes or any(not same(h, homes[0]) for h in homes):
        return None
    return homes[0]


def _drop_staging(func: ir.Operation) -> None:
    for alloc in walk(func, "gpu.alloc"):
        home = _home_of(alloc)
        if home is None:
            continue
        buf = alloc.results[0]
        for use in list(buf.uses):
            user = op_of(use.owner)
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
                user = op_of(use.owner)
                if user.name in _VIEW_OPS:
                    todo.extend(user.results)
                elif user.name not in _HOST_OK:
                    raise CompileError(f"@{name}: argument {i} would be read or written by host code "
                                       f"({user.name}), so it cannot be a device buffer; this operation "
                                       "and format have no device-resident GPU lowering", stage="device-resident")
    for ret in walk(func, "func.return"):
        for k, v in enumerate(ret.operands):
            if "memref" in str(v.type) and _root_arg(v) is None:
                raise CompileError(f"@{name}: result {k} is not one of the arguments (a buffer allocated "
                                   "by the host code); GPU kernels must write into given outputs",
                                   stage="device-resident")


def device_resident(module: ir.Module) -> None:
    """Kernels use the caller's device buffers directly; the host touches none of them."""
    require_kernels(module)
    run_passes(module, "builtin.module(inline,canonicalize)")
    for func in walk(module.operation, "func.func"):
        if len(func.regions[0].blocks) == 0:
            continue
        _drop_staging(func)
    run_passes(module, "builtin.module(canonicalize,cse,symbol-dce)")
    for func in walk(module.operation, "func.func"):
        if len(func.regions[0].blocks) == 0:
            continue
        _check_host_use(func, ir.StringAttr(func.attributes["sym_name"]).value)


def _self_copy(store: ir.Operation) -> bool:
    """``store load(m[idx]) -> m[idx]``: a no-op."""
    src = defining_op(store.operands[0])
    return (src is not None and src.name == "memref.load" and same(src.operands[0], store.operands[1])
            and all(same(a, b) for a, b in zip(list(src.operands)[1:], list(store.operands)[2:])))


def output_in_place(module: ir.Module) -> None:
    """A function returning a fresh ``memref.alloc`` initialised by copying argument ``c`` into it
    writes into ``c`` instead (no host allocation, no host copy), so its loops can run on the device."""
    for func in walk(module.operation, "func.func"):
        if len(func.regions[0].blocks) == 0:
            continue
        for ret in walk(func, "func.return"):
            for v in ret.operands:
                alloc = defining_op(v)
                if alloc is None or alloc.name != "memref.alloc":
                    continue
                sources = set()
                for use in v.uses:
                    user = op_of(use.owner)
                    if user.name == "memref.store" and use.operand_number == 1:
                        src = defining_op(user.operands[0])
                        if (src is not None and src.name == "memref.load"
                                and isinstance(src.operands[0].owner, ir.Block)):
                            sources.add(src.operands[0])
                c = [s for s in sources if s.type == v.type]
                if len(c) != 1:
                    continue
                v.replace_all_uses_with(c[0])
                alloc.erase()
                for store in walk(func, "memref.store"):
                    if _self_copy(store):
                        load = defining_op(store.operands[0])
                        store.erase()
                        if load is not None and not list(load.results[0].uses):
                            load.erase()
    # no canonicalize here: it would fold single-iteration parallel loops before they become kernels
