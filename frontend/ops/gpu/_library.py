"""SpMV/SpMM through the vendor library: torch.sparse (cuSPARSE on CUDA) or cupyx.scipy.sparse.

The sparse operand's own buffers are wrapped (no conversion) by the interop writers
(:func:`frontend.interop._torch.to_torch`, :func:`frontend.interop._scipy.to_scipy`): CSR/CSC/BSR as torch
compressed tensors or cupyx CSR/CSC matrices, COO (sorted, unique) as a coalesced torch COO tensor / cupyx
COO matrix.
The same code runs torch CPU tensors (MKL / native kernels), which is how it is tested without a GPU.
Square-block BlockedELL goes to cuSPARSE's blocked-ELL SpMM (:mod:`frontend.ops.gpu._blocked_ell`).
"""
from __future__ import annotations

import contextlib
from typing import Any

from frontend.interop._layouts import Layout
from frontend.tensor._tensor import Tensor
from lowering.gpu.library import LIBRARY_LAYOUTS


def _layout(t: Tensor, layout: str, package: str) -> Layout:
    """The package layout of library layout ``layout`` (ValueError for one the package's library lacks)."""
    if package == "torch" and layout not in LIBRARY_LAYOUTS["torch"]:
        raise ValueError(f"torch.sparse has no {layout} layout")
    if package == "cupy" and layout not in LIBRARY_LAYOUTS["cupy"]:
        raise ValueError(f"cupyx.scipy.sparse has no {layout} matrix")
    if layout == "BSR":
        return Layout("BSR", block=(int(t.levels[2]), int(t.levels[3])))
    return Layout("coo", nsparse=2) if layout == "COO" else Layout(layout)


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
    if layout == "BlockedELL":  # neither package wraps it: cuSPARSE is called directly, on the given stream
        from ._blocked_ell import blocked_ell_matmul

        return blocked_ell_matmul(a, b, alpha=alpha, c=c, stream=stream)
    with stream_context(stream, package):
        if package == "torch":
            import torch

            from frontend.interop._torch import to_torch

            m = to_torch(a, _layout(a, layout, package))
            r = torch.mv(m, b) if b.ndim == 1 else torch.mm(m, b)
            if r.layout != torch.strided:
                r = r.to_dense()
        elif package == "cupy":
            from frontend.interop._scipy import to_scipy

            r = to_scipy(a, _layout(a, layout, package), "cupy") @ b
        else:
            raise ValueError(f"no vendor library for {package} operands")
        if alpha != 1:
            r = r * alpha
        if c is None:
            return r
        c += r
        return c
