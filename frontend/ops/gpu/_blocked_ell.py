"""SpMM/SpMV of a ``BlockedELL((b, b))`` tensor through cuSPARSE's blocked-ELL SpMM.

cuSPARSE stores a block row's ``b`` rows one after the other, each ``ell_cols = K * b`` values long; ours
(``(i // b : dense, j // b : loose_compressed, i % b : dense, j % b : dense)``) stores each ``b x b`` block
contiguously. :func:`cusparse_layout` rearranges the blocks on the operand's own device (one gather and
one transpose, in the operand's package: torch, CuPy, or NumPy on the host) and marks slots past a block
row's count with column ``-1``; :func:`blocked_ell_matmul` hands the result to
:class:`mlir_bridge.gpu.cusparse.Cusparse`. Host buffers (NumPy, torch CPU) are refused, except by a library
that computes in host memory (``Cusparse(lib, host_memory=True)``): that is how the glue is tested against
a fake library without a GPU.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.format import dtype_name
from frontend.storage import _buffers as buffers
from frontend.tensor._tensor import Tensor


def _ns(x: Any) -> Any:
    """The module whose functions make and combine arrays like ``x``: torch, NumPy or CuPy (the names used
    here, ``where``/``arange``/``empty``/``zeros``/``asarray`` and the dtypes, are the same in all three)."""
    if buffers.is_torch(x):
        import torch

        return torch
    if isinstance(x, np.ndarray):
        return np
    import cupy

    return cupy


def _on(like: Any) -> dict[str, Any]:
    """The placement keywords of a new array beside ``like`` (torch takes ``device=``; NumPy/CuPy place by
    context)."""
    return {"device": like.device} if buffers.is_torch(like) else {}


def cusparse_layout(t: Tensor) -> tuple[Any, Any, int]:
    """``(col_ind, values, ell_cols)`` of ``t`` (a square-block BlockedELL) in cuSPARSE's Blocked-ELL layout:
    int32 ``col_ind[rows / b][K]`` (``-1`` for an empty slot) and row-major ``values[rows][K * b]``, where
    ``K`` is the most blocks of any block row (at least 1)."""
    nbr, _, bh, bw = t.levels
    if bh != bw:
        raise ValueError(f"cuSPARSE's Blocked-ELL takes square blocks, got {bh}x{bw}")
    pos, crd, val = t._pos[1], t._crd[1], t.val
    lo, counts = pos[0::2], pos[1::2] - pos[0::2]
    k = max(int(counts.max()), 1) if nbr else 1
    ns = _ns(val)
    slots = ns.arange(k, dtype=pos.dtype, **_on(pos))
    valid = slots[None, :] < counts[:, None]
    if int(crd.shape[0]) == 0:  # nothing stored: every slot empty
        col_ind = ns.asarray(ns.where(valid, slots[None, :], -1), dtype=ns.int32)
        return col_ind, ns.zeros((nbr * bh, k * bw), dtype=val.dtype, **_on(val)), k * bw
    at = ns.where(valid, lo[:, None] + slots[None, :], 0)
    col_ind = ns.asarray(ns.where(valid, crd[at], -1), dtype=ns.int32)
    blocks = val.reshape(-1, bh, bw)[at]  # (nbr, K, b, b)
    blocks = ns.where(valid[:, :, None, None], blocks, 0)
    return col_ind, blocks.swapaxes(1, 2).reshape(nbr * bh, k * bw), k * bw


def blocked_ell_matmul(a: Tensor, b: Any, *, alpha: Any = 1, c: Any = None, stream: Any = None) -> Any:
    """``alpha * a @ b`` (added to ``c`` in place when given) with ``a`` a square-block BlockedELL and ``b``
    dense 1-D/2-D, both in one package on one device (or both on the host, against a fake library)."""
    from mlir_bridge.gpu.call import device_index, package_of, stream_handle
    from mlir_bridge.gpu.cusparse import BlockedEllOperand, Cusparse

    library = Cusparse.load()
    package = package_of(a.val)
    if package is None and not library.host_memory:
        raise TypeError("cuSPARSE's blocked-ELL SpMM reads device memory: the operands must be torch CUDA tensors "
                        "or CuPy arrays (or use device='cuda', which copies them over)")
    rows, cols = (int(n) for n in a.shape)
    block = int(a.levels[2])
    col_ind, values, ell_cols = cusparse_layout(a)
    n = 1 if b.ndim == 1 else int(b.shape[1])
    dense_b = b.reshape(int(b.shape[0]), n)
    ns = _ns(values)
    if not buffers.is_contiguous(dense_b):
        dense_b = dense_b.contiguous() if ns.__name__ == "torch" else ns.ascontiguousarray(dense_b)
    out = c if c is not None else ns.zeros((rows, n), dtype=values.dtype, **_on(values))
    operand = BlockedEllOperand(rows, cols, block, ell_cols, buffers.data_pointer(col_ind),
                                buffers.data_pointer(values), dtype_name(values.dtype))
    device = 0 if package is None else device_index(values)
    handle = 0 if package is None else stream_handle(stream, package, device)

    def workspace(nbytes: int) -> tuple[int, Any]:
        owner = ns.empty(nbytes, dtype=ns.uint8, **_on(values))
        return buffers.data_pointer(owner), owner

    with _on_device(package, device):
        library.spmm_blocked_ell(operand, buffers.data_pointer(dense_b), buffers.data_pointer(out), n,
                                 alpha=float(alpha), beta=0.0 if c is None else 1.0, stream=handle, device=device,
                                 workspace=workspace)
    # the caching allocators of torch and CuPy reuse freed buffers only in stream order: the temporaries
    # above may go once the call is queued
    return out if c is not None or b.ndim == 2 else out.reshape(rows)


def _on_device(package: str | None, device: int) -> Any:
    """The package's current-device context (cuSPARSE handles and launches follow it)."""
    import contextlib

    if package == "torch":
        import torch

        return torch.cuda.device(device)
    if package == "cupy":
        import cupy

        return cupy.cuda.Device(device)
    return contextlib.nullcontext()
