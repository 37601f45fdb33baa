"""``torch.einsum`` with TorchUST operands on the compiled kernels, differentiable when the result is dense.

``einsum("bnd,bn->bd", E, G)`` (G a TorchUST, E dense) runs :func:`frontend.ops.einsum` once.  Its backward
is two more einsums over the same operands:

* the gradient of a dense operand ``k`` contracts the output gradient with the other operands into ``k``'s
  subscripts (``"bd,bn->bnd"`` for E; dense result, letters ``k`` alone carries are broadcast);
* the gradient of a TorchUST's stored values samples the same product at its stored entries: the pattern
  (every value 1) joins as one more operand indexed by the TorchUST's subscripts, and the result is written
  in its format (``"bnd,bd,bn->bn"`` for G), so no dense ``b x n`` gradient is ever formed.
"""
from __future__ import annotations

import threading
from typing import Any

import torch

from frontend.format import NamedFormats
from frontend.ops import _api as ops
from frontend.ops._cpu import CpuMatmul
from frontend.ops._options import MatmulOptions
from frontend.tensor._tensor import Tensor

from . import _storage as torch_storage
from ._products import _threads, dense_arg, to_torch
from ._wrapper import TensorWrapper

_DENSE_SAMPLED: set = set()  # (subscripts, structure key) the kernels cannot write in the pattern's format


def parse(subscripts: str, nops: int) -> tuple[list[str], str]:
    """``(input subscripts, output subscripts)`` of an explicit or implicit equation (no ellipsis)."""
    eq = subscripts.replace(" ", "")
    if "." in eq:
        raise ValueError(f"einsum on a TorchUST: ellipsis ('...') is not supported in {subscripts!r}")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != nops:
        raise ValueError(f"einsum {subscripts!r} names {len(ins)} operands, got {nops}")
    if not arrow:  # implicit output: the letters seen once, in alphabetical order
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for s in [*ins, out]:
        if not s.isalpha() or len(set(s)) != len(s):
            raise ValueError(f"einsum {subscripts!r}: subscripts must be distinct letters per operand, got {s!r}")
    return ins, out


def _kernel_arg(x: Any) -> Any:
    return x.ust if isinstance(x, TensorWrapper) else dense_arg(x)


def _run(subscripts: str, operands: list[Any], wrapper: type[TensorWrapper], out_format: Any = None) -> Any:
    """The einsum on the kernels, in torch; on the CPU with torch's threading (as the products)."""
    device = next((x.device for x in operands if isinstance(x, torch.Tensor)), None)
    args = [_kernel_arg(x) for x in operands]
    if device is not None and device.type == "cpu":
        planned = _planned(subscripts, operands, wrapper, MatmulOptions(out_format=out_format, threads=_threads()))
        if planned is not None:
            return planned
    return to_torch(_raw(subscripts, args, out_format, device), wrapper, device)


def _raw(subscripts: str, args: list[Any], out_format: Any, device: torch.device | None) -> Any:
    """:func:`frontend.ops.einsum` on kernel arguments; on the CPU with torch's threading."""
    if device is None or device.type == "cpu":
        options = MatmulOptions(out_format=out_format, threads=_threads())
        return CpuMatmul.for_einsum(subscripts, args, options).execute_once()
    return ops.einsum(subscripts, *args, out_format=out_format)


_NOT_PLANNED = object()  # a cache entry: this einsum has no planned form (sparse result, copied operand, ...)


def _planned(subscripts: str, operands: list[Any], wrapper: type[TensorWrapper], options: MatmulOptions) -> Any:
    """The einsum through a plan cached on its one TorchUST operand (per equation and dense operands' shapes
    and dtypes), the dense operands swapped in by pointer (:meth:`CpuMatmul.rebind_dense`): no preparation
    per call (about 0.4 ms of Python on the general path). The plan keeps the last call's dense operands
    referenced until the next call. None when it does not apply (several or no TorchUSTs, CUDA, a sparse
    result, a kernel that reads a copy): then the general path runs."""
    sparse = [k for k, x in enumerate(operands) if isinstance(x, TensorWrapper)]
    if len(sparse) != 1:
        return None
    dense = [dense_arg(x) if not isinstance(x, TensorWrapper) else None for x in operands]
    if any(d is not None and d.device.type != "cpu" for d in dense):
        return None
    s: TensorWrapper = operands[sparse[0]]
    plans = s.plans()
    key = ("einsum", subscripts, sparse[0], tuple((tuple(d.shape), d.dtype) for d in dense if d is not None),
           options.key())
    entry: Any = plans.get(key)
    if entry is None:
        entry = _NOT_PLANNED
        try:
            mm = CpuMatmul.for_einsum(subscripts, [s.ust if d is None else d for d in dense], options)
            mm.plan()
            for k, d in enumerate(dense):
                if d is not None:
                    mm.rebind_dense(k, d)  # ValueError when the kernel reads a copy
        except ValueError:
            pass
        else:
            entry = (mm, threading.Lock())
        plans[key] = entry
        if entry is _NOT_PLANNED:
            return None
    elif entry is _NOT_PLANNED:
        return None
    mm, lock = entry
    with lock:
        for k, d in enumerate(dense):
            if d is not None:
                mm.rebind_dense(k, d)
        out = mm.execute()
    return to_torch(out, wrapper)  # dense: rebind_dense refuses plans with another result


def _dense_grad(ins: list[str], out: str, k: int, grad: torch.Tensor, operands: list[Any],
                wrapper: type[TensorWrapper]) -> torch.Tensor:
    """The gradient of dense operand ``k``: ``grad`` contracted with the other operands into ``ins[k]``."""
    others = [i for i in range(len(ins)) if i != k]
    seen = set(out).union(*(ins[i] for i in others))
    target = "".join(c for c in ins[k] if c in seen)  # letters only k carries are broadcast afterwards
    eq = ",".join([out, *(ins[i] for i in others)]) + "->" + target
    g = _run(eq, [grad, *(operands[i] for i in others)], wrapper, out_format=NamedFormats.Dense(len(target)))
    shape = operands[k].shape
    if target != ins[k]:
        g = g.reshape([shape[p] if c in target else 1 for p, c in enumerate(ins[k])]).expand(shape)
    return g.to(operands[k].dtype)


def _sparse_grad(ins: list[str], out: str, k: int, grad: torch.Tensor, operands: list[Any]) -> torch.Tensor:
    """The gradient of TorchUST ``k``'s stored values: the product sampled at its stored entries."""
    s: TensorWrapper = operands[k]
    others = [i for i in range(len(ins)) if i != k]
    eq = ",".join([out, *(ins[i] for i in others), ins[k]]) + "->" + ins[k]
    args = [dense_arg(grad), *(_kernel_arg(operands[i]) for i in others), s.pattern()]
    fmt = s.pattern().tensor_format
    key = (eq, fmt.structure_key())
    if key not in _DENSE_SAMPLED:
        try:
            r = _raw(eq, args, fmt, grad.device)
        except ValueError:
            _DENSE_SAMPLED.add(key)
        else:
            if isinstance(r, Tensor) and r.is_sparse and r.nse == s.ust.nse:
                return torch_storage.as_torch(r.val).reshape(s.values().shape).to(s.values().device)
            _DENSE_SAMPLED.add(key)  # laid out unlike the operand (e.g. padding slots dropped)
    dense = to_torch(_raw(eq, args, NamedFormats.Dense(len(ins[k])), grad.device), type(s))
    return s.gather_stored(dense.reshape(-1)).to(s.values().device)


class _Einsum(torch.autograd.Function):
    """Forward: one compiled einsum.  Inputs: the equation's parts, the operands' holders, then the
    tensors autograd tracks (a TorchUST's values or the dense operand) in operand order."""

    @staticmethod
    def forward(ctx: Any, ins: list[str], out: str, holders: list[Any], *tracked: torch.Tensor) -> torch.Tensor:
        operands = [h if h is not None else t.detach() for h, t in zip(holders, tracked)]
        wrapper = type(next(h for h in holders if h is not None))
        ctx.ins, ctx.out, ctx.operands, ctx.wrapper = ins, out, operands, wrapper
        result = _run(",".join(ins) + "->" + out, operands, wrapper)
        if isinstance(result, TensorWrapper):
            raise NotImplementedError(f"gradients of einsum {','.join(ins)}->{out} with a sparse result are not "
                                      "supported; use torch.no_grad(), or torch.sparse.sampled_addmm for SDDMM")
        return result

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        grads: list[torch.Tensor | None] = [None, None, None]
        for k, x in enumerate(ctx.operands):
            if not ctx.needs_input_grad[3 + k]:
                grads.append(None)
            elif isinstance(x, TensorWrapper):
                grads.append(_sparse_grad(ctx.ins, ctx.out, k, grad, ctx.operands))
            else:
                grads.append(_dense_grad(ctx.ins, ctx.out, k, grad, ctx.operands, ctx.wrapper))
        return tuple(grads)


def einsum(subscripts: str, *operands: Any) -> Any:
    """``torch.einsum`` with at least one TorchUST operand (also ``einsum(eq, [ops])``): a compiled kernel;
    with a dense result, gradients flow to dense operands and to TorchUSTs' stored values."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum on a TorchUST takes the equation first (a str), got {type(subscripts).__name__}")
    for x in operands:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"einsum operands must be torch tensors or TorchUSTs, got {type(x).__name__}")
    ins, out = parse(subscripts, len(operands))
    for s, x in zip(ins, operands):
        if len(s) != x.dim():
            raise ValueError(f"einsum {subscripts!r}: subscripts {s!r} for a {x.dim()}-D operand")
    tracked = [x.values() if isinstance(x, TensorWrapper) else x for x in operands]
    needs = torch.is_grad_enabled() and any(t.requires_grad for t in tracked)
    if not needs:
        wrapper = type(next(x for x in operands if isinstance(x, TensorWrapper)))
        return _run(",".join(ins) + "->" + out, list(operands), wrapper)
    holders = [x if isinstance(x, TensorWrapper) else None for x in operands]
    return _Einsum.apply(ins, out, holders, *tracked)
