"""SpMV/SpMM through the vendor library: torch.sparse (cuSPARSE on CUDA) or cupyx.scipy.sparse.

The sparse operand's own buffers are wrapped (no conversion): CSR/CSC/BSR as torch compressed tensors
or cupyx CSR/CSC matrices, COO (sorted, unique) as a coalesced torch COO tensor / cupyx COO matrix.
The same code runs torch CPU tensors (MKL / native kernels), which is how it is tested without a GPU.
"""
from __future__ import annotations

import contextlib
from typing import Any

from .tensor import Tensor

#: Layouts each package's library takes.
TORCH_LAYOUTS = ("CSR", "CSC", "COO", "BSR")
CUPY_LAYOUTS = ("CSR", "CSC", "COO")


def _torch_matrix(t: Tensor, layout: str) -> Any:
    """A torch sparse tensor over ``t``'s buffers (validated when ``t`` was made: no invariant checks)."""
    import torch

    shape = tuple(t.shape)
    pos, crd, val = (None if b is None else torch.as_tensor(b) for b in (t.pos(1), t.crd(1), t.val))
    if layout == "CSR":
        return torch.sparse_csr_tensor(pos, crd, val, shape, check_invariants=False)
    if layout == "CSC":
        return torch.sparse_csc_tensor(pos, crd, val, shape, check_invariants=False)
    if layout == "COO":
        idx = torch.stack([torch.as_tensor(t.crd(0)), crd])
        return torch.sparse_coo_tensor(idx, val, shape, is_coalesced=True, check_invariants=False)
    if layout == "BSR":
        bm, bn = t.levels[2], t.levels[3]
        return torch.sparse_bsr_tensor(pos, crd, val.reshape(-1, bm, bn), shape, check_invariants=False)
    raise ValueError(f"torch.sparse has no {layout} layout")


def _cupy_matrix(t: Tensor, layout: str) -> Any:
    import cupyx.scipy.sparse as csp

    shape = tuple(t.shape)
    if layout == "CSR":
        return csp.csr_matrix((t.val, t.crd(1), t.pos(1)), shape=shape)
    if layout == "CSC":
        return csp.csc_matrix((t.val, t.crd(1), t.pos(1)), shape=shape)
    if layout == "COO":
        return csp.coo_matrix((t.val, (t.crd(0), t.crd(1))), shape=shape)
    raise ValueError(f"cupyx.scipy.sparse has no {layout} matrix")


def stream_context(stream: Any, package: str) -> Any:
    """A context making ``stream`` current for ``package`` (nothing when ``stream`` is None)."""
    if stream is None:
        return contextlib.nullcontext()
    if package == "torch":
        import torch

        return torch.cuda.stream(stream)
    return stream  # a cupy.cuda.Stream is a context manager


def library_matmul(a: Tensor, layout: str, b: Any, package: str, *, alpha: Any = 1, c: Any = None,
                   stream: Any = None) -> Any:
    """``alpha * a @ b`` (added to ``c`` in place when given) with ``a`` in ``layout``, ``b`` dense 1-D/2-D."""
    with stream_context(stream, package):
        if package == "torch":
            import torch

            m = _torch_matrix(a, layout)
            r = torch.mv(m, b) if b.ndim == 1 else torch.mm(m, b)
            if r.layout != torch.strided:
                r = r.to_dense()
        elif package == "cupy":
            r = _cupy_matrix(a, layout) @ b
        else:
            raise ValueError(f"no vendor library for {package} operands")
        if alpha != 1:
            r = r * alpha
        if c is None:
            return r
        c += r
        return c
