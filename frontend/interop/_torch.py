"""PyTorch sparse tensors <-> :class:`Tensor`, sharing buffers.

=================  ===============================================  ======================================
torch layout       Tensor format                                    buffers (level k = nbatch + 1)
=================  ===============================================  ======================================
sparse_coo         COO over the sparse dims + dense levels          pos[0] = [0, nnz] (new), crd[k] =
                   (``package_formats.coo_format``)                 indices[k], val = values (flattened)
sparse_csr / csc   batch levels, CSR/CSC, dense levels              pos[k] = crow/ccol_indices,
sparse_bsr / bsc   batch levels, BSR/BSC (block from values),       crd[k] = col/row_indices,
                   dense levels (``compressed_format``)             val = values (flattened after batch)
=================  ===============================================  ======================================

Batched layouts keep the leading batch axes on every buffer: positions ``(*batch, major + 1)``,
coordinates ``(*batch, nse)`` and values ``(*batch, nse * block * dense)`` (each batch's positions count
from 0, as in torch and MLIR's batch levels).  CPU buffers are NumPy views (``.numpy()``); CUDA buffers
stay torch tensors on their device.  Uncoalesced COO is sorted and summed into the library's buffers (on the
CPU by :mod:`._canonical`, remembered per tensor; on a GPU by torch's ``coalesce()``, a copy per view), never in
the caller's tensor; unsorted/duplicate compressed indices are refused by
:func:`frontend.storage._validate.validate` (torch checks them only with ``check_invariants=True``).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from frontend.storage import _buffers
from frontend.storage._protocol import StoredTensor, TensorT
from frontend.storage._validate import mark_valid

from ._canonical import canonical_coo
from ._layouts import Layout


def _flat_values(values: Any, nbatch: int, what: str) -> Any:
    if not values.is_contiguous():
        raise ValueError(f"{what}: values are not contiguous; call .contiguous() first (a copy)")
    return values.reshape(tuple(values.shape[:nbatch]) + (-1,))


def _from_coo(x: Any, cls: type[TensorT]) -> TensorT:
    import torch
    s, nd = x.sparse_dim(), x.dense_dim()
    if not x.is_coalesced():
        if x.device.type != "cpu":
            x = x.coalesce()  # torch's copy on the device; the caller's tensor is unchanged
        else:
            return _canonical_cpu(x, s, nd, cls)
    idx, values = x._indices(), x._values()
    itype = _buffers.check_index_buffers([idx], "torch COO tensor")
    nnz = int(idx.shape[1])
    pos0 = torch.tensor([0, nnz], dtype=idx.dtype, device=idx.device)
    lay = Layout("coo", nsparse=s, ndense=nd)
    return cls(lay.tensor_format(), tuple(x.shape), [_buffers.torch_buffer(pos0)] + [None] * (s - 1 + nd),
               [_buffers.torch_buffer(idx[k]) for k in range(s)] + [None] * nd,
               _buffers.torch_buffer(_flat_values(values, 0, "torch COO tensor")), index_type=itype, package="torch",
               device=str(x.device), source=x)


def _canonical_cpu(x: Any, s: int, nd: int, cls: type[TensorT]) -> TensorT:
    """An uncoalesced CPU COO ``x`` sorted and summed into the library's buffers (:mod:`._canonical`)."""
    idx = x._indices()
    _buffers.check_index_buffers([idx], "torch COO tensor")
    rows = [_buffers.as_numpy(idx[k], "indices") for k in range(s)]
    canon = canonical_coo(x, rows, tuple(x.shape[:s]), "torch COO tensor")
    values = canon.values(_buffers.as_numpy(x._values().detach(), "values"))
    nnz = int(canon.starts.shape[0])
    pos0 = np.asarray([0, nnz], dtype=rows[0].dtype if rows else np.int64)
    lay = Layout("coo", nsparse=s, ndense=nd)
    t = cls(lay.tensor_format(), tuple(x.shape), [pos0] + [None] * (s - 1 + nd), list(canon.coords) + [None] * nd,
            values.reshape(-1), index_type=pos0.dtype, package="torch", device="cpu")
    return mark_valid(t)


def _compressed_kinds() -> dict:
    import torch
    return {torch.sparse_csr: ("CSR", "crow_indices", "col_indices"),
            torch.sparse_csc: ("CSC", "ccol_indices", "row_indices"),
            torch.sparse_bsr: ("BSR", "crow_indices", "col_indices"),
            torch.sparse_bsc: ("BSC", "ccol_indices", "row_indices")}


def _from_compressed(x: Any, cls: type[TensorT]) -> TensorT:
    kind, comp_name, plain_name = _compressed_kinds()[x.layout]
    what = f"torch {kind} tensor"
    nd = x.dense_dim()
    nb = x.ndim - 2 - nd
    comp, plain, values = getattr(x, comp_name)(), getattr(x, plain_name)(), x.values()
    block = tuple(int(s) for s in values.shape[nb + 1:nb + 3]) if kind in ("BSR", "BSC") else None
    lay = Layout(kind, nbatch=nb, ndense=nd, block=block)  # type: ignore[arg-type]
    itype = _buffers.check_index_buffers([comp, plain], what)
    fmt = lay.tensor_format()
    pos: list[Any] = [None] * fmt.num_levels
    crd: list[Any] = [None] * fmt.num_levels
    pos[nb + 1], crd[nb + 1] = _buffers.torch_buffer(comp), _buffers.torch_buffer(plain)
    return cls(fmt, tuple(x.shape), pos, crd, _buffers.torch_buffer(_flat_values(values, nb, what)), index_type=itype,
               package="torch", device=str(x.device), source=x)


def source_buffers(x: Any) -> list[Any]:
    """The tensors a torch sparse tensor keeps (their addresses identify its current contents)."""
    import torch
    if x.layout == torch.sparse_coo:
        return [x._indices(), x._values()]
    _, comp, plain = _compressed_kinds()[x.layout]
    return [getattr(x, comp)(), getattr(x, plain)(), x.values()]


def from_torch_sparse(x: Any, cls: type[TensorT]) -> TensorT:
    """A ``cls`` viewing a torch sparse tensor (COO or compressed layouts)."""
    import torch
    if x.layout == torch.sparse_coo:
        return _from_coo(x, cls)
    if x.layout in _compressed_kinds():
        return _from_compressed(x, cls)
    raise TypeError(f"torch layout {x.layout} has no Tensor view")


def to_torch(t: StoredTensor, layout: Layout) -> Any:
    """The torch tensor (strided or sparse) with ``t``'s buffers; COO indices are stacked into one
    int64 ``(sparse_dim, nnz)`` tensor (a copy: torch keeps them in one block)."""
    import torch
    val = _buffers.as_torch(t.val, "values")
    if layout.kind == "dense":
        return val.permute(layout.level_of_dimension)
    shape = tuple(t.shape)
    if layout.kind == "coo":
        crds = [_buffers.as_torch(t.crd(k), "coordinates") for k in range(layout.nsparse)]
        nnz = int(crds[0].shape[0])
        indices = torch.stack(crds).to(torch.int64)
        values = val.reshape((nnz,) + shape[layout.nsparse:])
        return torch.sparse_coo_tensor(indices, values, size=shape, is_coalesced=True, check_invariants=False)
    if layout.kind == "dia":
        raise TypeError(f"torch has no DIA layout for format {t.tensor_format}; convert to CSR, CSC, COO, "
                        "BSR or BSC")
    nb = layout.nbatch
    comp, plain = _buffers.as_torch(t.pos(nb + 1), "positions"), _buffers.as_torch(t.crd(nb + 1), "coordinates")
    batch, m, n = shape[:nb], shape[nb], shape[nb + 1]
    major = {"CSR": m, "CSC": n}.get(layout.kind)
    if major is None:
        bm, bn = layout.block  # type: ignore[misc]
        major = -(-m // bm) if layout.kind == "BSR" else -(-n // bn)
    if tuple(comp.shape) != batch + (major + 1,):
        raise ValueError(f"positions have shape {tuple(comp.shape)}, expected {batch + (major + 1,)}")
    nse = int(plain.shape[-1])
    inner = (layout.block or ()) + shape[nb + 2:]
    if val.numel() != math.prod(batch) * nse * math.prod(inner):
        raise ValueError(f"{val.numel()} values do not fill {nse} stored entries of shape {inner} per batch")
    values = val.reshape(batch + (nse,) + tuple(inner))
    lay = {"CSR": torch.sparse_csr, "CSC": torch.sparse_csc, "BSR": torch.sparse_bsr, "BSC": torch.sparse_bsc}
    with warnings.catch_warnings():  # torch's "beta state" notice; buffers were checked above
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_compressed_tensor(comp, plain, values, size=shape, layout=lay[layout.kind],
                                              check_invariants=False)
