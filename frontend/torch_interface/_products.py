"""Products with a TorchUST on the project's compiled kernels, differentiable in the stored values.

``sparse_dense(S, D, side)`` computes ``S @ D`` (``side="left"``) or ``D @ S`` (``side="right"``) for a 2-D
TorchUST ``S`` and a dense 1-D/2-D torch tensor ``D`` with :func:`frontend.ops.matmul`.  Its backward
gives ``grad_D`` through the same kernels (``S^T`` is a free reinterpretation of S's format) and the
gradient of ``S.values()`` restricted to S's stored entries with a sampled dense-dense product
(:func:`frontend.ops.einsum` ``"ij,ik,jk->ij"`` over S's pattern, in S's format).
"""
from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np
import torch

from frontend.format import NamedFormats
from frontend.ops import _api as ops, _sddmm as sampled_kernel
from frontend.ops._threads import on_openmp_team
from frontend.tensor._tensor import Tensor

from . import _storage as torch_storage
from ._wrapper import TensorWrapper


def dense_arg(d: torch.Tensor) -> torch.Tensor:
    """A detached, contiguous CPU/GPU tensor the kernels can read."""
    d = d.detach()
    if d.is_conj():
        d = d.resolve_conj()
    return d.contiguous()


def to_torch(result: Any, wrapper: type[TensorWrapper], device: torch.device | None = None) -> Any:
    """A kernel result as torch: dense results become fresh torch tensors, sparse ones ``wrapper``s
    (the class of the sparse operand: products build TorchUSTs without importing the class)."""
    if isinstance(result, Tensor):
        if result.is_sparse:
            return wrapper.from_ust(result)
        out = torch_storage.as_torch(np.asarray(result.val)) if not isinstance(result.val, torch.Tensor) else result.val
        out = out.reshape(result.shape)
    elif isinstance(result, torch.Tensor):
        out = result
    else:
        out = torch_storage.as_torch(np.ascontiguousarray(result))
    return out if device is None or out.device == device else out.to(device)


def _threads() -> int | None:
    """Follow torch's intra-op threading: None (auto: every core above a measured work threshold) when
    torch may use several threads, else 1 (single-threaded)."""
    return None if torch.get_num_threads() > 1 else 1


def kernel_matmul(a: Any, b: Any, **kw: Any) -> Any:
    """:func:`frontend.ops.matmul` on TorchUSTs (their Tensors) and torch tensors, at least one a TorchUST;
    the result in torch."""
    device = next((x.device for x in (a, b) if isinstance(x, torch.Tensor)), None)
    wrapper = type(a if isinstance(a, TensorWrapper) else b)
    a = a.ust if isinstance(a, TensorWrapper) else dense_arg(a)
    b = b.ust if isinstance(b, TensorWrapper) else dense_arg(b)
    if device is None or device.type == "cpu":
        kw.setdefault("threads", _threads())
    return to_torch(ops.matmul(a, b, **kw), wrapper, device)


_MAX_PLANS = 8  # planned products kept per TorchUST (one per dense operand shape/dtype, least recent dropped)


def planned_product(s: TensorWrapper, d: torch.Tensor, side: str, transpose: bool) -> torch.Tensor:
    """``op(S) @ D`` / ``D @ op(S)`` through a planned :class:`frontend.ops.Matmul` cached on S per dense
    operand shape and dtype: later calls copy D into the plan's input buffer and only execute.

    ``D @ op(S)`` runs as ``(op(S)^T @ D^T)^T`` (the copy into the buffer transposes D): the batch index
    is then the innermost, contiguous loop of the kernel."""
    if side == "right" and d.dim() == 2:
        return planned_product(s, d.t(), "left", not transpose).t()
    if d.dim() == 2 and d.shape[1] == 1:  # one column (batch 1): the SpMV kernel, 3x faster than 1-wide SpMM
        return planned_product(s, d[:, 0], side, transpose).unsqueeze(1)
    plans = s.plans()
    threads = _threads() if d.device.type == "cpu" else None
    key = (side, transpose, tuple(d.shape), d.dtype, d.device, threads)
    entry = plans.get(key)
    if entry is None:
        with torch.inference_mode(False):  # a normal tensor: refilled in place in and out of inference mode
            buf = torch.empty(tuple(d.shape), dtype=d.dtype, device=d.device)
        mm = (ops.Matmul(s.ust, buf, transpose_a=transpose, threads=threads) if side == "left"
              else ops.Matmul(buf, s.ust, transpose_b=transpose, threads=threads))
        mm.plan()
        prepared = getattr(mm.backend, "prepared", None)  # CPU plans; GPU plans read their operands
        reads_buf = prepared is None or any(torch_storage.same_memory(t, buf) for t in prepared.tensors)
        entry = (mm, buf, threading.Lock(), reads_buf, _Output())
        if len(plans) >= _MAX_PLANS:
            plans.pop(next(iter(plans)))
    else:
        plans.pop(key)
    plans[key] = entry  # most recent last
    mm, buf, lock, reads_buf, output = entry
    with lock:
        if not reads_buf:  # the plan holds a copy of its dense operand (a ragged block format pads it)
            mm.reset_operands(**{"b" if side == "left" else "a": dense_arg(d)})
            return to_torch(mm.execute(), type(s), d.device)
        buf.copy_(d.detach())
        with on_openmp_team(buf.numel() >= TORCH_GRAIN_SIZE):  # torch just copied on its team: it spins now
            if output.usable:
                return output.run(mm, type(s))
            out = to_torch(mm.execute(), type(s), d.device)
        output.learn(out)
        return out



#: Elements from which torch copies into the plan's buffer on its OpenMP team, whose spinning threads then run
#: the product's chunks; below it the own pool does (docs/performance.md, "Tuning constants").
TORCH_GRAIN_SIZE = 32768


class _Output:
    """The dense result array of one planned product, reused by the next call once nothing holds the last
    result any more (no tensor, view, NumPy array or autograd node: the array's reference count is back to
    what the plan alone holds). A fresh result per call returned a freshly allocated array each time, and
    the next allocation of that size (often the caller's own next op, e.g. the ``relu`` of a GCN layer)
    took page faults on memory the allocator had just handed back to the system."""

    __slots__ = ("usable", "shape", "dtype", "array", "idle")

    def __init__(self) -> None:
        self.usable = False
        self.shape: tuple[int, ...] = ()
        self.dtype: Any = None
        self.array: np.ndarray | None = None
        self.idle = -1

    def learn(self, first: Any) -> None:
        """Enable reuse after the first (normal) call when its result is a dense CPU tensor NumPy can hold."""
        if (isinstance(first, torch.Tensor) and first.layout == torch.strided and first.device.type == "cpu"
                and first.dtype in _NUMPY_DTYPES and first.is_contiguous()):
            self.usable, self.shape, self.dtype = True, tuple(first.shape), _NUMPY_DTYPES[first.dtype]

    def run(self, mm: Any, wrapper: type[TensorWrapper]) -> torch.Tensor:
        """``mm.execute(out=...)`` into the reused array when it is free, else into a new one."""
        if self.array is None or sys.getrefcount(self.array) != self.idle:
            self.array = np.empty(self.shape, self.dtype)
        try:
            mm.execute(out=self.array)
        except (TypeError, ValueError):  # this plan takes no out= (c given, a sparse result, another dtype)
            self.usable, self.array = False, None
            return to_torch(mm.execute(), wrapper)
        self.idle = sys.getrefcount(self.array)  # what the plan and this object hold: no result outstanding
        return torch.from_numpy(self.array)


_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64, torch.complex64: np.complex64,
                 torch.complex128: np.complex128, torch.int32: np.int32, torch.int64: np.int64}


_DENSE_SAMPLED: set = set()  # structure keys of formats the kernels cannot write (sampled into dense)


def sddmm(s: TensorWrapper, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Values of ``(x @ y.T)`` at S's stored entries, in S's storage order (a new 1-D tensor).

    One sampled kernel (``einsum("ij,ik,jk->ij")`` over S's pattern) computes only the stored entries; it
    writes them in S's format where the kernels can (CSR, COO, CSC, ...), else into a dense output
    from which the stored entries are gathered (block, delta and other padded formats). CSR, CSC and COO
    patterns with CPU float factors of one dtype run on the threaded SDDMM kernel (:mod:`frontend.ops._sddmm`)."""
    pattern = s.pattern()
    xs, ys = dense_arg(x), dense_arg(y)
    if xs.device.type == "cpu" and ys.device.type == "cpu" and xs.dtype == ys.dtype \
            and xs.dtype in (torch.float32, torch.float64) and xs.dim() == 2 and ys.dim() == 2:
        got = sampled_kernel.pattern_values(pattern, xs.numpy(), ys.numpy())
        if got is not None:
            return torch.from_numpy(got).reshape(s.values().shape).to(s.values().device)
    key = pattern.tensor_format.structure_key()
    if key not in _DENSE_SAMPLED:
        try:
            out = ops.einsum("ij,ik,jk->ij", pattern, xs, ys, out_format=pattern.tensor_format)
        except ValueError:
            _DENSE_SAMPLED.add(key)
        else:
            if not isinstance(out, Tensor):
                raise RuntimeError(f"sampled product over a {s.format_name} pattern returned "
                                   f"{type(out).__name__}, expected a Tensor")
            if out.nse == pattern.nse:
                return torch_storage.as_torch(out.val).reshape(s.values().shape).to(s.values().device)
            _DENSE_SAMPLED.add(key)  # the kernel lays the output out unpadded (e.g. fixed-stride ELL)
    dense = to_torch(ops.einsum("ij,ik,jk->ij", pattern, xs, ys, out_format=NamedFormats.Dense(2)), type(s))
    return s.gather_stored(dense.reshape(-1)).to(s.values().device)


class _SpMM(torch.autograd.Function):
    """``op(S) @ D`` / ``D @ op(S)`` (``op(S) = S^T`` when ``t``) with gradients for ``S.values()`` and ``D``."""

    @staticmethod
    def forward(ctx: Any, values: torch.Tensor, d: torch.Tensor, holder: _Holder, side: str,
                t: bool) -> torch.Tensor:
        out = planned_product(holder.ust, d, side, t)
        ctx.holder, ctx.side, ctx.t = holder, side, t
        ctx.save_for_backward(d)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        (d,) = ctx.saved_tensors
        s, side, t = ctx.holder.ust, ctx.side, ctx.t
        g_values = g_d = None
        if ctx.needs_input_grad[1]:
            g_d = planned_product(s, grad, side, not t)  # dD = op(S)^T @ dY  or  dY @ op(S)^T
        if ctx.needs_input_grad[0]:
            d2 = d if d.dim() == 2 else d.reshape(-1, 1)
            g2 = grad if grad.dim() == 2 else grad.reshape(-1, 1)
            if side == "left":   # d op(S) = dY @ D^T
                g_values = sddmm(s, d2, g2) if t else sddmm(s, g2, d2)
            else:                # d op(S) = D^T @ dY
                g_values = sddmm(s, g2.t(), d2.t()) if t else sddmm(s, d2.t(), g2.t())
        return g_values, g_d, None, None, None


class _Holder:
    """Carries a TorchUST through ``autograd.Function.apply`` without autograd treating it as an input."""

    __slots__ = ("ust",)

    def __init__(self, ust: TensorWrapper) -> None:
        self.ust = ust


def sparse_dense(s: TensorWrapper, d: torch.Tensor, side: str, transpose: bool = False) -> torch.Tensor:
    """``op(S) @ D`` (side ``"left"``) or ``D @ op(S)`` (``"right"``), ``op(S) = S^T`` if ``transpose``:
    S a 2-D TorchUST, D dense 1-D or 2-D.  A TorchUST made by ``.t()`` runs as its base, transposed."""
    if len(s._shape) != 2:
        raise ValueError(f"expected a 2-D TorchUST, got {len(s._shape)}-D")
    base = s.transpose_base
    if base is not None:
        s, transpose = base, not transpose
    if d.dim() == 1 and side == "right":  # v @ op(S) == op(S)^T @ v
        side, transpose = "left", not transpose
    if not (torch.is_grad_enabled() and (s.values().requires_grad or d.requires_grad)):
        return planned_product(s, d, side, transpose)  # inference: no autograd node
    return _SpMM.apply(s.values(), d, _Holder(s), side, transpose)


class _SpSpDense(torch.autograd.Function):
    """``A @ B`` of two 2-D TorchUSTs as a dense tensor, with gradients for both operands' stored values:
    ``dA = dY @ B^T`` and ``dB = A^T @ dY`` (SpMM kernels with the dense ``dY``), read at each operand's
    stored entries."""

    @staticmethod
    def forward(ctx: Any, va: torch.Tensor, vb: torch.Tensor, ha: _Holder, hb: _Holder) -> torch.Tensor:
        ctx.ha, ctx.hb = ha, hb
        return kernel_matmul(ha.ust, hb.ust, out_format=NamedFormats.Dense(2))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        a, b = ctx.ha.ust, ctx.hb.ust
        g = dense_arg(grad)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = a.gather_stored(sparse_dense(b, g, "right", transpose=True).reshape(-1))
        if ctx.needs_input_grad[1]:
            gb = b.gather_stored(sparse_dense(a, g, "left", transpose=True).reshape(-1))
        return ga, gb, None, None


def sparse_sparse_dense(a: TensorWrapper, b: TensorWrapper) -> torch.Tensor:
    """``A @ B`` for two 2-D TorchUSTs as a dense tensor (any pair of formats, on the kernels),
    differentiable in both operands' stored values."""
    if len(a._shape) != 2 or len(b._shape) != 2:
        raise ValueError(f"expected 2-D TorchUSTs, got {len(a._shape)}-D and {len(b._shape)}-D")
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x{a._shape[1]} and "
                           f"{b._shape[0]}x{b._shape[1]})")
    dtype = torch.promote_types(a.dtype, b.dtype)
    a, b = (x if x.dtype == dtype else x.map(lambda v: v.to(dtype)) for x in (a, b))
    if torch.is_grad_enabled() and (a.values().requires_grad or b.values().requires_grad):
        return _SpSpDense.apply(a.values(), b.values(), _Holder(a), _Holder(b))
    return kernel_matmul(a, b, out_format=NamedFormats.Dense(2))


def sparse_sparse(a: TensorWrapper, b: TensorWrapper) -> Any:
    """``A @ B`` for two TorchUSTs: a sparse TorchUST (a dense tensor for vector results); under autograd
    its values are read from the differentiable dense product (2-D operands)."""
    out = kernel_matmul(a, b)
    if not (torch.is_grad_enabled() and (a.values().requires_grad or b.values().requires_grad)):
        return out
    if len(a._shape) != 2 or len(b._shape) != 2:
        raise NotImplementedError(f"gradients of sparse x sparse products need 2-D operands ({a.format_name} "
                                  f"{len(a._shape)}-D @ {b.format_name} {len(b._shape)}-D)")
    dense = sparse_sparse_dense(a, b)
    return out.with_values(out, out.gather_stored(dense.reshape(-1)))
